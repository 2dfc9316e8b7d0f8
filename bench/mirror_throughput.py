"""Mirror throughput and cost: MB/s, CPU-seconds per GB and peak RSS of the mirror process.

    .venv/bin/python -m bench.mirror_throughput --gb 1 --codecs lz4,zstd,gzip --modes raw-eos,record-eos

Starts its own local source and target clusters (under bench/results/clusters, deleted at the
end), writes the data once per codec (1 KB JSON-like records, several partitions, producer batches
up to 1 MB), then mirrors the same data with each mode in turn, in one run, so the figures compare
side by side.
Results go to stdout and bench/results/mirror_throughput.json. Not a test: numbers vary with the
machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from confluent_kafka import Producer

from bench.common.cpu import BusyTimeline, ProcessTree
from bench.common.machine import cores_and_memory
from bench.common.stacks import stacks_sampler
from devkafka.data import Address, client_settings, committed_offsets, create_topic, end_offsets
from devkafka.pair import DevClusters
from devkafka.processes import reap_with_this_process

RESULTS = Path(__file__).parent / "results"
RECORD_BYTES = 1024
PARTITIONS = 6

MODES: dict[str, dict[str, str]] = {
    "raw-eos": {"transaction.producer": "true", "mirror.mode": "raw"},
    # Commits the moment it has caught up (transaction.boundary.linger.ms=0), as before issue 47.
    "raw-eos-eager": {"transaction.producer": "true", "mirror.mode": "raw", "transaction.boundary.linger.ms": "0"},
    # Quiet source leaders polled every fetch.wait.max.ms, never watched, as before issue 47.
    "raw-eos-poll": {"transaction.producer": "true", "mirror.mode": "raw", "fetch.idle.wait.max.ms": "0"},
    "record-eos": {"transaction.producer": "true", "mirror.mode": "record"},
    "auto-eos": {"transaction.producer": "true", "mirror.mode": "auto"},  # raw, or record for tiny batches
    # Source transactions kept whole (issue 43): the same modes, committing only at cuts of the source.
    "raw-eos-whole": {"transaction.producer": "true", "mirror.mode": "raw", "source.transactions.whole": "true"},
    "record-eos-whole": {"transaction.producer": "true", "mirror.mode": "record", "source.transactions.whole": "true"},
    "raw-alo": {"transaction.producer": "false", "mirror.mode": "raw"},
    "record-alo": {"transaction.producer": "false", "mirror.mode": "record"},
    "spark-local2": {"transaction.producer": "true", "runtime": "spark"},  # Spark local[2], available-now
}


@dataclass
class Result:
    """One mode's figures."""

    codec: str
    mode: str
    records: int
    megabytes: float
    seconds: float
    mb_per_s: float
    cpu_seconds: float
    cpu_s_per_gb: float
    peak_rss_mb: float
    #: The copy alone: from the first task's "reading N source partitions" log line to the shadow
    #: group holding every offset (process start, connections and the group join left out); the
    #: figure to hold against the ceiling, which is timed without any start-up either.
    copy_seconds: float | None = None
    copy_mb_per_s: float | None = None
    #: Cores busy on the whole machine (brokers and mirror together) during the copy, out of ``os.cpu_count()``.
    machine_cores_busy: float | None = None
    #: The mirror's CPU over the copy alone (the same span as ``copy_seconds``): what it spends per byte,
    #: its start-up (imports, connections, group join) left out, as the target broker's is in the ceiling.
    copy_cpu_seconds: float | None = None
    copy_cpu_s_per_gb: float | None = None


def json_like_values(n: int) -> list[bytes]:
    """``n`` distinct ~1 KB JSON documents with realistic redundancy (compress about 3-5x with lz4)."""
    rng = random.Random(42)
    words = [f"{w}{i}" for i in range(200) for w in ("alpha", "order", "sku", "region", "user")]
    out = []
    for i in range(n):
        items: list[dict[str, object]] = []
        doc = {"id": i, "ts": 1_700_000_000_000 + i, "user": f"user-{rng.randrange(10**6)}", "items": items}
        body = json.dumps(doc)
        while len(body) < RECORD_BYTES - 60:
            items.append({"sku": rng.choice(words), "qty": rng.randrange(1, 9), "price": rng.randrange(100, 99999)})
            body = json.dumps(doc)
        out.append(body.encode()[:RECORD_BYTES].ljust(RECORD_BYTES, b" "))
    return out


#: Producer batch sizes, one per partition in turn: real topics mix small and large batches.
BATCH_SIZES = (64 * 1024, 256 * 1024, 1024 * 1024)


def write_source(bootstrap: Address, topic: str, records: int, codec: str, *, partitions: int = PARTITIONS) -> None:
    """``records`` 1 KB records compressed with ``codec``, producer batches of 64 KB to 1 MB, over ``partitions``.

    ``bootstrap`` is an address, or client settings with a secured cluster's SASL/TLS keys.
    """
    create_topic(bootstrap, topic, partitions)
    values = json_like_values(4096)
    producers = [
        Producer(
            {
                **client_settings(bootstrap),
                "compression.type": codec,
                "linger.ms": 20,
                "batch.size": size,
                "enable.idempotence": True,
            }
        )
        for size in BATCH_SIZES
    ]
    started = time.monotonic()
    for i in range(records):
        partition = i % partitions
        producer = producers[partition % len(producers)]
        while True:
            try:
                producer.produce(topic, values[i % len(values)], key=b"k%d" % (i % 1000), partition=partition)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 100_000 == 0:
            for p in producers:
                p.poll(0)
            print(f"  wrote {i:,}/{records:,} records", flush=True)
    for p in producers:
        p.flush(120)
    print(f"  source ready: {records:,} records in {time.monotonic() - started:.1f} s", flush=True)


def mirror_once(
    mode: str,
    codec: str,
    src: Address,
    tgt: Address,
    topic: str,
    *,
    records: int,
    workdir: Path,
    on_progress: Callable[[int, int], None] | None = None,
    extra: Mapping[str, str] | None = None,
    checkout: Path | None = None,
    profile_to: Path | None = None,
) -> Result:
    """Mirror ``topic`` with one mode in a fresh connector; measure the process.

    ``on_progress(done, total)`` (in source offsets) is called every half second. ``src`` and ``tgt``
    are addresses, or client settings (a secured cluster's SASL/TLS keys), which the connector gets as
    its ``source.cluster.*`` and ``target.cluster.*`` keys. ``checkout``: run the mirror from that
    source tree (another commit's worktree, for an A/B pair) instead of this one. ``profile_to``: sample
    the mirror's Python stacks with py-spy into that file (collapsed stacks; ``bench.profile`` reads it).
    """
    # Milliseconds: runs a second apart (a task-count sweep over a small topic) get names of their own.
    name = f"bench-{mode}-{time.time_ns() // 1_000_000}"
    config = {
        "name": name,
        "connector.class": "MirrorSinkConnector",
        **{f"source.cluster.{k}": str(v) for k, v in client_settings(src).items()},
        **{f"target.cluster.{k}": str(v) for k, v in client_settings(tgt).items()},
        "topics": topic,
        "replication.policy.class": "DefaultReplicationPolicy",
        "source.cluster.alias": name,  # a distinct target topic per mode
        "tasks.max": "1",
        **MODES[mode],
        **(extra or {}),
    }
    path = workdir / f"{name}.json"
    path.write_text(json.dumps({"name": name, "config": config}))
    log_path = workdir / f"{name}.log"
    started = time.monotonic()
    if MODES[mode].get("runtime") == "spark":
        argv = ["spark", str(path), "--master", "local[2]", "--checkpoint", str(workdir / f"{name}-checkpoint")]
    else:
        argv = ["run", str(path), "--worker-id", "bench"]
    env = None
    if checkout is not None:  # its packages ahead of this checkout's editable install
        env = {**os.environ, "PYTHONPATH": str(checkout)}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "api.cli", *argv], stdout=log, stderr=log, env=env, cwd=checkout)
    reap_with_this_process(pid=proc.pid)  # an interrupted benchmark leaves no mirror behind
    sampler = stacks_sampler(proc.pid, profile_to) if profile_to is not None else None
    tree = ProcessTree(proc.pid)  # the whole tree: Spark's JVM and Python workers count as the mirror's cost
    ends = end_offsets(src, topic)
    target_topic = f"{name}.{topic}"
    machine = BusyTimeline()
    while True:
        time.sleep(0.2)
        machine.sample()
        tree.sample()
        try:
            stored = committed_offsets(tgt, f"connect-{name}", [(target_topic, p) for p in ends], timeout=5)
        except Exception:
            continue
        done = sum(max(0, stored.get((target_topic, p), 0)) for p in ends)
        if on_progress is not None:
            on_progress(done, sum(ends.values()))
        if done >= sum(ends.values()):
            break
        if proc.poll() is not None:
            raise RuntimeError(f"mirror exited with {proc.returncode}; see {log_path}")
    seconds = time.monotonic() - started
    finished_at = time.time()
    cpu = tree.cpu_seconds()
    proc.terminate()
    proc.wait(60)
    if sampler is not None:
        sampler.wait(60)  # py-spy writes its file when the mirror exits
    megabytes = records * RECORD_BYTES / 1e6
    reading_at = _first_reading(log_path)
    copy_seconds = finished_at - reading_at if reading_at is not None else None
    copy_cpu = cpu - tree.cpu_at(reading_at) if reading_at is not None else None
    return Result(
        codec,
        mode,
        records,
        megabytes,
        seconds,
        megabytes / seconds,
        cpu,
        cpu / (megabytes / 1000),
        tree.peak_rss_bytes / 1e6,
        copy_seconds,
        megabytes / copy_seconds if copy_seconds else None,
        machine.cores_busy(reading_at, finished_at),
        copy_cpu,
        copy_cpu / (megabytes / 1000) if copy_cpu is not None else None,
    )


_READING = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*\] reading \d+ source partitions", re.MULTILINE)


def _first_reading(log_path: Path) -> float | None:
    """When the first task started reading (its log line's local time), as a Unix time."""
    found = _READING.search(log_path.read_text(errors="replace"))
    if found is None:
        return None
    return datetime.datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def main() -> int:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0, help="uncompressed GB of 1 KB records")
    parser.add_argument("--modes", default="raw-eos,record-eos", help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--codecs", default="lz4", help="comma-separated source codecs: none, gzip, snappy, lz4, zstd")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    clusters = DevClusters(RESULTS / "clusters")
    print("starting local clusters...", flush=True)
    clusters.up()
    src, tgt = clusters.source.bootstrap_servers, clusters.target.bootstrap_servers
    records = int(args.gb * 1e9 / RECORD_BYTES)
    results: list[Result] = []
    try:
        for codec in args.codecs.split(","):
            topic = f"bench-{codec}-{int(time.time())}"
            print(f"writing {args.gb} GB ({records:,} records of {RECORD_BYTES} B, {codec}) to {topic}", flush=True)
            write_source(src, topic, records, codec)
            for mode in args.modes.split(","):
                print(f"mirroring {codec} with {mode}...", flush=True)
                results.append(mirror_once(mode, codec, src, tgt, topic, records=records, workdir=RESULTS))
                r = results[-1]
                print(
                    f"  {r.seconds:.1f} s, {r.mb_per_s:.1f} MB/s, {r.cpu_s_per_gb:.1f} CPU-s/GB, "
                    f"peak RSS {r.peak_rss_mb:.0f} MB"
                )
    finally:
        clusters.discard()
    machine = cores_and_memory()
    (RESULTS / "mirror_throughput.json").write_text(
        json.dumps({"machine": machine, "results": [asdict(r) for r in results]}, indent=2)
    )
    print(f"\n({machine}, {args.gb} GB of 1 KB records per codec; CPU relative to record-eos of the same codec)")
    print("| codec | mode | MB/s | CPU-s/GB | CPU vs record-eos | peak RSS MB | seconds |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        base = next((b for b in results if b.codec == r.codec and b.mode == "record-eos"), None)
        ratio = f"{r.cpu_s_per_gb / base.cpu_s_per_gb:.0%}" if base else "-"
        print(
            f"| {r.codec} | {r.mode} | {r.mb_per_s:.1f} | {r.cpu_s_per_gb:.1f} | {ratio} | {r.peak_rss_mb:.0f} "
            f"| {r.seconds:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
