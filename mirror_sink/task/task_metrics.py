"""One task's metrics: Connect's sink-task names and the mirror's own, bound to its connector and task labels."""

from __future__ import annotations

import time

from mirror_sink.core.formats.skipped_ranges import Recreation, SkippedRange
from mirror_sink.core.interfaces.data_path import DataPath, PathStatistics
from mirror_sink.core.telemetry import metrics as m
from mirror_sink.task.transaction_cuts import CutCounts


class TaskMetrics:
    """What a task's cycle reports, once per copy call or commit (never per record)."""

    def __init__(self, connector: str, task: int, source_alias: str, target_alias: str) -> None:
        labels = (connector, str(task))
        self._labels = labels
        self._task = task
        self._aliases = (source_alias, target_alias)
        self._read = m.sink_record_read_total.labels(*labels)
        self._sent = m.sink_record_send_total.labels(*labels)
        self._partitions = m.sink_partition_count.labels(*labels)
        self._completed = m.offset_commit_completion_total.labels(*labels)
        self._skipped = m.offset_commit_skip_total.labels(*labels)
        self._committed = m.transactions_total.labels(*labels, "committed")
        self._aborted = m.transactions_total.labels(*labels, "aborted")
        self._duration = m.transaction_seconds.labels(*labels)
        self._rebalances = m.rebalances_total.labels(*labels)
        self._skipped_records = m.skipped_records_total.labels(*labels)  # 0 until a range is skipped
        self._recreations = m.topic_recreations_total.labels(*labels)  # 0 until a recreation is continued
        self._whole = m.source_transactions_whole.labels(*labels)
        self._spanning = m.source_transactions_spanning.labels(*labels)
        self._version = m.transaction_version.labels(*labels)
        self._cut_counts: dict[str, int] = {}
        self._batches: dict[str, int] = {}
        self._fetches: dict[tuple[str, str], int] = {}
        self._cycle_started: float | None = None

    def transaction_version(self, version: int) -> None:
        """The transaction protocol the task's producer speaks (2, 1, or 0 without transactions)."""
        self._version.set(version)

    def read(self, records: int) -> None:
        """Records the cycle took from the source."""
        if records:
            self._read.inc(records)
            if self._cycle_started is None:
                self._cycle_started = time.monotonic()

    def committed(self, path: DataPath) -> None:
        """The open cycle committed: its records per target partition, its duration, the path's counters."""
        stats = path.take_stats()
        m.MIRROR.committed(self._labels[0], *self._aliases, stats, task=self._task)
        self._sent.inc(sum(s.records for s in stats.values()))
        self._completed.inc()
        self._committed.inc()
        if self._cycle_started is not None:
            self._duration.observe(time.monotonic() - self._cycle_started)
            self._cycle_started = None
        self._path_counters(path)

    def cuts(self, counts: CutCounts | None) -> None:
        """Whether source transactions are kept whole, and what the cuts did since the last call."""
        self._whole.set(0 if counts is None else 1)
        if counts is None:
            return
        self._spanning.set(len(counts.spanning))
        for outcome, total in (
            ("cut", counts.cuts),
            ("partial_cut", counts.partial_cuts),
            ("mid_markers", counts.mid_markers),
            ("split_commit", counts.split_commits),
        ):
            before = self._cut_counts.get(outcome)
            if before is None or total > before:
                m.source_transaction_cuts_total.labels(*self._labels, outcome).inc(total - (before or 0))
                self._cut_counts[outcome] = total

    def skipped(self, gap: SkippedRange) -> None:
        """A range deleted on the source before it was mirrored was stepped over and recorded."""
        self._skipped_records.inc(gap.records)

    def recreated(self, event: Recreation) -> None:
        """A partition of a topic created again was continued from the new topic's start, on record."""
        self._recreations.inc()

    def aborted(self, path: DataPath) -> None:
        """The open cycle was aborted: nothing of it counts as sent."""
        path.take_stats()
        self._skipped.inc()
        self._aborted.inc()
        self._cycle_started = None

    def serving(self, partitions: int, new_rebalances: int) -> None:
        """Between cycles: partitions read, and the shadow group's assignments and revocations since the last call."""
        self._partitions.set(partitions)
        if new_rebalances:
            self._rebalances.inc(new_rebalances)

    def stopped(self, path: DataPath) -> None:
        """The task's run ended (stopped, paused, failed): its gauges must not show a live task."""
        self._partitions.set(0)
        self._whole.set(0)
        self._version.set(0)
        stats = path.statistics()
        for kind in stats.memory:
            m.memory_budget_bytes.labels(*self._labels, kind).set(0)
        if stats.fetch_sessions is not None:
            m.fetch_sessions.labels(*self._labels).set(0)
            m.fetch_session_partitions.labels(*self._labels).set(0)

    def _path_counters(self, path: DataPath) -> None:
        stats = path.statistics()
        for outcome, total in stats.batches.items():
            before = self._batches.get(outcome, 0)
            if total > before:
                m.raw_batches_total.labels(*self._labels, outcome).inc(total - before)
                self._batches[outcome] = total
        for kind, value in stats.memory.items():
            m.memory_budget_bytes.labels(*self._labels, kind).set(value)
        self._fetch_counters(stats)

    def fetches(self, path: DataPath) -> None:
        """The path's Fetches and fetch sessions (also between commits: an idle task commits nothing)."""
        self._fetch_counters(path.statistics())

    def _fetch_counters(self, stats: PathStatistics) -> None:
        counts = stats.fetch_sessions
        if counts is None:
            return
        for family, metric, totals in (
            ("kind", m.fetch_requests_total, counts.requests),
            ("reason", m.fetch_session_resets_total, counts.resets),
        ):
            for label, total in totals.items():
                before = self._fetches.get((family, label), 0)
                if total > before or (family, label) not in self._fetches:
                    metric.labels(*self._labels, label).inc(total - before)
                    self._fetches[(family, label)] = total
        m.fetch_sessions.labels(*self._labels).set(counts.sessions)
        m.fetch_session_partitions.labels(*self._labels).set(counts.partitions)
