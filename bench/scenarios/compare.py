"""mirror-sink against MirrorMaker 2 and the target broker's own ingest limit, side by side in one run.

    .venv/bin/python -m bench.compare                  # local clusters; rewrites docs/benchmarks.md + PNGs
    .venv/bin/python -m bench.compare --quick --out /tmp/bench    # a smoke run in about two minutes
    .venv/bin/python -m bench.compare --source HOST:9092 --target HOST:9092   # any two clusters
    .venv/bin/python -m bench.compare --codecs lz4 --mirrors raw-eos,mm2-eos --latency-rates 2000 --no-scaling

For each codec it writes the same source data once (1 KB JSON-like records, six partitions, producer
batches of 64 KB to 1 MB), measures the ceiling (the target ingesting those very batches with no
mirror in between, and the target broker's own CPU per GB doing it when the broker runs on this
machine: the per-byte yardstick for each mirror's CPU), then mirrors the data with each mirror in
turn, each into its own target topic: MirrorMaker 2 in dedicated mode from Maven Central, at least
once and exactly once (KIP-618), and mirror-sink in record mode and raw mode exactly once, and raw
mode at least once. Then it measures end-to-end latency through each latency mirror at each of
several produce rates (reporting the rate the load generator actually reached, and for exactly-once
mirrors the transaction markers the run added to the target log), and how raw mode (and record mode)
scale with ``tasks.max`` on a topic with many partitions. Results go to ``<out>/data/benchmarks.json``,
the page to ``<out>/benchmarks.md`` and its PNG plots to ``<out>/data/`` (``bench.report``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.ceiling import Ceiling, target_ingest
from bench.common.console import Progress
from bench.common.cpu import ProcessCpu
from bench.common.machine import machine
from bench.common.section import Section
from bench.latency import (
    CONTROL_BATCH_BYTES,
    RunningMirror,
    StartMirror,
    logged_transactions,
    measure_latency,
    prometheus_transactions,
)
from bench.mirror_throughput import MODES, PARTITIONS, RECORD_BYTES, Result, json_like_values, mirror_once, write_source
from bench.mm2 import run_mm2, start_mm2
from bench.scenarios.compare_page import plot, render_markdown
from devkafka.cluster import free_port
from devkafka.pair import BrokerPair
from devkafka.paths import kafka_version
from devkafka.processes import reap_with_this_process

#: The results file, in the page's data directory; the page itself is rendered from it.
COMPARE_RESULTS = "benchmarks.json"
MIRRORS = ("mm2-alo", "mm2-eos", "record-eos", "raw-eos", "raw-alo")
CODECS = ("none", "lz4", "zstd", "gzip")
#: The latency runs' mirrors by default: MM2's at-least-once run adds little next to raw-alo's.
LATENCY_MIRRORS = ("mm2-eos", "record-eos", "raw-eos", "raw-alo")
DEFAULT_LATENCY_RATES = "2000,20000,100000"
#: Distinct 1 KB values the latency load cycles through (so that batches compress like real data).
LATENCY_VALUES = 256
SCALING_CODEC = "lz4"


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
    def start(topic: str) -> RunningMirror:
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
        log_path = workdir / f"{name}.log"
        # Its own metrics endpoint: the transactions it committed and aborted, counted by the mirror.
        port = free_port()
        argv = [sys.executable, "-m", "api.cli", "run", str(path), "--metrics-port", str(port)]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=log)
        reap_with_this_process(pid=proc.pid)

        def stop() -> None:
            proc.terminate()
            proc.wait(60)

        def transactions() -> tuple[int, int] | None:
            return prometheus_transactions(port) or logged_transactions(log_path)

        return RunningMirror(f"{name}.{topic}", stop, transactions)

    return start


def _mm2_starter(exactly_once: bool, src: str, tgt: str, workdir: Path) -> StartMirror:
    def start(topic: str) -> RunningMirror:
        mm2 = start_mm2(src, tgt, topic, exactly_once=exactly_once, workdir=workdir, tasks=PARTITIONS)
        return RunningMirror(mm2.target_topic, mm2.stop)

    return start


def _latency(
    mirror: str, src: str, tgt: str, *, workdir: Path, rate: float, seconds: float, drain_s: float
) -> dict[str, Any]:
    """One latency run through ``mirror`` at ``rate`` records/s; the entry for the results' latency list."""
    start = (
        _mm2_starter(mirror == "mm2-eos", src, tgt, workdir)
        if mirror.startswith("mm2-")
        else _sink_starter(mirror, src, tgt, workdir)
    )
    topic = f"bench-latency-{mirror}-{time.time_ns() // 1_000_000}"
    lat = measure_latency(
        src, tgt, topic, start, partitions=PARTITIONS, rate_per_s=rate, seconds=seconds,
        values=json_like_values(LATENCY_VALUES), transactional="-eos" in mirror, drain_timeout_s=drain_s,
    )  # fmt: skip
    entry: dict[str, Any] = {"mirror": mirror, **asdict(lat)}
    entry["commits_from"] = "mirror" if lat.commits is not None else None
    if lat.commits is None and mirror == "mm2-eos" and lat.markers is not None:
        # One MM2 task per partition (tasks.max = partitions), so each transaction writes one target
        # partition and leaves exactly one marker there: the markers count its data-carrying commits.
        entry["commits"] = lat.markers
        entry["commits_per_s"] = lat.markers_per_s
        entry["commits_from"] = "markers"
    return entry


def _print_latency(entry: Mapping[str, Any]) -> None:
    achieved = entry.get("achieved_rate_per_s") or 0.0
    line = (
        f"    achieved {achieved:,.0f} records/s; p50 {entry['p50_ms']:.0f} ms, p99 {entry['p99_ms']:.0f} ms, "
        f"max {entry['max_ms']:.0f} ms"
    )
    if not entry.get("complete", True):
        line += f"; INCOMPLETE: {entry['records']:,} of {entry['produced']:,} records arrived"
    if entry.get("markers") is not None:
        share = entry.get("marker_share")
        line += f"; {entry['markers']:,} markers ({entry.get('markers_per_s') or 0:.1f}/s"
        line += f", {share:.2%} of target offsets)" if share is not None else ")"
    if entry.get("marker_bytes_share") is not None:
        line += f", marker bytes {entry['marker_bytes_share']:.3%} of data bytes"
    if entry.get("commits") is not None:
        line += f"; {entry['commits']:,} commits"
        if entry.get("aborted"):
            line += f", {entry['aborted']:,} aborted"
    print(line, flush=True)


def _scaling_run(
    mirror: str, tasks: int, src: str, tgt: str, *, topic: str, records: int, workdir: Path
) -> dict[str, Any]:
    """Mirror the scaling topic with ``mirror`` at ``tasks.max = tasks``; the entry for the results' scaling list."""
    extra = {"target.cluster.producer.compression.type": SCALING_CODEC, "tasks.max": str(tasks)}
    result = mirror_once(
        mirror, SCALING_CODEC, src, tgt, topic, records=records, workdir=workdir,
        on_progress=Progress(f"{mirror} x{tasks}"), extra=extra,
    )  # fmt: skip
    keep = ("seconds", "mb_per_s", "copy_seconds", "copy_mb_per_s", "cpu_seconds", "cpu_s_per_gb", "peak_rss_mb")
    return {"mirror": mirror, "tasks": tasks, **{k: getattr(result, k) for k in keep}}


def csv_list(value: str) -> list[str]:
    """The non-empty items of a comma-separated option."""
    return [v.strip() for v in value.split(",") if v.strip()]


class _Steps:
    """Numbers the run's steps as they start: "[3/17] ..."."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0

    def announce(self, what: str) -> None:
        """Print the next step's heading."""
        self.done += 1
        print(f"[{self.done}/{self.total}] {what}", flush=True)


def per_gb(cpu_seconds: float | None, megabytes: float) -> float | None:
    """CPU-seconds per GB (10^9 bytes), or None when the CPU is unknown or nothing was moved."""
    if cpu_seconds is None or megabytes <= 0:
        return None
    return cpu_seconds / (megabytes / 1000)


def ceiling_entry(codec: str, runs: list[Ceiling]) -> dict[str, Any]:
    """The results' ceiling entry from the ingest runs of one codec.

    Speed is the fastest run's (a fresh broker's first ingest pays its JIT warm-up and first log
    writes). The broker's CPU-s/GB is the lowest any run measured: the warm broker's cost, the
    cheapest the target takes these bytes in, so a mirror's CPU against it is never flattered.
    """
    top = min(runs, key=lambda run: run.seconds)
    mb_per_s = top.records * RECORD_BYTES / 1e6 / top.seconds
    cpu_runs = [per_gb(run.broker_cpu_seconds, run.records * RECORD_BYTES / 1e6) for run in runs]
    measured = [c for c in cpu_runs if c is not None]
    return {
        "codec": codec,
        "seconds": top.seconds,
        "mb_per_s": mb_per_s,
        "batches": top.batches,
        "machine_cores_busy": top.machine_cores_busy,
        "broker_cpu_s_per_gb": min(measured) if measured else None,
        "broker_cpu_s_per_gb_runs": cpu_runs,
    }


def _ceiling_line(entry: Mapping[str, Any]) -> str:
    line = f"    ceiling: {entry['mb_per_s']:.1f} MB/s ({entry['batches']:,} batches), "
    line += f"machine cores busy {entry['machine_cores_busy'] or 0:.2f}"
    if entry["broker_cpu_s_per_gb"] is not None:
        runs = ", ".join("-" if c is None else f"{c:.2f}" for c in entry["broker_cpu_s_per_gb_runs"])
        line += f", target broker {entry['broker_cpu_s_per_gb']:.2f} CPU-s/GB (runs: {runs})"
    return line


def _mirror_line(entry: Mapping[str, Any], ceiling: Mapping[str, Any]) -> str:
    """The progress log's line for one mirror's run, its CPU per GB beside the target broker's ingest."""
    cpu = entry["cpu_s_per_gb"]
    line = (
        f"    {entry['seconds']:.1f} s, {entry['mb_per_s']:.1f} MB/s ({entry['mb_per_s'] / ceiling['mb_per_s']:.0%} of "
        f"the ceiling), {cpu:.2f} CPU-s/GB ({1000 / cpu if cpu else 0:.0f} MB/s per core), "
        f"peak RSS {entry['peak_rss_mb']:.0f} MB, machine cores busy {entry.get('machine_cores_busy') or 0:.2f}"
    )
    copy_cpu = entry.get("copy_cpu_s_per_gb")
    if copy_cpu:
        line += f"; the copy alone {copy_cpu:.2f} CPU-s/GB ({1000 / copy_cpu:.0f} MB/s per core)"
    broker = ceiling.get("broker_cpu_s_per_gb")
    if broker and (copy_cpu or cpu):
        line += f"; {(copy_cpu or cpu) / broker:.2f}x the target broker's ingest CPU/GB ({broker:.2f})"
    if entry.get("target_broker_cpu_s_per_gb") is not None:
        line += f"; target broker meanwhile {entry['target_broker_cpu_s_per_gb']:.2f} CPU-s/GB"
    return line


def _throughput_step(
    args: argparse.Namespace, steps: _Steps, brokers: BrokerPair
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per codec: write the source, measure the ceiling, mirror with each mirror; (throughput, ceiling) entries."""
    src, tgt = brokers.source, brokers.target
    records = int(args.gb * 1e9 / RECORD_BYTES)
    throughput: list[dict[str, Any]] = []
    ceiling: list[dict[str, Any]] = []
    for codec in csv_list(args.codecs):
        topic = f"bench-{codec}-{time.time_ns() // 1_000_000}"
        steps.announce(f"writing {records * RECORD_BYTES / 1e9:.2f} GB of {codec} records to {topic}")
        write_source(src, topic, records, codec)
        steps.announce(f"{codec}: the target ingesting the source's batches, no mirror (best of two)")
        # Best of two: the first ingest into a fresh broker also pays its JIT warm-up and the first
        # writes to new log and index files (a 125 MB/s ceiling once, that a mirror then beat).
        # The target broker's own CPU is measured over each timed ingest when it runs on this machine.
        runs = [
            target_ingest(
                src,
                tgt,
                topic,
                partitions=PARTITIONS,
                target_topic=f"ceiling{i}.{topic}",
                on_progress=Progress("ceiling"),
                target_pid=brokers.target_pid,
            )
            for i in (1, 2)
        ]
        ceiling.append(ceiling_entry(codec, runs))
        print(_ceiling_line(ceiling[-1]), flush=True)
        for mirror in csv_list(args.mirrors):
            steps.announce(f"{codec}: mirroring with {mirror}")
            # Both brokers' own CPU over the mirror's run (start-up included): what the mirror costs them.
            source_cpu, target_cpu = ProcessCpu(brokers.source_pid), ProcessCpu(brokers.target_pid)
            result = _throughput(mirror, codec, src, tgt, topic=topic, records=records, workdir=args.workdir)
            entry = {k: v for k, v in asdict(result).items() if k not in ("mode", "records", "megabytes")}
            entry["mirror"] = mirror
            entry["source_broker_cpu_s_per_gb"] = per_gb(source_cpu.seconds(), result.megabytes)
            entry["target_broker_cpu_s_per_gb"] = per_gb(target_cpu.seconds(), result.megabytes)
            throughput.append(entry)
            print(_mirror_line(entry, ceiling[-1]), flush=True)
    return throughput, ceiling


def _scaling_step(args: argparse.Namespace, steps: _Steps, src: str, tgt: str) -> list[dict[str, Any]]:
    """Write the many-partition topic once, mirror it with each scaling mirror at each task count."""
    records = int(args.scaling_gb * 1e9 / RECORD_BYTES)
    topic = f"bench-scaling-{time.time_ns() // 1_000_000}"
    steps.announce(
        f"writing {records * RECORD_BYTES / 1e9:.2f} GB of {SCALING_CODEC} records to {topic} "
        f"({args.scaling_partitions} partitions)"
    )
    write_source(src, topic, records, SCALING_CODEC, partitions=args.scaling_partitions)
    scaling: list[dict[str, Any]] = []
    for mirror in csv_list(args.scaling_mirrors):
        for tasks in (int(t) for t in csv_list(args.scaling_tasks)):
            steps.announce(f"task scaling: {mirror} with tasks.max={tasks}")
            try:
                entry = _scaling_run(mirror, tasks, src, tgt, topic=topic, records=records, workdir=args.workdir)
            except Exception as exc:  # one failed configuration must not cost the rest of the run
                print(f"    FAILED: {exc}", flush=True)
                scaling.append({"mirror": mirror, "tasks": tasks, "error": str(exc)})
                continue
            scaling.append(entry)
            base = next((e for e in scaling if e["mirror"] == mirror and e["tasks"] == 1 and "error" not in e), None)
            speedup = f", {entry['mb_per_s'] / base['mb_per_s']:.2f}x one task's MB/s" if base else ""
            print(
                f"    {entry['seconds']:.1f} s, {entry['mb_per_s']:.1f} MB/s, {entry['cpu_s_per_gb']:.1f} "
                f"CPU-s/GB, peak RSS {entry['peak_rss_mb']:.0f} MB{speedup}",
                flush=True,
            )
    return scaling


def _latency_step(args: argparse.Namespace, steps: _Steps, src: str, tgt: str) -> list[dict[str, Any]]:
    """Each latency mirror at each rate (rates in the outer loop, so mirrors alternate over time),
    after a discarded warm-up run."""
    latency: list[dict[str, Any]] = []
    mirrors, rates = csv_list(args.latency_mirrors), _rates(args)
    if mirrors and rates and args.latency_warmup_seconds:
        # The first latency run after the clusters start is slow whatever the mirror (p50 198-282 ms
        # where the same mirror's later runs gave 66-109): it measures the brokers' warm-up.
        steps.announce(
            f"warm-up, discarded: {mirrors[0]} at {rates[0]:,} records/s for {args.latency_warmup_seconds:.0f} s"
        )
        try:
            warm = _latency(
                mirrors[0], src, tgt, workdir=args.workdir, rate=rates[0], seconds=args.latency_warmup_seconds,
                drain_s=args.latency_drain_seconds,
            )  # fmt: skip
            _print_latency(warm)
        except Exception as exc:  # the measured runs say what is wrong, each on its own
            print(f"    warm-up failed: {exc}", flush=True)
    for rate in rates:
        for mirror in mirrors:
            steps.announce(f"latency through {mirror}: {rate:,} records/s for {args.latency_seconds:.0f} s")
            try:
                entry = _latency(
                    mirror,
                    src,
                    tgt,
                    workdir=args.workdir,
                    rate=rate,
                    seconds=args.latency_seconds,
                    drain_s=args.latency_drain_seconds,
                )
            except Exception as exc:  # a mirror that cannot start must not cost the rest of the run
                print(f"    FAILED: {exc}", flush=True)
                latency.append({"mirror": mirror, "rate_per_s": rate, "error": str(exc)})
                continue
            latency.append(entry)
            _print_latency(entry)
    return latency


def _rates(args: argparse.Namespace) -> list[float]:
    """The latency rates, whole numbers as ints; a rate below one a second (a lone record after each
    quiet spell) as given."""
    rates = [float(r) for r in csv_list(args.latency_rates)]
    return [int(r) if r.is_integer() else r for r in rates]


def run(args: argparse.Namespace, brokers: BrokerPair) -> dict[str, Any]:
    """Every measurement; the results dict ``bench.report`` renders."""
    src, tgt = brokers.source, brokers.target
    args.workdir.mkdir(parents=True, exist_ok=True)
    n_scaling = len(csv_list(args.scaling_mirrors)) * len(csv_list(args.scaling_tasks)) + 1 if args.scaling else 0
    steps = _Steps(
        len(csv_list(args.codecs)) * (len(csv_list(args.mirrors)) + 2)
        + n_scaling
        + len(_rates(args)) * len(csv_list(args.latency_mirrors))
        + (1 if args.latency_warmup_seconds and csv_list(args.latency_mirrors) else 0)
    )
    throughput, ceiling = _throughput_step(args, steps, brokers)
    scaling = _scaling_step(args, steps, src, tgt) if args.scaling else []
    latency = _latency_step(args, steps, src, tgt)
    return {
        "command": " ".join([".venv/bin/python -m bench.compare", *map(shlex.quote, sys.argv[1:])]),
        "machine": machine(),
        "kafka_version": kafka_version(),
        "date": datetime.date.today().isoformat(),
        "gb_per_codec": args.gb,
        "record_bytes": RECORD_BYTES,
        "partitions": PARTITIONS,
        "quick": args.quick,
        "throughput": throughput,
        "ceiling": ceiling,
        "latency": latency,
        "latency_seconds": args.latency_seconds,
        "latency_warmup_seconds": args.latency_warmup_seconds,
        "latency_rates": _rates(args),
        "control_batch_bytes": CONTROL_BATCH_BYTES,
        "scaling": scaling,
        "scaling_gb": args.scaling_gb if args.scaling else None,
        "scaling_partitions": args.scaling_partitions if args.scaling else None,
        "scaling_codec": SCALING_CODEC if args.scaling else None,
    }


def render(results: Mapping[str, Any]) -> str:
    """The page's Markdown for ``results`` (``compare_page``; the other scenarios' sections follow it)."""
    return render_markdown(results)


SECTION = Section(COMPARE_RESULTS, render, plot)
