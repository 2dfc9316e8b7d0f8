"""What record mode's per-commit topic-id check costs: one DescribeTopics on the source before each commit.

    .venv/bin/python -m bench.topic_id_check              # about 3 minutes on 2 cores
    .venv/bin/python -m bench.topic_id_check --records 20000 --calls 100    # a smoke run

Record mode reads the source by topic name (librdkafka), so before each commit it asks the source
for the ids of the topics the cycle read (``Ownership.confirm_topic_ids``): a topic deleted and
created again under its name is then never committed as the old topic's continuation. Raw mode asks
by topic id in its Fetch requests and pays nothing.

Starts its own local clusters, writes ``--records`` 1 KB lz4 records over six partitions, and in
one run measures:

- the check alone: ``--calls`` DescribeTopics of one topic, as the check makes them (median, p99);
- a record-mode exactly-once mirror of the topic (``bench.mirror_throughput.mirror_once``): its
  commits (from its progress line), MB/s and copy time.

The check's share of the copy is ``commits x median / copy seconds``. Results go to
``bench/results/topic-id-check-<timestamp>.json`` and a line on stdout. Not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from dataclasses import asdict
from pathlib import Path

from bench.mirror_throughput import mirror_once, write_source
from devkafka.pair import DevClusters
from mirror_sink.core.clients import clients
from mirror_sink.core.formats.commit_metadata import source_topic_ids

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def check_latency(bootstrap: str, topic: str, calls: int) -> tuple[float, float]:
    """Median and p99 seconds of the check's DescribeTopics."""
    admin = clients.admin({"bootstrap.servers": bootstrap}, "bench-topic-id-check")
    source_topic_ids(admin, [topic])  # connected and warm, as in a running task
    took = []
    for _ in range(calls):
        started = time.perf_counter()
        source_topic_ids(admin, [topic])
        took.append(time.perf_counter() - started)
    took.sort()
    return statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.99))]


def main() -> None:
    """Measure and print; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    workdir = RESULTS / f"topic-id-check-{stamp}"
    workdir.mkdir(parents=True, exist_ok=True)
    clusters = DevClusters(workdir / "clusters")
    clusters.up()
    try:
        src, tgt = clusters.source.bootstrap_servers, clusters.target.bootstrap_servers
        topic = f"topic-id-check-{int(time.time())}"
        write_source(src, topic, args.records, "lz4")
        median, p99 = check_latency(src, topic, args.calls)
        result = mirror_once("record-eos", "lz4", src, tgt, topic, records=args.records, workdir=workdir)
        logs = "".join(p.read_text() for p in workdir.glob("bench-record-eos-*.log"))
        commits = max((int(n) for n in re.findall(r" in (\d+) commits", logs)), default=0)
        seconds = result.copy_seconds or result.seconds
        share = commits * median / seconds if seconds else 0.0
        summary = {
            "records": args.records,
            "check_median_ms": round(median * 1000, 2),
            "check_p99_ms": round(p99 * 1000, 2),
            "commits": commits,
            "copy_seconds": round(seconds, 1),
            "mb_per_s": result.copy_mb_per_s or result.mb_per_s,
            "check_share_pct": round(100 * share, 2),
            "mirror": asdict(result),
        }
        (workdir / "result.json").write_text(json.dumps(summary, indent=2))
        print(
            f"check: median {summary['check_median_ms']} ms, p99 {summary['check_p99_ms']} ms; record-eos: "
            f"{commits} commits in {seconds:.1f} s at {summary['mb_per_s']} MB/s; the check's share of the copy: "
            f"{summary['check_share_pct']}%"
        )
    finally:
        clusters.discard()


if __name__ == "__main__":
    main()
