"""What the shadow group holds for the partitions a task reads, and what its next commit must save:
the one owner of a cycle's bookkeeping.

``Ownership`` tells it when partitions come and go and when a policy lets the task go past a break
(a skipped range, a recreated topic); ``CommitPlan`` reads it to build a commit; ``Cycle`` hands it
each commit that succeeded (``applied``), and an aborted cycle rewinds to what it holds. Nothing
else writes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.formats.skipped_ranges import Recreation, SkippedRange
from mirror_sink.core.runtime.logs import Log


@dataclass(frozen=True)
class Recorded:
    """The breaks a successful commit recorded (an audit record and an offset-sync marker each)."""

    skipped: list[SkippedRange] = field(default_factory=list)
    recreated: list[Recreation] = field(default_factory=list)


class Unrecorded:
    """The crossings no commit has recorded yet, per source partition: the next commit records each
    with the offset that moves past it, or none of them (an audit record and a marker in the offset
    syncs, in the same transaction)."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.skipped: dict[SourcePartition, SkippedRange] = {}
        self.recreated: dict[SourcePartition, Recreation] = {}

    def __bool__(self) -> bool:
        return bool(self.skipped or self.recreated)

    def __contains__(self, tp: object) -> bool:
        return tp in self.skipped or tp in self.recreated

    def skip(self, gap: SkippedRange) -> SkippedRange:
        """Step over ``gap``; the range to record, which starts at an earlier unrecorded one of its
        partition (retention may overtake again before the first is recorded: one range from the
        first offset missing to the first offset still there)."""
        earlier = self.skipped.get(gap.source)
        first = earlier.first_missing if earlier is not None else gap.first_missing
        merged = self.skipped[gap.source] = SkippedRange(gap.source, gap.topic_id, first, gap.first_present)
        self.log.warning(
            "offset.gap.policy=skip: %s were deleted on the source before they were mirrored; stepping over "
            "them, and the next commit records the range",
            merged.describe(),
        )
        return merged

    def recreation(self, event: Recreation, target: object) -> None:
        """Continue the recreated topic of ``event`` from its start into ``target``."""
        self.recreated[event.source] = event
        self.log.warning(
            "topic.recreation.policy=continue: the topic of %s was deleted and created again; mirroring the new "
            "topic from offset 0 into %s, and the next commit records the recreation",
            event.describe(),
            target,
        )

    def forget(self, tp: SourcePartition) -> None:
        """``tp`` is no longer read here: its next owner finds its crossings again."""
        self.skipped.pop(tp, None)
        self.recreated.pop(tp, None)

    def take(self) -> Recorded:
        """Every crossing was committed with its offset: what they were, and none is left."""
        recorded = Recorded(list(self.skipped.values()), list(self.recreated.values()))
        self.skipped.clear()
        self.recreated.clear()
        return recorded


class CommitState:
    """The committed offset and leader epoch of each partition read, the starts no commit has saved,
    and the crossings no commit has recorded."""

    def __init__(self, log: Log) -> None:
        self._committed: dict[SourcePartition, int] = {}
        self._leader_epochs: dict[SourcePartition, int] = {}
        self._unsaved_start: set[SourcePartition] = set()
        #: Ranges stepped over (``offset.gap.policy=skip``) and recreated topics continued from their
        #: new start (``topic.recreation.policy=continue``) that no commit has recorded yet.
        self.unrecorded = Unrecorded(log)

    @property
    def committed(self) -> Mapping[SourcePartition, int]:
        """The next source offset the shadow group holds for each partition read: the rewind point."""
        return self._committed

    @property
    def leader_epochs(self) -> Mapping[SourcePartition, int]:
        """The source leader epoch of the record before each committed offset, where known: committed
        beside it, and sent with the first fetch after a start or rewind (KIP-320)."""
        return self._leader_epochs

    def rewind_points(self, partitions: Iterable[SourcePartition]) -> dict[SourcePartition, int]:
        """The committed offset of each of ``partitions`` (every one must be read here)."""
        return {tp: self._committed[tp] for tp in partitions}

    def unsaved(self, tp: SourcePartition) -> bool:
        """Whether ``tp``'s start offset was chosen by the fallback and no commit has saved it yet."""
        return tp in self._unsaved_start

    @property
    def to_save(self) -> bool:
        """Whether the next commit has starts to save or crossings to record, data or not."""
        return bool(self._unsaved_start or self.unrecorded)

    # -- partitions coming and going ------------------------------------------------------------
    def started(
        self,
        offsets: Mapping[SourcePartition, int],
        leader_epochs: Mapping[SourcePartition, int],
        unsaved: Iterable[SourcePartition],
    ) -> None:
        """Partitions start being read at ``offsets``; the ``unsaved`` ones are saved by the next
        commit, so a restart cannot resolve "latest" again."""
        self._committed.update(offsets)
        self._leader_epochs.update(leader_epochs)
        self._unsaved_start |= set(unsaved)

    def forget(self, partitions: Iterable[SourcePartition]) -> None:
        """``partitions`` are no longer read here."""
        for tp in partitions:
            self._committed.pop(tp, None)
            self._leader_epochs.pop(tp, None)
            self._unsaved_start.discard(tp)
            self.unrecorded.forget(tp)

    # -- crossings ------------------------------------------------------------------------------
    def skip(self, gap: SkippedRange) -> None:
        """Step over a range deleted before it was mirrored: the partition goes on from the first
        offset still there, and the next commit records the range."""
        self._committed[gap.source] = self.unrecorded.skip(gap).first_present
        self._leader_epochs.pop(gap.source, None)

    def continue_recreated(self, event: Recreation, target: object, start: int | None = None) -> None:
        """Mirror the recreated topic of ``event`` from ``start`` (None: where the start offsets put
        it) into ``target``; the next commit records the recreation."""
        if start is not None:
            self._committed[event.source] = start
            self._leader_epochs.pop(event.source, None)
        self.unrecorded.recreation(event, target)

    # -- commits --------------------------------------------------------------------------------
    def epochs_for(
        self, offsets: Mapping[SourcePartition, int], copied: Mapping[SourcePartition, int]
    ) -> dict[SourcePartition, int]:
        """The source leader epoch of the record before each offset of ``offsets``: the one the cycle
        ``copied`` last, or the committed one when the offset did not move (an older epoch beside a
        newer offset would read as a divergence)."""
        epochs = {tp: e for tp, e in self._leader_epochs.items() if offsets.get(tp) == self._committed.get(tp)}
        epochs.update(copied)
        return epochs

    def applied(self, offsets: Mapping[SourcePartition, int], epochs: Mapping[SourcePartition, int]) -> Recorded:
        """A commit of ``offsets`` (with ``epochs``) succeeded: they are the rewind points now, every
        start is saved, and every crossing recorded; returns the crossings it recorded."""
        self._committed.update(offsets)
        self._leader_epochs.update({tp: epochs[tp] for tp in offsets if tp in epochs})
        self._unsaved_start.clear()
        return self.unrecorded.take()
