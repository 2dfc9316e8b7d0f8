"""The data path a connector's config asks for: raw mode where it can run, record mode otherwise.

One decision for every runtime: a worker task and a Spark range copy open their path here, so
``mirror.mode`` means the same in both.
"""

from __future__ import annotations

from confluent_kafka import Consumer

from mirror_sink.config.mirror_sink_config import MirrorMode, MirrorSinkConfig, raw_mode_blockers
from mirror_sink.core.interfaces.data_path import DataPath
from mirror_sink.core.runtime.logs import Log
from mirror_sink.raw.raw_path import RawPath
from mirror_sink.raw.wire.capabilities import RawUnsupported
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
    settings = cfg.path_settings(client_id, transactional_id)
    if cfg.mirror_mode is not MirrorMode.RECORD and not record_mode:
        blockers = raw_mode_blockers(cfg)
        try:
            if blockers:
                raise RawUnsupported(f"the raw path's client cannot honour {', '.join(blockers)}")
            return "raw", RawPath.open(settings, log)
        except RawUnsupported as exc:
            if cfg.mirror_mode is MirrorMode.RAW:
                raise
            log.warning("mirror.mode=auto falls back to record mode: %s", exc)
    return "record", RecordPath.open(settings, source, log)
