"""Any consumer's offsets translated exactly between the clusters, for consumers outside groups.

Spark Structured Streaming keeps its Kafka offsets in its checkpoint, Flink in its state, and some
applications in a database: a failover that moves consumer groups moves none of them. The offset
syncs (``mirror_sink.core.formats.offset_syncs``) map every mirrored source offset to the target offset it
landed at, so any offset can be translated exactly, or the reason it cannot be is named:

- ``exact``: the answer is exact. Source to target, it is the target offset of the first mirrored
  record at or after the source offset (MirrorMaker 2's checkpoint meaning: a consumer resuming
  there reads exactly the records it had not read). Target to source, the source offset of the first
  mirrored record at or after the target offset.
- ``skipped-range``: the source records from that offset on were deleted before they were mirrored
  and skipped on purpose (``offset.gap.policy=skip``); no target offset is exact.
- ``before-syncs``: the offset is older than the oldest offset sync kept
  (``offset-syncs.topic.retention.ms``).
- ``not-yet-mirrored``: the mirror has not committed that far yet (source to target only).
- ``not-mirrored``: this connector does not mirror that partition, or has committed nothing of it.

Offsets mean what Kafka's committed offsets mean: the next record to read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.offset_syncs import OffsetIndex, PartitionIndex
from mirror_sink.failover.common.readers import OffsetSyncReader

log = logging.getLogger(__name__)


class Direction(StrEnum):
    """Which way an offset is translated."""

    SOURCE_TO_TARGET = "source-to-target"
    TARGET_TO_SOURCE = "target-to-source"


class Outcome(StrEnum):
    """What a translation could say (see the module)."""

    EXACT = "exact"
    SKIPPED_RANGE = "skipped-range"
    BEFORE_SYNCS = "before-syncs"
    NOT_YET_MIRRORED = "not-yet-mirrored"
    NOT_MIRRORED = "not-mirrored"


@dataclass(frozen=True, slots=True)
class TopicOffset:
    """An offset of one partition of one topic, on either cluster."""

    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}@{self.offset}"


@dataclass(frozen=True, slots=True)
class TranslatedOffset:
    """One asked offset, what the translation found, and the answer when it is exact."""

    asked: TopicOffset
    outcome: Outcome
    answer: TopicOffset | None
    reason: str

    @property
    def exact(self) -> bool:
        """Whether ``answer`` is set (and exact)."""
        return self.outcome is Outcome.EXACT

    def to_dict(self) -> dict[str, object]:
        """The JSON shape of the REST API and ``--json``."""
        out: dict[str, object] = {
            "topic": self.asked.topic,
            "partition": self.asked.partition,
            "offset": self.asked.offset,
            "result": self.outcome.value,
            "translated": None,
            "reason": self.reason,
        }
        if self.answer is not None:
            out["translated"] = {
                "topic": self.answer.topic,
                "partition": self.answer.partition,
                "offset": self.answer.offset,
            }
        return out


#: Kafka's special "offsets" in a consumer's stored positions (Spark writes them for new partitions):
#: earliest (-2) and latest (-1) mean the same on either cluster.
SPECIAL_OFFSETS = (-2, -1)


def answer_offsets(
    index: OffsetIndex,
    asked: Iterable[TopicOffset],
    direction: Direction,
    *,
    mirrored_name: Callable[[str], str | None],
) -> list[TranslatedOffset]:
    """Translate each of ``asked`` through ``index``; pure logic (no cluster).

    ``mirrored_name(topic)`` is the other cluster's name of a topic the connector mirrors (None for a
    topic it does not): it tells a partition the connector does not mirror from one it mirrors but
    has no offset sync of.
    """
    by_source = {(index.source_topics[tp], tp.partition): tp for tp in index.partitions}
    out = []
    for offset in asked:
        if direction is Direction.SOURCE_TO_TARGET:
            target = by_source.get((offset.topic, offset.partition))
            out.append(_to_target(index, offset, target, mirrored_name))
        else:
            out.append(_to_source(index, offset, mirrored_name))
    return out


def _unknown(offset: TopicOffset, other: str | None, side: str) -> TranslatedOffset:
    if other is None:
        reason = f"this connector does not mirror {offset.topic} ({side})"
    else:
        reason = (
            f"no offset sync of {offset.topic}-{offset.partition} is kept: the mirror has committed nothing of "
            f"it, or its syncs expired (offset-syncs.topic.retention.ms)"
        )
    return TranslatedOffset(offset, Outcome.NOT_MIRRORED, None, reason)


def _to_target(
    index: OffsetIndex,
    offset: TopicOffset,
    target: TargetPartition | None,
    mirrored_name: Callable[[str], str | None],
) -> TranslatedOffset:
    if target is None:
        return _unknown(offset, mirrored_name(offset.topic), "on the source")
    if offset.offset in SPECIAL_OFFSETS:
        answer = TopicOffset(target.topic, target.partition, offset.offset)
        return TranslatedOffset(offset, Outcome.EXACT, answer, "earliest or latest: the same on either cluster")
    partition = index.partitions[target]
    start, end = partition.source_start, partition.source_end
    assert start is not None  # a partition in the index has had a sync
    if offset.offset < start:
        return TranslatedOffset(
            offset,
            Outcome.BEFORE_SYNCS,
            None,
            f"older than the oldest offset sync kept (source offset {start}; offset-syncs.topic.retention.ms)",
        )
    if offset.offset > end:
        return TranslatedOffset(
            offset, Outcome.NOT_YET_MIRRORED, None, f"the mirror has committed up to source offset {end} so far"
        )
    gap = partition.gap_in_the_way(offset.offset)
    if gap is not None:
        first, after = gap
        return TranslatedOffset(
            offset,
            Outcome.SKIPPED_RANGE,
            None,
            f"source offsets {first}..{after - 1} were deleted on the source before they were mirrored and "
            "skipped (offset.gap.policy=skip): no target offset is exact",
        )
    translated = partition.translate(offset.offset)
    if translated is None:  # below every run kept although inside the range: the syncs were pruned
        return TranslatedOffset(offset, Outcome.BEFORE_SYNCS, None, "older than the offset syncs kept")
    return TranslatedOffset(offset, Outcome.EXACT, TopicOffset(target.topic, target.partition, translated), "")


def _to_source(index: OffsetIndex, offset: TopicOffset, mirrored_name: Callable[[str], str | None]) -> TranslatedOffset:
    target = TargetPartition(offset.topic, offset.partition)
    partition: PartitionIndex | None = index.partitions.get(target)
    if partition is None:
        return _unknown(offset, mirrored_name(offset.topic), "on the target")
    source_topic = index.source_topics[target]
    if offset.offset in SPECIAL_OFFSETS:
        answer = TopicOffset(source_topic, offset.partition, offset.offset)
        return TranslatedOffset(offset, Outcome.EXACT, answer, "earliest or latest: the same on either cluster")
    found = partition.source_of(offset.offset)
    if found is None:
        return TranslatedOffset(
            offset,
            Outcome.BEFORE_SYNCS,
            None,
            "older than the oldest offset sync kept (offset-syncs.topic.retention.ms)",
        )
    return TranslatedOffset(offset, Outcome.EXACT, TopicOffset(source_topic, offset.partition, found), "")


def mirrored_names(config: MirrorSinkConfig, direction: Direction) -> Callable[[str], str | None]:
    """The connector's topic mapping, one way: a source topic's target name, or a target topic's
    source name (None where the connector does not mirror the topic, or its policy cannot tell)."""
    policy = config.replication_policy()
    accepts = config.topic_filter().accepts

    def to_target(topic: str) -> str | None:
        return policy.format_remote_topic(config.source_alias, topic) if accepts(topic) else None

    def to_source(topic: str) -> str | None:
        upstream = policy.upstream_topic(topic)
        if upstream is None and policy.format_remote_topic(config.source_alias, topic) == topic:
            upstream = topic  # IdentityReplicationPolicy: the same name on both clusters
        return upstream if upstream is not None and accepts(upstream) else None

    return to_target if direction is Direction.SOURCE_TO_TARGET else to_source


class OffsetTranslator:
    """Translates offsets with one connector's committed offset syncs, read from the target.

    Each ``translate`` first reads the syncs committed since the last call, so an answer is never
    older than the call. Close it to release its consumer.
    """

    def __init__(self, config: MirrorSinkConfig, client_id: str | None = None) -> None:
        syncs = config.offset_syncs_partition
        if syncs is None:
            raise ConfigError(
                "emit.offset-syncs.enabled",
                "offsets can only be translated with the offset syncs, written with emit.offset-syncs.enabled=true "
                "and transaction.producer=true (the defaults)",
            )
        self.config = config
        self._reader = OffsetSyncReader(config.target_consumer(), syncs.topic, client_id or f"{config.name}-translate")

    def translate(
        self, asked: Sequence[TopicOffset], direction: Direction = Direction.SOURCE_TO_TARGET
    ) -> list[TranslatedOffset]:
        """Each asked offset translated (in the order asked); raises TaskFailure if the target cannot be read."""
        index = self._reader.catch_up(timeout_s=60.0)
        answers = answer_offsets(index, asked, direction, mirrored_name=mirrored_names(self.config, direction))
        exact = sum(a.exact for a in answers)
        log.info("translated %d of %d offsets %s exactly", exact, len(answers), direction.value)
        return answers

    def close(self) -> None:
        """Release the consumer of the offset-syncs topic."""
        self._reader.close()


def translate_offsets(
    config: MirrorSinkConfig,
    asked: Sequence[TopicOffset],
    direction: Direction = Direction.SOURCE_TO_TARGET,
) -> list[TranslatedOffset]:
    """Translate ``asked`` with ``config``'s offset syncs, once (see the module for the answers).

    Example: where does a consumer that had read ``orders`` partition 0 up to offset 1200 on the
    source resume on the target?

    >>> config = MirrorSinkConfig.parse(load_connector_config(Path("mirror.json")))  # doctest: +SKIP
    >>> [t] = translate_offsets(config, [TopicOffset("orders", 0, 1200)])  # doctest: +SKIP
    >>> t.outcome, t.answer  # doctest: +SKIP
    (<Outcome.EXACT: 'exact'>, TopicOffset(topic='source.orders', partition=0, offset=1207))
    """
    translator = OffsetTranslator(config)
    try:
        return translator.translate(asked, direction)
    finally:
        translator.close()
