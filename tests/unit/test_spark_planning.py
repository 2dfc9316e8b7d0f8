"""The Spark planner's offset arithmetic (no cluster: the offsets it would read are given)."""

from __future__ import annotations

import json

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from connectors.topic_provisioner import TopicMapping
from mirror_sink.spark.datasource import MirrorSinkStreamReader, RangePartition

CONFIG = {
    "name": "plan",
    "source.cluster.bootstrap.servers": "127.0.0.1:1",
    "target.cluster.bootstrap.servers": "127.0.0.1:2",
    "runtime": "spark",
}


class Planner(MirrorSinkStreamReader):
    """The real planner over fixed shadow-group starts and source end offsets."""

    def __init__(self, starts: dict[str, int], ends: dict[str, int]) -> None:
        super().__init__({"config": json.dumps(CONFIG)})
        self.fixed_starts, self.fixed_ends = starts, ends

    def _mappings(self) -> dict[str, TopicMapping]:
        return {}

    def _starts(self, mappings: dict[str, TopicMapping]) -> dict[str, int]:
        return dict(self.fixed_starts)

    def _ends(self, partitions: list[tuple[str, int]]) -> dict[str, int]:
        return {f"{t}:{p}": self.fixed_ends[f"{t}:{p}"] for t, p in partitions}


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
