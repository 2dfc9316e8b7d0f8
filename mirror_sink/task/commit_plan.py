"""What a cycle's commit carries, read from the task's ownership: the source offsets that moved on,
each partition's offset-sync span, and the audit records of the breaks the commit steps over.

Kept apart from ``Cycle``, which decides when to commit: this decides what, and is the same for
both data paths.
"""

from __future__ import annotations

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.formats.offset_syncs import SyncSpan
from mirror_sink.core.formats.skipped_ranges import AuditRecord, Recreation, SkippedRange
from mirror_sink.task.ownership import Ownership
from mirror_sink.task.task_run import TaskRun


class CommitPlan:
    """The contents of the open cycle's commit, as ownership and the data path stand now."""

    def __init__(self, run: TaskRun, ownership: Ownership) -> None:
        self.run = run
        self.ownership = ownership

    def offsets(self) -> dict[SourcePartition, int]:
        """The next source offset of every partition that moved on (or whose start is unsaved).

        The source position is past every record returned and also past control records and
        aborted batches, so committing it lets the shadow group reach the source's end offsets exactly.
        """
        own, state = self.ownership, self.ownership.state
        positions = self.run.path.positions(state.rewind_points(own.reading))
        return {
            tp: position
            for tp, position in positions.items()
            if position > state.committed[tp] or state.unsaved(tp) or tp in state.unrecorded
        }

    def span(self, source: SourcePartition, offset: int) -> SyncSpan:
        """What the cycle consumed of ``source``: from the committed offset, or from the start of a
        range skipped on the way (the span then opens with the gap), opening a new incarnation of
        the source topic when it was created again."""
        own, unrecorded = self.ownership, self.ownership.state.unrecorded
        gap = unrecorded.skipped.get(source)
        event = unrecorded.recreated.get(source)
        new_id = None if event is None else event.new_topic_id
        if gap is None:
            return SyncSpan(own.reading[source], source.topic, own.state.committed[source], offset, None, new_id)
        return SyncSpan(own.reading[source], source.topic, gap.first_missing, offset, gap.first_present, new_id)

    def audit(self) -> list[AuditRecord]:
        """One audit record per recreation the commit continues and per range it steps over."""
        own, cfg = self.ownership, self.run.config
        where = cfg.gaps_partition
        unrecorded = own.state.unrecorded
        events: list[Recreation | SkippedRange] = [*unrecorded.recreated.values(), *unrecorded.skipped.values()]
        if not events:
            return []
        if where is None:
            raise TaskFailure("internal error: a break to record without offset.gap.policy or topic.recreation.policy")
        return [
            AuditRecord(
                where,
                event.audit_key(),
                event.audit_value(
                    source_alias=cfg.source_alias,
                    target=own.reading[event.source],
                    connector=cfg.name,
                    task=self.run.slot,
                ),
            )
            for event in events
        ]
