"""What a Prometheus scrape of a mirror costs at many partitions: body size and time, per partition and per topic.

    .venv/bin/python -m bench.metrics_scrape --partitions 10000 --per-topic 100

Fills the process's metrics as a worker mirroring ``--partitions`` partitions (``--per-topic`` per
topic) would after one committed cycle each and one lag measurement, then renders /metrics's body
(prometheus-client's ``generate_latest``, what the endpoint returns) several times and reports the
median time and the size, once per partition (the default) and once with ``metrics.aggregate=topic``.
Not a test: numbers vary with the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

from prometheus_client import REGISTRY, generate_latest

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.telemetry import metrics as m


def fill(partitions: int, per_topic: int, source: str) -> None:
    """One committed cycle and one lag value per partition, as tasks and the lag monitor report them."""
    now_ms = int(time.time() * 1000)
    stats = {}
    for i in range(partitions):
        tp = TargetPartition(f"{source}.topic-{i // per_topic:04d}", i % per_topic)
        s = m.CycleStats()
        s.add(1000, 1_000_000, now_ms - 500, now_ms - 100, now_ms - 50)
        stats[tp] = s
        labels = ("bench", source, "target", tp.topic, str(tp.partition))
        m.replication_lag_records.labels(*labels).set(i % 50)
        m.replication_lag_seconds.labels(*labels).set(0.0)
    m.MIRROR.committed("bench", source, "target", stats)


def measure(repeat: int) -> tuple[float, int]:
    """Median milliseconds and bytes of one /metrics body."""
    times, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        body = generate_latest(REGISTRY)
        times.append((time.perf_counter() - started) * 1000)
        size = len(body)
    return statistics.median(times), size


def main() -> int:
    """Fill, render, print a table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--per-topic", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    fill(args.partitions, args.per_topic, "src")
    per_partition = measure(args.repeat)
    m.MIRROR.topic_level.add("src")
    # The lag monitor publishes per topic too under metrics.aggregate=topic: drop the per-partition lag series.
    m.replication_lag_records.clear()
    m.replication_lag_seconds.clear()
    for t in range(args.partitions // args.per_topic):
        labels = ("bench", "src", "target", f"src.topic-{t:04d}", "all")
        m.replication_lag_records.labels(*labels).set(1)
        m.replication_lag_seconds.labels(*labels).set(0.0)
    per_topic = measure(args.repeat)
    print(f"{args.partitions:,} partitions, {args.per_topic} per topic")
    print("| aggregation | scrape body | render time (median) |")
    print("| --- | ---: | ---: |")
    for label, (ms, size) in (("per partition", per_partition), ("per topic", per_topic)):
        print(f"| {label} | {size / 1e6:.2f} MB | {ms:.0f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
