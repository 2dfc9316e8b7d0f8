"""Offset-sync overhead: what writing offset syncs (and the checkpoints they feed) costs a mirror.

    .venv/bin/python -m bench.offset_sync_overhead --gb 0.5     # about 5 minutes on 2 cores
    .venv/bin/python -m bench.offset_sync_overhead --quick      # smoke run: 0.01 GB
    .venv/bin/python -m bench.offset_sync_overhead --page       # docs/failover-benchmarks.md from the newest results

Every exactly-once transaction of the mirror also writes one offset sync per target partition it
touched (topic ``mirror-sink-offset-syncs.{source.cluster.alias}.internal`` on the target, partition 0),
and a checkpoint emitter thread turns them into MirrorMaker 2 checkpoints. ``emit.offset-syncs.enabled``
(default true) switches both off. The goal: under 1% of the bytes and under 3% of the throughput.

Starts its own local source and target clusters, writes ``--gb`` of 1 KB lz4 records once (as
``bench.mirror_throughput`` does), then mirrors that same topic in one run, alternating syncs OFF and ON
(``--reps`` pairs of raw-eos, then ``--record-reps`` pairs of record-eos), each in a fresh connector
(``bench.mirror_throughput.mirror_once``: its own alias, target topic and shadow group). After each run
it reads, as raw stored batches, the mirrored target topic and, for ON runs, partition 0 of the
offset-syncs topic, and sums the batches' lengths and record counts; the sizes of the partitions' log
files on the target broker's disk (transaction markers included) are recorded beside them.

Results: ``bench/results/offset-syncs-<timestamp>.json`` and Markdown tables on stdout. ``--page`` renders
docs/failover-benchmarks.md from the newest ``offset-syncs-*.json`` and ``failover-*.json`` (see
``bench.failover_report.write_page``). Not a test: numbers vary with the machine.
"""

from __future__ import annotations

import argparse
import datetime
import shlex
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from bench.common.console import log
from bench.common.machine import machine
from bench.common.markdown import cell as _f  # short: the tables below are dense
from bench.common.paths import RESULTS
from bench.mirror_throughput import RECORD_BYTES, mirror_once, write_source
from devkafka.data import end_offsets
from devkafka.pair import DevClusters
from devkafka.paths import kafka_version
from devkafka.raw_batches import read_committed_batches

CODEC = "lz4"
SYNCS_OFF = {"emit.offset-syncs.enabled": "false"}
SYNCS_PREFIX = "mirror-sink-offset-syncs."
#: The issue's goal for the overhead of offset syncs.
GOAL_BYTES_PCT = 1.0
GOAL_THROUGHPUT_PCT = 3.0


def plan(raw_reps: int, record_reps: int) -> list[tuple[str, bool]]:
    """(mode, syncs on) in run order: OFF then ON, ``raw_reps`` pairs of raw-eos, then record-eos."""
    return [(mode, on) for mode, reps in (("raw-eos", raw_reps), ("record-eos", record_reps)) for _ in range(reps)
            for on in (False, True)]  # fmt: skip


# -- measuring stored bytes --------------------------------------------------------------------------


@dataclass
class Stored:
    """A topic's committed data batches as stored on the target (control batches excluded)."""

    batches: int = 0
    records: int = 0
    bytes: int = 0  # sum of the batches' lengths, headers included
    end_offset: int = 0  # summed over the partitions: records + transaction markers (+ aborted, if any)
    disk_bytes: int | None = None  # the partitions' .log files on the broker's disk, markers included


def stored(bootstrap: str, topic: str, partitions: Sequence[int], data_dir: Path | None) -> Stored:
    """Read ``partitions`` of ``topic`` as raw batches and add them up."""
    out = Stored()
    for items in read_committed_batches(bootstrap, topic, partitions).values():
        for item in items:
            if item.batch is None:
                continue
            out.batches += 1
            out.bytes += len(item.batch)
            out.records += item.header.record_count if item.header is not None else 0
    ends = end_offsets(bootstrap, topic)
    out.end_offset = sum(ends[p] for p in partitions)
    if data_dir is not None:
        out.disk_bytes = sum(f.stat().st_size for p in partitions for f in (data_dir / f"{topic}-{p}").glob("*.log"))
    return out


def topic_names(bootstrap: str) -> set[str]:
    """Every topic of the cluster."""
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics)


# -- one run -----------------------------------------------------------------------------------------


@dataclass
class Run:
    """One mirror run: a mode with offset syncs off or on."""

    index: int
    mode: str
    syncs: bool
    alias: str
    target_topic: str
    records: int
    megabytes: float  # uncompressed record bytes mirrored / 10^6
    seconds: float
    mb_per_s: float
    cpu_seconds: float
    cpu_s_per_gb: float
    peak_rss_mb: float
    target: Stored
    sync_topic: str | None = None
    syncs_stored: Stored | None = None
    checkpoints_topic: str | None = None  # {alias}.checkpoints.internal, if the run created it
    checkpoints_stored: Stored | None = None
    progress: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, source offsets done)

    @property
    def sync_bytes_per_gb(self) -> float | None:
        """Offset-sync batch bytes per GB (10^9 bytes) of uncompressed records mirrored."""
        return None if self.syncs_stored is None else self.syncs_stored.bytes / (self.megabytes / 1000)

    @property
    def sync_pct_of_target(self) -> float | None:
        """Offset-sync batch bytes as a % of the mirrored topic's stored batch bytes."""
        if self.syncs_stored is None or not self.target.bytes:
            return None
        return 100 * self.syncs_stored.bytes / self.target.bytes


def mirror_run(
    index: int, mode: str, syncs: bool, clusters: DevClusters, *, topic: str, records: int, workdir: Path
) -> Run:
    """Mirror ``topic`` once in a fresh connector and measure what it stored on the target."""
    src, tgt = clusters.source.bootstrap_servers, clusters.target.bootstrap_servers
    before = topic_names(tgt)
    progress: list[tuple[float, int]] = []
    started = time.monotonic()

    def on_progress(done: int, _total: int) -> None:
        progress.append((round(time.monotonic() - started, 3), done))

    r = mirror_once(
        mode, CODEC, src, tgt, topic, records=records, workdir=workdir, on_progress=on_progress,
        extra=None if syncs else SYNCS_OFF,
    )  # fmt: skip
    new = topic_names(tgt) - before
    target_topic = next((t for t in new if t.endswith(f".{topic}") and not t.startswith(SYNCS_PREFIX)), None)
    if target_topic is None:
        raise RuntimeError(f"no new target topic for {topic} among {sorted(new)}")
    alias = target_topic[: -len(f".{topic}")]  # mirror_once's connector name, its source.cluster.alias
    data_dir = clusters.target.home / "data"
    partitions = sorted(end_offsets(src, topic))
    run = Run(
        index, mode, syncs, alias, target_topic, r.records, r.megabytes, r.seconds, r.mb_per_s, r.cpu_seconds,
        r.cpu_s_per_gb, r.peak_rss_mb, target=stored(tgt, target_topic, partitions, data_dir), progress=progress,
    )  # fmt: skip
    if (checkpoints := f"{alias}.checkpoints.internal") in new:
        run.checkpoints_topic = checkpoints
        run.checkpoints_stored = stored(tgt, checkpoints, sorted(end_offsets(tgt, checkpoints)), data_dir)
    sync_topic = f"{SYNCS_PREFIX}{alias}.internal"
    if syncs:
        if sync_topic not in new:
            raise RuntimeError(f"syncs ON but no {sync_topic} on the target (new topics: {sorted(new)})")
        run.sync_topic, run.syncs_stored = sync_topic, stored(tgt, sync_topic, [0], data_dir)
    elif sync_topic in new:
        raise RuntimeError(f"syncs OFF but {sync_topic} was created on the target")
    return run


# -- summary -----------------------------------------------------------------------------------------


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def steady_mb_per_s(progress: Sequence[Sequence[float]], record_bytes: int = RECORD_BYTES) -> float | None:
    """MB/s from the first progress sample with anything committed to the last: startup left out."""
    moving = [(t, d) for t, d in progress if d > 0]
    if len(moving) < 2 or moving[-1][0] <= moving[0][0]:
        return None
    (t0, d0), (t1, d1) = moving[0], moving[-1]
    return (d1 - d0) * record_bytes / 1e6 / (t1 - t0)


def summarize(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per mode: means of the OFF and ON runs and the ON-vs-OFF differences."""
    out = []
    for mode in dict.fromkeys(r["mode"] for r in runs):
        off = [r for r in runs if r["mode"] == mode and not r["syncs"]]
        on = [r for r in runs if r["mode"] == mode and r["syncs"]]

        def m(rs: Sequence[Mapping[str, Any]], key: str) -> float:
            return _mean([float(r[key]) for r in rs])

        def steady(rs: Sequence[Mapping[str, Any]]) -> float:
            return _mean([v for r in rs if (v := steady_mb_per_s(r["progress"])) is not None])

        sync_bytes = [r["syncs_stored"]["bytes"] for r in on]
        sync_records = [r["syncs_stored"]["records"] for r in on]
        target_bytes = [r["target"]["bytes"] for r in on]
        megabytes = [r["megabytes"] for r in on]
        off_mbps = [float(r["mb_per_s"]) for r in off]
        row = {
            "mode": mode,
            "reps": min(len(off), len(on)),
            "mb_per_s_off": m(off, "mb_per_s"),
            "mb_per_s_on": m(on, "mb_per_s"),
            "steady_mb_per_s_off": steady(off),
            "steady_mb_per_s_on": steady(on),
            "cpu_s_per_gb_off": m(off, "cpu_s_per_gb"),
            "cpu_s_per_gb_on": m(on, "cpu_s_per_gb"),
            "peak_rss_mb_off": m(off, "peak_rss_mb"),
            "peak_rss_mb_on": m(on, "peak_rss_mb"),
            "off_mb_per_s_spread_pct": (
                100 * (max(off_mbps) - min(off_mbps)) / _mean(off_mbps) if len(off_mbps) > 1 else None
            ),
            "sync_records_mean": _mean(sync_records),
            "sync_bytes_mean": _mean(sync_bytes),
            "sync_pct_of_target_mean": 100 * sum(sync_bytes) / sum(target_bytes) if sum(target_bytes) else None,
            "sync_pct_of_uncompressed_mean": 100 * sum(sync_bytes) / (sum(megabytes) * 1e6) if megabytes else None,
        }
        row["mb_per_s_change_pct"] = 100 * (row["mb_per_s_on"] / row["mb_per_s_off"] - 1)
        row["steady_mb_per_s_change_pct"] = 100 * (row["steady_mb_per_s_on"] / row["steady_mb_per_s_off"] - 1)
        row["cpu_change_pct"] = 100 * (row["cpu_s_per_gb_on"] / row["cpu_s_per_gb_off"] - 1)
        out.append(row)
    return out


# -- Markdown ----------------------------------------------------------------------------------------


def _signed(value: float | None) -> str:
    return _f(value, "+.1f", "%")


def runs_table(results: Mapping[str, Any]) -> list[str]:
    """One row per run, in run order."""
    lines = [
        "| # | mode | syncs | seconds | MB/s | CPU-s/GB | peak RSS MB | sync records | sync bytes "
        "| sync bytes per GB mirrored | % of stored target bytes |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results["runs"]:
        s = r.get("syncs_stored")
        per_gb = s["bytes"] / (r["megabytes"] / 1000) if s else None
        pct = 100 * s["bytes"] / r["target"]["bytes"] if s and r["target"]["bytes"] else None
        lines.append(
            f"| {r['index']} | {r['mode']} | {'ON' if r['syncs'] else 'OFF'} | {_f(r['seconds'])} "
            f"| {_f(r['mb_per_s'])} | {_f(r['cpu_s_per_gb'])} | {_f(r['peak_rss_mb'], ',.0f')} "
            f"| {_f(s['records'] if s else None, ',.0f')} | {_f(s['bytes'] if s else None, ',.0f')} "
            f"| {_f(per_gb, ',.0f')} | {_f(pct, '.4f', '%')} |"
        )
    return lines


def summary_table(results: Mapping[str, Any]) -> list[str]:
    """Per mode: ON against OFF (means of the repetitions)."""
    lines = [
        "| mode | pairs | MB/s OFF → ON | MB/s change | MB/s after first commit, change | CPU-s/GB OFF → ON "
        "| CPU change | peak RSS MB OFF → ON | sync bytes, % of stored target bytes | % of uncompressed bytes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in results["summary"]:
        lines.append(
            f"| {s['mode']} | {s['reps']} | {_f(s['mb_per_s_off'])} → {_f(s['mb_per_s_on'])} "
            f"| {_signed(s['mb_per_s_change_pct'])} | {_signed(s['steady_mb_per_s_change_pct'])} "
            f"| {_f(s['cpu_s_per_gb_off'])} → {_f(s['cpu_s_per_gb_on'])} | {_signed(s['cpu_change_pct'])} "
            f"| {_f(s['peak_rss_mb_off'], ',.0f')} → {_f(s['peak_rss_mb_on'], ',.0f')} "
            f"| {_f(s['sync_pct_of_target_mean'], '.4f', '%')} | {_f(s['sync_pct_of_uncompressed_mean'], '.5f', '%')} |"
        )
    return lines


def _marker_note(results: Mapping[str, Any]) -> list[str]:
    """The offset-syncs partition's transaction markers and on-disk size, which the batch sums leave out."""
    on = [r for r in results["runs"] if r["syncs"] and r.get("syncs_stored")]
    if not on:
        return []
    rows = []
    for r in on:
        s, t = r["syncs_stored"], r["target"]
        disk_pct = 100 * s["disk_bytes"] / t["disk_bytes"] if s.get("disk_bytes") and t.get("disk_bytes") else None
        rows.append(
            f"| {r['index']} | {r['mode']} | {s['batches']:,} | {s['records']:,} | {s['end_offset'] - s['records']:,} "
            f"| {_f(s.get('disk_bytes'), ',.0f')} | {_f(t.get('disk_bytes'), ',.0f')} | {_f(disk_pct, '.4f', '%')} |"
        )
    return [
        "",
        "The batch sums above leave out the transaction markers: the offset-syncs partition joins every "
        "transaction, so each commit also writes one control batch into it. The sizes of the partitions' log "
        "files on the target broker's disk include them:",
        "",
        "| # | mode | sync batches | sync records | markers in the syncs partition | syncs partition on disk (bytes) "
        "| target topic on disk (bytes) | % |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *rows,
    ]


def _checkpoint_note(results: Mapping[str, Any]) -> str:
    """What the checkpoint emitter wrote in the ON runs."""
    on = [r for r in results["runs"] if r["syncs"]]
    written = [r["checkpoints_stored"]["records"] for r in on if r.get("checkpoints_stored")]
    if not written or not any(written):
        return (
            "The source has no consumer group for it to checkpoint (the mirrors' own `connect-*` groups are in the "
            "default `groups.exclude`), so its rounds cost a few requests and wrote no checkpoint."
        )
    return f"Its rounds wrote {min(written):,} to {max(written):,} checkpoint records per run."


def _spreads_pct(results: Mapping[str, Any], key: str) -> dict[str, float]:
    """Per mode, the largest (max - min) / mean of ``key`` among its runs with the same setting, in %."""
    groups: dict[tuple[str, bool], list[float]] = {}
    for r in results["runs"]:
        groups.setdefault((r["mode"], r["syncs"]), []).append(float(r[key]))
    out: dict[str, float] = {}
    for (mode, _), values in groups.items():
        if len(values) > 1:
            out[mode] = max(out.get(mode, 0.0), 100 * (max(values) - min(values)) / _mean(values))
    return out


def _measured(results: Mapping[str, Any]) -> str:
    """One paragraph: the byte share, the ON-vs-OFF changes per mode, and the run-to-run noise they sit in."""
    summary = results["summary"]
    pcts = [r["syncs_stored"]["bytes"] / r["target"]["bytes"] * 100 for r in results["runs"] if r.get("syncs_stored")]
    per_gb = [r["syncs_stored"]["bytes"] / (r["megabytes"] / 1000) for r in results["runs"] if r.get("syncs_stored")]
    changes = "; ".join(
        f"{s['mode']} {_signed(s['mb_per_s_change_pct'])} MB/s, {_signed(s['cpu_change_pct'])} CPU-s/GB"
        for s in summary
    )
    text = (
        f"Measured: the offset syncs' batches take {min(pcts, default=0):.4f}% to {max(pcts, default=0):.4f}% "
        f"of the stored target bytes ({min(per_gb, default=0):,.0f} to {max(per_gb, default=0):,.0f} bytes per GB "
        f"mirrored). Syncs ON against OFF (means): {changes}."
    )
    mbps, cpu = _spreads_pct(results, "mb_per_s"), _spreads_pct(results, "cpu_s_per_gb")
    if mbps:
        text += " Runs of the same mode and setting differed by up to " + "; ".join(
            f"{mode} {mbps[mode]:.1f}% in MB/s and {cpu.get(mode, 0.0):.1f}% in CPU-s/GB" for mode in mbps
        )
        noisy = [mode for mode, spread in mbps.items() if spread > GOAL_THROUGHPUT_PCT]
        text += (
            f", so this run cannot resolve a {GOAL_THROUGHPUT_PCT:g}% throughput cost for {' or '.join(noisy)}: "
            "a change smaller than that spread is noise."
            if noisy
            else "."
        )
    return text


def overhead_section(results: Mapping[str, Any], heading: str = "## Offset-sync overhead") -> list[str]:
    """The Markdown lines of the offset-sync overhead section for these results."""
    gb = results["gb"]
    return [
        heading,
        "",
        f"`{results['command']}` writes {gb:g} GB ({results['records']:,} records of {RECORD_BYTES} bytes, "
        f"{results['codec']}, {results['partitions']} partitions, producer batches of 64 KB to 1 MB) to one source "
        "topic, then mirrors that same topic in one run, one connector at a time, alternating offset syncs OFF "
        "(`emit.offset-syncs.enabled=false`, which also turns the checkpoint emitter off) and ON (the defaults: "
        "a sync per target partition in every transaction, and the checkpoint emitter's round every 5 s; "
        "group offset sync is off by default). "
        f"{_checkpoint_note(results)} Each run is a fresh connector "
        "(its own alias, target topic and shadow group, `tasks.max=1`, `transaction.boundary.interval.ms` at its "
        "default of 1000), measured as in `bench.mirror_throughput`: MB/s is uncompressed record bytes over the "
        "wall-clock time from starting the mirror process to the shadow group holding every source offset "
        "(polled every 0.5 s); CPU-s/GB and peak RSS are of the mirror's process tree. *Sync bytes* sums the "
        "record batches (headers included) stored in partition 0 of `mirror-sink-offset-syncs.{alias}.internal`, "
        "read back raw; the target topic's stored bytes are summed the same way over all its partitions.",
        "",
        f"Goal: under {GOAL_BYTES_PCT:g}% of the bytes and under {GOAL_THROUGHPUT_PCT:g}% of the throughput. "
        + _measured(results),
        "",
        "ON against OFF, means of the runs of each mode (*after first commit* leaves the process start-up out):",
        "",
        *summary_table(results),
        "",
        "Every run, in the order they ran:",
        "",
        *runs_table(results),
        *_marker_note(results),
    ]


def further_overhead_section(results: Mapping[str, Any]) -> list[str]:
    """A shorter section for another overhead run (another size or more repetitions), same method."""
    pairs = ", ".join(f"{s['reps']} {s['mode']}" for s in results["summary"])
    return [
        f"### Larger run: {results['gb']:g} GB, OFF/ON pairs: {pairs}",
        "",
        f"`{results['command']}` ({results.get('date', '-')}), same method. " + _measured(results),
        "",
        *summary_table(results),
        "",
        *runs_table(results),
    ]


# -- the run -----------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Write the source once, mirror it per the plan; the results dict."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    workdir = RESULTS / f"offset-syncs-{stamp}"
    workdir.mkdir(parents=True, exist_ok=True)
    clusters = DevClusters(workdir / "clusters")
    log("starting local source and target clusters...")
    clusters.up()
    records = int(args.gb * 1e9 / RECORD_BYTES)
    topic = f"offset-syncs-{CODEC}-{int(time.time())}"
    runs: list[Run] = []
    order = plan(args.reps, args.record_reps)
    try:
        src = clusters.source.bootstrap_servers
        log(f"writing {args.gb} GB ({records:,} records of {RECORD_BYTES} B, {CODEC}) to {topic}")
        write_source(src, topic, records, CODEC)
        partitions = len(end_offsets(src, topic))
        for i, (mode, syncs) in enumerate(order, start=1):
            log(f"[{i}/{len(order)}] mirroring with {mode}, offset syncs {'ON' if syncs else 'OFF'}...")
            r = mirror_run(i, mode, syncs, clusters, topic=topic, records=records, workdir=workdir)
            runs.append(r)
            s = r.syncs_stored
            log(
                f"    {r.seconds:.1f} s, {r.mb_per_s:.1f} MB/s, {r.cpu_s_per_gb:.1f} CPU-s/GB, peak RSS "
                f"{r.peak_rss_mb:.0f} MB; target {r.target.bytes:,} B in {r.target.batches:,} batches"
                + (f"; syncs {s.records:,} records, {s.bytes:,} B ({r.sync_pct_of_target:.4f}%)" if s else "")
            )
    finally:
        clusters.discard()
    run_dicts = [asdict(r) for r in runs]
    return {
        "command": " ".join([".venv/bin/python -m bench.offset_sync_overhead", *map(shlex.quote, sys.argv[1:])]),
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "kafka_version": kafka_version(),
        "gb": args.gb,
        "records": records,
        "record_bytes": RECORD_BYTES,
        "codec": CODEC,
        "partitions": partitions,
        "source_topic": topic,
        "workdir": str(workdir),
        "plan": [{"mode": m, "syncs": s} for m, s in order],
        "runs": run_dicts,
        "summary": summarize(run_dicts),
    }


def render(results: Mapping[str, Any]) -> str:
    """This scenario's section of docs/failover-benchmarks.md, as ``overhead_section`` with its heading."""
    return "\n".join(overhead_section(results))
