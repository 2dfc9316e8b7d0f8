"""mirror-sink against MirrorMaker 2 and the target broker's own ingest limit, side by side in one run.

    .venv/bin/python -m bench.compare                  # local clusters; rewrites docs/benchmarks.md + PNGs
    .venv/bin/python -m bench.compare --quick --out /tmp/bench    # a smoke run in about two minutes
    .venv/bin/python -m bench.compare --source HOST:9092 --target HOST:9092   # any two clusters

For each codec it writes the same source data once (1 KB JSON-like records, six partitions,
producer batches of 64 KB to 1 MB), measures the ceiling (the target ingesting those very batches
with no mirror in between), then mirrors the data with each mirror in turn, each into its own target
topic: MirrorMaker 2 in dedicated mode from Maven Central, at least once and exactly once (KIP-618),
and mirror-sink in record mode and raw mode exactly once, and raw mode at least once. Then it
measures end-to-end latency through each mirror under a steady produce rate. Results go to
``<out>/benchmarks.json``, ``<out>/benchmarks.md`` and PNG plots beside it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil

from bench.ceiling import target_ingest
from bench.latency import Latency, StartMirror, measure_latency
from bench.mirror_throughput import MODES, PARTITIONS, RECORD_BYTES, Result, json_like_values, mirror_once, write_source
from bench.mm2 import run_mm2, start_mm2
from bench.report import write_report
from devkafka.backends import reap_with_this_process
from devkafka.pair import DevClusters
from devkafka.paths import kafka_version

ROOT = Path(__file__).resolve().parent.parent
MIRRORS = ("mm2-alo", "mm2-eos", "record-eos", "raw-eos", "raw-alo")
CODECS = ("none", "lz4", "zstd", "gzip")


class Progress:
    """One line every couple of seconds for a long step: percentage, amount and rate so far."""

    def __init__(self, label: str, unit_bytes: int = RECORD_BYTES) -> None:
        self.label = label
        self.unit_bytes = unit_bytes
        self.started = time.monotonic()
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        """The callback the runners call with (done, total) in records."""
        now = time.monotonic()
        if now - self._last < 2.0 and done < total:
            return
        self._last = now
        mb = done * self.unit_bytes / 1e6
        rate = mb / max(now - self.started, 1e-6)
        share = done / total if total else 1.0
        print(
            f"    {self.label}: {share:4.0%}  {mb:8.1f} of {total * self.unit_bytes / 1e6:.1f} MB  {rate:6.1f} MB/s",
            flush=True,
        )


def _machine() -> str:
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    return (
        f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, {platform.system()} "
        f"{platform.release()}, {java[0] if java else 'java ?'}, Python {platform.python_version()}"
    )


def _throughput(mirror: str, codec: str, src: str, tgt: str, *, topic: str, records: int, workdir: Path) -> Result:
    progress = Progress(f"{codec} {mirror}")
    if mirror.startswith("mm2-"):
        run = run_mm2(
            src, tgt, topic, exactly_once=mirror == "mm2-eos", workdir=workdir, tasks=PARTITIONS,
            compression=codec, on_progress=progress,
        )  # fmt: skip
        mb = records * RECORD_BYTES / 1e6
        return Result(
            codec, mirror, records, mb, run.seconds, mb / run.seconds, run.cpu_seconds,
            run.cpu_seconds / (mb / 1000), run.peak_rss_bytes / 1e6,
        )  # fmt: skip
    # Every mirror writes the source's codec, as MM2 is told to: the comparison is of mirrors, not codecs.
    # mirror-sink keeps its default of one task: one thread pipelines every partition, while MM2 gets a
    # task (a thread and a producer) per partition, as Connect needs for parallelism.
    extra = {"target.cluster.producer.compression.type": codec}
    return mirror_once(
        mirror, codec, src, tgt, topic, records=records, workdir=workdir, on_progress=progress, extra=extra
    )


def _sink_starter(mirror: str, src: str, tgt: str, workdir: Path) -> StartMirror:
    def start(topic: str) -> tuple[str, Callable[[], None]]:
        name = f"lat-{mirror}-{time.time_ns() // 1_000_000}"
        config = {
            "name": name,
            "source.cluster.bootstrap.servers": src,
            "target.cluster.bootstrap.servers": tgt,
            "source.cluster.alias": name,
            "topics": topic,
            **MODES[mirror],
        }
        path = workdir / f"{name}.json"
        path.write_text(json.dumps({"name": name, "config": config}))
        with open(workdir / f"{name}.log", "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "mirror_sink.cli", "run", str(path)], stdout=log, stderr=log)
        reap_with_this_process(pid=proc.pid)

        def stop() -> None:
            proc.terminate()
            proc.wait(60)

        return f"{name}.{topic}", stop

    return start


def _mm2_starter(exactly_once: bool, src: str, tgt: str, workdir: Path) -> StartMirror:
    def start(topic: str) -> tuple[str, Callable[[], None]]:
        mm2 = start_mm2(src, tgt, topic, exactly_once=exactly_once, workdir=workdir, tasks=PARTITIONS)
        return mm2.target_topic, mm2.stop

    return start


def _latency(mirror: str, src: str, tgt: str, *, workdir: Path, rate: int, seconds: float) -> Latency:
    start = (
        _mm2_starter(mirror == "mm2-eos", src, tgt, workdir)
        if mirror.startswith("mm2-")
        else _sink_starter(mirror, src, tgt, workdir)
    )
    topic = f"bench-latency-{mirror}-{time.time_ns() // 1_000_000}"
    return measure_latency(
        src, tgt, topic, start, partitions=PARTITIONS, rate_per_s=rate, seconds=seconds, value=json_like_values(1)[0]
    )


def run(args: argparse.Namespace, src: str, tgt: str) -> dict[str, Any]:
    """Every measurement; the results dict ``bench.report`` renders."""
    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    records = int(args.gb * 1e9 / RECORD_BYTES)
    mirrors = args.mirrors.split(",")
    codecs = args.codecs.split(",")
    steps = len(codecs) * (len(mirrors) + 2) + len(mirrors)
    step = 0

    def announce(what: str) -> None:
        nonlocal step
        step += 1
        print(f"[{step}/{steps}] {what}", flush=True)

    throughput: list[dict[str, Any]] = []
    ceiling: list[dict[str, Any]] = []
    for codec in codecs:
        topic = f"bench-{codec}-{time.time_ns() // 1_000_000}"
        announce(f"writing {records * RECORD_BYTES / 1e9:.2f} GB of {codec} records to {topic}")
        write_source(src, topic, records, codec)
        announce(f"{codec}: the target ingesting the source's batches, no mirror")
        top = target_ingest(
            src, tgt, topic, partitions=PARTITIONS, target_topic=f"ceiling.{topic}", on_progress=Progress("ceiling")
        )
        mb = top.records * RECORD_BYTES / 1e6
        ceiling.append({"codec": codec, "seconds": top.seconds, "mb_per_s": mb / top.seconds})
        print(f"    ceiling: {mb / top.seconds:.1f} MB/s ({top.batches:,} batches)", flush=True)
        for mirror in mirrors:
            announce(f"{codec}: mirroring with {mirror}")
            result = _throughput(mirror, codec, src, tgt, topic=topic, records=records, workdir=workdir)
            throughput.append({k: v for k, v in asdict(result).items() if k not in ("mode", "records", "megabytes")})
            throughput[-1]["mirror"] = mirror
            print(
                f"    {result.seconds:.1f} s, {result.mb_per_s:.1f} MB/s, {result.cpu_s_per_gb:.1f} CPU-s/GB, "
                f"peak RSS {result.peak_rss_mb:.0f} MB",
                flush=True,
            )
    latency: list[dict[str, Any]] = []
    for mirror in mirrors:
        announce(f"latency through {mirror}: {args.latency_rate} records/s for {args.latency_seconds:.0f} s")
        lat = _latency(mirror, src, tgt, workdir=workdir, rate=args.latency_rate, seconds=args.latency_seconds)
        latency.append({"mirror": mirror, **asdict(lat)})
        print(f"    p50 {lat.p50_ms:.0f} ms, p99 {lat.p99_ms:.0f} ms, max {lat.max_ms:.0f} ms", flush=True)
    return {
        "command": " ".join([".venv/bin/python -m bench.compare", *map(shlex.quote, sys.argv[1:])]),
        "machine": _machine(),
        "kafka_version": kafka_version(),
        "date": datetime.date.today().isoformat(),
        "gb_per_codec": args.gb,
        "record_bytes": RECORD_BYTES,
        "partitions": PARTITIONS,
        "quick": args.quick,
        "throughput": throughput,
        "ceiling": ceiling,
        "latency": latency,
    }


def main() -> int:
    """Parse arguments, bring up clusters if none are given, run, write the report."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=0.5, help="uncompressed GB of 1 KB records per codec")
    parser.add_argument("--codecs", default=",".join(CODECS), help="comma-separated: none, gzip, snappy, lz4, zstd")
    parser.add_argument("--mirrors", default=",".join(MIRRORS), help=f"comma-separated, of {', '.join(MIRRORS)}")
    parser.add_argument("--latency-rate", type=int, default=2000, help="records per second in the latency runs")
    parser.add_argument("--latency-seconds", type=float, default=20.0, help="length of each latency run")
    parser.add_argument("--quick", action="store_true", help="smoke run: 5 MB of lz4, 3-second latency runs")
    parser.add_argument("--source", help="source bootstrap servers (default: local clusters started here)")
    parser.add_argument("--target", help="target bootstrap servers")
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="where benchmarks.md, .json and PNGs go")
    parser.add_argument("--workdir", type=Path, default=ROOT / "bench" / "results", help="logs and local clusters")
    args = parser.parse_args()
    if args.quick:
        args.gb, args.codecs, args.latency_rate, args.latency_seconds = 0.005, "lz4", 500, 3.0
    if bool(args.source) != bool(args.target):
        parser.error("give both --source and --target, or neither")
    clusters = None
    if args.source:
        src, tgt = args.source, args.target
    else:
        clusters = DevClusters(args.workdir / "clusters")
        print("starting local source and target clusters...", flush=True)
        clusters.up()
        src, tgt = clusters.source.bootstrap_servers, clusters.target.bootstrap_servers
    try:
        results = run(args, src, tgt)
    finally:
        if clusters is not None:
            clusters.discard()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "benchmarks.json").write_text(json.dumps(results, indent=2) + "\n")
    for path in write_report(results, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
