"""Workload shapes where raw mode may lose to record mode: MB/s and CPU per GB of each, side by side.

    .venv/bin/python -m bench.shapes                           # local clusters, every shape, scale 1
    .venv/bin/python -m bench.shapes --quick --out /tmp/shapes # a smoke run: scale 0.05
    .venv/bin/python -m bench.shapes --source HOST:9092 --target HOST:9092 --shapes compacted,mixed

Each shape writes its own source topic(s), then every mirror copies them in turn, each into its own
target topics (a distinct ``source.cluster.alias`` per run), exactly once, with ``tasks.max=2``:

- ``many-partitions``: 200 partitions, 1 KB records in producer batches of a few KB (linger.ms=0,
  batch.size 8 KB), about 40 MB;
- ``large-records``: records of 900 KB (source topic and producer allow 2 MiB), 6 partitions, about 100 MB;
- ``compacted``: a ``cleanup.policy=compact`` topic with every key written about 4 times, compacted by
  the log cleaner before mirroring (short segments, ``min.cleanable.dirty.ratio=0.01``; the run waits
  until the cleaner has removed the duplicates); 60 MB written, the survivors (about a quarter) mirrored;
- ``small-transactions``: a transactional producer committing every 10 records over 6 partitions
  (one or two records per batch, a commit marker per partition and transaction), about 25 MB;
- ``mixed``: all four kinds at once in one mirror run (four topics, about 115 MB written).

``--scale`` multiplies every amount of data (not the partition counts or record sizes). MB/s counts the
uncompressed record bytes (key + value) present in the source when mirroring starts, per second of
wall-clock time from the mirror's start until its shadow group's committed offsets reach the source's
end offsets; CPU is user + system time of the mirror's process tree, peak RSS its largest sum. Raw
mode's own count of batches forwarded and re-encoded (by reason) is read from its last progress line.
Results go to ``<out>/data/benchmarks-shapes.json`` and ``<out>/benchmarks-shapes.md``; with ``--out docs``,
``bench.compare`` and ``bench.report`` then end docs/benchmarks.md with this section. Not a test:
figures vary with the machine.
"""

from __future__ import annotations

import datetime
import json
import random
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from bench.common.console import Progress, tail
from bench.common.cpu import ProcessTree, thread_cpu_delta, thread_cpu_seconds
from bench.common.machine import machine
from bench.common.section import Section
from bench.common.stacks import stacks_sampler
from bench.mirror_throughput import MODES, json_like_values
from bench.mm2 import IDLE_SETTLE_S, run_mm2, stop_process
from devkafka.data import (
    Address,
    ProduceSpec,
    Rec,
    client_settings,
    committed_offsets,
    create_topic,
    end_offsets,
    produce,
    produce_transactions,
    reader,
)
from devkafka.paths import kafka_version
from devkafka.processes import reap_with_this_process

#: The results file ``bench.report`` looks for in the page's data directory.
SHAPES_RESULTS = "benchmarks-shapes.json"
SHAPES = ("many-partitions", "large-records", "compacted", "small-transactions", "mixed")
MIRRORS = ("record-eos", "raw-eos", "auto-eos", "mm2-eos")
DEFAULT_MIRRORS = ("record-eos", "raw-eos", "auto-eos")
TASKS = 2
QUICK_SCALE = 0.05
SAMPLE_S = 0.5

RECORD_BYTES = 1024
MANY_PARTITIONS = 200
MANY_PARTITIONS_MB = 40.0
MANY_PARTITIONS_BATCH_BYTES = 8 * 1024
LARGE_RECORD_BYTES = 900 * 1024
LARGE_PARTITIONS = 6
LARGE_MB = 100.0
LARGE_MAX_MESSAGE_BYTES = 2 * 1024 * 1024
COMPACTED_PARTITIONS = 6
COMPACTED_MB = 60.0
COMPACTED_WRITES_PER_KEY = 4
COMPACTION_TIMEOUT_S = 300.0
TXN_PARTITIONS = 6
TXN_MB = 25.0
TXN_RECORDS = 10
#: The share of each kind in ``mixed`` (of its own scale-1 amount): about 32 + 50 + 36 (about 9 left
#: after compaction) + 20 = 138 MB written, about 111 MB mirrored.
MIXED_PARTS = {"many-partitions": 0.8, "large-records": 0.5, "compacted": 0.6, "small-transactions": 0.8}


@dataclass
class Source:
    """What a shape wrote: the topics to mirror and the records in them when mirroring starts."""

    shape: str
    topics: list[str]
    partitions: int
    records: int  # records readable (read_committed) when mirroring starts
    record_bytes: int  # their uncompressed key + value bytes
    written_records: int
    written_bytes: int
    notes: list[str] = field(default_factory=list)

    @property
    def megabytes(self) -> float:
        """Record bytes to mirror, in MB (10^6 bytes)."""
        return self.record_bytes / 1e6


@dataclass
class LogSummary:
    """What the mirror's log says: raw mode's batch counts (summed over tasks) and any trouble."""

    tasks_reporting: int = 0
    records: int = 0  # records copied, counting those of aborted cycles again
    records_by_task: dict[str, int] = field(default_factory=dict)
    commits: int = 0
    aborts: int = 0
    forwarded: int | None = None  # None: no raw-mode progress line (record mode)
    reencoded: dict[str, int] = field(default_factory=dict)
    memory_peak_mb: float | None = None
    problems: list[str] = field(default_factory=list)


# -- the shapes ---------------------------------------------------------------------------------


def _count(scale: float, megabytes: float, record_bytes: int, minimum: int) -> int:
    return max(minimum, int(scale * megabytes * 1e6 / record_bytes))


def _values() -> list[bytes]:
    return json_like_values(4096)


def _key(i: int) -> bytes:
    return b"k%08d" % i


def _size(r: Rec) -> int:
    return len(r.key or b"") + len(r.value or b"")


def _produce_counted(src: Address, topic: str, records: Iterator[Rec], spec: ProduceSpec) -> tuple[int, int]:
    sizes = [0, 0]

    def counted() -> Iterator[Rec]:
        for r in records:
            sizes[0] += 1
            sizes[1] += _size(r)
            yield r

    produce(src, topic, counted(), spec)
    return sizes[0], sizes[1]


def write_many_partitions(src: Address, topic: str, *, scale: float, codec: str) -> Source:
    """200 partitions, 1 KB records, producer batches of a few KB (linger.ms=0, batch.size 8 KB)."""
    n = _count(scale, MANY_PARTITIONS_MB, RECORD_BYTES, 2 * MANY_PARTITIONS)
    create_topic(src, topic, MANY_PARTITIONS)
    values = _values()
    spec = ProduceSpec(compression=codec, linger_ms=0, batch_bytes=MANY_PARTITIONS_BATCH_BYTES)
    records = (Rec(_key(i), values[i % len(values)], partition=i % MANY_PARTITIONS) for i in range(n))
    count, size = _produce_counted(src, topic, records, spec)
    return Source("many-partitions", [topic], MANY_PARTITIONS, count, size, count, size)


def _large_values(n: int) -> Iterator[bytes]:
    """``n`` distinct 900 KB JSON-like values (windows into one 4 MB text)."""
    base = b"".join(_values())
    room = len(base) - LARGE_RECORD_BYTES
    for i in range(n):
        start = (i * 7919 * 8) % room
        yield base[start : start + LARGE_RECORD_BYTES]


def write_large_records(src: Address, topic: str, *, scale: float, codec: str) -> Source:
    """Records of 900 KB, one per producer batch, 6 partitions; topic and producer allow 2 MiB."""
    n = _count(scale, LARGE_MB, LARGE_RECORD_BYTES, 2 * LARGE_PARTITIONS)
    create_topic(src, topic, LARGE_PARTITIONS, {"max.message.bytes": str(LARGE_MAX_MESSAGE_BYTES)})
    spec = ProduceSpec(compression=codec, linger_ms=5, extra={"message.max.bytes": LARGE_MAX_MESSAGE_BYTES})
    records = (Rec(_key(i), v, partition=i % LARGE_PARTITIONS) for i, v in enumerate(_large_values(n)))
    count, size = _produce_counted(src, topic, records, spec)
    return Source("large-records", [topic], LARGE_PARTITIONS, count, size, count, size)


def scan(src: Address, topic: str, timeout_s: float = 300.0) -> dict[int, tuple[int, int]]:
    """Per partition: the records readable now (read_committed) and their key + value bytes."""
    ends = end_offsets(src, topic)
    consumer = reader(src, "mirror-sink-bench-shapes-scan")
    out = {p: (0, 0) for p in ends}
    pending = {p for p, end in ends.items() if end > 0}
    consumer.assign([TopicPartition(topic, p, 0) for p in pending])
    deadline = time.monotonic() + timeout_s
    try:
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"scanning {topic!r}: partitions {sorted(pending)} not at their end")
            for msg in consumer.consume(10_000, 0.5):
                err, p = msg.error(), msg.partition() or 0
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(err)
                    pending.discard(p)
                    continue
                n, size = out[p]
                out[p] = (n + 1, size + len(msg.key() or b"") + len(msg.value() or b""))
                if (msg.offset() or 0) + 1 >= ends[p]:
                    pending.discard(p)
    finally:
        consumer.close()
    return out


def write_compacted(src: Address, topic: str, *, scale: float, codec: str) -> Source:
    """A compacted topic, each key written about 4 times, then compacted by the log cleaner.

    Segments roll every 2 s (or 1 MiB); after the data, one more record per partition (once the
    segment time has passed) rolls the last data segment, so the cleaner may clean all the data.
    Returns once every partition holds no more than its distinct keys (plus that last record), or,
    after ``COMPACTION_TIMEOUT_S``, with whatever the cleaner has left by then (noted).
    """
    n = _count(scale, COMPACTED_MB, RECORD_BYTES, 8 * COMPACTED_PARTITIONS)
    keys = max(COMPACTED_PARTITIONS, n // COMPACTED_WRITES_PER_KEY)
    config = {
        "cleanup.policy": "compact",
        "segment.ms": "2000",
        "segment.bytes": str(1024 * 1024),
        "min.cleanable.dirty.ratio": "0.01",
        "min.compaction.lag.ms": "0",
    }
    create_topic(src, topic, COMPACTED_PARTITIONS, config)
    values = _values()
    rng = random.Random(7)
    drawn = [rng.randrange(keys) for _ in range(n)]
    distinct: dict[int, set[int]] = {p: set() for p in range(COMPACTED_PARTITIONS)}
    for k in drawn:
        distinct[k % COMPACTED_PARTITIONS].add(k)
    spec = ProduceSpec(compression=codec, linger_ms=5, batch_bytes=256 * 1024)
    records = (Rec(_key(k), values[i % len(values)], partition=k % COMPACTED_PARTITIONS) for i, k in enumerate(drawn))
    count, size = _produce_counted(src, topic, records, spec)
    time.sleep(2.5)  # past segment.ms: the next append rolls each partition's last data segment
    rollers = (Rec(b"roll-%d" % p, values[p], partition=p) for p in range(COMPACTED_PARTITIONS))
    more, more_size = _produce_counted(src, topic, rollers, spec)
    written, written_size = count + more, size + more_size
    wanted = {p: len(ks) + 1 for p, ks in distinct.items()}
    print(
        f"    waiting for the log cleaner: {written:,} records written, {sum(wanted.values()):,} distinct keys",
        flush=True,
    )
    started = time.monotonic()
    while True:
        now = scan(src, topic)
        present = sum(c for c, _ in now.values())
        if all(now[p][0] <= wanted[p] for p in wanted):
            break
        waited = time.monotonic() - started
        if waited > COMPACTION_TIMEOUT_S:
            print(f"    the cleaner left {present:,} records after {waited:.0f} s; mirroring those", flush=True)
            break
        print(f"    {present:,} of {written:,} records still readable after {waited:.0f} s", flush=True)
        time.sleep(5.0)
    present_bytes = sum(b for _, b in now.values())
    note = (
        f"{present:,} of {written:,} records ({present_bytes / 1e6:.1f} of {written_size / 1e6:.1f} MB) "
        "left by the log cleaner"
    )
    print(f"    compacted: {note}", flush=True)
    if present >= written:
        raise RuntimeError(f"the log cleaner removed nothing from {topic} in {COMPACTION_TIMEOUT_S:.0f} s")
    return Source("compacted", [topic], COMPACTED_PARTITIONS, present, present_bytes, written, written_size, [note])


def write_small_transactions(src: Address, topic: str, *, scale: float, codec: str) -> Source:
    """A transactional producer committing every 10 records, spread over 6 partitions."""
    n = _count(scale, TXN_MB, RECORD_BYTES, 2 * TXN_RECORDS)
    create_topic(src, topic, TXN_PARTITIONS)
    values = _values()
    spec = ProduceSpec(compression=codec, linger_ms=5, transactional_id=f"bench-shapes-{topic}")
    size = 0

    def transactions() -> Iterator[tuple[list[Rec], bool]]:
        nonlocal size
        for first in range(0, n, TXN_RECORDS):
            chunk = [
                Rec(_key(i), values[i % len(values)], partition=i % TXN_PARTITIONS)
                for i in range(first, min(first + TXN_RECORDS, n))
            ]
            size += sum(map(_size, chunk))
            yield chunk, True

    produce_transactions(src, topic, transactions(), spec)
    note = f"{(n + TXN_RECORDS - 1) // TXN_RECORDS:,} transactions of {TXN_RECORDS} records"
    return Source("small-transactions", [topic], TXN_PARTITIONS, n, size, n, size, [note])


Writer = Callable[..., Source]
WRITERS: dict[str, Writer] = {
    "many-partitions": write_many_partitions,
    "large-records": write_large_records,
    "compacted": write_compacted,
    "small-transactions": write_small_transactions,
}


def write_mixed(src: Address, topic: str, *, scale: float, codec: str) -> Source:
    """The four other shapes at once, as four topics ``{topic}-{kind}`` (shares in ``MIXED_PARTS``)."""
    parts = []
    for kind, share in MIXED_PARTS.items():
        print(f"    mixed: writing {kind}", flush=True)
        parts.append(WRITERS[kind](src, f"{topic}-{kind}", scale=scale * share, codec=codec))
    return Source(
        "mixed",
        [t for s in parts for t in s.topics],
        sum(s.partitions for s in parts),
        sum(s.records for s in parts),
        sum(s.record_bytes for s in parts),
        sum(s.written_records for s in parts),
        sum(s.written_bytes for s in parts),
        [f"{s.shape}: {s.records:,} records, {s.megabytes:.1f} MB" for s in parts]
        + [f"{s.shape}: {n}" for s in parts for n in s.notes],
    )


WRITERS["mixed"] = write_mixed


# -- the mirror's log ---------------------------------------------------------------------------

_PROGRESS_LINE = re.compile(
    r"\[(?P<name>\S+) task (?P<task>\d+)\] mirrored (?P<records>\d+) records \([\d.]+ MB\) in (?P<commits>\d+) "
    r"commits, (?P<aborts>\d+) aborted; reading \d+ partitions; (?P<path>.*)$"
)
_RAW_PATH = re.compile(
    r"raw mode: (?P<forwarded>\d+) batches forwarded as they are, re-encoded: (?P<reencoded>.*?); "
    r"memory peak (?P<peak>[\d.]+) MB"
)
_REENCODED = re.compile(r"(\d+) ([a-z][a-z -]*)")
_PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL|Traceback)\b")


def parse_mirror_log(text: str, max_problems: int = 8) -> LogSummary:
    """The last progress line of each task, summed, and the first distinct warnings and errors."""
    last: dict[str, re.Match[str]] = {}
    problems: list[str] = []
    for line in text.splitlines():
        m = _PROGRESS_LINE.search(line)
        if m is not None:
            last[m["task"]] = m
        elif _PROBLEM.search(line) and len(problems) < max_problems:
            short = line.strip()[:300]
            if short not in problems:
                problems.append(short)
    summary = LogSummary(tasks_reporting=len(last), problems=problems)
    for m in last.values():
        summary.records += int(m["records"])
        summary.records_by_task[m["task"]] = int(m["records"])
        summary.commits += int(m["commits"])
        summary.aborts += int(m["aborts"])
        raw = _RAW_PATH.search(m["path"])
        if raw is None:
            continue
        summary.forwarded = (summary.forwarded or 0) + int(raw["forwarded"])
        for count, why in _REENCODED.findall(raw["reencoded"]):
            summary.reencoded[why.strip()] = summary.reencoded.get(why.strip(), 0) + int(count)
        peak = float(raw["peak"])
        summary.memory_peak_mb = peak if summary.memory_peak_mb is None else summary.memory_peak_mb + peak
    return summary


# -- the runners --------------------------------------------------------------------------------


def _target_configs(tgt: Address, topics: Sequence[str]) -> dict[str, dict[str, str]]:
    """``max.message.bytes`` and ``cleanup.policy`` of each target topic (what config sync gave it)."""
    admin = AdminClient(client_settings(tgt))
    out: dict[str, dict[str, str]] = {}
    futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics])
    for resource, future in futures.items():
        try:
            entries = future.result(30)
        except KafkaException as exc:
            out[resource.name] = {"error": str(exc)}
            continue
        out[resource.name] = {k: str(entries[k].value) for k in ("max.message.bytes", "cleanup.policy") if k in entries}
    return out


def figures(mirror: str, source: Source, seconds: float, cpu: float, peak_rss: int) -> dict[str, Any]:
    """A run's entry: MB/s of ``source``'s record bytes, CPU-seconds and CPU-s/GB, peak RSS in MB."""
    gb = source.record_bytes / 1e9
    return {
        "mirror": mirror,
        "seconds": seconds,
        "mb_per_s": source.megabytes / seconds,
        "cpu_seconds": cpu,
        "cpu_s_per_gb": cpu / gb if gb else None,
        "peak_rss_mb": peak_rss / 1e6,
    }


def connector_config(
    name: str, mirror: str, src: Address, tgt: Address, *, topics: Sequence[str], codec: str, tasks: int = TASKS
) -> dict[str, str]:
    """The connector config of one run: ``topics`` into ``{name}.{topic}``, ``tasks.max``, ``MODES[mirror]``."""
    return {
        "name": name,
        "connector.class": "MirrorSinkConnector",
        **{f"source.cluster.{k}": str(v) for k, v in client_settings(src).items()},
        **{f"target.cluster.{k}": str(v) for k, v in client_settings(tgt).items()},
        "topics": ",".join(topics),
        "replication.policy.class": "DefaultReplicationPolicy",
        "source.cluster.alias": name,  # target topics of their own
        "tasks.max": str(tasks),
        # Record mode writes the source's codec, as compare.py does; raw mode keeps the batches' own.
        "target.cluster.producer.compression.type": codec,
        **MODES[mirror],
    }


def run_mirror_sink(
    mirror: str,
    src: Address,
    tgt: Address,
    source: Source,
    *,
    workdir: Path,
    codec: str,
    timeout_s: float | None = None,
    tasks: int = TASKS,
    idle_s: float = 0.0,
    idle_profile: bool = False,
) -> dict[str, Any]:
    """Mirror every topic of ``source`` with a fresh ``mirror-sink run`` (``tasks.max=2``) and measure it.

    Done when the shadow group ``connect-{name}`` has committed, under every target partition
    ``{name}.{topic}``, the source partition's end offset. CPU (user + system) and RSS are those of the
    process tree, sampled every half second; the clock runs from just before the process is spawned.
    ``first_commit_s`` is when the shadow group first holds an offset. With ``idle_s``, the mirror keeps
    running that long once caught up, and its CPU then is ``idle_cpu_seconds`` (not in CPU-s/GB);
    ``idle_profile``: py-spy samples its stacks meanwhile, into ``idle_profile`` beside the log.
    """
    name = f"shapes-{source.shape}-{mirror}-{time.time_ns() // 1_000_000}"
    path, log_path = workdir / f"{name}.json", workdir / f"{name}.log"
    config = connector_config(name, mirror, src, tgt, topics=source.topics, codec=codec, tasks=tasks)
    path.write_text(json.dumps({"name": name, "config": config}, indent=2))
    ends = {(f"{name}.{t}", p): end for t in source.topics for p, end in end_offsets(src, t).items()}
    total = sum(ends.values())
    progress = Progress(f"{source.shape} {mirror}", source.record_bytes / max(total, 1))
    limit = timeout_s if timeout_s is not None else 600 + 20 * source.megabytes
    started = time.monotonic()
    with open(log_path, "wb") as log:
        argv = [sys.executable, "-m", "api.cli", "run", str(path), "--worker-id", "bench"]
        proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    reap_with_this_process(pid=proc.pid)
    sampler = ProcessTree(proc.pid)
    first_commit_s = idle_cpu = stacks = None
    idle_threads: dict[str, float] = {}
    try:
        while True:
            time.sleep(SAMPLE_S)
            sampler.sample()
            try:
                stored = committed_offsets(tgt, f"connect-{name}", list(ends), timeout=5)
            except KafkaException:
                stored = {}
            done = sum(min(end, max(0, stored.get(tp, 0))) for tp, end in ends.items())
            if done and first_commit_s is None:
                first_commit_s = time.monotonic() - started
            progress(done, total)
            if done >= total:
                seconds = time.monotonic() - started
                sampler.sample()
                idle_cpu, idle_threads = (
                    _idle(proc.pid, sampler, idle_s, stacks := _stacks_path(workdir, name) if idle_profile else None)
                    if idle_s
                    else (None, {})
                )
                break
            if proc.poll() is not None:
                raise RuntimeError(f"mirror exited with {proc.returncode}; see {log_path}\n{tail(log_path, 20)}")
            if time.monotonic() - started > limit:
                raise TimeoutError(f"{mirror} mirrored {done:,} of {total:,} offsets in {limit:.0f} s; see {log_path}")
    finally:
        stop_process(proc, 60)  # SIGTERM: a graceful stop logs each task's last progress line
    text = log_path.read_text(errors="replace")
    summary = parse_mirror_log(text)
    result = figures(mirror, source, seconds, sampler.cpu_seconds() - (idle_cpu or 0.0), sampler.peak_rss_bytes)
    result |= {
        "log": str(log_path),
        "first_commit_s": first_commit_s,
        "idle_cpu_seconds": idle_cpu,
        # Where the idle CPU went, by thread (librdkafka's by name; the Python threads together).
        "idle_threads": {name: round(cpu, 3) for name, cpu in idle_threads.items()},
        "idle_profile": str(stacks) if stacks is not None else None,
        **asdict(summary),
    }
    # mirror.mode=auto: how many of the tasks measured their batches too small and went on in record mode.
    result["switched_to_record"] = text.count("mirror.mode=auto switches to record mode")
    if summary.forwarded is not None:
        batches = summary.forwarded + sum(summary.reencoded.values())
        result["records_per_batch"] = summary.records / batches if batches else None  # both count re-copies
    result["target_topics"] = _target_configs(tgt, [f"{name}.{t}" for t in source.topics])
    return result


def _stacks_path(workdir: Path, name: str) -> Path:
    return workdir / f"{name}-idle.stacks"


def _idle(pid: int, sampler: ProcessTree, idle_s: float, stacks: Path | None) -> tuple[float, dict[str, float]]:
    """A caught-up mirror's CPU-seconds over ``idle_s`` after settling, and by thread; py-spy samples
    its stacks meanwhile into ``stacks`` when given."""
    time.sleep(IDLE_SETTLE_S)
    before = thread_cpu_seconds(pid)
    spy = stacks_sampler(pid, stacks, idle_s) if stacks is not None else None
    cpu = sampler.idle(idle_s)
    if spy is not None:
        spy.wait(30)
    return cpu, thread_cpu_delta(before, thread_cpu_seconds(pid))


def run_mm2_shape(mirror: str, src: str, tgt: str, source: Source, *, workdir: Path, codec: str) -> dict[str, Any]:
    """MirrorMaker 2 exactly once (``bench.mm2``, ``tasks.max=2``); it mirrors one topic per run only."""
    if len(source.topics) != 1:
        raise ValueError("bench.mm2 mirrors one topic per run; the mixed shape has several")
    progress = Progress(f"{source.shape} {mirror}", source.record_bytes / max(source.records, 1))
    run = run_mm2(
        src, tgt, source.topics[0], exactly_once=True, workdir=workdir, tasks=TASKS, compression=codec,
        on_progress=progress,
    )  # fmt: skip
    return figures(mirror, source, run.seconds, run.cpu_seconds, run.peak_rss_bytes) | {"log": str(run.log)}


# -- the benchmark ------------------------------------------------------------------------------


def _ratios(runs: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Raw mode against record mode: MB/s and CPU-s/GB, raw / record."""
    by = {r["mirror"]: r for r in runs if "error" not in r}
    raw, record = by.get("raw-eos"), by.get("record-eos")
    if raw is None or record is None:
        return {"speed": None, "cpu_per_gb": None}
    cpu = raw["cpu_s_per_gb"] / record["cpu_s_per_gb"] if raw["cpu_s_per_gb"] and record["cpu_s_per_gb"] else None
    return {"speed": raw["mb_per_s"] / record["mb_per_s"], "cpu_per_gb": cpu}


def run(  # noqa: PLR0917 (the interface other tools call: positional as documented)
    src: str,
    tgt: str,
    workdir: Path,
    shapes: list[str],
    mirrors: list[str],
    scale: float = 1.0,
    *,
    codec: str = "lz4",
) -> dict[str, Any]:
    """Write each shape's source data once, mirror it with each mirror in turn; the JSON-able results.

    A mirror that fails on a shape is recorded with its error and the benchmark goes on.
    """
    unknown = [s for s in shapes if s not in WRITERS] + [m for m in mirrors if m not in MIRRORS]
    if unknown:
        raise ValueError(f"unknown shapes or mirrors: {', '.join(unknown)}")
    workdir.mkdir(parents=True, exist_ok=True)
    steps = len(shapes) * (1 + len(mirrors))
    step = 0

    def announce(what: str) -> None:
        nonlocal step
        step += 1
        print(f"[{step}/{steps}] {what}", flush=True)

    out: list[dict[str, Any]] = []
    for shape in shapes:
        topic = f"shapes-{shape}-{time.time_ns() // 1_000_000}"
        announce(f"{shape}: writing the source ({codec}, scale {scale:g})")
        began = time.monotonic()
        source = WRITERS[shape](src, topic, scale=scale, codec=codec)
        print(
            f"    {source.records:,} records, {source.megabytes:.1f} MB in {len(source.topics)} topic(s), "
            f"{source.partitions} partitions, written in {time.monotonic() - began:.1f} s",
            flush=True,
        )
        runs: list[dict[str, Any]] = []
        for mirror in mirrors:
            announce(f"{shape}: mirroring with {mirror}")
            try:
                if mirror.startswith("mm2-"):
                    result = run_mm2_shape(mirror, src, tgt, source, workdir=workdir, codec=codec)
                else:
                    result = run_mirror_sink(mirror, src, tgt, source, workdir=workdir, codec=codec)
            except (RuntimeError, TimeoutError, ValueError, KafkaException) as exc:
                print(f"    failed: {exc}", flush=True)
                runs.append({"mirror": mirror, "error": str(exc)})
                continue
            runs.append(result)
            line = (
                f"    {result['seconds']:.1f} s, {result['mb_per_s']:.1f} MB/s, "
                f"{result['cpu_s_per_gb'] or 0:.1f} CPU-s/GB, peak RSS {result['peak_rss_mb']:.0f} MB"
            )
            if result.get("forwarded") is not None:
                line += f"; batches forwarded {result['forwarded']:,}, re-encoded {_reencoded(result)}"
            print(line, flush=True)
        entry = {**asdict(source), "megabytes": source.megabytes, "runs": runs, "raw_vs_record": _ratios(runs)}
        out.append(entry)
    return {
        "command": " ".join([".venv/bin/python -m bench.shapes", *map(shlex.quote, sys.argv[1:])]),
        "machine": machine(java=False),
        "kafka_version": kafka_version(),
        "date": datetime.date.today().isoformat(),
        "codec": codec,
        "scale": scale,
        "tasks": TASKS,
        "shapes": out,
    }


# -- the report ---------------------------------------------------------------------------------


def _reencoded(run: Mapping[str, Any]) -> str:
    counts: Mapping[str, int] = run.get("reencoded") or {}
    return ", ".join(f"{n:,} {why}" for why, n in sorted(counts.items())) or "none"


def _num(value: Any, decimals: int) -> str:
    return f"{value:,.{decimals}f}" if isinstance(value, int | float) else "-"


def _factor(value: Any) -> str:
    return f"{value:.2f}x" if isinstance(value, int | float) else "-"


DESCRIPTIONS = {
    "many-partitions": f"{MANY_PARTITIONS} partitions, 1 KB records, producer batches of at most 8 KB (linger.ms=0)",
    "large-records": f"{LARGE_RECORD_BYTES // 1024} KB records, one a batch, {LARGE_PARTITIONS} partitions",
    "compacted": f"compacted topic, each key written about {COMPACTED_WRITES_PER_KEY} times, cleaned before mirroring",
    "small-transactions": f"a transaction every {TXN_RECORDS} records over {TXN_PARTITIONS} partitions",
    "mixed": "the four above at once, four topics in one mirror",
}


def render(results: Mapping[str, Any]) -> str:
    """The Markdown section: a table of every (shape, mirror), the raw/record ratios, the method."""
    shapes: Sequence[Mapping[str, Any]] = results.get("shapes", [])
    lines = [
        "## Workload shapes: raw mode against record mode",
        "",
        f"{results.get('machine', 'machine unknown')}; Kafka {results.get('kafka_version', '?')}; "
        f"source codec `{results.get('codec', '?')}`; scale {results.get('scale', '?')}; "
        f"tasks.max={results.get('tasks', TASKS)}; {results.get('date', '')}.",
        "",
        "| shape | source | mirror | MB/s | CPU-s/GB | peak RSS MB | seconds | aborted cycles "
        "| raw batches forwarded | re-encoded |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for s in shapes:
        what = f"{s['records']:,} records, {s['megabytes']:.1f} MB"
        for run in s.get("runs", []):
            if "error" in run:
                lines.append(f"| {s['shape']} | {what} | {run['mirror']} | failed: {run['error'][:80]} | | | | | | |")
                continue
            forwarded = run.get("forwarded")
            mirror = run["mirror"]
            if run.get("switched_to_record"):
                mirror += f" ({run['switched_to_record']} of {results.get('tasks', TASKS)} tasks went to record mode)"
            lines.append(
                f"| {s['shape']} | {what} | {mirror} | {_num(run['mb_per_s'], 1)} | "
                f"{_num(run.get('cpu_s_per_gb'), 1)} | {_num(run['peak_rss_mb'], 0)} | {_num(run['seconds'], 1)} | "
                f"{_num(run.get('aborts'), 0)} | {_num(forwarded, 0)} | "
                f"{_reencoded(run) if forwarded is not None else '-'} |"
            )
    lines += [
        "",
        "Raw mode relative to record mode (above 1x: raw mode faster, or using more CPU per GB):",
        "",
        "| shape | what | raw/record MB/s | raw/record CPU-s/GB |",
        "|---|---|---:|---:|",
    ]
    for s in shapes:
        ratio = s.get("raw_vs_record", {})
        lines.append(
            f"| {s['shape']} | {DESCRIPTIONS.get(s['shape'], '')} | {_factor(ratio.get('speed'))} | "
            f"{_factor(ratio.get('cpu_per_gb'))} |"
        )
    notes = [f"{s['shape']}: {n}" for s in shapes for n in s.get("notes", [])]
    if notes:
        lines += ["", *[f"- {n}" for n in notes]]
    scale = results.get("scale")
    small = isinstance(scale, int | float) and scale < 0.5
    quick = " This was a small run: start-up dominates its figures; treat them as a smoke test." if small else ""
    lines += [
        "",
        "Method: each shape's source topics are written once, then each mirror copies them in turn into its "
        f"own target topics, exactly once with tasks.max={results.get('tasks', TASKS)}, as a fresh process. MB/s "
        "is the uncompressed key + value bytes present in the source when mirroring starts (for the compacted "
        "topic, what the log cleaner left) per second of wall-clock time from the mirror's start until its "
        "shadow group has committed every source partition's end offset; CPU-s/GB is the user + system CPU "
        "time of the mirror's process tree per 10^9 of those bytes, peak RSS its largest resident memory. The "
        "batch counts are raw mode's own, from its last progress line (summed over tasks; an aborted cycle's "
        "batches count again when they are copied again): a re-encoded batch is decoded and rebuilt record by "
        "record, which is where raw mode loses its advantage. An aborted cycle (from the mirror's log) is "
        f"thrown away and copied again, inside the measured time.{quick}",
        "",
    ]
    return "\n".join(lines)


SECTION = Section(SHAPES_RESULTS, render)
