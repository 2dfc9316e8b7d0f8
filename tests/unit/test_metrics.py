"""MirrorMaker 2's per-partition series as the collector renders them from committed cycles."""

from __future__ import annotations

import time

from mirror_sink.core.metrics import MM2, CycleStats, MirrorMetrics
from mirror_sink.core.partitions import TargetPartition


def _samples(collector: MirrorMetrics) -> dict[tuple[str, str], float]:
    return {
        (family.name.removeprefix(MM2), sample.labels["partition"]): sample.value
        for family in collector.collect()
        for sample in family.samples
    }


def test_counts_rates_latency_and_age_per_partition_or_per_topic() -> None:
    collector = MirrorMetrics()
    now_ms = int(time.time() * 1000)
    stats = {}
    for p in (0, 1):
        s = CycleStats()
        s.add(100, 10_000, now_ms - 3000, now_ms - 1000, now_ms - 500)  # read 0.5 s before the commit
        stats[TargetPartition("east.orders", p)] = s
    collector.committed("mirror", "east", "west", stats)
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
