"""The comparison's page: ``bench.scenarios.compare``'s results as Markdown and four PNG plots.

``render_markdown`` gives the top of docs/benchmarks.md (``bench.report`` appends the other scenarios'
sections); ``plot`` writes ``benchmarks-throughput.png``, ``benchmarks-cpu.png``, ``benchmarks-latency.png``
and ``benchmarks-latency-rate.png`` into the page's data directory, where the page links them. Every
figure on the page, the headline ratios included, is computed from the results; any entry may be
missing, and shows as "-" in the tables and as a gap in the plots.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

# Agg before pyplot: the report runs headless (CI, ssh) and must never try to open a window.
matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter, ScalarFormatter

from bench.common.markdown import DASH, fmt, share, table
from bench.common.paths import DATA

THROUGHPUT_PNG = "benchmarks-throughput.png"
CPU_PNG = "benchmarks-cpu.png"
LATENCY_PNG = "benchmarks-latency.png"
LATENCY_RATE_PNG = "benchmarks-latency-rate.png"

MM2_EOS = "mm2-eos"
MM2_ALO = "mm2-alo"
RAW_EOS = "raw-eos"
RECORD_EOS = "record-eos"

#: Known mirrors in display order, with what each one is. Unknown names from a results file are
#: appended after these in order of appearance.
MIRRORS: dict[str, str] = {
    MM2_ALO: "MirrorMaker 2, dedicated mode, at-least-once (as shipped)",
    MM2_EOS: "MirrorMaker 2, dedicated mode, exactly.once.source.support=enabled",
    RECORD_EOS: "mirror-sink record mode, exactly-once",
    RAW_EOS: "mirror-sink raw mode (KIP-712, batches forwarded byte for byte), exactly-once",
    "raw-alo": "mirror-sink raw mode, at-least-once (for reference)",
}

#: One colour per mirror on every plot: MM2 in greys so mirror-sink's modes stand out against it.
COLOURS: dict[str, str] = {
    MM2_ALO: "#b0b0b0",
    MM2_EOS: "#606060",
    RECORD_EOS: "#ff7f0e",
    RAW_EOS: "#1f77b4",
    "raw-alo": "#9ecae1",
}
_EXTRA_COLOURS = ("#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")

#: Codecs in a fixed reading order; codecs not listed follow in order of appearance.
CODEC_ORDER = ("none", "lz4", "zstd", "gzip", "snappy")

CEILING_LABEL = "ceiling: target broker ingest, no mirror"
#: The sign in "7.9x faster" on the page, spelt by name: ruff flags the literal as a lookalike of "x".
TIMES = "\N{MULTIPLICATION SIGN}"


# --- reading the results -------------------------------------------------------------------------


#: What an entry of each list must name to be placed in a table or plot; entries without it are skipped.
_REQUIRED: dict[str, tuple[str, ...]] = {
    "throughput": ("codec", "mirror"),
    "ceiling": ("codec",),
    "latency": ("mirror",),
    "scaling": ("mirror", "tasks"),
}


def _entries(results: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    """The usable entries of the list under ``key`` (a missing or malformed list reads as empty)."""
    value = results.get(key)
    if not isinstance(value, list):
        return []
    required = _REQUIRED.get(key, ())
    return [e for e in value if isinstance(e, Mapping) and all(e.get(k) is not None for k in required)]


def _num(entry: Mapping[str, Any] | None, key: str) -> float | None:
    """A finite number under ``key``, or None when absent, null, non-numeric or NaN."""
    if entry is None:
        return None
    value = entry.get(key)
    # bool is an int subclass; True is not a measurement.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _ordered(names: Iterable[str], preferred: Sequence[str]) -> list[str]:
    """Distinct ``names``: those in ``preferred`` first in that order, then the rest as they came."""
    seen = list(dict.fromkeys(names))
    return [n for n in preferred if n in seen] + [n for n in seen if n not in preferred]


def _codecs(results: Mapping[str, Any]) -> list[str]:
    names = [str(e["codec"]) for k in ("throughput", "ceiling") for e in _entries(results, k)]
    return _ordered(names, CODEC_ORDER)


def _mirrors(entries: Iterable[Mapping[str, Any]]) -> list[str]:
    return _ordered((str(e["mirror"]) for e in entries), list(MIRRORS))


def _colour(mirror: str) -> str:
    if mirror in COLOURS:
        return COLOURS[mirror]
    # A stable pick for unknown mirrors, so a name keeps its colour across the three plots.
    return _EXTRA_COLOURS[sum(mirror.encode()) % len(_EXTRA_COLOURS)]


def _throughput_index(results: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """Throughput entries by (codec, mirror); the last one wins if a pair repeats."""
    return {(str(e["codec"]), str(e["mirror"])): e for e in _entries(results, "throughput")}


def _ceiling_index(results: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(e["codec"]): e for e in _entries(results, "ceiling")}


def baseline_for(mirror: str) -> str | None:
    """The MirrorMaker 2 run a mirror is compared with: the one with the same delivery guarantee.

    Exactly-once mirrors (``*-eos``) compare with ``mm2-eos``, at-least-once ones (``*-alo``) with
    ``mm2-alo``; a name with neither suffix has no baseline.
    """
    if mirror.endswith("-eos"):
        return MM2_EOS
    if mirror.endswith("-alo"):
        return MM2_ALO
    return None


def speed_factor(entry: Mapping[str, Any] | None, base: Mapping[str, Any] | None) -> float | None:
    """How many times ``base``'s throughput ``entry`` reached (>1 is faster), or None if unknown.

    Falls back to the inverse ratio of seconds when MB/s is missing: both runs copied the same data.
    """
    mbps, base_mbps = _num(entry, "mb_per_s"), _num(base, "mb_per_s")
    if mbps is not None and base_mbps:
        return mbps / base_mbps
    secs, base_secs = _num(entry, "seconds"), _num(base, "seconds")
    if secs and base_secs is not None:
        return base_secs / secs
    return None


def cpu_factor(entry: Mapping[str, Any] | None, base: Mapping[str, Any] | None) -> float | None:
    """``entry``'s CPU-seconds per GB over ``base``'s (<1 is cheaper), or None if unknown."""
    cpu, base_cpu = _num(entry, "cpu_s_per_gb"), _num(base, "cpu_s_per_gb")
    if cpu is None or not base_cpu:
        return None
    return cpu / base_cpu


# --- formatting ----------------------------------------------------------------------------------


def _factor(f: float) -> str:
    """A factor >= 1 as "7.9x" or "32x" (with a times sign): two significant figures are all a run supports."""
    return f"{f:.0f}{TIMES}" if f >= 9.95 else f"{f:.1f}{TIMES}"


def format_speed(f: float | None) -> str:
    """A speed factor as "7.9x faster" / "2.1x slower" (always a factor >= 1 and a direction)."""
    if f is None or f <= 0:
        return DASH
    if _factor(max(f, 1 / f)) == f"1.0{TIMES}":
        return "same"
    return f"{_factor(f)} faster" if f > 1 else f"{_factor(1 / f)} slower"


def format_cpu(f: float | None) -> str:
    """A CPU factor as "32x less CPU" / "1.4x more CPU" (always a factor >= 1 and a direction)."""
    if f is None or f <= 0:
        return DASH
    if _factor(max(f, 1 / f)) == f"1.0{TIMES}":
        return "same"
    return f"{_factor(1 / f)} less CPU" if f < 1 else f"{_factor(f)} more CPU"


def _ratio(value: float | None, base: float | None) -> float | None:
    """``value / base``, or None when either is missing or ``base`` is 0."""
    if value is None or not base:
        return None
    return value / base


def _rate(value: float | None) -> str:
    """Records per second as "2,000/s" (or "0.5/s" below one a second)."""
    if value is None:
        return DASH
    return f"{value:g}/s" if value < 1 else f"{value:,.0f}/s"


# --- the Markdown page ---------------------------------------------------------------------------


def _headline(results: Mapping[str, Any]) -> list[str]:
    """The key ratios, one bullet per codec plus one for latency, each only if its data is present."""
    tp, ceil = _throughput_index(results), _ceiling_index(results)
    lines: list[str] = []
    for codec in _codecs(results):
        base = tp.get((codec, MM2_EOS))
        parts: list[str] = []
        for mirror in (RAW_EOS, RECORD_EOS):
            entry = tp.get((codec, mirror))
            speed, cpu = format_speed(speed_factor(entry, base)), format_cpu(cpu_factor(entry, base))
            if DASH not in (speed, cpu):
                parts.append(f"{mirror} is **{speed}** than {MM2_EOS} with **{cpu}** per GB")
            elif speed != DASH:
                parts.append(f"{mirror} is **{speed}** than {MM2_EOS}")
        raw = tp.get((codec, RAW_EOS))
        raw_mbps, ceil_mbps = _num(raw, "copy_mb_per_s") or _num(raw, "mb_per_s"), _num(ceil.get(codec), "mb_per_s")
        if raw_mbps is not None and ceil_mbps:
            parts.append(f"{RAW_EOS} copies at {raw_mbps / ceil_mbps:.0%} of the target broker's no-mirror ingest")
        per_byte = broker_cpu_ratio(raw, ceil.get(codec))
        if per_byte is not None:
            parts.append(
                f"{RAW_EOS} spends **{_times(per_byte)}** the target broker's own CPU per GB ingesting the same batches"
            )
        if parts:
            lines.append(f"- **{codec}**: " + "; ".join(parts) + ".")

    lines += _latency_headline(_entries(results, "latency"))
    lines += _scaling_headline(results)
    if not lines:
        lines.append(f"- No ratio to quote: this run lacks {MM2_EOS} or mirror-sink's exactly-once figures.")
    return lines


#: The rate the headline quotes latency at when the run measured it (the rate of earlier runs of this page).
HEADLINE_RATE = 2000


def _latency_headline(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """raw-eos against mm2-eos p99 at 2,000 records/s, or else the first rate both were measured at.

    Latency depends on the rate, so only runs at the same asked-for rate are compared; the markers per
    1,000 records each wrote at that rate follow when the run counted them.
    """
    measured = [e for e in entries if _num(e, "p99_ms") is not None]
    mm2 = {_num(e, "rate_per_s"): e for e in measured if e["mirror"] == MM2_EOS}
    raw = {_num(e, "rate_per_s"): e for e in measured if e["mirror"] == RAW_EOS}
    common = [r for r in raw if r in mm2]
    if not common:
        return []
    rate = HEADLINE_RATE if HEADLINE_RATE in common else common[0]
    r, m = raw[rate], mm2[rate]
    at = f" at {rate:,.0f} records/s" if rate is not None else ""
    line = (
        f"- **latency**{at}: {RAW_EOS} p99 **{fmt(_num(r, 'p99_ms'), 0)} ms**, {MM2_EOS} p99 "
        f"**{fmt(_num(m, 'p99_ms'), 0)} ms** (both exactly-once, so both include the wait for the transaction "
        "to commit)"
    )
    r_markers, m_markers = _num(r, "markers_per_1k_records"), _num(m, "markers_per_1k_records")
    if r_markers is not None and m_markers is not None:
        line += f"; transaction markers per 1,000 records: {RAW_EOS} {fmt(r_markers)}, {MM2_EOS} {fmt(m_markers)}"
    return [line + "."]


def _scaling_headline(results: Mapping[str, Any]) -> list[str]:
    """Each scaling mirror's MB/s at its largest task count over its one-task MB/s."""
    entries = [e for e in _entries(results, "scaling") if _num(e, "mb_per_s")]
    parts: list[str] = []
    for mirror in _mirrors(entries):
        by_tasks = {_num(e, "tasks"): e for e in entries if e["mirror"] == mirror}
        top = max((t for t in by_tasks if t is not None), default=None)
        one = _num(by_tasks.get(1.0), "mb_per_s")
        if top is None or top <= 1 or not one:
            continue
        speedup = (_num(by_tasks[top], "mb_per_s") or 0.0) / one
        parts.append(f"{mirror} with tasks.max={top:.0f} moves {speedup:.2f}{TIMES} its one-task MB/s")
    if not parts:
        return []
    partitions = _num(results, "scaling_partitions")
    where = f" ({partitions:.0f} partitions)" if partitions is not None else ""
    return [f"- **task scaling**{where}: " + "; ".join(parts) + "."]


def _method(results: Mapping[str, Any]) -> str:
    """The paragraph saying what was measured and how, filled in from the run's parameters."""
    gb, record_bytes, partitions = (
        _num(results, "gb_per_codec"),
        _num(results, "record_bytes"),
        _num(results, "partitions"),
    )
    codecs = _codecs(results)
    size = f"{gb:g} GB" if gb is not None else "a fixed amount"
    record = f"{record_bytes:.0f}-byte" if record_bytes is not None else "fixed-size"
    record_b = f"{record_bytes:.0f} B" if record_bytes is not None else "the record size"
    parts = f"{partitions:,.0f} partitions" if partitions is not None else "several partitions"
    codec_list = " (" + ", ".join(f"`{c}`" for c in codecs) + ")" if codecs else ""
    quick = (
        " This was a quick run: treat its figures as a smoke test, not a measurement."
        if results.get("quick") is True
        else ""
    )
    return (
        f"For each compression codec{codec_list} the benchmark writes {size} of {record} records, "
        f"compressed by the producer with that codec, to one source topic with {parts}; then every mirror "
        "below copies that same source data to the target cluster, one after the other in the same run, "
        "so the rows of a table compare like with like. MB/s counts uncompressed record bytes "
        f"(records {TIMES} {record_b} / 10^6) per second of wall-clock time for the whole copy. CPU-s/GB is the "
        "user + system CPU time of the mirror's process tree per GB (10^9 bytes) of records copied; peak "
        "RSS is the largest resident memory of that process tree during the copy. MirrorMaker 2 (MM2) is "
        "Kafka's own, run in dedicated mode (`connect-mirror-maker`) from the Apache Kafka jars on Maven "
        "Central. The ceiling row is the target broker ingesting the same compressed batches with no mirror "
        "in between (idempotent, five requests in flight, one batch per partition per request: raw mode's own "
        "producer without its transactions; the better of two runs, so a fresh broker's warm-up does not "
        f"count): no mirror can beat it.{quick}"
    )


def _per_core(entry: Mapping[str, Any], key: str = "cpu_s_per_gb") -> float | None:
    """MB/s per mirror core: MB per CPU-second of the mirror's processes (of the broker's, for a ceiling)."""
    cpu = _num(entry, key)
    return 1000 / cpu if cpu else None


def broker_cpu_ratio(entry: Mapping[str, Any] | None, ceiling: Mapping[str, Any] | None) -> float | None:
    """A mirror's CPU-seconds per GB over the target broker's own per GB ingesting the same batches alone.

    Unlike a share of the ceiling's MB/s, which measures how many cores the machine had left, this is
    per byte: 0.5 means the mirror spends half what the broker spends to take the same data in. The
    mirror's copy alone where it was measured (start-up left out, as the broker's timed ingest has none).
    """
    mirror = _num(entry, "copy_cpu_s_per_gb") or _num(entry, "cpu_s_per_gb")
    return _ratio(mirror, _num(ceiling, "broker_cpu_s_per_gb"))


def _times(f: float | None) -> str:
    """A ratio as "0.48x" (times sign), "-" when unknown."""
    return DASH if f is None else f"{fmt(f)}{TIMES}"


def _throughput_section(results: Mapping[str, Any]) -> list[str]:
    tp, ceil = _throughput_index(results), _ceiling_index(results)
    mirrors = _mirrors(_entries(results, "throughput"))
    # Runs saved before bench.compare sampled the machine have no "cores busy": no empty column then.
    busy = any(_num(e, "machine_cores_busy") is not None for e in [*tp.values(), *ceil.values()])
    # Nor a broker-CPU column for runs without the target broker's own CPU (older runs, remote clusters).
    per_byte = any(_num(c, "broker_cpu_s_per_gb") is not None for c in ceil.values())
    # And no copy-CPU column for runs saved before the copy's own CPU was sampled.
    copy_cpu = any(_num(e, "copy_cpu_s_per_gb") is not None for e in tp.values())
    header = [
        "mirror",
        "seconds",
        "MB/s",
        "copy MB/s",
        "of ceiling",
        *(["cores busy"] if busy else []),
        "CPU-s/GB",
        "MB/s per core",
        *(["copy CPU-s/GB", "copy MB/s per core"] if copy_cpu else []),
        *(["CPU/GB vs broker ingest"] if per_byte else []),
        "peak RSS MB",
        "speed vs MM2",
        "CPU/GB vs MM2",
    ]
    lines: list[str] = []
    for codec in _codecs(results):
        ceil_mbps = _num(ceil.get(codec), "mb_per_s")
        rows: list[list[str]] = []
        for mirror in mirrors:
            entry = tp.get((codec, mirror))
            if entry is None:
                continue
            base_name = baseline_for(mirror)
            base = tp.get((codec, base_name)) if base_name else None
            if mirror == base_name:
                speed = cpu = "baseline"
            else:
                speed, cpu = format_speed(speed_factor(entry, base)), format_cpu(cpu_factor(entry, base))
            rows.append(
                [
                    f"`{mirror}`",
                    fmt(_num(entry, "seconds"), 1),
                    fmt(_num(entry, "mb_per_s"), 1),
                    fmt(_num(entry, "copy_mb_per_s"), 1),
                    share(_ratio(_num(entry, "copy_mb_per_s") or _num(entry, "mb_per_s"), ceil_mbps)),
                    *([fmt(_num(entry, "machine_cores_busy"), 2)] if busy else []),
                    fmt(_num(entry, "cpu_s_per_gb"), 1),
                    fmt(_per_core(entry), 1),
                    *(
                        [fmt(_num(entry, "copy_cpu_s_per_gb"), 1), fmt(_per_core(entry, "copy_cpu_s_per_gb"), 1)]
                        if copy_cpu
                        else []
                    ),
                    *([_times(broker_cpu_ratio(entry, ceil.get(codec)))] if per_byte else []),
                    fmt(_num(entry, "peak_rss_mb"), 0),
                    speed,
                    cpu,
                ]
            )
        if codec in ceil:
            c = ceil[codec]
            rows.append(
                [CEILING_LABEL, fmt(_num(c, "seconds"), 1), fmt(_num(c, "mb_per_s"), 1)]
                + [fmt(_num(c, "mb_per_s"), 1), "100%"]
                + ([fmt(_num(c, "machine_cores_busy"), 2)] if busy else [])
                + [fmt(_num(c, "broker_cpu_s_per_gb"), 1), fmt(_per_core(c, "broker_cpu_s_per_gb"), 1)]
                + ([DASH, DASH] if copy_cpu else [])
                + ([_times(1.0 if _num(c, "broker_cpu_s_per_gb") else None)] if per_byte else [])
                + [DASH] * 3
            )
        if rows:
            lines += [f"### Codec `{codec}`", "", *table(header, rows), ""]
    if not lines:
        return ["No throughput figures in this run.", ""]
    lines += [
        f"Ratios compare each mirror with MirrorMaker 2 at the same delivery guarantee in the same run "
        f"(exactly-once rows with `{MM2_EOS}`, at-least-once rows with `{MM2_ALO}`), always as a factor of at "
        f'least 1 with its direction: "7.9{TIMES} faster" is 7.9 times MM2\'s MB/s, "32{TIMES} less CPU" is 1/32 of '
        'MM2\'s CPU-seconds per GB, "same" is within 5%. "MB/s" is over the whole run, process start-up '
        "included (as MM2's, whose JVM and Connect worker start in it); \"copy MB/s\" leaves mirror-sink's "
        'start-up out (from its first task\'s "reading N source partitions" log line to the last offset '
        'committed), as the ceiling, timed without start-up, does; "of ceiling" is copy MB/s (MB/s where '
        'there is none) over the ceiling row\'s for the same codec. "MB/s per core" is MB per CPU-second of the '
        "mirror's processes (1,000 over CPU-s/GB): where it stands among the field's public figures, MirrorMaker 2 "
        "about 16.6 MB/s per core (DiDi's benchmark, 1 KB records, 10 partitions) and Redpanda's Go migrator about "
        '333 (at least once, uncompressed). "cores busy" is the whole machine\'s busy CPU '
        "(both brokers, the mirror, everything) over the copy, in cores: near the machine's core count, a "
        "mirror is bound by the machine, not by its own design; the ceiling row's is the target broker "
        "ingesting alone. On the ceiling row, CPU-s/GB and MB/s per core are the target broker's own process "
        "(all its threads: request handling, log appends, GC) over the timed ingest, the lower of its two runs; "
        '"copy CPU-s/GB" is the mirror\'s CPU over the copy alone, the span of copy MB/s (its start-up: '
        'imports, connections and the group join, left out), and "copy MB/s per core" 1,000 over it; '
        '"CPU/GB vs broker ingest" is a mirror\'s copy CPU-s/GB (CPU-s/GB where there is none) over the '
        "broker's: a per-byte comparison that, unlike \"of "
        'ceiling", does not depend on how many cores the machine had left. "-" means a figure is missing from '
        "this run (the broker's CPU is measured only for local clusters, whose process is on this machine).",
        "",
    ]
    return lines


def _latency_order(entries: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Entries by asked-for rate, then mirror in display order (stable: repeats keep the run's order)."""
    entries = list(entries)
    order = {m: i for i, m in enumerate(_mirrors(entries))}
    return sorted(entries, key=lambda e: (_num(e, "rate_per_s") or 0.0, order.get(str(e.get("mirror")), len(order))))


def _measured(entry: Mapping[str, Any]) -> bool:
    return _num(entry, "p50_ms") is not None or _num(entry, "p99_ms") is not None


def _latency_section(results: Mapping[str, Any]) -> list[str]:
    all_entries = _entries(results, "latency")
    entries = _latency_order(e for e in all_entries if _measured(e))
    failed = _latency_order(e for e in all_entries if not _measured(e))
    if not entries and not failed:
        return ["No latency figures in this run.", ""]
    seconds = _num(results, "latency_seconds")
    rows = []
    incomplete = False
    for e in entries:
        records, produced = _num(e, "records"), _num(e, "produced")
        cell = fmt(records, 0)
        if e.get("complete") is False and produced is not None:
            cell = f"{cell} of {fmt(produced, 0)} (incomplete)"
            incomplete = True
        eos = str(e.get("mirror", "")).endswith("-eos")
        rows.append(
            [
                f"`{e.get('mirror', '?')}`",
                _rate(_num(e, "rate_per_s")),
                _rate(_num(e, "achieved_rate_per_s")),
                cell,
                fmt(_num(e, "p50_ms"), 0),
                fmt(_num(e, "p99_ms"), 0),
                fmt(_num(e, "max_ms"), 0),
                fmt(_num(e, "markers_per_s")) if eos else DASH,
                share(_num(e, "marker_share")) if eos else DASH,
            ]
        )
    length = f"{seconds:g} s" if seconds is not None else "a fixed time"
    lines = [
        *table(
            [
                "mirror",
                "rate asked",
                "rate achieved",
                "records",
                "p50 ms",
                "p99 ms",
                "max ms",
                "markers/s",
                "marker share",
            ],
            rows,
        ),
        "",
        "Latency is, per record, its arrival at a read_committed consumer on the target minus its produce "
        f"time (CreateTime). Each run produces 1 KB records (lz4, {_num(results, 'partitions') or 6:.0f} partitions) "
        f'for {length} at the rate asked, from a load generator in a process of its own; "rate achieved" is '
        "the records it produced over the seconds it produced for, which is lower than the rate asked when the "
        "source broker or the machine could not take more, the mirror's own CPU included: on a small machine a "
        "mirror that keeps up leaves the generator less than one that falls behind, so read the rate achieved "
        "beside p50. Exactly-once latency includes the transaction "
        "interval: a record becomes visible on the target only when the mirror commits the transaction that "
        'carries it. "markers/s" and "marker share" are the transaction markers the run added to the target '
        "topic (below), for exactly-once mirrors.",
        "",
    ]
    if incomplete:
        lines += [
            'An "incomplete" run had records still missing on the target when it gave up waiting: its '
            "percentiles cover only the records that arrived, so they understate its latency.",
            "",
        ]
    if failed:
        lines += ["Runs that failed:", ""]
        lines += [
            f"- `{e.get('mirror')}` at {_rate(_num(e, 'rate_per_s'))}: {e.get('error', 'no figures')}" for e in failed
        ]
        lines.append("")
    return lines


def _markers_section(results: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The transaction-marker table of the exactly-once latency runs."""
    eos = [e for e in entries if str(e.get("mirror", "")).endswith("-eos")]
    if not any(_num(e, "markers") is not None for e in eos):
        return []
    rows = []
    estimated = False
    for e in eos:
        commits = fmt(_num(e, "commits"), 0)
        if e.get("commits_from") == "markers" and commits != DASH:
            commits, estimated = f"~{commits}", True
        rows.append(
            [
                f"`{e.get('mirror', '?')}`",
                _rate(_num(e, "rate_per_s")),
                commits,
                fmt(_num(e, "commits_per_s")),
                fmt(_num(e, "markers"), 0),
                fmt(_num(e, "markers_per_s")),
                fmt(_num(e, "markers_per_1k_records")),
                share(_num(e, "marker_share")),
                share(_num(e, "marker_bytes_share")),
            ]
        )
    size = _num(results, "control_batch_bytes")
    marker_bytes = f"{size:.0f}" if size is not None else "78"
    note = (
        f" `{MM2_EOS}`'s commits (~) are its markers: it runs one task per partition, so each of its "
        "transactions writes one partition of the target topic and leaves one marker there."
        if estimated
        else ""
    )
    return [
        "### Transaction markers",
        "",
        *table(
            [
                "mirror",
                "rate asked",
                "commits",
                "commits/s",
                "markers",
                "markers/s",
                "markers per 1,000 records",
                "share of target offsets",
                "marker bytes / data bytes",
            ],
            rows,
        ),
        "",
        "Every transaction ends with a marker (a control record: commit or abort) in each partition it wrote, "
        "and each marker takes an offset of its own. Over a run, the target offsets taken minus the records "
        "mirrored are the markers. Commits are the mirror's own count of committed transactions (mirror-sink's "
        "`mirror_sink_transactions_total`) over the same window. A marker is a control batch of "
        f"{marker_bytes} bytes on disk and on the wire (61 bytes of batch header and a 17-byte record); the last "
        "column sets the markers' bytes against the rest of the target topic's log, i.e. the mirrored batches as "
        f"stored (compressed).{note}",
        "",
    ]


def _copy_rate(entry: Mapping[str, Any]) -> float | None:
    """The copy phase's MB/s where it was measured, else the whole run's."""
    return _num(entry, "copy_mb_per_s") or _num(entry, "mb_per_s")


def _scaling_section(results: Mapping[str, Any]) -> list[str]:
    entries = _entries(results, "scaling")
    if not entries:
        return ["No task-scaling figures in this run.", ""]
    rows: list[list[str]] = []
    failed: list[str] = []
    for mirror in _mirrors(entries):
        runs = sorted((e for e in entries if e["mirror"] == mirror), key=lambda e: _num(e, "tasks") or 0.0)
        one = next((_copy_rate(e) for e in runs if _num(e, "tasks") == 1), None)
        for e in runs:
            tasks = fmt(_num(e, "tasks"), 0)
            if _num(e, "mb_per_s") is None:
                failed.append(f"- `{mirror}` with tasks.max={tasks}: {e.get('error', 'no figures')}")
                continue
            speedup = _ratio(_copy_rate(e), one)
            rows.append(
                [
                    f"`{mirror}`",
                    tasks,
                    fmt(_num(e, "seconds"), 1),
                    fmt(_num(e, "mb_per_s"), 1),
                    fmt(_num(e, "copy_mb_per_s"), 1),
                    f"{speedup:.2f}{TIMES}" if speedup is not None else DASH,
                    fmt(_num(e, "cpu_s_per_gb"), 1),
                    fmt(_num(e, "peak_rss_mb"), 0),
                ]
            )
    gb, partitions = _num(results, "scaling_gb"), _num(results, "scaling_partitions")
    codec = results.get("scaling_codec") or "lz4"
    size = f"{gb:g} GB" if gb is not None else "A fixed amount"
    parts = f"{partitions:.0f} partitions" if partitions is not None else "many partitions"
    lines = [
        *table(
            ["mirror", "tasks.max", "seconds", "MB/s", "copy MB/s", "speed-up vs 1 task", "CPU-s/GB", "peak RSS MB"],
            rows,
        ),
        "",
        f"{size} of the same 1 KB records (`{codec}`) in one source topic of {parts}, mirrored in full by a fresh "
        "connector for each row, with `tasks.max` as shown; the partitions are spread over the tasks. The tasks "
        "are threads of one mirror-sink process (`mirror-sink run`), each with its own clients and transactions; "
        "MB/s, copy MB/s, CPU and peak RSS are measured as in the throughput tables, and the speed-up is a row's "
        "copy MB/s over the one-task row's of the same mode (start-up, a second or so, is the same for any task "
        "count and would hide the copy's scaling).",
        "",
    ]
    if failed:
        lines += ["Runs that failed:", "", *failed, ""]
    return lines


def render_markdown(results: Mapping[str, Any]) -> str:
    """The page's Markdown for ``results``, referring to the PNGs by their fixed names in the data directory."""
    tp_entries, lat_entries = _entries(results, "throughput"), _entries(results, "latency")
    mirrors = _mirrors([*tp_entries, *lat_entries])

    def meta(key: str) -> str:
        value = results.get(key)
        return DASH if value is None or value == "" else str(value)

    command = f"`{results['command']}`" if results.get("command") else DASH
    lines = [
        "# mirror-sink benchmarks: throughput, CPU and latency against MirrorMaker 2",
        "",
        "## Headline",
        "",
        *_headline(results),
        "",
        "## What was measured",
        "",
        _method(results),
        "",
        f"- Machine: {meta('machine')}",
        f"- Kafka: {meta('kafka_version')} (brokers and MirrorMaker 2 alike)",
        f"- Date: {meta('date')}",
        f"- Regenerate this page: {command} (or re-render it from the saved results with "
        f"`.venv/bin/python -m bench.report <dir>/{DATA}/benchmarks.json <dir>`)",
        "- Consumer failover against MirrorMaker 2, and what the offset syncs cost: "
        "[failover-benchmarks.md](failover-benchmarks.md)",
        "",
    ]
    if mirrors:
        lines += ["Mirrors:", ""]
        lines += [f"- `{m}`: {MIRRORS.get(m, 'not described')}" for m in mirrors]
        lines.append("")
    lines += ["## Throughput and CPU", "", *_throughput_section(results)]
    if tp_entries:
        lines += [
            f"![MB/s per codec and mirror]({DATA}/{THROUGHPUT_PNG})",
            "",
            f"![CPU-seconds per GB per codec and mirror]({DATA}/{CPU_PNG})",
            "",
        ]
    if _entries(results, "scaling"):
        lines += ["## Task scaling", "", *_scaling_section(results)]
    lines += ["## Latency", "", *_latency_section(results)]
    measured = _latency_order(e for e in lat_entries if _measured(e))
    if measured:
        lines += [f"![p50 and p99 latency per mirror]({DATA}/{LATENCY_PNG})", ""]
        if len({_num(e, "rate_per_s") for e in measured}) > 1:
            lines += [f"![p50 and p99 latency against the achieved rate]({DATA}/{LATENCY_RATE_PNG})", ""]
    lines += _markers_section(results, measured)
    return "\n".join(lines)


# --- plots ---------------------------------------------------------------------------------------


def _no_data(ax: Axes, title: str) -> None:
    # Still write the PNG, so a stale plot from an earlier run never sits beside the new page.
    ax.set_title(title)
    ax.text(0.5, 0.5, "no data in this run", ha="center", va="center", transform=ax.transAxes, fontsize=14)
    ax.set_axis_off()


def _save(fig: Figure, path: Path) -> Path:
    try:
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        # pyplot keeps every figure alive until closed; a long-lived caller would leak them.
        plt.close(fig)
    return path


def _label_bars(ax: Axes, xs: Sequence[float], values: Sequence[float], decimals: int) -> None:
    for x, v in zip(xs, values, strict=True):
        ax.annotate(
            fmt(v, decimals), (x, v), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=7
        )


def _mirror_handles(mirrors: Iterable[str]) -> list[Artist]:
    # Legend entries built by hand: a mirror with no bar in this plot still gets its colour, not the default.
    return [Patch(facecolor=_colour(m), edgecolor="black", linewidth=0.4, label=m) for m in mirrors]


def _grouped_bars(results: Mapping[str, Any], key: str, ax: Axes, decimals: int) -> tuple[list[str], list[str]]:
    """Bars of ``key`` per codec group, one slot per mirror; returns the codecs and the mirrors drawn."""
    tp = _throughput_index(results)
    codecs = [c for c in _codecs(results) if any(k[0] == c for k in tp)]
    mirrors = _mirrors(_entries(results, "throughput"))
    # Slots per mirror stay fixed across groups so a mirror sits at the same place in every codec.
    width = 0.8 / max(len(mirrors), 1)
    for i, mirror in enumerate(mirrors):
        xs: list[float] = []
        ys: list[float] = []
        for g, codec in enumerate(codecs):
            v = _num(tp.get((codec, mirror)), key)
            if v is not None and v > 0:
                xs.append(g - 0.4 + width * (i + 0.5))
                ys.append(v)
        ax.bar(xs, ys, width * 0.92, color=_colour(mirror), edgecolor="black", linewidth=0.4)
        _label_bars(ax, xs, ys, decimals)
    ax.set_xticks(range(len(codecs)), [f"codec: {c}" for c in codecs])
    ax.set_xlim(-0.5, len(codecs) - 0.5)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return codecs, mirrors


def plot_throughput(results: Mapping[str, Any], path: Path) -> Path:
    """Grouped bars of MB/s per codec and mirror, with the no-mirror ceiling as a dashed line over each group."""
    fig, ax = plt.subplots(figsize=(10, 5.2))
    title = "Mirror throughput (MB/s of uncompressed records, higher is better)"
    has_data = any(_num(e, "mb_per_s") for k in ("throughput", "ceiling") for e in _entries(results, k))
    if not _throughput_index(results) or not has_data:
        _no_data(ax, title)
        return _save(fig, path)
    codecs, mirrors = _grouped_bars(results, "mb_per_s", ax, 1)
    ceil = _ceiling_index(results)
    drawn = False
    for g, codec in enumerate(codecs):
        v = _num(ceil.get(codec), "mb_per_s")
        if v is None:
            continue
        ax.hlines(v, g - 0.45, g + 0.45, colors="black", linestyles="--", linewidth=1.6)
        ax.annotate(
            f"ceiling {fmt(v, 0)}", (g + 0.45, v), xytext=(0, 3), textcoords="offset points", ha="right", fontsize=8
        )
        drawn = True
    ax.set_ylim(0, ax.get_ylim()[1] * 1.08)  # room for the value labels above the tallest bar
    ax.set_ylabel("MB/s")
    ax.set_title(title)
    handles = _mirror_handles(mirrors)
    if drawn:
        ceiling = Line2D([], [], color="black", linestyle="--", linewidth=1.6, label="target broker ingest, no mirror")
        handles.append(ceiling)
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path)


def plot_cpu(results: Mapping[str, Any], path: Path) -> Path:
    """Grouped bars of CPU-seconds per GB per codec and mirror, on a log axis (MM2 and raw mode differ ~30x)."""
    fig, ax = plt.subplots(figsize=(10, 5.2))
    title = "CPU-seconds per GB of records (user + system, log scale, lower is better)"
    if not any(_num(e, "cpu_s_per_gb") for e in _entries(results, "throughput")):
        _no_data(ax, title)
        return _save(fig, path)
    ax.set_yscale("log")
    # Plain numbers (10, 100) rather than powers of ten: readers compare them with the table.
    ax.yaxis.set_major_formatter(ScalarFormatter())
    _, mirrors = _grouped_bars(results, "cpu_s_per_gb", ax, 1)
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * 1.6)  # headroom on a log axis for the value labels
    ax.set_ylabel("CPU-s / GB (log)")
    ax.set_title(title)
    ax.legend(handles=_mirror_handles(mirrors), fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path)


def plot_latency(results: Mapping[str, Any], path: Path) -> Path:
    """p50 (solid) and p99 (hatched) latency bars per mirror, in each mirror's colour."""
    entries = _latency_order(e for e in _entries(results, "latency") if _measured(e))
    fig, ax = plt.subplots(figsize=(max(9.0, 0.85 * len(entries) + 2), 4.8))
    title = "Source-to-target latency per mirror (ms, lower is better)"
    values = [v for e in entries for v in (_num(e, "p50_ms"), _num(e, "p99_ms")) if v is not None and v > 0]
    if not values:
        _no_data(ax, title)
        return _save(fig, path)
    # Several rates for one mirror need the rate in the tick label to tell the bars apart.
    several_rates = len({_num(e, "rate_per_s") for e in entries}) > 1
    # Exactly-once p99 can be 10-100 times raw's p50; a log axis keeps the small bars visible then.
    log = max(values) / min(values) > 30
    if log:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ScalarFormatter())
        title = title.replace("ms,", "ms, log scale,")
    labels: list[str] = []
    for x, e in enumerate(entries):
        mirror = str(e.get("mirror", "?"))
        rate = _num(e, "rate_per_s")
        labels.append(f"{mirror}\n{rate:,.0f}/s" if several_rates and rate is not None else mirror)
        for offset, key, hatch in ((-0.2, "p50_ms", ""), (0.2, "p99_ms", "///")):
            v = _num(e, key)
            if v is None or v <= 0:
                continue
            ax.bar(x + offset, v, 0.38, color=_colour(mirror), hatch=hatch, edgecolor="black", linewidth=0.5)
            _label_bars(ax, [x + offset], [v], 0)
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * (1.6 if log else 1.08))
    ax.set_xticks(range(len(entries)), labels)
    # Fixed limits: with one mirror, or a missing p50 or p99, autoscaling would centre on a lone bar.
    ax.set_xlim(-0.6, len(entries) - 0.4)
    ax.set_ylabel("ms (log)" if log else "ms")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(
        handles=[
            Patch(facecolor="white", edgecolor="black", label="p50"),
            Patch(facecolor="white", edgecolor="black", hatch="///", label="p99"),
        ],
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
    )
    return _save(fig, path)


def plot_latency_rate(results: Mapping[str, Any], path: Path) -> Path:
    """p99 (solid) and p50 (dashed) latency against the achieved produce rate, one line per mirror, log-log."""
    entries = _latency_order(e for e in _entries(results, "latency") if _measured(e))
    fig, ax = plt.subplots(figsize=(9, 5))
    title = "Latency against the produce rate achieved (log-log, lower is better)"
    points = [
        (e, rate)
        for e in entries
        if (rate := _num(e, "achieved_rate_per_s") or _num(e, "rate_per_s")) is not None and rate > 0
    ]
    if not any(_num(e, "p99_ms") for e, _ in points):
        _no_data(ax, title)
        return _save(fig, path)
    mirrors = _mirrors(e for e, _ in points)
    for mirror in mirrors:
        mine = sorted(((r, e) for e, r in points if e["mirror"] == mirror), key=lambda p: p[0])
        for key, style, marker in (("p99_ms", "-", "o"), ("p50_ms", "--", "s")):
            xy = [(r, v) for r, e in mine if (v := _num(e, key)) is not None and v > 0]
            if xy:
                xs, ys = zip(*xy, strict=True)
                ax.plot(xs, ys, style, marker=marker, color=_colour(mirror), linewidth=1.6, markersize=5)
        incomplete = [(r, _num(e, "p99_ms")) for r, e in mine if e.get("complete") is False]
        for r, v in incomplete:
            if v is not None and v > 0:
                ax.annotate("incomplete", (r, v), xytext=(4, 4), textcoords="offset points", fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    # Ticks at the rates asked for, in plain numbers; no minor labels (log axes mix in 3x10^3 otherwise).
    asked = {_num(e, "rate_per_s") for e in entries}
    ax.set_xticks(sorted(a for a in asked if a))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("records/s produced (1 KB each)")
    ax.set_ylabel("ms")
    ax.set_title(title)
    ax.grid(which="both", alpha=0.3)
    ax.set_axisbelow(True)
    handles = [Line2D([], [], color=_colour(m), linewidth=2, label=m) for m in mirrors]
    handles += [
        Line2D([], [], color="black", linestyle="-", marker="o", label="p99"),
        Line2D([], [], color="black", linestyle="--", marker="s", label="p50"),
    ]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path)


def plot(results: Mapping[str, Any], data_dir: Path) -> list[Path]:
    """The page's four plots, written into ``data_dir`` (a plot with no data says so rather than being skipped)."""
    return [
        plot_throughput(results, data_dir / THROUGHPUT_PNG),
        plot_cpu(results, data_dir / CPU_PNG),
        plot_latency(results, data_dir / LATENCY_PNG),
        plot_latency_rate(results, data_dir / LATENCY_RATE_PNG),
    ]
