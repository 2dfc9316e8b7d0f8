"""TaskMetrics: what a task's cycle reports, read back from the process's Prometheus registry.

Each test has a connector name of its own, so the series it reads are its own.
"""

from __future__ import annotations

import uuid

import pytest
from prometheus_client import REGISTRY

from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.formats.skipped_ranges import Recreation, SkippedRange
from mirror_sink.core.interfaces.data_path import FetchSessionCounts, PathStatistics
from mirror_sink.core.telemetry import metrics as m
from mirror_sink.core.telemetry.metrics import CycleStats
from mirror_sink.task.task_metrics import TaskMetrics
from mirror_sink.task.transaction_cuts import CutCounts
from tests.unit.task.fakes import FakePath

pytestmark = pytest.mark.unit

TA, TB = TargetPartition("source.orders", 0), TargetPartition("source.orders", 1)


class Series:
    """One task's metrics and the values of its series."""

    def __init__(self) -> None:
        self.connector = f"metrics-{uuid.uuid4().hex[:8]}"
        self.metrics = TaskMetrics(self.connector, 3, "source", "target")
        self.path = FakePath()

    def value(self, name: str, **labels: str) -> float:
        """The series' value (0 when it has none yet)."""
        found = REGISTRY.get_sample_value(name, {"connector": self.connector, "task": "3", **labels})
        return 0.0 if found is None else found

    def has(self, name: str, **labels: str) -> bool:
        return REGISTRY.get_sample_value(name, {"connector": self.connector, "task": "3", **labels}) is not None

    def cycle(self, **records: int) -> None:
        """The path put ``records`` per target partition (``a``: TA, ``b``: TB) in the open cycle."""
        for key, n in records.items():
            target = {"a": TA, "b": TB}[key]
            self.path.cycle_stats.setdefault(target, CycleStats()).add(n, 10 * n, 0, 0, 0)


@pytest.fixture
def series() -> Series:
    return Series()


SENT = "kafka_connect_sink_task_metrics_sink_record_send_total"
READ = "kafka_connect_sink_task_metrics_sink_record_read_total"
DURATION = "mirror_sink_transaction_duration_seconds_count"


def test_records_read_are_counted_and_a_read_of_none_is_not(series: Series) -> None:
    series.metrics.read(0)
    series.metrics.committed(series.path)
    assert series.value(READ) == 0
    assert series.value(DURATION) == 0, "an empty read does not start a cycle's clock"
    series.metrics.read(3)
    series.metrics.read(2)
    assert series.value(READ) == 5


def test_a_commit_counts_what_the_cycle_sent_and_its_duration_once(series: Series) -> None:
    series.metrics.read(5)
    series.cycle(a=3, b=2)
    series.metrics.committed(series.path)
    assert series.value(SENT) == 5 and m.MIRROR.records(series.connector) == 5
    assert series.value("kafka_connect_sink_task_metrics_offset_commit_completion_total") == 1
    assert series.value("mirror_sink_transactions_total", outcome="committed") == 1
    assert series.value(DURATION) == 1
    series.metrics.committed(series.path)  # saved positions only: nothing read since
    assert series.value(SENT) == 5
    assert series.value(DURATION) == 1, "a commit with no record read has no duration"
    assert series.value("mirror_sink_transactions_total", outcome="committed") == 2


def test_an_aborted_cycle_counts_as_skipped_and_nothing_of_it_as_sent(series: Series) -> None:
    series.metrics.read(4)
    series.cycle(a=4)
    series.metrics.aborted(series.path)
    assert series.value("kafka_connect_sink_task_metrics_offset_commit_skip_total") == 1
    assert series.value("mirror_sink_transactions_total", outcome="aborted") == 1
    series.metrics.committed(series.path)
    assert series.value(SENT) == 0, "the aborted cycle's records were dropped with it"
    assert series.value(DURATION) == 0, "the aborted cycle's start is not the next one's"


def test_cut_counts_are_added_once_each_and_the_gauges_say_whether_transactions_are_kept_whole(
    series: Series,
) -> None:
    series.metrics.cuts(None)
    assert series.value("mirror_sink_source_transactions_whole") == 0
    counts = CutCounts(cuts=2, partial_cuts=1, spanning={"app-1": frozenset({("orders", 0), ("other", 0)})})
    series.metrics.cuts(counts)
    series.metrics.cuts(counts)  # nothing new since
    counts.cuts = 5
    series.metrics.cuts(counts)
    cuts = "mirror_sink_source_transaction_cuts_total"
    assert series.value(cuts, outcome="cut") == 5 and series.value(cuts, outcome="partial_cut") == 1
    assert series.has(cuts, outcome="split_commit"), "every outcome's series exists from the start"
    assert series.value("mirror_sink_source_transactions_whole") == 1
    assert series.value("mirror_sink_source_transactions_spanning_producers") == 1


def test_the_paths_counters_are_added_as_they_grow_and_its_gauges_set(series: Series) -> None:
    fetches = FetchSessionCounts({"full": 1, "incremental": 4}, {"closed": 0}, sessions=2, partitions=40)
    series.path.stats = PathStatistics({"forwarded": 10, "reencoded": 2}, {"in_use": 512}, 0.0, fetches)
    series.metrics.committed(series.path)
    later = FetchSessionCounts({"full": 1, "incremental": 9}, {"closed": 1}, sessions=1, partitions=20)
    series.path.stats = PathStatistics({"forwarded": 15, "reencoded": 2}, {"in_use": 256}, 0.0, later)
    series.metrics.committed(series.path)
    assert series.value("mirror_sink_raw_batches_total", outcome="forwarded") == 15
    assert series.value("mirror_sink_raw_batches_total", outcome="reencoded") == 2
    assert series.value("mirror_sink_memory_budget_bytes", kind="in_use") == 256
    assert series.value("mirror_sink_fetch_requests_total", kind="incremental") == 9
    assert series.value("mirror_sink_fetch_session_resets_total", reason="closed") == 1
    assert (series.value("mirror_sink_fetch_sessions"), series.value("mirror_sink_fetch_session_partitions")) == (1, 20)


def test_an_idle_tasks_fetches_are_counted_between_commits(series: Series) -> None:
    series.path.stats = PathStatistics(fetch_sessions=FetchSessionCounts({"watch": 7}, {}, 1, 3))
    series.metrics.fetches(series.path)
    assert series.value("mirror_sink_fetch_requests_total", kind="watch") == 7


def test_a_reset_reason_is_shown_at_zero_before_it_first_happens(series: Series) -> None:
    series.path.stats = PathStatistics(fetch_sessions=FetchSessionCounts({}, {"throttled": 0}, 0, 0))
    series.metrics.fetches(series.path)
    assert series.has("mirror_sink_fetch_session_resets_total", reason="throttled")


def test_record_mode_leaves_raw_modes_series_out(series: Series) -> None:
    series.metrics.committed(series.path)  # record mode: empty statistics
    assert not series.has("mirror_sink_fetch_sessions") and not series.has("mirror_sink_raw_batches_total")


def test_a_stopped_task_shows_no_live_gauges(series: Series) -> None:
    series.path.stats = PathStatistics({}, {"in_use": 512, "peak": 900}, 0.0, FetchSessionCounts({}, {}, 2, 40))
    series.metrics.transaction_version(2)
    series.metrics.serving(8, 1)
    series.metrics.cuts(CutCounts())
    series.metrics.committed(series.path)
    series.metrics.stopped(series.path)
    for name, labels in [
        ("kafka_connect_sink_task_metrics_partition_count", {}),
        ("mirror_sink_source_transactions_whole", {}),
        ("mirror_sink_transaction_version", {}),
        ("mirror_sink_memory_budget_bytes", {"kind": "in_use"}),
        ("mirror_sink_memory_budget_bytes", {"kind": "peak"}),
        ("mirror_sink_fetch_sessions", {}),
        ("mirror_sink_fetch_session_partitions", {}),
    ]:
        assert series.has(name, **labels) and series.value(name, **labels) == 0, name


def test_serving_sets_the_partitions_read_and_adds_only_new_rebalances(series: Series) -> None:
    series.metrics.serving(8, 3)
    series.metrics.serving(6, 0)
    assert series.value("kafka_connect_sink_task_metrics_partition_count") == 6
    assert series.value("mirror_sink_rebalances_total") == 3


def test_skipped_ranges_count_their_offsets_and_recreations_count_once_each(series: Series) -> None:
    series.metrics.skipped(SkippedRange(SourcePartition("orders", 0), "id-1", 100, 150))
    series.metrics.recreated(Recreation(SourcePartition("orders", 1), "id-1", "id-2", 40))
    assert series.value("mirror_sink_skipped_records_total") == 50
    assert series.value("mirror_sink_topic_recreations_total") == 1


def test_the_transaction_protocol_is_a_gauge(series: Series) -> None:
    series.metrics.transaction_version(1)
    assert series.value("mirror_sink_transaction_version") == 1
