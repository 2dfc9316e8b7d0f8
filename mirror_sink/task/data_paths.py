"""The data path a connector's config asks for: raw mode where it can run, record mode otherwise.

One decision for every runtime: a worker task and a Spark range copy open their path here, so
``mirror.mode`` means the same in both.
"""

from __future__ import annotations

from confluent_kafka import Consumer

from mirror_sink.config.mirror_sink_config import MirrorMode, MirrorSinkConfig
from mirror_sink.core import clients
from mirror_sink.core.authorization import ClientIdentity
from mirror_sink.core.data_path import DataPath
from mirror_sink.core.logs import Log
from mirror_sink.raw.capabilities import RawUnsupported, unsupported
from mirror_sink.raw.raw_path import RawPath
from mirror_sink.record.committers import DeliveryTracker
from mirror_sink.record.record_path import RecordPath


def open_data_path(
    config: MirrorSinkConfig,
    *,
    client_id: str,
    transactional_id: str | None,
    source: Consumer,
    log: Log,
    record_mode: bool = False,
) -> tuple[str, DataPath]:
    """``("raw", path)`` where the clusters and client settings allow it (or it is asked for), else
    ``("record", path)``; ``source`` is the consumer record mode reads with.

    ``record_mode`` forces record mode where raw mode would be possible (``mirror.mode=auto`` measured
    it faster). Raises RawUnsupported when ``mirror.mode=raw`` cannot be honoured.
    """
    cfg = config
    if cfg.mirror_mode is not MirrorMode.RECORD and not record_mode:
        blockers = unsupported(cfg.source_consumer()) + unsupported(cfg.target_producer())
        try:
            if blockers:
                raise RawUnsupported(f"the raw path's client cannot honour {', '.join(blockers)}")
            return "raw", RawPath(
                source_props=cfg.source_consumer(),
                target_props=cfg.target_producer(),
                target_admin_props=cfg.target_admin(),
                client_id=client_id,
                transactional_id=transactional_id,
                transaction_timeout_ms=cfg.transaction_timeout_ms,
                group_id=cfg.shadow_group_id,
                memory_bytes=cfg.buffer_memory,
                chunk_bytes=max(cfg.transaction_max_bytes // 4, 1),
                log=log,
                sync_partition=cfg.offset_syncs_partition,
            )
        except RawUnsupported as exc:
            if cfg.mirror_mode is MirrorMode.RAW:
                raise
            log.warning("mirror.mode=auto falls back to record mode: %s", exc)
    syncs = cfg.offset_syncs_partition
    identity = ClientIdentity("target", cfg.target_producer(), transactional_id, cfg.shadow_group_id)
    deliveries = DeliveryTracker(track_offsets=syncs is not None, identity=identity)
    producer = clients.target_producer(
        {**cfg.target_producer(), "on_delivery": deliveries},
        client_id=f"{client_id}-producer",
        transactional_id=transactional_id,
        transaction_timeout_ms=cfg.transaction_timeout_ms,
    )
    return "record", RecordPath(
        source,
        producer=producer,
        deliveries=deliveries,
        transactional=transactional_id is not None,
        timeout_s=cfg.transaction_timeout_ms / 1000,
        log=log,
        sync_topic=syncs.topic if syncs is not None else None,
    )
