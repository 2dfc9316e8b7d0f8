"""The cycle both modes share: consume -> produce -> offsets -> commit, or abort and rewind.

Between cycles the shadow group is served (rebalances happen there, never inside a cycle). A cycle
copies what the data path has until it has caught up with the source (``transaction.boundary=caught-up``,
the default: a record waits for no timer once nothing else is ahead of it) or until
``transaction.max.bytes`` or ``transaction.boundary.interval.ms`` is reached (the bounds, and the
only boundaries with ``interval``), then commits the records and the next source offsets together;
the offsets go with the group metadata of the generation that owned the cycle's partitions, so a stale owner is fenced
(KIP-447). An aborted cycle rewinds every partition to its committed offset: nothing is committed half.

A range deleted on the source before it was mirrored stops the task, unless ``offset.gap.policy=skip``:
then the open cycle is aborted, the partition rewinds to the first offset still there, and the next
commit records the range (an audit record and a gap marker in the offset syncs) with the offset
that moves past it. A source topic deleted and created again stops the task too, unless
``topic.recreation.policy=continue``: then the open cycle is aborted (in record mode it may hold the
new topic's records read at the old offsets), the partition goes on from the new topic's offset 0,
and the next commit records the recreation (an audit record and a new-incarnation marker in the
offset syncs) with the new topic's first offset.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka import TopicPartition

from mirror_sink.config.mirror_sink_config import MirrorMode, TransactionBoundary
from mirror_sink.core.base.errors import AbortCycle, SourceOffsetOutOfRange, SwitchToRecordMode, TaskFailure
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.clients import clients
from mirror_sink.core.formats.group_cuts import GroupCut
from mirror_sink.core.formats.skipped_ranges import AuditRecord
from mirror_sink.core.interfaces.data_path import Copied
from mirror_sink.task.commit_plan import CommitPlan
from mirror_sink.task.cycle_bounds import CycleBounds
from mirror_sink.task.ownership import Ownership
from mirror_sink.task.source_group import SourceGroupCommits
from mirror_sink.task.target_leaders import TargetLeaders
from mirror_sink.task.task_metrics import TaskMetrics
from mirror_sink.task.task_run import TaskRun
from mirror_sink.topics.source_discovery import TopicMapping

_PROGRESS_INTERVAL_S = 30.0
#: How often an idle task's Fetch counters reach the metrics (a committing task's do at each commit).
_FETCH_COUNTS_S = 5.0
#: While a backlog is copied, a transaction lasts this many times the last wait for its
#: predecessor's markers (when longer than transaction.boundary.interval.ms), so that the wait,
#: which grows with the partitions a transaction touches, costs at most a fifth of the time.
_MARKER_WAIT_FACTOR = 4
#: ... but no longer than this, nor than a third of transaction.timeout.ms.
_LONGEST_INTERVAL_S = 30.0
#: How often an idle record-mode task saves positions librdkafka moved past transaction markers.
_IDLE_COMMIT_S = 5.0
#: The longest an idle task (nothing in its cycle) waits for data before it serves the group,
#: looks for new topics and counts its time again; new data ends the wait at once.
_IDLE_WAIT_S = 0.5
#: Keeping source transactions whole: a caught-up task takes a snapshot for its next cut at most this often.
_CUT_SPACING_S = 0.05
#: How long assigned target partitions may wait for their leaders before they are copied anyway.
_LEADER_WAIT_S = 30.0


def commit_interval_s(interval_s: float, marker_wait_s: float, timeout_s: float, *, backlog: bool) -> float:
    """How long the next transaction may last (``transaction.boundary=caught-up``).

    The configured interval, except while a backlog is copied: each commit writes a marker to every
    partition its transaction touched, and the next transaction cannot start until all are written
    (3.5-8 s at 1,000 partitions on a 2-core machine). With a one-second interval most of a backlog's
    time went to that wait; a transaction then lasts ``_MARKER_WAIT_FACTOR`` times the last wait,
    within ``_LONGEST_INTERVAL_S`` and a third of the transaction timeout. A caught-up task commits
    as soon as it has copied everything anyway, so its latency does not change.
    """
    if not backlog:
        return interval_s
    longest = min(_LONGEST_INTERVAL_S, timeout_s / 3)
    return max(interval_s, min(_MARKER_WAIT_FACTOR * marker_wait_s, longest))


@dataclass
class TaskCounters:
    """What the task has done, for progress logs and status."""

    records: int = 0
    bytes: int = 0
    commits: int = 0
    aborts: int = 0
    #: The transaction protocol the running task's producer speaks (2, 1, 0 without transactions;
    #: None before its first run).
    transaction_version: int | None = None


class Cycle:
    """Runs one run's cycles until asked to stop; a graceful stop commits the open cycle."""

    def __init__(self, run: TaskRun, ownership: Ownership, counters: TaskCounters, task_id: int = 0) -> None:
        self.run = run
        self.ownership = ownership
        self.counters = counters
        cfg = run.config
        self.metrics = TaskMetrics(cfg.name, task_id, cfg.source_alias, cfg.target_alias)
        counters.transaction_version = run.path.transaction_version()
        self.metrics.transaction_version(counters.transaction_version)
        self._rebalances_seen = 0
        self.log = run.log
        self.committer = run.committer
        self.path = run.path
        self.plan = CommitPlan(run, ownership)
        self._source_group = SourceGroupCommits(
            lambda offsets: run.source.commit(offsets=offsets, asynchronous=True), run.log
        )
        #: When the open cycle commits: the same rule as Spark's range copies (a full cycle, or its interval).
        self.bounds = CycleBounds.of(cfg)
        #: ``transaction.boundary.linger.ms``: a caught-up commit waits until this (the last commit's
        #: end plus the linger), so that records flowing steadily share a transaction and its markers.
        self._linger_s = run.config.transaction_linger_ms / 1000
        self._linger_until = 0.0
        self._aborting_since: float | None = None
        self._stop = threading.Event()
        self._abandoned = False  # a cycle that had to abort while stopping: left to fence or timeout
        #: Record mode reads by topic name: each commit first confirms the topics were not created again.
        self._confirm_topic_ids = run.mode == "record"
        #: Source transactions kept whole: the cycle copies up to the current cut and commits only there.
        self.cuts = run.cuts
        self._cut_reading: frozenset[SourcePartition] = frozenset()
        self._due_since: float | None = None  # a commit is due, the cut not reached yet
        interval_s = run.config.transaction_interval_ms / 1000
        #: Snapshots at most this often while caught up, and this often while a backlog is copied.
        self._cut_spacing_s = min(_CUT_SPACING_S, interval_s / 4)
        self._backlog_cut_spacing_s = max(_CUT_SPACING_S, interval_s / 2)
        #: A cut not reached this long after a commit was due is given up for that commit (counted).
        self._split_after_s = run.config.transaction_timeout_ms / 1000 / 3
        self._group_filter = run.config.group_filter()
        self._own_groups = {run.config.shadow_group_id, run.config.source_group_id}
        #: The group positions last written at a cut, so that only the ones that moved are written again.
        self._group_cuts_written: dict[tuple[str, SourcePartition], int] = {}
        #: Assigned target partitions whose leaders do not serve them yet: their sources are held.
        self.leaders = TargetLeaders(
            lambda: clients.admin(cfg.target_admin(), f"{run.slot}-target-leaders"), _LEADER_WAIT_S, run.log
        )
        self._leaders_reading: frozenset[SourcePartition] = frozenset()
        self._held_for_leaders = False

    def loop(self, stop: threading.Event, new_mappings: Callable[[], Mapping[str, TopicMapping] | None]) -> None:
        """Mirror until ``stop`` is set; ``new_mappings`` hands over topic changes between cycles."""
        self._stop = stop
        try:
            self._loop(stop, new_mappings)
        finally:
            self.metrics.stopped(self.path)  # stopped, paused or failed: no gauge shows a live task

    def _loop(self, stop: threading.Event, new_mappings: Callable[[], Mapping[str, TopicMapping] | None]) -> None:
        cfg = self.run.config
        own = self.ownership
        interval_s = cfg.transaction_interval_ms / 1000
        adaptive = cfg.transaction_boundary is TransactionBoundary.CAUGHT_UP
        auto_mode = cfg.mirror_mode is MirrorMode.AUTO
        jobs = _BetweenCycles(cfg.source_group_commit_interval_ms / 1000)
        while not stop.is_set():
            now = time.monotonic()
            if not self.committer.open:
                self._between_cycles(now, new_mappings, jobs)
            if not own.reading:
                own.poll(0.2) if own.mappings else stop.wait(0.2)
                continue
            if self.leaders.poll():
                self._hold()
            if own.state.to_save:
                # Save fallback start offsets, and record skipped ranges and recreations, at once.
                self.bounds.due_now()
            copied = self._copy(self._wait_s(now))
            if copied is None:
                continue
            self.counters.records += copied.records
            self.metrics.read(copied.records)
            self.bounds.add(copied.bytes)
            positions = self._positions() if self.cuts is not None else {}
            if (
                self.bounds.due(time.monotonic())
                or (
                    adaptive
                    and self.committer.open
                    and time.monotonic() >= self._linger_until
                    and self._caught_up(positions)
                )
            ) and self._at_cut(positions):
                self._commit_and_schedule(interval_s, adaptive=adaptive)
                if auto_mode and not self.committer.open and (why := self.path.record_mode_advised()):
                    raise SwitchToRecordMode(why)  # between cycles: nothing is open, nothing is lost
            if self.cuts is not None:
                self._next_cut(positions)
        if self.committer.open and not self._abandoned:
            self._finish_on_stop()
        self.commit_source_positions()
        self.log_progress()

    def _between_cycles(
        self, now: float, new_mappings: Callable[[], Mapping[str, TopicMapping] | None], jobs: _BetweenCycles
    ) -> None:
        """With no cycle open: take topic changes, serve the shadow group (rebalances happen here),
        hold back what waits for leaders or cuts, and run the periodic jobs that are due."""
        own = self.ownership
        mappings = new_mappings()
        if mappings is not None:
            own.update(mappings)
        own.serve()
        self.metrics.serving(len(own.reading), own.rebalances - self._rebalances_seen)
        self.metrics.cuts(self.cuts.counts if self.cuts is not None else None)
        if own.rebalances != self._rebalances_seen:
            # A new assignment starts a new streak: the old one's aborts (a session lost
            # while an abort waited on a dead coordinator) say nothing of what it can commit.
            self._aborting_since = None
        self._rebalances_seen = own.rebalances
        self._serve_leaders()
        self._serve_cuts()
        if jobs.lag_commit is not None and jobs.lag_commit.due(now):
            self.commit_source_positions()
        if jobs.progress.due(now):
            self.log_progress()
        if jobs.fetch_counts.due(now):
            self.metrics.fetches(self.path)

    def _wait_s(self, now: float) -> float:
        """How long the next copy may wait for data."""
        if self._to_commit():
            # Data ends the wait at once; without data the cycle commits at the interval or, caught
            # up, at the linger's end, so neither is overslept.
            due = self.bounds.due_at
            if self.committer.open and self._linger_until > now:
                due = min(due, self._linger_until)
            wait = max(0.0, min(0.1, due - now))
        elif self.path.positions_move_unseen:  # idle, but the next commit may save a moved position
            wait = max(0.0, min(_IDLE_WAIT_S, self.bounds.due_at - now))
        else:
            wait = _IDLE_WAIT_S  # nothing to commit until new data, which ends the wait
        if self.cuts is not None and self.path.holding():
            wait = min(wait, self._cut_spacing_s)  # held data waits for the next cut, not for new data
        if self._held_for_leaders:
            wait = min(wait, _CUT_SPACING_S)  # the leaders' answers are looked at between copies
        return wait

    def _commit_and_schedule(self, interval_s: float, *, adaptive: bool) -> None:
        """Commit what the cycle holds, if anything, and set when the next commit is due."""
        next_interval_s = interval_s
        if self._to_commit():
            self.commit()
            if adaptive:
                next_interval_s = commit_interval_s(
                    interval_s,
                    self.path.statistics().marker_wait_s,
                    self.run.config.transaction_timeout_ms / 1000,
                    backlog=not self.path.caught_up(),
                )
        elif self.path.positions_move_unseen:
            self.commit()  # save positions moved past transaction markers, now and then
            next_interval_s = max(interval_s, _IDLE_COMMIT_S)
        # (else nothing moved: no need to look at every partition's position)
        self.bounds.schedule(next_interval_s, now=time.monotonic())
        self._linger_until = time.monotonic() + self._linger_s

    def _finish_on_stop(self) -> None:
        """Graceful stop: commit the open cycle rather than throw it away, unless that would commit
        between two cuts (a source transaction could be left in part): then it is copied again."""
        if self.cuts is None or self.cuts.reached(self._positions()) or not self.path.took_transactional():
            self.commit()
            return
        self.log.info("stopping between two cuts: the open cycle is aborted and copied again on restart")
        self.committer.abort()

    # -- cuts of whole source transactions ------------------------------------------------------
    def _serve_cuts(self) -> None:
        """Between cycles: which source groups are read at cuts, and after new partitions (or some
        gone), start from what is committed and cut again."""
        own = self.ownership
        if self.cuts is None:
            return
        self.cuts.discover_groups(self._group_filter.accepts, self._own_groups)
        if frozenset(own.reading) == self._cut_reading:
            return
        self._cut_reading = frozenset(own.reading)
        self.cuts.reset(own.state.rewind_points(own.reading))
        self._hold()

    def _serve_leaders(self) -> None:
        """Between cycles, after a new assignment: its target partitions not known to be served are
        checked, and their sources held until they are (``TargetLeaders``)."""
        reading = frozenset(self.ownership.reading)
        if reading == self._leaders_reading:
            return
        self._leaders_reading = reading
        self.leaders.assign(self.ownership.reading.values())
        self.leaders.poll()
        self._hold()

    def _hold(self) -> None:
        """Tell the path what to hold: past the current cut, and all of a partition whose target
        partition is not served yet (at its committed offset: a lower limit would read as a
        position moved back)."""
        own = self.ownership
        limits = dict(self.cuts.limits) if self.cuts is not None else {}
        waiting = self.leaders.waiting
        if waiting:
            limits.update(own.state.rewind_points(tp for tp, target in own.reading.items() if target in waiting))
        if limits or self._held_for_leaders or self.cuts is not None:
            self.path.hold_at(limits)
        self._held_for_leaders = bool(waiting)

    def _positions(self) -> dict[SourcePartition, int]:
        own = self.ownership
        return self.path.positions(own.state.rewind_points(own.reading))

    def _caught_up(self, positions: Mapping[SourcePartition, int]) -> bool:
        """Nothing more to copy now: the path has caught up with the source, or (keeping source
        transactions whole) with the current cut, and no later cut is known yet."""
        if self.cuts is None:
            return self.path.caught_up()
        return self.cuts.reached(positions) and not self.cuts.pending

    def _at_cut(self, positions: Mapping[SourcePartition, int]) -> bool:
        """Whether a due commit may happen now: at the current cut (or without cuts); after
        ``_split_after_s`` of waiting for the cut, it happens anyway, said and counted."""
        if self.cuts is None or self.cuts.reached(positions) or not self.path.took_transactional():
            # (Nothing of a source transaction since the last commit: the positions are a cut themselves.)
            self._due_since = None
            return True
        now = time.monotonic()
        self._due_since = self._due_since or now
        if now - self._due_since < self._split_after_s:
            return False
        self.cuts.counts.split_commits += 1
        limits = self.cuts.limits
        behind = {tp: (positions.get(tp), limit) for tp, limit in limits.items() if positions.get(tp, -1) < limit}
        self.log.warning(
            "the cut was not reached in %.0f s (%s): committing before it, so source transactions may be split "
            "in this commit",
            now - self._due_since,
            ", ".join(f"{tp} at {at} of {limit}" for tp, (at, limit) in sorted(behind.items())[:10]),
        )
        self._due_since = None
        return True

    def _next_cut(self, positions: Mapping[SourcePartition, int]) -> None:
        """At the current cut: move to the next one (taken now if none is ahead and data waits).
        Short of it, while a backlog is copied: take cuts ahead now and then, so that the backlog
        is copied in cuts of about one snapshot interval each."""
        cuts = self.cuts
        assert cuts is not None
        reading = list(self.ownership.reading)
        with_groups = bool(cuts.groups)
        if not cuts.reached(positions):
            if cuts.due(self._backlog_cut_spacing_s):
                cuts.snapshot(reading, with_groups=with_groups)
            return
        if not cuts.advance():
            if not (self.path.holding() and cuts.due(self._cut_spacing_s)):
                return
            if not (cuts.snapshot(reading, with_groups=with_groups) and cuts.advance()):
                return
        self._hold()

    def _group_cut_records(self, *, reached: bool) -> list[tuple[tuple[str, SourcePartition], int, AuditRecord]]:
        """The source groups' positions read at the current cut, when this commit is at that very cut
        (``reached``): written in its transaction, so they are visible with the data they match (the
        ones that moved)."""
        cuts, where = self.cuts, self.run.config.group_cuts_partition
        if cuts is None or where is None or cuts.groups_at_cut is None or not reached:
            return []
        cut = cuts.groups_at_cut
        own = self.ownership
        records = []
        for group, offsets in sorted((cut.groups or {}).items()):
            for source, offset in sorted(offsets.items()):
                target = own.reading.get(source)
                if target is None or self._group_cuts_written.get((group, source)) == offset:
                    continue
                found = GroupCut(group, target, source.topic, offset, cut.taken_ms)
                records.append(((group, source), offset, AuditRecord(where, found.key(), found.value())))
        return records

    def _to_commit(self) -> bool:
        """Whether the next commit has anything to do: an open cycle, or starts, skipped ranges or
        recreations to save."""
        own = self.ownership
        return self.committer.open or own.state.to_save

    def _copy(self, wait_s: float) -> Copied | None:
        """Move what the source has into the cycle, begun here if it is not yet; None when the cycle
        had to be aborted."""
        try:
            self.committer.begin()
            return self.path.copy(wait_s)
        except AbortCycle as exc:
            self.abort_and_rewind(str(exc))
        except SourceOffsetOutOfRange as exc:
            # Raises (the task fails naming every partition and why) unless the policies let it go on.
            crossings = self.ownership.out_of_range(exc)
            self.abort_and_rewind(crossings.describe())
        return None

    def commit(self) -> None:
        """Commit the open cycle (or save advanced positions), or abort it and rewind."""
        offsets = self.plan.offsets()
        if not offsets:
            if self.committer.open:
                raise TaskFailure("internal error: records produced but no source offset advanced")
            return
        own = self.ownership
        if own.metadata is None:  # the loop serves the group before the first copy
            raise TaskFailure("internal error: a commit before the shadow group was served")
        if self._confirm_topic_ids:
            crossings = own.confirm_topic_ids(offsets)
            if crossings:
                self.abort_and_rewind(crossings.describe())
                return
        # The epoch of the last record before each new offset: this cycle's, or the one committed
        # when the offset did not move (an older epoch beside a newer offset would read as a divergence).
        epochs = own.state.epochs_for(offsets, self.path.leader_epochs())
        # At the current cut (or nothing of a source transaction since the last one, so the positions
        # are a cut themselves): the offsets say so, for drills and audits. A split commit does not.
        reached = self.cuts is not None and self.cuts.reached(self._positions())
        at_cut = self.cuts is not None and (reached or not self.path.took_transactional())
        try:
            # Stored under the target partition: the broker refuses offsets for partitions it lacks.
            targets = [
                TopicPartition(
                    *own.reading[source],
                    offset,
                    metadata=own.commit_metadata(source, epochs.get(source), at_cut=at_cut),
                )
                for source, offset in offsets.items()
            ]
            spans = [self.plan.span(source, offset) for source, offset in offsets.items()]
            group_cuts = self._group_cut_records(reached=reached)
            audit = [*self.plan.audit(), *(record for _, _, record in group_cuts)]
            self.committer.commit(targets, self.run.member, own.metadata, spans, audit)
        except AbortCycle as exc:
            self.abort_and_rewind(str(exc))
            return
        self._group_cuts_written.update({key: offset for key, offset, _ in group_cuts})
        if self.cuts is not None and group_cuts:
            self.cuts.groups_at_cut = None  # written: the next cut brings its own
        recorded = own.state.applied(offsets, epochs)
        for gap in recorded.skipped:
            self.log.warning(
                "recorded skipped range %s in %s and the offset syncs (offset.gap.policy=skip)",
                gap.describe(),
                self.run.config.gaps_partition,
            )
            self.metrics.skipped(gap)
        for event in recorded.recreated:
            self.log.warning(
                "recorded the recreation of %s in %s and the offset syncs (topic.recreation.policy=continue)",
                event.describe(),
                self.run.config.gaps_partition,
            )
            self.metrics.recreated(event)
        self.path.forget_transactional()
        self.metrics.committed(self.path)
        self._aborting_since = None
        self.counters.commits += 1
        self.counters.bytes += self.bounds.take()

    def abort_and_rewind(self, reason: str) -> None:
        """Abort the cycle and read again from the committed offsets; fail when aborts never stop."""
        self.counters.aborts += 1
        now = time.monotonic()
        if self._stop.is_set():
            # Stopping: an abort can wait out the transaction timeout (a fenced producer, a broker
            # that does not answer). Nothing of the open transaction is visible, and it ends without
            # us: the next owner's InitProducerId fences and aborts it, or the broker's timeout does.
            self.log.warning(
                "stopping: the cycle's transaction is left open for the next owner's fence or the broker's "
                "transaction timeout (transaction.timeout.ms=%d) to abort; none of it is visible (%s)",
                self.run.config.transaction_timeout_ms,
                reason,
            )
            self._abandoned = True
            return
        self._aborting_since = self._aborting_since or now
        self.log.warning("cycle aborted, rewinding to the committed offsets: %s", reason)
        self.committer.abort()
        self.metrics.aborted(self.path)
        self.bounds.take()  # aborted: its bytes are copied again
        own = self.ownership
        self.path.forget_transactional()
        self.path.rewind(own.state.rewind_points(own.reading), own.state.leader_epochs)
        # Aborts from rebalances or broker bounces clear up; ones that last longer than twice the
        # transaction timeout will not.
        give_up_s = 2 * self.run.config.transaction_timeout_ms / 1000
        if now - self._aborting_since > give_up_s:
            raise TaskFailure(f"every cycle aborted for {now - self._aborting_since:.0f} s; last: {reason}")
        self._stop.wait(min(0.1 * (1 + now - self._aborting_since), 2.0))

    def commit_source_positions(self) -> None:
        """Informational: the committed positions that moved into the source group, for lag tooling."""
        own = self.ownership
        if not own.reading or not self.run.config.source_group_commit_interval_ms:
            return
        self._source_group.commit(own.reading, own.state.committed)

    def log_progress(self) -> None:
        """One line of what the task has done, for operators."""
        self.metrics.fetches(self.path)
        c = self.counters
        cuts = ""
        if self.cuts is not None:
            n = self.cuts.counts
            cuts = f"; cuts of source transactions: {n.cuts} taken, {n.partial_cuts} partial"
            cuts += f", {n.mid_markers} dropped mid-markers"
            cuts += f", {n.split_commits} split commits" if n.split_commits else ""
        self.log.info(
            "mirrored %d records (%.1f MB) in %d commits, %d aborted; reading %d partitions; %s%s",
            c.records,
            c.bytes / 1e6,
            c.commits,
            c.aborts,
            len(self.ownership.reading),
            self.path.describe(),
            cuts,
        )


class _BetweenCycles:
    """The periodic jobs of the task's loop, run between cycles when due."""

    def __init__(self, lag_interval_s: float) -> None:
        #: Informational source-group commits (None: ``source.group.commit.interval.ms=0``, off).
        self.lag_commit = _Every(lag_interval_s) if lag_interval_s else None
        self.progress = _Every(_PROGRESS_INTERVAL_S)
        self.fetch_counts = _Every(_FETCH_COUNTS_S)


class _Every:
    """A job of the task's loop due every ``interval_s``, first one interval after the start."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._next = time.monotonic() + interval_s

    def due(self, now: float) -> bool:
        """True when due at ``now``; the next time is then one interval later."""
        if now < self._next:
            return False
        self._next = now + self.interval_s
        return True
