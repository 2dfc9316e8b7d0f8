"""``python -m bench.txn_load``: many transactional producers over many partitions, through each mirror.

The workload where keeping source transactions whole costs the most: ``--producers`` librdkafka
transactional producers (transactions version 1) each commit transactions of 2-6 records on
partitions picked at random among ``--partitions`` of one source topic, at ``--rate`` records per
second in all, for ``--seconds``. Every value carries its send time; a read_committed consumer of
the target measures each record's latency from its send to its visibility on the target (which
includes the source transaction's own commit). Each mirror (``--mirrors``, bench.mirror_throughput's
modes) runs the same load in turn, one after the other in one run, so the pairs
raw-eos/raw-eos-whole and record-eos/record-eos-whole compare like for like.

Per mirror: records/s kept up with, latency p50/p99/max, target transactions committed, and for the
``-whole`` modes the cuts taken, dropped mid-markers and split commits (from its /metrics). Prints a
table and writes JSON to ``--out``. Not a test.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from bench.common.paths import RESULTS
from bench.latency import prometheus_transactions
from bench.mirror_throughput import MODES
from devkafka.cluster import free_port
from devkafka.data import create_topic
from devkafka.pair import given_or_local_pair
from devkafka.processes import reap_with_this_process

_STAMP = struct.Struct(">d")


@dataclass
class Run:
    """One mirror's figures under the load."""

    mirror: str
    sent: int
    arrived: int
    seconds: float
    records_per_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    commits: int | None
    cuts: dict[str, int] = field(default_factory=dict)


class _Load:
    """``producers`` transactional producers sharing ``rate`` records per second."""

    def __init__(self, bootstrap: str, topic: str, *, partitions: int, producers: int, rate: int, run_id: str) -> None:
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.per_producer = rate / producers
        self.threads = [threading.Thread(target=self._write, args=(f"{run_id}-{n}",)) for n in range(producers)]
        self.stop = threading.Event()
        self.sent = 0
        self._lock = threading.Lock()

    def _write(self, txn_id: str) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": txn_id, "linger.ms": 0})
        producer.init_transactions(30)
        rng = random.Random(txn_id)
        started, written = time.monotonic(), 0
        while not self.stop.is_set():
            width = rng.randint(2, 6)
            producer.begin_transaction()
            for partition in rng.sample(range(self.partitions), min(width, self.partitions)):
                producer.produce(self.topic, _STAMP.pack(time.time()) + b"x" * 100, partition=partition)
            producer.commit_transaction(30)
            written += width
            with self._lock:
                self.sent += width
            ahead = written / self.per_producer - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def join(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)


def _cuts(port: int) -> dict[str, int]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            body = resp.read().decode()
    except OSError:
        return {}
    out: dict[str, int] = {}
    for line in body.splitlines():
        if line.startswith("mirror_sink_source_transaction_cuts_total{"):
            outcome = re.search(r'[{,]outcome="(\w+)"', line)
            if outcome:
                out[outcome.group(1)] = out.get(outcome.group(1), 0) + int(float(line.rsplit("}", 1)[-1].split()[0]))
    return out


def run_one(mirror: str, source: str, target: str, args: argparse.Namespace, workdir: Path) -> Run:
    """The load through one mirror, measured on the target."""
    run_id = f"txl-{mirror}-{time.time_ns() // 1_000_000}"
    topic = run_id
    create_topic(source, topic, args.partitions)
    config = {
        "name": run_id,
        "source.cluster.bootstrap.servers": source,
        "target.cluster.bootstrap.servers": target,
        "source.cluster.alias": run_id,
        "topics": topic,
        "emit.checkpoints.enabled": "false",
        **MODES[mirror],
    }
    path = workdir / f"{run_id}.json"
    path.write_text(json.dumps({"name": run_id, "config": config}))
    port = free_port()
    with open(workdir / f"{run_id}.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "api.cli", "run", str(path), "--metrics-port", str(port)], stdout=log, stderr=log
        )
    reap_with_this_process(pid=proc.pid)
    target_topic = f"{run_id}.{topic}"
    reader = Consumer(
        {
            "bootstrap.servers": target,
            "group.id": f"{run_id}-reader",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        deadline = time.monotonic() + 120
        while target_topic not in reader.list_topics(timeout=10).topics:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{target_topic} not created in 120 s")
            time.sleep(0.5)
        reader.assign([TopicPartition(target_topic, p, 0) for p in range(args.partitions)])
        load = _Load(source, topic, partitions=args.partitions, producers=args.producers, rate=args.rate, run_id=run_id)
        latencies: list[float] = []
        started = time.monotonic()
        load.start()
        end_at = started + args.seconds
        while time.monotonic() < end_at or (
            len(latencies) < load.sent and time.monotonic() < end_at + args.drain_seconds
        ):
            if time.monotonic() >= end_at and not load.stop.is_set():
                load.join()
            for msg in reader.consume(1000, 0.2):
                err = msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        print(f"  reader: {err.str()}", flush=True)
                    continue
                latencies.append((time.time() - _STAMP.unpack_from(msg.value() or b"")[0]) * 1000)
        load.join()
        took = time.monotonic() - started
        committed = prometheus_transactions(port)
        cuts = _cuts(port)
    finally:
        reader.close()
        proc.terminate()
        proc.wait(60)
    got = sorted(latencies)
    p99 = got[min(len(got) - 1, int(len(got) * 0.99))] if got else float("nan")
    return Run(
        mirror,
        load.sent,
        len(got),
        took,
        len(got) / args.seconds,
        statistics.median(got) if got else float("nan"),
        p99,
        got[-1] if got else float("nan"),
        committed[0] if committed else None,
        cuts,
    )


def main() -> int:
    """Parse arguments, bring up clusters if none are given, run each mirror, print and save."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", default="raw-eos,raw-eos-whole,record-eos,record-eos-whole")
    parser.add_argument("--producers", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--rate", type=int, default=2000, help="records per second, all producers together")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--drain-seconds", type=float, default=60.0)
    parser.add_argument("--source", help="source bootstrap servers (default: local clusters started here)")
    parser.add_argument("--target", help="target bootstrap servers")
    parser.add_argument("--workdir", type=Path, default=RESULTS / "txn_load")
    parser.add_argument("--out", type=Path, default=RESULTS / "txn_load.json")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    runs = []
    with given_or_local_pair(args.workdir, args.source, args.target) as brokers:
        for mirror in args.mirrors.split(","):
            print(f"{mirror}: {args.producers} transactional producers, {args.rate} records/s", flush=True)
            run = run_one(mirror, brokers.source, brokers.target, args, args.workdir)
            print(f"  {asdict(run)}", flush=True)
            runs.append(run)
    print("\n| mirror | records/s | p50 ms | p99 ms | max ms | commits | cuts | partial | mid-markers | split |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in runs:
        c = r.cuts
        print(
            f"| {r.mirror} | {r.records_per_s:,.0f} | {r.p50_ms:,.0f} | {r.p99_ms:,.0f} | {r.max_ms:,.0f} | "
            f"{r.commits} | {c.get('cut', '')} | {c.get('partial_cut', '')} | {c.get('mid_markers', '')} | "
            f"{c.get('split_commit', '')} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps([asdict(r) for r in runs], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
