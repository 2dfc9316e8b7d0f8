"""The Spark planner's offset arithmetic (no cluster: the offsets it would read are given)."""

from __future__ import annotations

import json
from collections.abc import Collection

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes, ReadMaxRows

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.spark.byte_budget import LogSpan, cap_by_bytes
from mirror_sink.spark.datasource import MirrorSinkStreamReader, RangePartition
from mirror_sink.topics.source_discovery import TopicMapping

CONFIG = {
    "name": "plan",
    "source.cluster.bootstrap.servers": "127.0.0.1:1",
    "target.cluster.bootstrap.servers": "127.0.0.1:2",
    "runtime": "spark",
}


class Planner(MirrorSinkStreamReader):
    """The real planner over fixed shadow-group starts and source end offsets."""

    def __init__(
        self,
        starts: dict[str, int],
        ends: dict[str, int],
        bytes_per_offset: dict[str, float] | None = None,
        **options: str,
    ) -> None:
        super().__init__({"config": json.dumps(CONFIG), **options})
        self.fixed_starts, self.fixed_ends = starts, ends
        self.fixed_sizes = bytes_per_offset or {}

    def _mappings(self) -> dict[str, TopicMapping]:
        return {}

    def _starts(self, mappings: dict[str, TopicMapping], known: Collection[str] = ()) -> dict[str, int]:
        return {k: v for k, v in self.fixed_starts.items() if k not in known}

    def _watermarks(self, partitions: list[SourcePartition]) -> dict[SourcePartition, tuple[int, int]]:
        return {tp: (0, self.fixed_ends[f"{tp.topic}:{tp.partition}"]) for tp in partitions}

    def _bytes_per_offset(self, marks: dict[SourcePartition, tuple[int, int]]) -> dict[SourcePartition, float]:
        return {tp: self.fixed_sizes[f"{tp.topic}:{tp.partition}"] for tp in marks}


def test_ranges_run_from_the_start_to_the_last_stable_offset() -> None:
    planner = Planner({"a:0": 5, "a:1": 0}, {"a:0": 50, "a:1": 0})
    end = planner.latestOffset({"a:0": 5, "a:1": 0}, ReadAllAvailable())
    assert end == {"a:0": 50, "a:1": 0}
    assert planner.partitions({"a:0": 5, "a:1": 0}, end) == [RangePartition("a", 0, 5, 50)]


def test_a_partition_seen_for_the_first_time_is_planned_from_its_start_next_batch() -> None:
    planner = Planner({"a:0": 0, "b:0": 7}, {"a:0": 10, "b:0": 30})
    first = planner.latestOffset({"a:0": 0}, ReadAllAvailable())
    assert first == {"a:0": 10, "b:0": 7}, "b:0 ends where it starts in the batch that discovers it"
    assert planner.partitions({"a:0": 0}, first) == [RangePartition("a", 0, 0, 10)]
    second = planner.latestOffset(first, ReadAllAvailable())
    assert planner.partitions(first, second) == [RangePartition("b", 0, 7, 30)], "no record of b:0 skipped"


def test_max_rows_caps_each_partition_and_available_now_caps_at_its_snapshot() -> None:
    planner = Planner({"a:0": 0, "a:1": 0}, {"a:0": 100, "a:1": 100})
    assert planner.latestOffset({"a:0": 0, "a:1": 0}, ReadMaxRows(50)) == {"a:0": 25, "a:1": 25}
    planner.stop_at = {"a:0": 60, "a:1": 100}
    assert planner.latestOffset({"a:0": 40, "a:1": 40}, ReadAllAvailable()) == {"a:0": 60, "a:1": 100}


def test_max_bytes_shares_the_budget_in_each_partitions_own_record_size() -> None:
    # a:0 holds 1 KB records, a:1 10 KB ones; 100 KB is 50 KB each, so 50 and 5 offsets.
    planner = Planner({"a:0": 0, "a:1": 0}, {"a:0": 1000, "a:1": 1000}, {"a:0": 1000.0, "a:1": 10_000.0})
    assert planner.latestOffset({"a:0": 0, "a:1": 0}, ReadMaxBytes(100_000)) == {"a:0": 50, "a:1": 5}


def test_max_bytes_applies_under_available_now_and_beside_max_records() -> None:
    planner = Planner(
        {"a:0": 0, "a:1": 0},
        {"a:0": 1000, "a:1": 1000},
        {"a:0": 1000.0, "a:1": 1000.0},
        maxRecordsPerTrigger="60",
        maxbytespertrigger="20000",  # Spark hands options over lower-cased
    )
    assert planner.getDefaultReadLimit() == ReadMaxRows(60)
    assert planner.latestOffset({"a:0": 0, "a:1": 0}, ReadAllAvailable()) == {"a:0": 10, "a:1": 10}
    assert planner.latestOffset({"a:0": 0, "a:1": 0}, ReadMaxRows(60)) == {"a:0": 10, "a:1": 10}


def test_a_cap_that_is_not_a_count_names_the_option() -> None:
    with pytest.raises(ConfigError, match="maxBytesPerTrigger"):
        Planner({}, {}, maxBytesPerTrigger="64m")


def test_idle_partitions_leave_their_share_to_busy_ones() -> None:
    starts = {SourcePartition("a", p): 0 for p in range(4)}
    ends = {SourcePartition("a", 0): 1000, SourcePartition("a", 1): 2, SourcePartition("a", 2): 0}
    ends[SourcePartition("a", 3)] = 1000
    capped = cap_by_bytes(starts, ends, dict.fromkeys(starts, 100.0), 10_000)
    # a:1 takes its 2 offsets (200 B), a:2 has nothing; a:0 and a:3 split the remaining 9,800 B.
    assert capped == {SourcePartition("a", 0): 49, SourcePartition("a", 1): 2, SourcePartition("a", 2): 0,
                      SourcePartition("a", 3): 49}  # fmt: skip


def test_a_record_larger_than_the_budget_still_moves() -> None:
    tp = SourcePartition("a", 0)
    assert cap_by_bytes({tp: 7}, {tp: 9}, {tp: 5_000_000.0}, 1_000_000) == {tp: 8}


def test_a_logs_average_counts_every_offset_it_holds() -> None:
    assert LogSpan(size_bytes=10_000, start_offset=100, end_offset=200).bytes_per_offset == 100.0
    assert LogSpan(size_bytes=0, start_offset=5, end_offset=5).bytes_per_offset == 1.0
