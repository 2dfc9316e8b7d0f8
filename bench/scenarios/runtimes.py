"""The worker runtime against the Spark runtime, raw mode, on the same source data in one run.

    .venv/bin/python -m bench.runtimes                 # 1 GB of lz4 1 KB records, 6 partitions
    .venv/bin/python -m bench.runtimes --gb 0.2        # a quicker look

Each runtime mirrors the whole topic into its own target topic, exactly once in raw mode:

- ``worker``: ``mirror-sink run`` (one process, one task)
- ``spark-local2``: ``mirror-sink spark --master local[2]`` (the driver and two executor threads in one JVM)
- ``spark-standalone``: ``deploy/spark/submit.sh`` against a standalone master and two one-core workers
  started here (the README's recipe)

Reported per runtime: wall seconds from launch to the shadow group holding every offset; start-up
(launch to the first mirrored batch in the target log); copy MB/s (from then to the last offset
committed); CPU-seconds per GB and peak RSS of every process the runtime runs (for the standalone
cluster: spark-submit's JVM and driver, and the executors with their Python workers; the master's and
workers' own JVMs are left out, as a cluster that already exists). Writes
``docs/data/benchmarks-runtimes.json`` (or into ``--out``'s data/), which ``bench.report`` renders as the
"Runtimes" section of ``docs/benchmarks.md``; this command re-renders the page.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.common.cpu import ProcessTree
from bench.common.machine import cores_and_memory
from bench.common.paths import DATA
from bench.common.section import Section
from bench.mirror_throughput import RECORD_BYTES, write_source
from devkafka.data import committed_offsets, end_offsets
from devkafka.pair import DevClusters
from devkafka.processes import reap_with_this_process
from devkafka.spark_standalone import SparkStandalone, SparkSubmit

RUNTIMES = ("worker", "spark-local2", "spark-standalone")
#: This command's saved results, which ``bench.report`` renders as the "Runtimes" section.
RUNTIME_RESULTS = "benchmarks-runtimes.json"


@dataclass
class RuntimeResult:
    """One runtime's figures."""

    runtime: str
    seconds: float
    startup_s: float
    mb_per_s: float
    copy_mb_per_s: float
    cpu_s_per_gb: float
    peak_rss_mb: float


def _config(name: str, src: str, tgt: str, topic: str, runtime: str) -> dict[str, str]:
    return {
        "name": name,
        "connector.class": "MirrorSinkConnector",
        "source.cluster.bootstrap.servers": src,
        "target.cluster.bootstrap.servers": tgt,
        "topics": topic,
        "source.cluster.alias": name,
        "replication.policy.class": "DefaultReplicationPolicy",
        "mirror.mode": "raw",
        "runtime": "spark" if runtime.startswith("spark") else "worker",
        "target.cluster.producer.compression.type": "lz4",
    }


def _measure(
    runtime: str,
    name: str,
    *,
    src: str,
    tgt: str,
    topic: str,
    megabytes: float,
    launch: Callable[[], subprocess.Popen[bytes]],
    extra_roots: Callable[[], Iterable[psutil.Process]] | None = None,
) -> RuntimeResult:
    ends = end_offsets(src, topic)
    total = sum(ends.values())
    target_topic = f"{name}.{topic}"
    started = time.monotonic()
    proc = launch()
    first_commit: float | None = None
    first_data: float | None = None  # the first mirrored batch in the target log (committed or not)
    tree = ProcessTree(proc.pid, extra_roots)  # every process of the runtime, as every mirror is measured
    while True:
        time.sleep(0.2)
        tree.sample()
        try:
            held = committed_offsets(tgt, f"connect-{name}", [(target_topic, p) for p in ends], timeout=5)
        except Exception:
            continue
        done = sum(max(0, v) for v in held.values())
        if done and first_commit is None:
            first_commit = time.monotonic()
        if first_data is None:
            try:
                if sum(end_offsets(tgt, target_topic, isolation="read_uncommitted").values()):
                    first_data = time.monotonic()
            except Exception:  # the target topic does not exist yet
                pass
        print(f"\r  {runtime}: {done / total:4.0%}", end="", flush=True)
        if done >= total:
            break
        if proc.poll() is not None and proc.returncode != 0:
            raise RuntimeError(f"{runtime} exited with {proc.returncode}")
    finished = time.monotonic()
    print()
    proc.terminate()
    proc.wait(120)
    seconds = finished - started
    copy_from = first_data or first_commit or started
    return RuntimeResult(
        runtime,
        seconds,
        copy_from - started,
        megabytes / seconds,
        megabytes / max(finished - copy_from, 1e-3),
        tree.cpu_seconds() / (megabytes / 1000),
        tree.peak_rss_bytes / 1e6,
    )


def run_runtime(runtime: str, *, src: str, tgt: str, topic: str, megabytes: float, workdir: Path) -> RuntimeResult:
    """Mirror ``topic`` once with ``runtime``."""
    name = f"rt-{runtime}-{time.time_ns() // 1_000_000}"
    config = _config(name, src, tgt, topic, runtime)
    path = workdir / f"{name}.json"
    path.write_text(json.dumps({"name": name, "config": config}))
    if runtime == "spark-standalone":
        cluster = SparkStandalone(workdir / f"{name}-cluster").start()
        try:
            submit = SparkSubmit(cluster, config, workdir / name)

            def launch_submit() -> subprocess.Popen[bytes]:
                submit.start()
                assert submit.proc is not None
                return submit.proc

            # The executors are the cluster's workers' children, not spark-submit's: measured as extra roots.
            return _measure(
                runtime, name, src=src, tgt=tgt, topic=topic, megabytes=megabytes, launch=launch_submit,
                extra_roots=cluster.executors,
            )  # fmt: skip
        finally:
            cluster.stop()
    argv = ["run", str(path), "--worker-id", "bench"]
    if runtime == "spark-local2":
        argv = ["spark", str(path), "--master", "local[2]", "--checkpoint", str(workdir / f"{name}-checkpoint")]

    def launch() -> subprocess.Popen[bytes]:
        with open(workdir / f"{name}.log", "wb") as log:  # the child keeps its own descriptor
            env = {**os.environ, "SPARK_LOCAL_DIRS": str(workdir / f"{name}-scratch")}  # not /tmp
            proc = subprocess.Popen([sys.executable, "-m", "api.cli", *argv], stdout=log, stderr=log, env=env)
        reap_with_this_process(pid=proc.pid)
        return proc

    return _measure(runtime, name, src=src, tgt=tgt, topic=topic, megabytes=megabytes, launch=launch)


def render(saved: Mapping[str, Any]) -> str:
    """The "Runtimes" section of docs/benchmarks.md from this command's saved JSON: a table with the
    worker as the baseline, and how it was measured."""
    results = [RuntimeResult(**r) for r in saved["results"]]
    gb = saved["gb"]
    base = next((r for r in results if r.runtime == "worker"), None)
    lines = [
        "## Runtimes: the worker against Spark (raw mode, exactly once)",
        "",
        f"- Machine: {saved['machine']}; date: {saved['date']}",
        f"- Regenerate: `.venv/bin/python -m bench.runtimes` (writes `docs/{DATA}/{RUNTIME_RESULTS}`)",
        "",
        f"{gb:g} GB of 1 KB records (lz4, producer batches of 64 KB to 1 MB) in one source topic of 6 partitions,"
        " mirrored in full by each runtime into a topic of its own, one after the other in the same run, raw mode"
        " exactly once. Start-up is from launch to the first mirrored batch in the target log; copy MB/s is"
        " from then to the last offset committed. CPU-s/GB and"
        " peak RSS cover every process of the runtime (for the standalone cluster: spark-submit's JVM, the driver"
        " and the executors with their Python workers; the master and worker daemons, a cluster's standing cost,"
        " are left out).",
        "",
        "| runtime | seconds | start-up s | MB/s | copy MB/s | copy MB/s vs worker | CPU-s/GB | peak RSS MB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        ratio = f"{r.copy_mb_per_s / base.copy_mb_per_s:.2f}x" if base else "-"
        lines.append(
            f"| `{r.runtime}` | {r.seconds:.1f} | {r.startup_s:.1f} | {r.mb_per_s:.1f} | {r.copy_mb_per_s:.1f} "
            f"| {ratio} | {r.cpu_s_per_gb:.1f} | {r.peak_rss_mb:,.0f} |"
        )
    lines += [
        "",
        "Where Spark's extra cost goes: start-up is JVMs (spark-submit's, then one executor per worker, each"
        " unpacking the venv archive of `deploy/spark/package.sh`) and Python workers, before the first range"
        " is planned; that is most of its CPU-s/GB on a copy this size, and a long-running query pays it once."
        " Once copying, each range opens its own clients (metadata, InitProducerId on its transactional.id, the"
        " shadow group's offset) and ends in its own transaction, where a worker task keeps one set of"
        " clients for all its partitions; and on this machine the two brokers, the driver and the executors"
        " share the same cores.",
    ]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Bring up local clusters, write the source once, mirror it with each runtime; the results dict
    (``args``: the command's ``gb``, ``runtimes`` and ``workdir``)."""
    args.workdir.mkdir(parents=True, exist_ok=True)
    clusters = DevClusters(args.workdir / "clusters")
    print("starting local source and target clusters...", flush=True)
    clusters.up()
    results: list[RuntimeResult] = []
    try:
        src, tgt = clusters.source.bootstrap_servers, clusters.target.bootstrap_servers
        records = int(args.gb * 1e9 / RECORD_BYTES)
        topic = f"runtimes-{time.time_ns() // 1_000_000}"
        write_source(src, topic, records, "lz4")
        for runtime in args.runtimes.split(","):
            print(f"mirroring with {runtime}...", flush=True)
            megabytes = records * RECORD_BYTES / 1e6
            r = run_runtime(runtime, src=src, tgt=tgt, topic=topic, megabytes=megabytes, workdir=args.workdir)
            results.append(r)
            print(
                f"  {r.seconds:.1f} s (start-up {r.startup_s:.1f} s), copy {r.copy_mb_per_s:.1f} MB/s, "
                f"{r.cpu_s_per_gb:.1f} CPU-s/GB, peak RSS {r.peak_rss_mb:.0f} MB",
                flush=True,
            )
    finally:
        clusters.discard()
    return {
        "machine": cores_and_memory(),
        "date": time.strftime("%Y-%m-%d"),
        "gb": args.gb,
        "results": [asdict(r) for r in results],
    }


SECTION = Section(RUNTIME_RESULTS, render)
