"""Where mirroring of a source partition starts, for the worker's tasks and the Spark planner alike.

The shadow group on the target holds the next source offset of every mirrored partition, under the
target partition (``T-p`` holds the position of ``S-p``). It is read stable (``require_stable``): a
transaction still open on it is waited out, never mistaken for "no offset". Where the group holds
nothing, ``offset.fallback`` decides: ``earliest`` / ``latest`` resolve to a real offset now (so a
restart cannot resolve "latest" again and skip what came between), and ``source-group`` copies the
committed offsets of a source group once (KIP-656's one-time sync), falling back to earliest.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirror_sink.config.mirror_sink_config import (
    MirrorSinkConfig,
    OffsetFallback,
    OffsetGapPolicy,
    TopicRecreationPolicy,
)
from mirror_sink.core.base.errors import RecoverableTaskFailure, Retriable
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition, fmt_offsets, fmt_partitions
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.stable_offsets import read_stable_commits, read_stable_offsets
from mirror_sink.core.formats.commit_metadata import source_topic_ids, stored_leader_epoch, stored_topic_id
from mirror_sink.core.formats.skipped_ranges import Recreation, SkippedRange
from mirror_sink.core.runtime.logs import Log
from mirror_sink.core.runtime.retry import retry_call
from mirror_sink.task.source_continuity import Crossings, StoredOffset, check_continuity

#: How long a source partition's offsets may stay unreadable (a partition added moments ago).
_WATERMARK_DEADLINE_S = 30.0
_SOURCE_GROUP_DEADLINE_S = 60.0


@dataclass(frozen=True)
class StartOffsets:
    """Resolved start offsets, which of them the shadow group does not hold yet, the id of each
    source topic now (committed beside its offsets from here on), the ranges to skip to reach
    them (``offset.gap.policy=skip``; their partitions start at each range's end), and the
    partitions of recreated topics continued from the new topic's start
    (``topic.recreation.policy=continue``)."""

    offsets: dict[SourcePartition, int]
    unsaved: frozenset[SourcePartition]
    topic_ids: dict[str, str]
    skipped: dict[SourcePartition, SkippedRange]
    recreated: dict[SourcePartition, Recreation]
    #: The source leader epoch stored with each offset that is continued from as it is (KIP-320).
    leader_epochs: dict[SourcePartition, int]


class StartOffsetResolver:
    """Resolves start offsets with the clients of its caller (a task's run, or the Spark planner).

    ``shadow`` is a read_committed consumer in the shadow group on the target (a task passes its
    coordination member); ``source`` is a read_committed consumer on the source, for watermarks.
    """

    def __init__(
        self, config: MirrorSinkConfig, *, shadow: Consumer, source: Consumer, client_id: str, log: Log
    ) -> None:
        self.config = config
        self.shadow = shadow
        self.source = source
        self.client_id = client_id
        self.log = log
        self._source_admin: AdminClient | None = None

    def resolve(self, pairs: Mapping[TargetPartition, SourcePartition]) -> StartOffsets:
        """The start offset of each source partition in ``pairs`` (keyed by its target partition).

        Raises ``SourceDiscontinuity`` when a stored offset cannot be continued from (its records were
        deleted, its topic was created again, the source ends before it): never skipped silently. With
        ``offset.gap.policy=skip``, deleted records are returned as ranges to skip, and their
        partitions start at the first offset still there; with ``topic.recreation.policy=continue``,
        a recreated topic's partitions start at the new topic's offset 0.
        """
        give_up_s = self.config.transaction_timeout_ms / 1000 + 30
        commits = read_stable_commits(self.shadow, pairs, give_up_after_s=give_up_s)
        topic_ids = source_topic_ids(self._admin(), [source.topic for source in pairs.values()])
        stored: dict[SourcePartition, StoredOffset] = {}
        missing: list[SourcePartition] = []
        for target, source in pairs.items():
            commit = commits.get(target)
            if commit is None:
                missing.append(source)
            else:
                meta = commit.metadata
                stored[source] = StoredOffset(commit.offset, stored_topic_id(meta), stored_leader_epoch(meta))
        crossings = self.check(stored, topic_ids)
        offsets = {source: crossings.start(source, held.offset) for source, held in stored.items()}
        if missing:
            offsets.update(self._fallback(missing))
        skipped = {gap.source: gap for gap in crossings.skipped}
        recreated = {event.source: event for event in crossings.recreated}
        epochs = {
            source: held.leader_epoch
            for source, held in stored.items()
            if held.leader_epoch is not None and offsets[source] == held.offset
        }
        return StartOffsets(offsets, frozenset(missing), topic_ids, skipped, recreated, epochs)

    def check(
        self, stored: Mapping[SourcePartition, StoredOffset], topic_ids: Mapping[str, str] | None = None
    ) -> Crossings:
        """Raise ``SourceDiscontinuity`` naming every partition of ``stored`` that cannot be continued
        from (``topic_ids``: the topics' ids now, read when not given); return what the policies let
        the mirror go past instead (deleted ranges to step over, recreated topics to continue)."""
        if not stored:
            return Crossings([], [])
        if topic_ids is None:
            topic_ids = source_topic_ids(self._admin(), [tp.topic for tp in stored])
        watermarks = {tp: self.watermarks(tp) for tp in stored}
        return check_continuity(
            stored,
            watermarks,
            topic_ids,
            self.config.shadow_group_id,
            skip_deleted=self.config.offset_gap_policy is OffsetGapPolicy.SKIP,
            continue_recreated=self.config.topic_recreation_policy is TopicRecreationPolicy.CONTINUE,
        )

    def topic_ids_now(self, topics: list[str]) -> dict[str, str]:
        """The current id of each of ``topics`` that exists on the source."""
        return source_topic_ids(self._admin(), topics)

    def _admin(self) -> AdminClient:
        if self._source_admin is None:
            self._source_admin = clients.admin(self.config.source_admin(), f"{self.client_id}-topic-ids")
        return self._source_admin

    def _fallback(self, partitions: list[SourcePartition]) -> dict[SourcePartition, int]:
        fallback = self.config.offset_fallback
        out: dict[SourcePartition, int] = {}
        todo = list(partitions)
        if fallback is OffsetFallback.SOURCE_GROUP:
            group = self.config.offset_fallback_group_id
            reader = clients.source_consumer(self.config.source_consumer(), group, f"{self.client_id}-copy")
            try:
                copied = read_stable_offsets(reader, todo, give_up_after_s=_SOURCE_GROUP_DEADLINE_S)
            finally:
                reader.close()
            out.update({SourcePartition(*tp): offset for tp, offset in copied.items() if offset is not None})
            todo = [tp for tp in todo if tp not in out]
            if out:
                self.log.info("copied start offsets once from source group %s: %s", group, fmt_offsets(out))
        for tp in todo:
            low, high = self.watermarks(tp)
            out[tp] = high if fallback is OffsetFallback.LATEST else low
        if todo:
            self.log.info("no stored offsets for %s; starting at %s", fmt_partitions(todo), fallback.value)
        return out

    def watermarks(self, tp: SourcePartition) -> tuple[int, int]:
        """Log start and last stable offset (the consumer is read_committed) of a source partition."""

        def read() -> tuple[int, int]:
            try:
                low, high = self.source.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=10)
                return int(low), int(high)
            except KafkaException as exc:
                # A partition added moments ago is missing from the consumer's cached metadata until
                # the next refresh, minutes away: ask for it now. Only a hint: with a source broker
                # down the metadata request may time out too, and that must be retried, not fail
                # the task (a soak's source broker SIGKILL did).
                with contextlib.suppress(KafkaException):
                    self.source.list_topics(tp.topic, timeout=10)
                raise Retriable(str(exc)) from exc

        try:
            return retry_call(read, f"offsets of {tp}", deadline_s=_WATERMARK_DEADLINE_S, max_delay_s=0.2)
        except Retriable as exc:
            raise RecoverableTaskFailure(f"cannot read the offsets of source partition {tp}: {exc}") from exc
