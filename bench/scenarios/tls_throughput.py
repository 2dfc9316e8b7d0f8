"""What TLS costs a mirror: the same data mirrored exactly-once over PLAINTEXT, SASL_SSL and mTLS.

    .venv/bin/python -m bench.tls_throughput                 # about 10 minutes on 2 cores; updates the docs
    .venv/bin/python -m bench.tls_throughput --quick --out /tmp/tls   # smoke run: 5 MB, one repetition

Starts two local pairs of clusters side by side (``devkafka.pair.DevClusters``, throwaway homes under
the work directory, discarded at the end): a plaintext pair, and a secured pair (SASL_SSL with
SCRAM-SHA-512 on the main listener, an mTLS listener, the StandardAuthorizer). It writes ``--gb`` of
1 KB lz4 records to the plaintext source once (``bench.mirror_throughput.write_source``) and copies
those very batches, byte for byte, to the secured source (``bench.ceiling.target_ingest``), so every
configuration reads identical data. Then, in one run, it mirrors that topic exactly-once with mirror-sink
in each configuration of ``CONFIGS`` (raw and record mode, over PLAINTEXT, SASL_SSL and mTLS) via
``bench.mirror_throughput.mirror_once``, each run in a fresh connector with its own target topic, and
repeats the whole set ``--reps`` times, interleaved (odd repetitions forward, even ones backward, so a
drift of the machine over the run does not favour one configuration). The mirror runs as the super user
``admin`` (SCRAM user, or the client certificate with CN ``admin``), so no ACLs are involved.

Per run: MB/s (uncompressed record bytes per wall-clock second), CPU-seconds per GB and peak RSS of the
mirror's process tree (as ``bench.compare`` measures them), and CPU-seconds per GB of the source and the
target broker over the same window. Results: ``bench/results/tls-<timestamp>.json`` and
``<out>/data/benchmarks-tls.json``; ``bench.report.write_report`` renders the latter as the "TLS and SASL"
section of ``<out>/benchmarks.md`` (this command re-renders the page from ``<out>/data/benchmarks.json``).
Not a test: numbers vary with the machine.
"""

from __future__ import annotations

import argparse
import datetime
import math
import shlex
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import confluent_kafka

from bench.ceiling import target_ingest
from bench.common.console import Progress, log
from bench.common.cpu import ProcessCpu, busy_cpu_seconds
from bench.common.machine import machine
from bench.common.paths import DATA, ROOT
from bench.common.section import Section
from bench.mirror_throughput import PARTITIONS, RECORD_BYTES, mirror_once, write_source
from devkafka.cluster import LocalKafkaCluster
from devkafka.data import Address, end_offsets
from devkafka.pair import DevClusters
from devkafka.paths import kafka_version
from devkafka.security import SUPER_USER

#: This command's saved results, which ``bench.report`` renders as the "TLS and SASL" section.
TLS_RESULTS = "benchmarks-tls.json"
CODEC = "lz4"
COMMAND = ".venv/bin/python -m bench.tls_throughput"


@dataclass(frozen=True)
class Config:
    """One way of mirroring: a mirror-sink mode (a key of ``bench.mirror_throughput.MODES``) over a transport."""

    mode: str
    transport: str  # PLAINTEXT, SASL_SSL or mTLS
    description: str


#: Every configuration, in the order each repetition runs them (and the table lists them).
CONFIGS: dict[str, Config] = {
    "raw-plaintext": Config("raw-eos", "PLAINTEXT", "raw mode, exactly-once, PLAINTEXT"),
    "record-plaintext": Config("record-eos", "PLAINTEXT", "record mode, exactly-once, PLAINTEXT"),
    "raw-sasl-ssl": Config("raw-eos", "SASL_SSL", "raw mode, exactly-once, SASL_SSL (SCRAM-SHA-512)"),
    "record-sasl-ssl": Config("record-eos", "SASL_SSL", "record mode, exactly-once, SASL_SSL (SCRAM-SHA-512)"),
    "raw-mtls": Config("raw-eos", "mTLS", "raw mode, exactly-once, TLS with client certificates"),
    "record-mtls": Config("record-eos", "mTLS", "record mode, exactly-once, TLS with client certificates"),
}
DEFAULT_CONFIGS = tuple(CONFIGS)


def client_for(cluster: LocalKafkaCluster, transport: str) -> Address:
    """The super user's client settings for ``cluster`` over ``transport`` (plain address for PLAINTEXT)."""
    if transport == "PLAINTEXT":
        return cluster.bootstrap_servers
    if cluster.security is None:
        raise ValueError(f"cluster {cluster.name!r} is not secured; {transport} needs the secured pair")
    if transport == "SASL_SSL":
        return cluster.security.sasl_ssl(cluster.bootstrap_servers, SUPER_USER)
    if transport == "mTLS":
        return cluster.security.mtls(cluster.listener("MTLS"), SUPER_USER)
    raise ValueError(f"unknown transport {transport!r}")


def _git_state() -> str:
    """The commit measured, with ``+ uncommitted changes`` when the mirror's own code differs from it."""

    def git(*argv: str) -> str:
        done = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, check=False)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "?"
    dirty = git("status", "--porcelain", "--", "mirror_sink", "connectors")
    return f"{head} + uncommitted changes to mirror_sink/connectors" if dirty else head


def plan(configs: Sequence[str], reps: int) -> list[tuple[int, str]]:
    """``(repetition, config)`` in run order: every configuration once per repetition, odd repetitions
    forward and even ones backward, so a configuration is not always first or always last."""
    order: list[tuple[int, str]] = []
    for rep in range(1, reps + 1):
        order += [(rep, c) for c in (configs if rep % 2 else list(reversed(configs)))]
    return order


def measure(
    name: str, config: Config, pair: DevClusters, topic: str, *, records: int, rep: int, workdir: Path
) -> dict[str, Any]:
    """Mirror ``topic`` of ``pair`` once in ``config``; the mirror's figures and both brokers' CPU per GB."""
    src, tgt = client_for(pair.source, config.transport), client_for(pair.target, config.transport)
    brokers = {"source": ProcessCpu(pair.source.state.pid), "target": ProcessCpu(pair.target.state.pid)}
    busy_before = busy_cpu_seconds()
    result = mirror_once(
        config.mode, CODEC, src, tgt, topic, records=records, workdir=workdir,
        on_progress=Progress(f"{name} #{rep}"), extra={"target.cluster.producer.compression.type": CODEC},
    )  # fmt: skip
    busy = busy_cpu_seconds() - busy_before
    gb = result.megabytes / 1000
    # A broker not known or gone counts 0, as no CPU measured.
    broker_seconds = {side: cpu.seconds() or 0.0 for side, cpu in brokers.items()}
    broker_cpu = {side: seconds / gb for side, seconds in broker_seconds.items()}
    return {
        "config": name,
        "mode": config.mode,
        "transport": config.transport,
        "rep": rep,
        "seconds": result.seconds,
        "mb_per_s": result.mb_per_s,
        "cpu_seconds": result.cpu_seconds,
        "cpu_s_per_gb": result.cpu_s_per_gb,
        "peak_rss_mb": result.peak_rss_mb,
        "source_broker_cpu_s_per_gb": broker_cpu["source"],
        "target_broker_cpu_s_per_gb": broker_cpu["target"],
        # Whatever else ran on the machine meanwhile (other brokers, other people's tests): a busy run
        # is slower for reasons that are not the transport's.
        "other_cpu_seconds": max(0.0, busy - result.cpu_seconds - sum(broker_seconds.values())),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both pairs up, the data written once and copied, every configuration measured; the results dict."""
    configs: list[str] = args.configs.split(",")
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configurations {unknown}; known: {', '.join(CONFIGS)}")
    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    records = int(args.gb * 1e9 / RECORD_BYTES)
    home = Path(tempfile.mkdtemp(prefix="tls-clusters-", dir=workdir))
    pairs = {"plain": DevClusters(home / "plain"), "secured": DevClusters(home / "secured", secured=True)}
    topic = f"bench-tls-{time.time_ns() // 1_000_000}"
    runs: list[dict[str, Any]] = []
    warmups: list[dict[str, Any]] = []
    try:
        log("starting a plaintext and a secured pair of local clusters...")
        for pair in pairs.values():
            pair.up()
        plain_src = pairs["plain"].source.bootstrap_servers
        secured_src = pairs["secured"].source.client_config
        log(f"writing {records * RECORD_BYTES / 1e9:.2f} GB of {CODEC} records to {topic} on the plaintext source")
        write_source(plain_src, topic, records, CODEC)
        log("copying those batches byte for byte to the secured source (over SASL_SSL)")
        copied = target_ingest(
            plain_src, secured_src, topic, partitions=PARTITIONS, target_topic=topic, on_progress=Progress("copy")
        )
        if end_offsets(secured_src, topic) != end_offsets(plain_src, topic):
            raise RuntimeError(f"the secured source's copy of {topic} does not end where the plaintext one does")
        log(f"    copied {copied.batches:,} batches in {copied.seconds:.1f} s")
        # A fresh broker's JVM has not compiled its produce, fetch and TLS paths yet: the first run on
        # each pair would pay for that. One unrecorded raw run per pair warms them up.
        for which, name in (("plain", "raw-plaintext"), ("secured", "raw-sasl-ssl")):
            log(f"warming up the {which} pair with {name} (not recorded)")
            pair = pairs[which]
            warmups.append(measure(name, CONFIGS[name], pair, topic, records=records, rep=0, workdir=workdir))
            log(f"    {warmups[-1]['seconds']:.1f} s, {warmups[-1]['mb_per_s']:.1f} MB/s")
        order = plan(configs, args.reps)
        for step, (rep, name) in enumerate(order, 1):
            config = CONFIGS[name]
            log(f"[{step}/{len(order)}] {name}, run {rep}: {config.description}")
            pair = pairs["plain" if config.transport == "PLAINTEXT" else "secured"]
            runs.append(measure(name, config, pair, topic, records=records, rep=rep, workdir=workdir))
            r = runs[-1]
            log(
                f"    {r['seconds']:.1f} s, {r['mb_per_s']:.1f} MB/s, {r['cpu_s_per_gb']:.1f} CPU-s/GB, "
                f"peak RSS {r['peak_rss_mb']:.0f} MB; brokers {r['source_broker_cpu_s_per_gb']:.1f} + "
                f"{r['target_broker_cpu_s_per_gb']:.1f} CPU-s/GB (source + target)"
            )
    finally:
        for pair in pairs.values():
            pair.discard()
        shutil.rmtree(home, ignore_errors=True)
    return {
        "command": " ".join([COMMAND, *map(shlex.quote, sys.argv[1:])]),
        "machine": machine(),
        "kafka_version": kafka_version(),
        "git": _git_state(),
        "python_openssl": ssl.OPENSSL_VERSION,
        "librdkafka": confluent_kafka.libversion()[0],
        "date": datetime.date.today().isoformat(),
        "gb": args.gb,
        "record_bytes": RECORD_BYTES,
        "partitions": PARTITIONS,
        "codec": CODEC,
        "reps": args.reps,
        "quick": args.quick,
        "configs": {name: CONFIGS[name].description for name in configs},
        "runs": runs,
        "warmups": warmups,
    }


# --- the docs section ----------------------------------------------------------------------------


def _num(entry: Mapping[str, Any], key: str) -> float | None:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _f(value: float | None, decimals: int = 1) -> str:
    return "-" if value is None else f"{value:,.{decimals}f}"


def _mean(runs: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [v for r in runs if (v := _num(r, key)) is not None]
    return statistics.fmean(values) if values else None


def _runs(results: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    value = results.get("runs")
    if not isinstance(value, list):
        return []
    return [r for r in value if isinstance(r, Mapping) and isinstance(r.get("config"), str)]


def _by_config(results: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Runs per configuration, configurations in ``CONFIGS`` order, runs in repetition order."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for r in sorted(_runs(results), key=lambda r: _num(r, "rep") or 0):
        grouped.setdefault(str(r["config"]), []).append(r)
    order = [c for c in CONFIGS if c in grouped] + [c for c in grouped if c not in CONFIGS]
    return {c: grouped[c] for c in order}


def _plaintext_of(name: str, runs: Sequence[Mapping[str, Any]]) -> str:
    mode = str(runs[0].get("mode", "")) if runs else ""
    return "raw-plaintext" if mode.startswith("raw") or name.startswith("raw") else "record-plaintext"


def _cost_sentence(grouped: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """Mean MB/s and mirror CPU per GB of each secured configuration against its mode over PLAINTEXT."""
    parts: list[str] = []
    for name, runs in grouped.items():
        base = grouped.get(_plaintext_of(name, runs))
        if not runs or base is None or runs is base:
            continue
        mbps, base_mbps = _mean(runs, "mb_per_s"), _mean(base, "mb_per_s")
        cpu, base_cpu = _mean(runs, "cpu_s_per_gb"), _mean(base, "cpu_s_per_gb")
        if None in (mbps, base_mbps, cpu, base_cpu) or not base_mbps or not base_cpu:
            continue
        assert mbps is not None and cpu is not None
        parts.append(
            f"`{name}` runs at {mbps / base_mbps:.0%} of `{_plaintext_of(name, runs)}`'s MB/s "
            f"with {cpu / base_cpu:.1f}{chr(0xD7)} its mirror CPU per GB ({cpu - base_cpu:+.1f} CPU-s/GB)"
        )
    if not parts:
        return ""
    return "On the means of the runs: " + "; ".join(parts) + "."


#: What the figures do not show by themselves: where the mirror's extra CPU goes. From one ``perf record``
#: of the mirror process (499 Hz, about 300 samples a mode) during raw and record runs over SASL_SSL on the
#: machine the saved figures come from; rerun that by hand when the network layers change.
WHERE_THE_CPU_GOES = (
    "Where the mirror's CPU goes over SASL_SSL (one `perf record` of the mirror process per mode): in raw "
    "mode, Python's `ssl` module (kafka-python's network layer) spent about 12% of the mirror's CPU in "
    "OpenSSL, more of it in the per-call overhead of many small reads and writes than in AES-GCM itself, "
    "plus about 5% copying buffers; the Python interpreter running the pipeline is still most of the rest. "
    "Raw mode only ever encrypts and decrypts the compressed batches, about a quarter of the record bytes "
    "with lz4, which keeps what TLS adds to it near a CPU-second per GB. In record mode librdkafka's own, "
    "statically linked OpenSSL (AES-GCM with AVX-512) showed up in about 1% of the samples, in librdkafka's "
    "broker threads outside the GIL, against 11% for LZ4 re-compression and the per-record Python work: "
    "TLS disappears in record mode's cost. On the brokers, TLS means Java's SSLEngine and no zero-copy "
    "`sendfile` for fetches, which shows as the source broker's somewhat higher CPU per GB."
)


def _reps_sentence(reps: float | None) -> str:
    if reps is None or reps <= 1:
        return "Each configuration ran once."
    return (
        f"Each configuration ran {reps:.0f} times, interleaved, and every run is shown: runs on this machine "
        "vary by up to a third."
    )


def tls_section(results: Mapping[str, Any], heading: str = "## TLS and SASL") -> list[str]:
    """The "TLS and SASL" section of docs/benchmarks.md for saved ``bench.tls_throughput`` results."""
    grouped = _by_config(results)
    lines = [heading, ""]
    if not grouped:
        return [*lines, "No TLS figures saved.", ""]
    gb, reps = _num(results, "gb"), _num(results, "reps")
    lines += [
        f"The same {_f(gb, 2) if gb is not None else '?'} GB of 1 KB `{results.get('codec', '?')}` records "
        f"({_f(_num(results, 'partitions'), 0)} partitions) mirrored exactly-once by mirror-sink over each "
        "transport, the mirror connecting as the super user (so no ACL checks beyond the authorizer's "
        "super-user test); plaintext runs use a plaintext pair of clusters, the others a secured pair "
        "(SASL_SSL with SCRAM-SHA-512, mTLS on a second listener), both up for the whole run, the secured "
        f"source holding a byte-for-byte copy of the plaintext source's batches. {_reps_sentence(reps)} "
        "Mirror CPU and peak RSS are of the mirror's process tree, as above; broker CPU is the source "
        "and the target broker's CPU-seconds per GB over the same run; other CPU-s is the CPU time everything "
        "else on the machine took meanwhile (the idle pair of brokers, any other work): a run with much of "
        "it was slowed by something other than its transport.",
        "",
        f"- Machine: {results.get('machine', '-')}; Kafka {results.get('kafka_version', '-')}; "
        f"Python's ssl: {results.get('python_openssl', '-')}; librdkafka {results.get('librdkafka', '-')}; "
        f"date {results.get('date', '-')}",
        f"- Regenerate: `{results.get('command') or COMMAND}` (writes `docs/{DATA}/{TLS_RESULTS}` and re-renders "
        f"this page from it and `docs/{DATA}/benchmarks.json`)",
        "",
    ]
    header = [
        "configuration", "run", "seconds", "MB/s", "mirror CPU-s/GB", "peak RSS MB",
        "source broker CPU-s/GB", "target broker CPU-s/GB", "other CPU-s",
    ]  # fmt: skip
    lines += ["| " + " | ".join(header) + " |", "| --- | " + " | ".join(["---:"] * (len(header) - 1)) + " |"]
    for name, runs in grouped.items():
        for r in runs:
            cells = [
                f"`{name}`",
                _f(_num(r, "rep"), 0),
                _f(_num(r, "seconds")),
                _f(_num(r, "mb_per_s")),
                _f(_num(r, "cpu_s_per_gb")),
                _f(_num(r, "peak_rss_mb"), 0),
                _f(_num(r, "source_broker_cpu_s_per_gb")),
                _f(_num(r, "target_broker_cpu_s_per_gb")),
                _f(_num(r, "other_cpu_seconds")),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    cost = _cost_sentence(grouped)
    if cost:
        lines += [cost, ""]
    lines += [WHERE_THE_CPU_GOES, ""]
    if results.get("quick") is True:
        lines += ["This was a quick run: treat its figures as a smoke test, not a measurement.", ""]
    return lines


def render(results: Mapping[str, Any]) -> str:
    """The "TLS and SASL" section of docs/benchmarks.md (``tls_section`` with its heading)."""
    return "\n".join(tls_section(results))


SECTION = Section(TLS_RESULTS, render)
