"""Mirrors at scale and on small records: 1,000 partitions, and 100-byte records in small batches.

    .venv/bin/python -m bench.scale                      # both scenarios, every mirror
    .venv/bin/python -m bench.scale --scale 0.05 --out /tmp/scale   # a smoke run

Two scenarios, each written once and then copied by each mirror in turn, exactly once, each into
target topics of its own (``bench.scenarios.shapes`` runs the mirrors and measures them):

- ``1000-partitions``: 100 topics of 10 partitions, 1 KB records (lz4, 200 MB). mirror-sink raw mode
  with one task and with four, MirrorMaker 2 with one task and with four. Beside MB/s and CPU: the time
  to the first committed offset (start-up, metadata of 1,000 partitions, group join), and the CPU the
  caught-up mirror then burns in 60 s of idling after 10 s of settling (metadata refreshes, empty
  fetches and commits: the standing cost of many partitions). Record mode (one task) runs too;
- ``small-records``: 100-byte records (a 10-byte key, a 90-byte value) over 6 partitions, produced with
  ``linger.ms=0`` and ``batch.size`` 2 KB, so batches hold a few records and per-batch costs dominate
  (30 MB). mirror-sink raw, record and auto mode (one task), MirrorMaker 2 (one task per partition).

MB/s counts uncompressed key + value bytes over the run, start-up included; MB/s per mirror core is MB
per CPU-second of the mirror's processes. Writes ``<out>/data/benchmarks-scale.json`` (default docs/), which
``bench.report`` renders as the "At scale" section of ``benchmarks.md``; this command re-renders the page.
Not a test: figures vary with the machine.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from bench.common.console import Progress
from bench.common.machine import machine
from bench.common.paths import DATA
from bench.common.section import Section
from bench.common.stacks import by_thread, read_stacks, shares
from bench.mirror_throughput import json_like_values
from bench.mm2 import run_mm2
from bench.scenarios.shapes import Source, figures, run_mirror_sink
from devkafka.data import Address, ProduceSpec, Rec, client_settings, create_topic, produce

#: This command's saved results, which ``bench.report`` renders as the "At scale" section.
SCALE_RESULTS = "benchmarks-scale.json"
TOPICS, PARTITIONS_PER_TOPIC = 100, 10
SCALE_MB = 200.0
#: ``10000-partitions``: 100 topics of 100 partitions, 200-byte records (50 MB at scale 1).
WIDE_PARTITIONS_PER_TOPIC, WIDE_MB, WIDE_VALUE_BYTES = 100, 50.0, 200
SMALL_PARTITIONS, SMALL_MB, SMALL_VALUE_BYTES = 6, 30.0, 90
IDLE_S = 60.0  # measured after bench.mm2.IDLE_SETTLE_S of settling
BUFFER_MEMORY_MIB = 64  # mirror-sink's default buffer.memory, per task

#: scenario -> (mirror, tasks) in the order they run; mirror names as in bench.scenarios.shapes.MIRRORS.
RUNS = {
    "1000-partitions": [
        ("raw-eos", 1),
        ("raw-eos-poll", 1),  # the same without watches of quiet leaders: their share of the idle CPU
        ("raw-eos", 4),
        ("record-eos", 1),
        ("mm2-eos", 1),
        ("mm2-eos", 4),
    ],
    "small-records": [("raw-eos", 1), ("record-eos", 1), ("auto-eos", 1), ("mm2-eos", SMALL_PARTITIONS)],
    "10000-partitions": [("raw-eos", 1), ("mm2-eos", 1)],
}


def write_many_topics(
    src: Address,
    prefix: str,
    *,
    scale: float,
    codec: str,
    partitions_per_topic: int = PARTITIONS_PER_TOPIC,
    megabytes: float = SCALE_MB,
    value_bytes: int = 1024,
) -> Source:
    """``TOPICS`` topics of ``partitions_per_topic`` partitions, records of about ``value_bytes`` spread evenly."""
    values = [v[:value_bytes] for v in json_like_values(4096)]
    per_topic = max(partitions_per_topic, int(scale * megabytes * 1e6 / value_bytes / TOPICS))
    topics = [f"{prefix}-{i:03d}" for i in range(TOPICS)]
    spec = ProduceSpec(compression=codec, linger_ms=20)
    size = 0
    for n, topic in enumerate(topics):
        create_topic(src, topic, partitions_per_topic)
        records = [
            Rec(b"k%06d" % i, values[i % len(values)], partition=i % partitions_per_topic) for i in range(per_topic)
        ]
        produce(src, topic, records, spec)
        size += sum(len(r.key or b"") + len(r.value or b"") for r in records)
        if n % 20 == 19:
            print(f"    {n + 1} of {TOPICS} topics written", flush=True)
    count = per_topic * TOPICS
    partitions = TOPICS * partitions_per_topic
    return Source(f"{partitions}-partitions", topics, partitions, count, size, count, size)


def write_small_records(src: Address, topic: str, *, scale: float, codec: str) -> Source:
    """100-byte records in batches of a few records (``linger.ms=0``, ``batch.size`` 2 KB)."""
    n = max(SMALL_PARTITIONS, int(scale * SMALL_MB * 1e6 / (10 + SMALL_VALUE_BYTES)))
    create_topic(src, topic, SMALL_PARTITIONS)
    values = [v[:SMALL_VALUE_BYTES].ljust(SMALL_VALUE_BYTES, b" ") for v in json_like_values(1024)]

    def records() -> Iterator[Rec]:
        for i in range(n):
            yield Rec(b"k%09d" % i, values[i % len(values)], partition=i % SMALL_PARTITIONS)

    produce(src, topic, records(), ProduceSpec(compression=codec, linger_ms=0, batch_bytes=2048))
    size = n * (10 + SMALL_VALUE_BYTES)
    return Source("small-records", [topic], SMALL_PARTITIONS, n, size, n, size)


def _run(
    mirror: str, tasks: int, src: str, tgt: str, source: Source, *, codec: str, workdir: Path, profile_idle: bool
) -> dict[str, Any]:
    idle_s = IDLE_S if source.shape != "small-records" else 0.0
    if mirror.startswith("mm2-"):
        progress = Progress(f"{source.shape} {mirror} x{tasks}", source.record_bytes / max(source.records, 1))
        run = run_mm2(
            src, tgt, source.topics, exactly_once=True, workdir=workdir, tasks=tasks, compression=codec,
            on_progress=progress, idle_s=idle_s, timeout_s=1800, create_target_topics=source.partitions > 5000,
        )  # fmt: skip
        result = figures(mirror, source, run.seconds, run.cpu_seconds, run.peak_rss_bytes)
        result |= {"first_commit_s": run.first_commit_s, "idle_cpu_seconds": run.idle_cpu_seconds, "log": str(run.log)}
    else:
        result = run_mirror_sink(
            mirror, src, tgt, source, workdir=workdir, codec=codec, tasks=tasks, idle_s=idle_s,
            idle_profile=profile_idle and idle_s > 0,
        )  # fmt: skip
    result["tasks"] = tasks
    result["mb_per_core_s"] = source.megabytes / result["cpu_seconds"] if result["cpu_seconds"] else None
    return result


def run(
    src: str,
    tgt: str,
    workdir: Path,
    scenarios: list[str],
    *,
    scale: float,
    codec: str,
    only: set[str] | None = None,
    profile_idle: bool = False,
) -> dict[str, Any]:
    """Write each scenario's data once and mirror it with each of its runs (``only``: the runs named
    ``mirror:tasks`` among them); the JSON-able results."""
    out = []
    for scenario in scenarios:
        stamp = time.time_ns() // 1_000_000
        print(f"{scenario}: writing the source ({codec}, scale {scale:g})", flush=True)
        if scenario == "1000-partitions":
            source = write_many_topics(src, f"scale-{stamp}", scale=scale, codec=codec)
        elif scenario == "10000-partitions":
            source = write_many_topics(
                src,
                f"wide-{stamp}",
                scale=scale,
                codec=codec,
                partitions_per_topic=WIDE_PARTITIONS_PER_TOPIC,
                megabytes=WIDE_MB,
                value_bytes=WIDE_VALUE_BYTES,
            )
        else:
            source = write_small_records(src, f"small-{stamp}", scale=scale, codec=codec)
        print(f"    {source.records:,} records, {source.megabytes:.1f} MB, {source.partitions} partitions", flush=True)
        runs = []
        for mirror, tasks in RUNS[scenario]:
            if only is not None and f"{mirror}:{tasks}" not in only:
                continue
            print(f"{scenario}: {mirror}, tasks.max={tasks}", flush=True)
            before = set(list_topic_names(tgt))
            try:
                result = _run(mirror, tasks, src, tgt, source, codec=codec, workdir=workdir, profile_idle=profile_idle)
            except (RuntimeError, TimeoutError, ValueError, KafkaException) as exc:
                print(f"    failed: {exc}", flush=True)
                runs.append({"mirror": mirror, "tasks": tasks, "error": str(exc)})
                continue
            finally:
                if source.partitions > 1000:
                    # A broker holds files and memory maps per partition: the next run gets a target
                    # without this run's 10,000 partitions (the host's open-file limit is 20,000).
                    drop_topics(tgt, set(list_topic_names(tgt)) - before)
            runs.append(result)
            print(
                f"    {result['seconds']:.1f} s, {result['mb_per_s']:.1f} MB/s, first commit "
                f"{_num(result.get('first_commit_s'), 1)} s, {_num(result['cpu_s_per_gb'], 1)} CPU-s/GB, "
                f"peak RSS {result['peak_rss_mb']:.0f} MB, idle CPU {_num(result.get('idle_cpu_seconds'), 2)} s",
                flush=True,
            )
            if result.get("idle_threads"):
                top = list(result["idle_threads"].items())[:8]
                print("    idle CPU by thread: " + ", ".join(f"{n} {c:.2f} s" for n, c in top), flush=True)
            if result.get("idle_profile"):
                _print_idle_profile(Path(result["idle_profile"]))
        out.append({**asdict(source), "megabytes": source.megabytes, "idle_s": IDLE_S, "runs": runs})
    return {
        "command": " ".join([".venv/bin/python -m bench.scale", *sys.argv[1:]]),
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "codec": codec,
        "scale": scale,
        "idle_s": IDLE_S,
        "scenarios": out,
    }


def list_topic_names(address: Address) -> list[str]:
    """The cluster's topics, internal ones left out."""
    admin = AdminClient(client_settings(address))
    return [t for t in admin.list_topics(timeout=30).topics if not t.startswith("__")]


def drop_topics(address: Address, topics: set[str], timeout_s: float = 300.0) -> None:
    """Delete ``topics`` and wait until the cluster no longer lists them."""
    if not topics:
        return
    admin = AdminClient(client_settings(address))
    for future in admin.delete_topics(sorted(topics), operation_timeout=60).values():
        with contextlib.suppress(KafkaException):
            future.result()
    deadline = time.monotonic() + timeout_s
    while topics & set(admin.list_topics(timeout=30).topics) and time.monotonic() < deadline:
        time.sleep(1)
    print(f"    deleted the run's {len(topics):,} target topics", flush=True)


def keep_other_scenarios(saved: Path, results: dict[str, Any]) -> dict[str, Any]:
    """``results`` plus the scenarios of the ``saved`` results that this run did not repeat (in the
    order of ``RUNS``): one scenario can be measured again without losing the others' figures."""
    try:
        before = json.loads(saved.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return results
    fresh = {s["shape"]: s for s in results["scenarios"]}
    kept = {
        s["shape"]: {"idle_s": before.get("idle_s"), **s, "measured": s.get("measured", before.get("date"))}
        for s in before.get("scenarios", [])
        if s.get("shape")
    }
    merged = {**kept, **fresh}
    order = [shape for shape in RUNS if shape in merged] + [shape for shape in merged if shape not in RUNS]
    return {**results, "scenarios": [merged[shape] for shape in order]}


def _num(value: Any, decimals: int) -> str:
    return f"{value:,.{decimals}f}" if isinstance(value, int | float) else "-"


def _mirror_name(run: dict[str, Any]) -> str:
    return f"`{run['mirror']}` x{run['tasks']}"


def render(results: Mapping[str, Any]) -> str:
    """The "At scale" section: one table per scenario, MB/s per core beside the field's figures."""
    lines = [
        "## At scale: 1,000 and 10,000 partitions, and small records",
        "",
        f"- Machine: {results['machine']}; date: {results['date']}",
        f"- Regenerate: `{results['command']}` (writes `docs/{DATA}/{SCALE_RESULTS}`)",
        "",
        "Each scenario's data is written once, then copied by each mirror in turn, exactly once (`xN`: tasks.max)."
        ' MB/s is over the whole run, start-up included; "first commit" is when the mirror first committed a'
        f' source offset; "idle CPU-s/min" is what the caught-up mirror burns over {results["idle_s"]:.0f} s of'
        " idling after 10 s of settling (metadata refreshes, empty fetches, commits of nothing), per minute; it is"
        " the whole process tree's, lag monitor and checkpoints included. Peak RSS is the mirror's"
        f" process tree; mirror-sink's budget is `buffer.memory` ({BUFFER_MEMORY_MIB} MiB by default) per task plus"
        " about 100 MiB.",
        "",
    ]
    for scenario in results["scenarios"]:
        measured = f" (measured {scenario['measured']})" if scenario.get("measured") else ""
        lines += [
            f"### {scenario['shape']}: {scenario['records']:,} records, {scenario['megabytes']:.1f} MB, "
            f"{scenario['partitions']:,} partitions{measured}",
            "",
            "| mirror | seconds | first commit s | MB/s | CPU-s/GB | MB/s per mirror core | peak RSS MB "
            "| idle CPU-s/min |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for run in scenario["runs"]:
            if "error" in run:
                lines.append(f"| {_mirror_name(run)} | failed: {run['error'][:120]} | | | | | | |")
                continue
            idle = run.get("idle_cpu_seconds")
            idle_s = scenario.get("idle_s") or results["idle_s"]
            per_min = idle * 60 / idle_s if isinstance(idle, int | float) else None
            lines.append(
                f"| {_mirror_name(run)} | {run['seconds']:.1f} | {_num(run.get('first_commit_s'), 1)} "
                f"| {run['mb_per_s']:.1f} | {_num(run['cpu_s_per_gb'], 1)} | {_num(run.get('mb_per_core_s'), 1)} "
                f"| {run['peak_rss_mb']:,.0f} | {_num(per_min, 1)} |"
            )
        lines.append("")
    lines += [
        f"![MB/s and MB/s per mirror core at scale]({DATA}/{SCALE_PNG})",
        "",
        "At 1,000 partitions from freshly started clusters (2026-11-26), one raw task moved 2.5 times MirrorMaker"
        " 2's MB/s (20.9 against 8.4); on 2026-11-23 it had moved 2.2 MB/s against 3.9. Three changes: Fetches"
        " in incremental fetch sessions (KIP-227), each naming only the partitions whose position moved; the"
        " provisioner's leader wait, which refreshes metadata in each attempt; and the idle work per partition"
        " gone from the task's loop. The commit markers were not the cost measured then: the next transaction"
        " waits 91 ms at 1,000 partitions in steady state (`bench.markers`, below), plus a one-off stall when fresh"
        " partitions get their first index entries. A caught-up mirror's idle cost no longer grows with its"
        " partitions (an idle Fetch names none and an empty answer wakes nobody). A read_committed Fetch parked"
        " long is answered at its max wait, not when a commit marker makes data readable, so Fetches of flowing"
        " data wait at most `fetch.wait.max.ms` (100 ms); a leader quiet for a second is watched instead: one"
        " read_uncommitted Fetch parked `fetch.idle.wait.max.ms` (500 ms), answered at the next append, its"
        " records never taken. With that, a lag monitor whose idle round is one request, and source-group commits"
        " of moved positions only, one idle raw task burned 0.75-0.79 CPU-s per minute on 2026-11-29 against"
        " 1.24-1.25 without watches (`raw-eos-poll`) and MirrorMaker 2's 1.6 in the same run (1.07 against 0.72"
        " before them, on another day), with p99 at 2,000 records/s and a lone record's latency unchanged"
        " (benchmarks-notes.md)."
        " At 10,000 partitions (3 GB broker heaps; each run's 10,000 target partitions are deleted before the"
        " next, as the host allows 20,000 open files per process), one raw task took 58.9 s on 2026-11-26, all"
        " but the last second start-up: creating 10,000 target partitions and waiting for their leaders. Since"
        " 2026-11-29 the connector waits at most 5 s for them and each task starts a partition when its own"
        " leader serves it, and the coordinators are asked for before the topics are made (InitProducerId on"
        " a fresh target: 0.45 s instead of 26-29 s); on 2026-11-29 the run above took 72.8 s (79.2 s on fresh"
        " clusters, against 102-133 s that morning), most of it the stored offsets of 10,000 partitions"
        " (20-28 s), the new topics' config reads (12-14 s) and the leaders (15-26 s; benchmarks-notes.md)."
        " MirrorMaker 2 took 57.2 s on 2026-11-26 (first commit 40.8 s and 65.8 s in all on 2026-11-29)"
        " with its target topics created for it before its clock started: it creates every new topic in"
        ' one CreateTopics request, which a KRaft controller refuses above 10,000 records ("excessively large'
        ' batch operation"), and retries only at its next topic refresh, which fails the same way; left alone'
        " it copied nothing in 30 minutes. Idle, the raw task burns 4.1 CPU-s per minute, under the goal of 6"
        " (MirrorMaker 2: 2.6). Four limits found at this size are fixed: one CreateTopics of 10,000 partitions"
        " (refused; now requests of 5,000), one TxnOffsetCommit of 10,000 partitions (a 1.2 MB batch, over the"
        " offsets topic's 1 MB, which failed the task; now parts of 2,000, in both modes), librdkafka's offsets"
        " calls, quadratic in the partitions named (0.41 CPU-s a call at 10,000: the lag monitor's two calls"
        " every 5 s were about three quarters of the 11.4 CPU-s per minute measured before; now parts of 200),"
        " and a parked Fetch, which the source broker's purgatory keeps under each of its 10,000 partitions until about"
        " 1,000 have completed (an idle mirror ran a 768 MB broker out of heap in two minutes; a leader of more"
        " than 1,000 partitions is now asked without parking, see raw-mode-notes.md). MirrorMaker 2's consumer"
        " parks every Fetch, hence the 3 GB heaps.",
        "",
        "For scale: MirrorMaker 2 about 16.6 MB/s per core in DiDi's published benchmark (1 KB records, 10"
        " partitions); Redpanda's Go migrator about 333 MB/s per core (at least once, uncompressed).",
        "",
    ]
    return "\n".join(lines)


SCALE_PNG = "benchmarks-scale.png"


def plot_scale(results: Mapping[str, Any], path: Path) -> Path:
    """Per scenario (a row): MB/s and MB/s per mirror core of each mirror, as bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = results["scenarios"]
    fig, axes = plt.subplots(len(scenarios), 2, figsize=(10, 3.2 * len(scenarios)), squeeze=False)
    try:
        for row, scenario in zip(axes, scenarios, strict=True):
            runs = [r for r in scenario["runs"] if "error" not in r]
            names = [f"{r['mirror']} x{r['tasks']}" for r in runs]
            colours = ["tab:blue" if r["mirror"].startswith(("raw", "record", "auto")) else "tab:orange" for r in runs]
            for ax, key, label in ((row[0], "mb_per_s", "MB/s"), (row[1], "mb_per_core_s", "MB/s per mirror core")):
                values = [float(r.get(key) or 0.0) for r in runs]
                bars = ax.barh(names, values, color=colours)
                ax.bar_label(bars, fmt="%.1f", padding=2, fontsize=8)
                ax.invert_yaxis()  # first run on top, as in the table
                ax.set_xlabel(label)
                ax.set_title(f"{scenario['shape']}: {label}", fontsize=10)
                ax.grid(axis="x", alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return path


def plot(results: Mapping[str, Any], data_dir: Path) -> list[Path]:
    """The section's plot, ``SCALE_PNG`` in the page's data directory."""
    return [plot_scale(results, data_dir / SCALE_PNG)]


SECTION = Section(SCALE_RESULTS, render, plot)


def _print_idle_profile(path: Path) -> None:
    """Where an idle mirror's sampled Python stacks were: by thread, and the commonest frames on top."""
    stacks = read_stacks(path)
    total, _, top = shares(stacks)
    print(f"    idle profile ({total} samples at 200 Hz, {path}):", flush=True)
    print("      by thread: " + ", ".join(f"{name} {share:.0%}" for name, share in by_thread(stacks)[:8]), flush=True)
    print("      on top: " + ", ".join(f"{frame} {share:.0%}" for frame, share in top[:8]), flush=True)
