"""Copy one planned offset range of one source partition into the target, in one target transaction.

Runs on Spark executors. There is no group membership here, so fencing comes from the
transactional.id, one per source partition (``{connector}.{topic}.{partition}``): init_transactions
fences whichever task copied that partition before (a retried or zombie Spark task). The shadow
group stays the source of truth: a range whose end it already holds is skipped (a replay), a range
that starts beyond what it holds is a gap (data loss) and is refused, never papered over.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from connectors.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core import clients
from mirror_sink.core.errors import TaskFailure
from mirror_sink.core.partitions import TargetPartition
from mirror_sink.core.stable_offsets import read_stable_offsets
from mirror_sink.record.committers import DeliveryTracker, TransactionalCommitter
from mirror_sink.record.record_copier import RecordCopier

log = logging.getLogger(__name__)

#: Fault injection for tests: when this env var names an existing file, the copier deletes the file
#: and fails once between producing a range and committing it (a crash at the worst moment).
FAULT_FILE_ENV = "MIRROR_SINK_FAULT_AFTER_PRODUCE"

_BATCH = 5000


class DataLossError(TaskFailure):
    """The shadow group is behind the planned range: records between would never be mirrored."""


@dataclass(frozen=True)
class RangeResult:
    """What one range copy did."""

    topic: str
    partition: int
    copied: int
    skipped: bool


def transactional_id(connector: str, topic: str, partition: int) -> str:
    """One transactional.id per source partition: the Spark runtime's fencing token."""
    return f"{connector}.{topic}.{partition}"


def copy_range(config: MirrorSinkConfig, topic: str, partition: int, start: int, end: int) -> RangeResult:
    """Mirror records [start, end) of ``topic``-``partition`` and commit ``end`` to the shadow group."""
    target_topic = config.replication_policy().format_remote_topic(config.source_alias, topic)
    deliveries = DeliveryTracker()
    timeout_s = config.transaction_timeout_ms / 1000
    producer = clients.target_producer(
        {**config.target_producer(), "on_delivery": deliveries},
        client_id=f"{config.name}-spark-{topic}-{partition}",
        transactional_id=transactional_id(config.name, topic, partition),
        transaction_timeout_ms=config.transaction_timeout_ms,
    )
    committer = TransactionalCommitter(producer, deliveries, timeout_s)
    committer.start()  # fences the previous holder of this partition and aborts its open transaction
    # Not a member: its metadata carries no generation (the transactional.id fences instead).
    shadow = clients.source_consumer(config.target_consumer(), config.shadow_group_id, f"{config.name}-spark-shadow")
    try:
        target = TargetPartition(target_topic, partition)
        committed = read_stable_offsets(shadow, [target], give_up_after_s=timeout_s + 30)[target]
        if committed is not None and committed >= end:
            log.info(
                "%s-%d [%d, %d): already mirrored (shadow group at %d); skipped",
                topic,
                partition,
                start,
                end,
                committed,
            )
            return RangeResult(topic, partition, 0, True)
        if committed is not None and committed < start:
            raise DataLossError(
                f"{topic}-{partition}: the planned range starts at {start} but the shadow group holds "
                f"{committed}; records [{committed}, {start}) would be lost. Delete the Spark checkpoint "
                "to replan from the shadow group"
            )
        begin = start if committed is None else committed
        copied = _copy(config, topic, partition, begin=begin, end=end, committer=committer, shadow=shadow)
        log.info("%s-%d [%d, %d): %d records mirrored", topic, partition, begin, end, copied)
        return RangeResult(topic, partition, copied, False)
    except BaseException:
        if committer.open:
            committer.abort()
        raise
    finally:
        shadow.close()
        producer.flush(5)


def _copy(
    config: MirrorSinkConfig,
    topic: str,
    partition: int,
    *,
    begin: int,
    end: int,
    committer: TransactionalCommitter,
    shadow: Consumer,
) -> int:
    """Copy [begin, end) in transactions bounded like the worker's (time and bytes), each committing
    how far it got, so a large range makes progress that a retry keeps."""
    target_topic = config.replication_policy().format_remote_topic(config.source_alias, topic)
    source: Consumer = clients.source_consumer(config.source_consumer(), config.source_group_id, f"{config.name}-spark")
    copier = RecordCopier(committer.producer)
    metadata = shadow.consumer_group_metadata()
    interval_s = config.transaction_interval_ms / 1000
    stall_limit_s = config.transaction_timeout_ms / 1000
    copied, next_offset = 0, begin
    try:
        source.assign([TopicPartition(topic, partition, begin)])
        while next_offset < end:
            committer.begin()
            cycle_bytes, cycle_end, last_progress = 0, time.monotonic() + interval_s, time.monotonic()
            while next_offset < end and cycle_bytes < config.transaction_max_bytes and time.monotonic() < cycle_end:
                messages = [m for m in source.consume(_BATCH, 0.2) if m.error() is None and (m.offset() or 0) < end]
                cycle_bytes += copier.copy(messages, {topic: target_topic})
                copied += len(messages)
                if messages:
                    next_offset = max(next_offset, (messages[-1].offset() or 0) + 1)
                position = source.position([TopicPartition(topic, partition)])[0].offset
                if position is not None and position > next_offset:
                    next_offset = position  # past control records and aborted batches
                    last_progress = time.monotonic()
                elif messages:
                    last_progress = time.monotonic()
                if time.monotonic() - last_progress > stall_limit_s:
                    raise TaskFailure(f"{topic}-{partition}: stuck at offset {next_offset} before {end}")
            done = min(next_offset, end)
            if done >= end:
                _maybe_inject_fault()
            committer.commit([TopicPartition(target_topic, partition, done)], shadow, metadata)
    finally:
        source.close()
    return copied


def _maybe_inject_fault() -> None:
    marker = os.environ.get(FAULT_FILE_ENV)
    if marker and Path(marker).exists():
        Path(marker).unlink()
        raise RuntimeError(f"injected fault after producing, before committing ({FAULT_FILE_ENV})")
