"""Never skip silently: the offsets the shadow group holds, checked against the source they came from.

A stored offset says "everything before this was mirrored". Three things break that promise, and
each is named here, for every affected partition at once, instead of being crossed:

- **records deleted before they were mirrored** (retention, DeleteRecords): the stored offset lies
  below the partition's log start. The message gives the first missing offset and the first one
  still there;
- **a topic deleted and created again under the same name**: a new topic id. The id is kept with
  every offset the mirror commits (its commit metadata, ``source-topic-id=...``), so a recreation is
  seen whether the new topic is smaller than before or has already grown past the stored offset
  (the case where offsets alone would fit and the new topic's first records would be lost);
- **a source that ends before the stored offset** without an id to compare (offsets stored before
  ids were, or a log truncated after an unclean leader election).

Only the first two may be gone past, and only when the operator says so: deleted records are
stepped over with ``offset.gap.policy=skip``, and a recreated topic's new incarnation is mirrored from
its start with ``topic.recreation.policy=continue``. Either is then recorded
(``mirror_sink.core.formats.skipped_ranges``), never crossed silently. A truncated log always stops the mirror.

The checks run where mirroring of a partition starts (``StartOffsetResolver``, for the worker's
tasks and the Spark planner alike) and when a running task's fetch finds its offset gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.formats.skipped_ranges import Recreation, SkippedRange


@dataclass(frozen=True)
class StoredOffset:
    """What the shadow group holds for one source partition."""

    offset: int
    topic_id: str | None
    #: The source leader epoch of the record before ``offset`` (None: not stored).
    leader_epoch: int | None = None


class SourceDiscontinuity(TaskFailure):
    """Mirroring cannot go on without skipping records: the message names every partition and why."""


@dataclass(frozen=True)
class Crossings:
    """The breaks in the source the operator's policies let the mirror go past: ranges deleted before
    they were mirrored, to step over, and partitions of recreated topics, to continue from 0."""

    skipped: list[SkippedRange]
    recreated: list[Recreation]

    def __bool__(self) -> bool:
        return bool(self.skipped or self.recreated)

    def start(self, tp: SourcePartition, stored: int) -> int:
        """Where ``tp`` goes on, which ``stored`` was before the crossings."""
        gap = next((g for g in self.skipped if g.source == tp), None)
        if gap is not None:
            return gap.first_present
        return 0 if any(r.source == tp for r in self.recreated) else stored

    def describe(self) -> str:
        """Every crossing, for logs."""
        return ", ".join(
            [f"skipping {gap.describe()}" for gap in self.skipped]
            + [f"continuing the new topic of {event.describe()} from offset 0" for event in self.recreated]
        )


def check_continuity(
    stored: Mapping[SourcePartition, StoredOffset],
    watermarks: Mapping[SourcePartition, tuple[int, int]],
    topic_ids: Mapping[str, str],
    group: str,
    *,
    skip_deleted: bool = False,
    continue_recreated: bool = False,
) -> Crossings:
    """Raise ``SourceDiscontinuity`` when any stored offset can no longer be continued from.

    ``watermarks`` hold each partition's log start and last stable offset now; ``topic_ids`` each
    topic's id now. With ``skip_deleted`` (``offset.gap.policy=skip``), records deleted before they
    were mirrored are returned as the ranges to skip instead; with ``continue_recreated``
    (``topic.recreation.policy=continue``), a recreated topic's partitions are returned to continue
    from the new topic's offset 0 (itself checked for deleted records), when nothing else is wrong.
    """
    recreated: dict[str, list[str]] = {}
    gone: list[str] = []
    skipped: list[SkippedRange] = []
    continued: list[Recreation] = []
    beyond: list[str] = []
    for tp, held in sorted(stored.items()):
        now_id = topic_ids.get(tp.topic)
        low, high = watermarks[tp]
        if held.topic_id and now_id and held.topic_id != now_id and continue_recreated:
            continued.append(Recreation(tp, held.topic_id, now_id, held.offset))
            # The new topic is mirrored from 0: records its retention already took are a gap like any.
            if low > 0 and skip_deleted:
                skipped.append(SkippedRange(tp, now_id, 0, low))
            elif low > 0:
                again = f"{tp} (created again, topic id {now_id})"
                gone.append(f"{again}: first missing 0, first still there {low} ({low} records)")
        elif held.topic_id and now_id and held.topic_id != now_id:
            recreated.setdefault(tp.topic, []).append(f"{tp} at {held.offset} (the topic now holds {low}..{high})")
        elif held.offset < low and skip_deleted:
            skipped.append(SkippedRange(tp, held.topic_id or now_id, held.offset, low))
        elif held.offset < low:
            gone.append(f"{tp}: first missing {held.offset}, first still there {low} ({low - held.offset} records)")
        elif held.offset > high:
            beyond.append(f"{tp}: mirrored up to {held.offset}, the source ends at {high}")
    problems = []
    for topic, where in recreated.items():
        old_id = next(s.topic_id for tp, s in stored.items() if tp.topic == topic and s.topic_id)
        problems.append(
            f"source topic {topic} was deleted and created again: the shadow group {group} holds offsets of "
            f"topic id {old_id}, the topic now has id {topic_ids[topic]} ({'; '.join(where)}). None of the new "
            "topic's records were mirrored (topic.recreation.policy=continue mirrors them from its start)"
        )
    if gone:
        problems.append(
            "source records were deleted before they were mirrored (retention or DeleteRecords): " + "; ".join(gone)
        )
    if beyond:
        problems.append(
            "the source ends before what was mirrored (a topic created again under the same name before its id "
            "was stored, or a log truncated after an unclean leader election): " + "; ".join(beyond)
        )
    if problems:
        raise SourceDiscontinuity(
            ". ".join(problems) + ". Nothing was skipped: the mirror stops rather than cross the gap "
            "(docs/troubleshooting.md says what to do)"
        )
    return Crossings(skipped, continued)
