"""MirrorMaker 2's per-partition series as the collector renders them from committed cycles, in each
``metric.names.formats``: the legacy names, KIP-1280's new ones, or both with the same values."""

from __future__ import annotations

import time

import pytest

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.telemetry.metric_names import MM2, MM2_NEW, MetricNamesFormat, new_metric_name
from mirror_sink.core.telemetry.metrics import CycleStats, MirrorMetrics

LEGACY, NEW = MetricNamesFormat.LEGACY, MetricNamesFormat.NEW
Samples = dict[str, list[tuple[dict[str, str], float]]]


def _samples(collector: MirrorMetrics) -> dict[tuple[str, str], float]:
    return {
        (family.name.removeprefix(MM2), sample.labels["partition"]): sample.value
        for family in collector.collect()
        if family.name.startswith(MM2)
        for sample in family.samples
    }


def _all(collector: MirrorMetrics) -> Samples:
    out: Samples = {}
    for family in collector.collect():
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def _commit(
    collector: MirrorMetrics, connector: str = "mirror", task: int = 0, partitions: tuple[int, ...] = (0, 1)
) -> None:
    now_ms = int(time.time() * 1000)
    stats = {}
    for p in partitions:
        s = CycleStats()
        s.add(100, 10_000, now_ms - 3000, now_ms - 1000, now_ms - 500)  # read 0.5 s before the commit
        stats[TargetPartition("east.orders", p)] = s
    collector.committed(connector, "east", "west", stats, task=task)


def test_counts_rates_latency_and_age_per_partition_or_per_topic() -> None:
    collector = MirrorMetrics()
    _commit(collector)
    got = _samples(collector)
    assert got[("record_count", "0")] == 100 and got[("byte_count", "1")] == 10_000
    # Over a full 30 s window, as Kafka's Rate (and so MM2) computes it, even for a young partition.
    assert got[("record_rate", "0")] == 100 / 30
    assert 1000 <= got[("replication_latency_ms_min", "0")] < 1500
    assert 3000 <= got[("replication_latency_ms_max", "0")] < 3500
    assert 2000 <= got[("replication_latency_ms_avg", "0")] < 2500
    assert 1500 <= got[("record_age_ms", "0")] < 1600  # read at now-500 ms, records from now-3 s to now-1 s
    assert collector.records("mirror") == 200
    collector.topic_level.add("east")
    per_topic = _samples(collector)
    assert per_topic[("record_count", "all")] == 200 and ("record_count", "0") not in per_topic


def test_legacy_names_only_by_default() -> None:
    collector = MirrorMetrics()
    _commit(collector)
    names = set(_all(collector))
    assert names and all(n.startswith(MM2) for n in names), names
    assert collector.formats("mirror") == {LEGACY}


def test_nothing_is_exported_before_a_commit() -> None:
    collector = MirrorMetrics()
    collector.set_formats("mirror", (LEGACY, NEW))
    assert list(collector.collect()) == []


def test_new_names_only_carry_the_connector_and_task() -> None:
    collector = MirrorMetrics()
    collector.set_formats("mirror", (NEW,))
    _commit(collector, task=3)
    got = _all(collector)
    assert got and all(n.startswith(MM2_NEW) for n in got), sorted(got)
    labels = [lab for lab, _ in got[MM2_NEW + "record_count"]]
    assert labels == [
        {"connector": "mirror", "task": "3", "source": "east", "target": "west", "topic": "east.orders", "partition": p}
        for p in ("0", "1")
    ]


@pytest.mark.parametrize("per_topic", [False, True])
def test_both_formats_give_every_legacy_series_a_new_twin_with_the_same_value(per_topic: bool) -> None:
    collector = MirrorMetrics()
    collector.set_formats("mirror", (LEGACY, NEW))
    if per_topic:
        collector.topic_level.add("east")
    _commit(collector, task=0, partitions=(0,))
    _commit(collector, task=1, partitions=(1,))  # another task has the other partition
    got = _all(collector)
    legacy = {n: s for n, s in got.items() if n.startswith(MM2)}
    assert len(legacy) == 10
    assert set(got) == set(legacy) | {new_metric_name(n) for n in legacy}
    for name, samples in legacy.items():
        twins = got[new_metric_name(name)]
        assert len(twins) == len(samples)
        for lab, value in samples:
            (twin,) = [(tl, tv) for tl, tv in twins if all(tl[k] == v for k, v in lab.items())]
            assert twin[1] == value, (name, lab)
            assert twin[0]["connector"] == "mirror"
            # Per topic, the one series stands for every task, as partition="all" for every partition.
            assert twin[0]["task"] == ("all" if per_topic else lab["partition"])


def test_a_partition_moved_to_another_task_keeps_its_counts_under_the_new_task() -> None:
    collector = MirrorMetrics()
    collector.set_formats("mirror", (LEGACY, NEW))
    _commit(collector, task=0, partitions=(0,))
    _commit(collector, task=2, partitions=(0,))  # the shadow group gave partition 0 to task 2
    got = _all(collector)
    assert got[MM2 + "record_count"] == [
        ({"source": "east", "target": "west", "topic": "east.orders", "partition": "0"}, 200)
    ]
    ((labels, value),) = got[MM2_NEW + "record_count"]
    assert (labels["task"], value) == ("2", 200)


def test_each_connector_has_its_own_formats() -> None:
    collector = MirrorMetrics()
    collector.set_formats("old-style", (LEGACY,))
    collector.set_formats("new-style", (NEW,))
    now_ms = int(time.time() * 1000)
    for connector, topic in (("old-style", "east.a"), ("new-style", "east.b")):
        s = CycleStats()
        s.add(10, 100, now_ms, now_ms, now_ms)
        collector.committed(connector, "east", "west", {TargetPartition(topic, 0): s})
    got = _all(collector)
    assert [lab["topic"] for lab, _ in got[MM2 + "record_count"]] == ["east.a"]
    assert [(lab["connector"], lab["topic"]) for lab, _ in got[MM2_NEW + "record_count"]] == [("new-style", "east.b")]
    collector.set_formats("old-style", (NEW,))  # a new config: the next scrape has the new names
    got = _all(collector)
    assert MM2 + "record_count" not in got
    assert {lab["connector"] for lab, _ in got[MM2_NEW + "record_count"]} == {"old-style", "new-style"}
