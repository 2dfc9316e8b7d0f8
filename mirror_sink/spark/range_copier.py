"""Copy one planned offset range of one source partition into the target, in target transactions.

Runs on Spark executors, with the worker's own data path: raw mode forwards the source's batches
(read_committed filtering, CRC checks, the per-batch fallback, the memory budget), record mode
re-produces records; ``mirror.mode`` decides as it does for a worker task (``mirror_sink.task.data_paths``).
A batch that crosses the range's end is re-encoded without the records past it, so ranges never
overlap. There is no group membership here, so fencing comes from the transactional.id, one per
source partition (``{connector}.{topic}.{partition}``): InitProducerId fences whichever task copied
that partition before (a retried or zombie Spark task). The shadow group stays the source of truth:
a range whose end it already holds is skipped (a replay), a range that starts beyond what it holds
is a gap (data loss) and is refused, never papered over.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.stable_offsets import read_stable_commits
from mirror_sink.core.formats.commit_metadata import commit_metadata, source_topic_ids, stored_topic_id
from mirror_sink.core.formats.group_metadata import GroupMetadata
from mirror_sink.core.formats.offset_syncs import SyncSpan
from mirror_sink.core.interfaces.data_path import DataPath
from mirror_sink.core.runtime.logs import context_logger
from mirror_sink.task.cycle_bounds import CycleBounds
from mirror_sink.task.data_paths import open_data_path
from mirror_sink.task.source_continuity import SourceDiscontinuity


class DataLossError(TaskFailure):
    """The shadow group is behind the planned range: records between would never be mirrored."""


@dataclass(frozen=True)
class RangeResult:
    """What one range copy did."""

    topic: str
    partition: int
    copied: int
    skipped: bool
    #: ``raw`` or ``record``: the data path that copied it.
    mode: str = "record"


def transactional_id(connector: str, topic: str, partition: int) -> str:
    """One transactional.id per source partition: the Spark runtime's fencing token."""
    return f"{connector}.{topic}.{partition}"


def copy_range(
    config: MirrorSinkConfig, topic: str, partition: int, start: int, end: int, *, max_message_bytes: int | None = None
) -> RangeResult:
    """Mirror records [start, end) of ``topic``-``partition`` and commit ``end`` to the shadow group
    (``max_message_bytes``: the target topic's, as the planner read it; None where it read none)."""
    target_topic = config.replication_policy().format_remote_topic(config.source_alias, topic)
    slot = transactional_id(config.name, topic, partition)
    context = context_logger(__name__, f"{config.name} {topic}-{partition}", connector=config.name)
    source: Consumer = clients.source_consumer(config.source_consumer(), config.source_group_id, f"{slot}-source")
    # Not a member: its metadata carries no generation (the transactional.id fences instead).
    shadow = clients.source_consumer(config.target_consumer(), config.shadow_group_id, f"{slot}-shadow")
    path: DataPath | None = None
    try:
        mode, path = open_data_path(config, client_id=slot, transactional_id=slot, source=source, log=context)
        committer = path.committer
        committer.start()  # fences the previous holder of this partition and aborts its open transaction
        target = TargetPartition(target_topic, partition)
        if max_message_bytes is not None:
            path.limit_batches({target_topic: max_message_bytes})
        timeout_s = config.transaction_timeout_ms / 1000
        commit = read_stable_commits(shadow, [target], give_up_after_s=timeout_s + 30)[target]
        committed = None if commit is None else commit.offset
        topic_id = source_topic_ids(clients.admin(config.source_admin(), f"{slot}-topic-ids"), [topic]).get(topic)
        held_id = None if commit is None else stored_topic_id(commit.metadata)
        if held_id and topic_id and held_id != topic_id:
            raise SourceDiscontinuity(
                f"source topic {topic} was deleted and created again since the range was planned: the shadow "
                f"group holds offset {committed} of topic id {held_id}, the topic now has id {topic_id}"
            )
        if committed is not None and committed >= end:
            context.info("[%d, %d): already mirrored (shadow group at %d); skipped", start, end, committed)
            return RangeResult(topic, partition, 0, True, mode)
        if committed is not None and committed < start:
            raise DataLossError(
                f"{topic}-{partition}: the planned range starts at {start} but the shadow group holds "
                f"{committed}; records [{committed}, {start}) would be lost. Delete the Spark checkpoint "
                "to replan from the shadow group"
            )
        begin = start if committed is None else committed
        try:
            copied = _copy(
                config,
                path,
                SourcePartition(topic, partition),
                target,
                begin=begin,
                end=end,
                shadow=shadow,
                metadata=commit_metadata(topic_id),
            )
        except BaseException:
            if committer.open:
                committer.abort()
            raise
        context.info("[%d, %d): %d records mirrored in %s mode", begin, end, copied, mode)
        return RangeResult(topic, partition, copied, False, mode)
    finally:
        shadow.close()
        if path is not None:
            path.close()
        source.close()


def _copy(
    config: MirrorSinkConfig,
    path: DataPath,
    source: SourcePartition,
    target: TargetPartition,
    *,
    begin: int,
    end: int,
    shadow: Consumer,
    metadata: str,
) -> int:
    """Copy [begin, end) in transactions bounded as a worker task's are (``CycleBounds``: time and
    bytes), each committing how far it got, so a large range makes progress that a retry keeps."""
    group_metadata = GroupMetadata.of(shadow)
    bounds = CycleBounds.of(config)  # a worker task's cycle ends by the same rule
    stall_limit_s = config.transaction_timeout_ms / 1000
    syncs = config.offset_syncs_partition is not None
    path.stop_at({source: end})
    path.assign({source: begin}, {source: target})
    copied, done, last_progress = 0, begin, time.monotonic()
    while done < end:
        bounds.schedule()
        position = done
        while position < end and not bounds.due():
            path.committer.begin()  # this loop is the range's cycle: it alone begins, commits, aborts
            step = path.copy(0.1)
            copied += step.records
            bounds.add(step.bytes)
            moved = path.positions({source: position})[source]
            if moved > position or step.records:
                last_progress = time.monotonic()
            position = max(position, moved)
            if time.monotonic() - last_progress > stall_limit_s:
                raise TaskFailure(f"{source.topic}-{source.partition}: stuck at offset {position} before {end}")
        if position > done or path.committer.open:
            spans = [SyncSpan(target, source.topic, done, position)] if syncs and position > done else []
            offsets = [TopicPartition(target.topic, target.partition, position, metadata=metadata)]
            path.committer.commit(offsets, shadow, group_metadata, spans)
        bounds.take()
        done = position
    return copied
