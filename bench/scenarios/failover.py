"""Consumer-group failover accuracy: MirrorMaker 2 against mirror-sink, on the same source data in one run.

    .venv/bin/python -m bench.failover                  # local clusters, 200k records; about 3 minutes
    .venv/bin/python -m bench.failover --quick          # smoke run: 20k records, about 1.5 minutes
    .venv/bin/python -m bench.failover --source HOST:9092 --target HOST:9092   # any two clusters

A consumer group that fails over from the source cluster to the target must resume where it stopped:
every record it had not consumed, none it had. This benchmark measures how close each mirror gets.

Source data: one topic (a fresh name per run), 6 partitions, 200k records of ~200 bytes, lz4, written
by a non-transactional idempotent producer with linger, so that batches hold hundreds of records and a
source offset equals the record's per-partition sequence number (checked by reading everything back).
Each value starts with ``p{partition}-{seq}|``, so a reader on the target knows which source record it
holds.

Per mirror, two source consumer groups (``{run}-{mirror}-mid`` and ``{run}-{mirror}-end``) consume and
commit explicit offsets, then close, so they are idle (no members) before the mirror starts: ``mid``
stops about 40% into each partition, at a batch's base offset + 7, i.e. inside a compressed batch;
``end`` commits the end offsets. Both mirrors' groups get the same offsets.

- MirrorMaker 2 (``mm2``): dedicated mode, exactly once, as ``bench.mm2`` runs it, with the checkpoint
  connector on: ``emit.checkpoints.enabled``, ``sync.group.offsets.enabled``, ``emit.offset-syncs.enabled``
  and ``refresh.groups.enabled`` true, everything else about checkpoints and offset syncs at MM2's
  defaults (checkpoints and group sync every 60 s, ``offset.lag.max=100``, ``groups=.*``, the default
  ``groups.exclude``, the offset-syncs topic on the source). It runs until the target holds every record
  and then until the groups MM2 syncs into the target (same names, topic ``{alias}.{topic}``) are in
  place and have not changed for ``--settle`` seconds, or ``--sync-timeout`` seconds have passed since
  the data caught up; then it is stopped.
- mirror-sink (``ms``): ``mirror-sink run`` (raw mode, exactly once) until its shadow group holds every
  source offset, SIGTERM, then ``mirror-sink failover CONFIG --groups REGEX``, which commits each source
  group's translated offsets into the same-named target group for the mirrored topic (exit 0 on
  success). Where that command is missing, the mirror-sink rows say "not available".

Then, per group, a consumer with that group id on the target (read_committed,
auto.offset.reset=earliest, no auto commit) reads from the group's committed offsets to the end.
*Re-read* counts records whose source offset is below the source group's committed offset (consumed
before the failover, delivered again); *skipped* counts source records at or past it that the consumer
never saw (lost to the group). A partition with no committed offset on the target starts from the
beginning and is counted under "no offset". MirrorMaker 2's checkpoints (``{alias}.checkpoints.internal``)
and its offset syncs for the topic are recorded too.

Results: ``bench/results/failover-<timestamp>.json`` and a Markdown table on stdout (``bench.failover``);
``render(results)`` gives this scenario's section of docs/failover-benchmarks.md (``bench.failover_report``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from bench.common.console import log, tail
from bench.consumer_groups import (
    commit_source_group,
    group_states,
    mm2_checkpoints,
    mm2_offset_syncs,
    watch_target_groups,
)
from bench.mm2 import (
    LOG4J2,
    MM2Process,
    OffsetsReader,
    java_command,
    mm2_properties,
    source_extent,
    write_properties,
)
from devkafka.cluster import free_port
from devkafka.data import committed_offsets, create_topic, drain, end_offsets, reader
from devkafka.jars import KafkaJars
from devkafka.paths import kafka_version
from devkafka.processes import reap_with_this_process
from devkafka.raw_batches import read_committed_batches

PARTITIONS = 6
CODEC = "lz4"
RECORD_BYTES = 200
MIRRORS = ("mm2", "ms")
MIRROR_NAMES = {"mm2": "MirrorMaker 2 (mm2-eos)", "ms": "mirror-sink (raw-eos)"}
GROUP_KINDS = ("mid", "end")

#: What bench.mm2 switches off for throughput runs, switched back on; everything else about checkpoints
#: and offset syncs stays at MM2's defaults: emit.checkpoints.interval.seconds=60,
#: sync.group.offsets.interval.seconds=60, refresh.groups.interval.seconds=600, offset.lag.max=100,
#: groups=.*, groups.exclude=console-consumer-.*,connect-.*,__.*, offset-syncs.topic.location=source.
#: MirrorCheckpointConnector refuses to run without offset syncs (MirrorCheckpointConfig.validate).
MM2_CHECKPOINTS = {
    "emit.checkpoints.enabled": "true",
    "sync.group.offsets.enabled": "true",
    "emit.offset-syncs.enabled": "true",
    "refresh.groups.enabled": "true",
    # Not a behaviour setting: the default of 3 replicas cannot be met by a single-broker source.
    "offset-syncs.topic.replication.factor": "1",
}
MS_MODE = {"mirror.mode": "raw", "transaction.producer": "true"}

_VALUE_PREFIX = re.compile(rb"p(\d+)-(\d+)\|")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# -- source data ------------------------------------------------------------------------------------


def record_value(partition: int, seq: int, filler: bytes) -> bytes:
    """``p{partition}-{seq}|`` then filler, RECORD_BYTES long (longer only if the prefix is)."""
    head = b"p%d-%d|" % (partition, seq)
    return head + filler[: max(0, RECORD_BYTES - len(head))]


def decode_value(value: bytes | None) -> tuple[int, int] | None:
    """(partition, seq) of a value written by ``record_value``; None for anything else."""
    m = _VALUE_PREFIX.match(value or b"")
    return (int(m.group(1)), int(m.group(2))) if m else None


def fillers(n: int = 256) -> list[bytes]:
    """JSON-like filler: compresses a few times with lz4, as real payloads do."""
    out = []
    for i in range(n):
        body = json.dumps(
            {"user": f"user-{(i * 7919) % 100_003}", "sku": f"sku-{(i * 31) % 977}", "qty": i % 9 + 1,
             "region": ("eu-west", "us-east", "ap-south")[i % 3], "note": "order placed via web checkout"}
        )  # fmt: skip
        out.append((body * 2).encode()[:RECORD_BYTES])
    return out


def write_source(bootstrap: str, topic: str, records: int, *, linger_ms: int, batch_bytes: int) -> dict[int, int]:
    """Create ``topic`` and write ``records`` records round-robin; returns records per partition."""
    create_topic(bootstrap, topic, PARTITIONS)
    errors: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": CODEC,
            "linger.ms": linger_ms,
            "batch.size": batch_bytes,
            "enable.idempotence": True,
            "on_delivery": on_delivery,
        }
    )
    filler = fillers()
    seqs = dict.fromkeys(range(PARTITIONS), 0)
    for i in range(records):
        p = i % PARTITIONS
        value = record_value(p, seqs[p], filler[i % len(filler)])
        while True:
            try:
                producer.produce(topic, value, key=b"k%d" % (i % 1000), partition=p)
                break
            except BufferError:
                producer.poll(0.05)
        seqs[p] += 1
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0 or errors:
        raise KafkaException(f"writing {topic}: {len(producer)} undelivered, {len(errors)} failed {errors[:1]}")
    return seqs


def verify_source(bootstrap: str, topic: str, counts: Mapping[int, int]) -> None:
    """Read everything back: each record's offset must equal its seq, in its own partition, no gaps."""
    ends = end_offsets(bootstrap, topic)
    if ends != dict(counts):
        raise AssertionError(f"{topic}: end offsets {ends} differ from the records written {dict(counts)}")
    consumer = reader(bootstrap, "mirror-sink-bench-failover-verify")
    seen = dict.fromkeys(counts, 0)

    def check(msg: Message) -> None:
        p, off = msg.partition() or 0, msg.offset() or 0
        decoded = decode_value(msg.value())
        if decoded != (p, off):
            raise AssertionError(f"{topic}-{p} offset {off} holds {decoded}: source offset != seq")
        seen[p] += 1

    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in counts])
        drain(consumer, {p for p, n in counts.items() if n}, check, 300, f"verifying {topic}")
    finally:
        consumer.close()
    if seen != dict(counts):
        raise AssertionError(f"{topic}: read back {seen}, wrote {dict(counts)}")


# -- batches (librdkafka never shows them: devkafka's raw reader does) ------------------------------


@dataclass(frozen=True)
class Batch:
    """A record batch's offsets and codec."""

    base_offset: int
    last_offset: int
    records: int
    codec: int  # 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd

    @property
    def compressed(self) -> bool:
        """True for a compressed batch."""
        return self.codec != 0


def mid_batch_offsets(
    bootstrap: str, topic: str, counts: Mapping[int, int], fraction: float, inside: int = 7
) -> tuple[dict[int, int], dict[int, Batch]]:
    """Per partition, ``base_offset + inside`` of the first compressed batch at or after ``fraction`` of it
    that holds that offset; and that batch.

    The batches are the partitions' committed data batches as raw mode fetches them
    (``devkafka.raw_batches``; control batches left out), all read into memory: a few MB here.
    """
    found = read_committed_batches(bootstrap, topic, sorted(counts))
    offsets: dict[int, int] = {}
    batches: dict[int, Batch] = {}
    for p, n in sorted(counts.items()):
        at = int(n * fraction)
        headers = (item.header for item in found[p] if item.header is not None)
        for h in headers:
            b = Batch(h.base_offset, h.last_offset, h.record_count, h.codec)
            if b.last_offset >= at and b.compressed and b.last_offset >= b.base_offset + inside:
                offsets[p], batches[p] = b.base_offset + inside, b
                break
        else:
            raise RuntimeError(f"{topic}-{p}: no batch holding offset {inside} past its base from {at} on")
    return offsets, batches


# -- reading a group's resumption on the target -----------------------------------------------------


@dataclass
class PartitionOutcome:
    """One partition of a group resumed on the target."""

    partition: int
    source_committed: int
    target_committed: int | None  # None: no offset, the consumer started from the beginning
    first_seq_read: int | None
    reread: int
    skipped: int
    duplicates: int


@dataclass
class GroupOutcome:
    """A source group resumed on the target after failover."""

    mirror: str
    group: str
    kind: str
    partitions: int
    source_committed_total: int
    reread: int
    skipped: int
    duplicates: int
    foreign: int  # records that do not decode, or sit in another partition than their source's
    no_offset_partitions: int
    synced_after_s: float | None  # from the data caught up to the group's offsets in place on the target
    last_change_after_s: float | None
    per_partition: list[PartitionOutcome]
    checkpoints: dict[int, tuple[int, int]] = field(default_factory=dict)  # MM2: partition -> (upstream, downstream)


def resume_on_target(
    bootstrap: str, group: str, topic: str, source_committed: Mapping[int, int], source_counts: Mapping[int, int]
) -> tuple[list[PartitionOutcome], int]:
    """A member of ``group`` reads ``topic`` on the target from the group's offsets to the end; per partition
    what it re-read and skipped against ``source_committed``; plus the count of foreign records."""
    partitions = sorted(source_committed)
    stored = committed_offsets(bootstrap, group, [(topic, p) for p in partitions])
    target_committed = {p: (o if (o := stored[(topic, p)]) >= 0 else None) for p in partitions}
    seen = {p: bytearray(source_counts[p]) for p in partitions}
    reads = dict.fromkeys(partitions, 0)
    first: dict[int, int | None] = dict.fromkeys(partitions)
    foreign = 0

    def take(msg: Message) -> None:
        nonlocal foreign
        p = msg.partition() or 0
        decoded = decode_value(msg.value())
        if decoded is None or decoded[0] != p or not 0 <= decoded[1] < len(seen[p]):
            foreign += 1
            return
        seq = decoded[1]
        if first[p] is None:
            first[p] = seq
        counts = seen[p]
        counts[seq] = min(counts[seq] + 1, 255)
        reads[p] += 1

    consumer = reader(bootstrap, group, **{"auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        drain(consumer, set(partitions), take, 600, f"group {group} resuming on {topic}")
    finally:
        consumer.close()
    out = []
    for p in partitions:
        c, counts = source_committed[p], seen[p]
        reread = sum(counts[:c])
        out.append(
            PartitionOutcome(
                p, c, target_committed[p], first[p], reread,
                skipped=counts.count(0, c), duplicates=sum(counts[c:]) - (len(counts) - c - counts.count(0, c)),
            )
        )  # fmt: skip
    return out, foreign


def group_outcome(
    mirror: str,
    kind: str,
    group: str,
    per_partition: list[PartitionOutcome],
    foreign: int,
    *,
    synced_after_s: float | None,
    last_change_after_s: float | None,
) -> GroupOutcome:
    """Totals over the partitions."""
    return GroupOutcome(
        mirror, group, kind, len(per_partition),
        source_committed_total=sum(o.source_committed for o in per_partition),
        reread=sum(o.reread for o in per_partition), skipped=sum(o.skipped for o in per_partition),
        duplicates=sum(o.duplicates for o in per_partition), foreign=foreign,
        no_offset_partitions=sum(o.target_committed is None for o in per_partition),
        synced_after_s=synced_after_s, last_change_after_s=last_change_after_s, per_partition=per_partition,
    )  # fmt: skip


@dataclass
class Scenario:
    """What both mirrors get: the clusters, the source topic, its records and the groups' offsets."""

    src: str
    tgt: str
    topic: str
    counts: dict[int, int]  # records (= end offset) per partition
    plans: dict[str, dict[int, int]]  # group kind -> committed offset per partition


# -- MirrorMaker 2 -----------------------------------------------------------------------------------


def start_mm2_with_checkpoints(source: str, target: str, topic: str, *, workdir: Path, tasks: int) -> MM2Process:
    """MM2 as ``bench.mm2`` runs it exactly once, with checkpoints, offset syncs and group sync on."""
    alias = f"mm2fo{_now_ms()}"
    props = mm2_properties(
        source, target, topic, alias=alias, exactly_once=True, tasks=tasks, rest_port=free_port(), compression=CODEC
    )
    props |= MM2_CHECKPOINTS
    props_path, log4j2_path, log_path = (workdir / f"{alias}{s}" for s in (".properties", ".log4j2.properties", ".log"))
    write_properties(props_path, props)
    log4j2_path.write_text(LOG4J2)
    cmd = java_command(KafkaJars.ensure(), props_path, log4j2_path, "2g")
    with open(log_path, "wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    reap_with_this_process(pid=proc.pid)
    return MM2Process(proc, alias, f"{alias}.{topic}", log_path, started)


def run_mm2_side(args: argparse.Namespace, sc: Scenario) -> dict[str, Any]:
    """Mirror with MM2 until the groups are synced; then resume each group on the target."""
    src, tgt, topic, counts, plans = sc.src, sc.tgt, sc.topic, sc.counts, sc.plans
    groups = {kind: f"{args.run_id}-mm2-{kind}" for kind in GROUP_KINDS}
    for kind, group in groups.items():
        commit_source_group(src, group, topic, plans[kind])
    log(f"    source groups {', '.join(groups.values())}: {group_states(src, list(groups.values()))}")
    extent = source_extent(src, topic, "read_committed")
    mm2 = start_mm2_with_checkpoints(src, tgt, topic, workdir=args.workdir, tasks=PARTITIONS)
    log(f"    MM2 alias {mm2.alias}, log {mm2.log}")
    reader = OffsetsReader(tgt, mm2.alias, [topic])
    try:
        deadline = mm2.started + args.mirror_timeout
        while True:
            time.sleep(0.5)
            committed = reader.poll()
            if all(last is None or committed.get((topic, p), -1) >= last for p, (_, _, last) in extent.items()):
                break
            if mm2.proc.poll() is not None:
                raise RuntimeError(f"MM2 exited with {mm2.proc.returncode}; see {mm2.log}\n{tail(mm2.log)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"MM2 did not mirror {topic} in {args.mirror_timeout:.0f} s; see {mm2.log}")
        caught_up = time.monotonic()
        log(f"    data caught up {caught_up - mm2.started:.1f} s after MM2's start; watching the target groups")
        watch = watch_target_groups(
            tgt, list(groups.values()), mm2.target_topic, sorted(counts), since=caught_up,
            settle_s=args.settle, timeout_s=args.sync_timeout, alive=lambda: mm2.proc.poll() is None,
        )  # fmt: skip
    finally:
        reader.close()
        mm2.stop()
    checkpoints = mm2_checkpoints(tgt, mm2.alias, list(groups.values()))
    syncs = mm2_offset_syncs(src, topic)
    outcomes = []
    for kind, group in groups.items():
        per_partition, foreign = resume_on_target(tgt, group, mm2.target_topic, plans[kind], counts)
        outcome = group_outcome(
            "mm2", kind, group, per_partition, foreign,
            synced_after_s=watch.first_full_s[group], last_change_after_s=watch.last_change_s[group],
        )  # fmt: skip
        outcome.checkpoints = checkpoints[group]
        outcomes.append(outcome)
    mid = plans["mid"]
    best = {
        p: max((u for u, _ in syncs.get(p, []) if u <= mid[p]), default=None) for p in sorted(counts)
    }  # what a store keeping every sync could have translated "mid" with: re-read = mid - best upstream - 1
    return {
        "mirror": "mm2",
        "name": MIRROR_NAMES["mm2"],
        "status": "ok",
        "alias": mm2.alias,
        "target_topic": mm2.target_topic,
        "caught_up_after_s": caught_up - mm2.started,
        "log": str(mm2.log),
        "groups": [asdict(o) for o in outcomes],
        "group_history": watch.history,
        "offset_syncs": {p: len(s) for p, s in sorted(syncs.items())},
        "nearest_sync_below_mid": best,
    }


# -- mirror-sink -------------------------------------------------------------------------------------


def mirror_sink_argv(*argv: str) -> list[str]:
    """The command line of ``mirror-sink ARGV...`` in this checkout's interpreter."""
    return [sys.executable, "-m", "api.cli", *argv]


def failover_available() -> bool:
    """True if this checkout's ``mirror-sink`` has the ``failover`` verb."""
    probe = subprocess.run(mirror_sink_argv("failover", "--help"), capture_output=True, text=True, check=False)
    return probe.returncode == 0


def ms_config(alias: str, sc: Scenario) -> dict[str, str]:
    """The connector config: raw mode, exactly once, one task, the source topic only."""
    return {
        "connector.class": "MirrorSinkConnector",
        "source.cluster.alias": alias,
        "source.cluster.bootstrap.servers": sc.src,
        "target.cluster.bootstrap.servers": sc.tgt,
        "topics": sc.topic,
        "replication.policy.class": "DefaultReplicationPolicy",
        "tasks.max": "1",
        "target.cluster.producer.compression.type": CODEC,
        **MS_MODE,
    }


def mirror_with_ms(
    args: argparse.Namespace, sc: Scenario, name: str, path: Path, target_topic: str
) -> tuple[float, float]:
    """``mirror-sink run`` until its shadow group holds every source offset, then SIGTERM: the seconds it took to
    catch up, and the ``time.monotonic()`` when it had."""
    log_path = args.workdir / f"{name}.log"
    with open(log_path, "wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen(
            mirror_sink_argv("run", str(path), "--worker-id", name), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    reap_with_this_process(pid=proc.pid)
    log(f"    mirror-sink connector {name}, log {log_path}")
    tps = [(target_topic, p) for p in sc.counts]
    try:
        deadline = started + args.mirror_timeout
        while True:
            time.sleep(0.5)
            try:
                stored = committed_offsets(sc.tgt, f"connect-{name}", tps, timeout=5)
            except KafkaException:
                stored = {}
            if all(stored.get((target_topic, p), -1) >= n for p, n in sc.counts.items()):
                break
            if proc.poll() is not None:
                raise RuntimeError(f"mirror-sink exited with {proc.returncode}; see {log_path}\n{tail(log_path)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"mirror-sink did not mirror {sc.topic} in {args.mirror_timeout:.0f} s")
        caught_up = time.monotonic()
        log(f"    data caught up {caught_up - started:.1f} s after mirror-sink's start; stopping it (SIGTERM)")
        return caught_up - started, caught_up
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)


def run_ms_side(args: argparse.Namespace, sc: Scenario) -> dict[str, Any]:
    """Mirror with mirror-sink until caught up, stop it, run ``mirror-sink failover``; resume each group."""
    groups = {kind: f"{args.run_id}-ms-{kind}" for kind in GROUP_KINDS}
    result: dict[str, Any] = {"mirror": "ms", "name": MIRROR_NAMES["ms"], "groups": []}
    if not failover_available():
        log("    `mirror-sink failover` is not available in this checkout: skipping the mirror-sink side")
        return result | {"status": "not available: `mirror-sink failover` does not exist yet"}
    for kind, group in groups.items():
        commit_source_group(sc.src, group, sc.topic, sc.plans[kind])
    log(f"    source groups {', '.join(groups.values())}: {group_states(sc.src, list(groups.values()))}")
    alias = f"msfo{_now_ms()}"
    name = f"{args.run_id}-ms"
    target_topic = f"{alias}.{sc.topic}"
    path = args.workdir / f"{name}.json"
    path.write_text(json.dumps({"name": name, "config": ms_config(alias, sc)}, indent=2))
    result |= {
        "alias": alias,
        "target_topic": target_topic,
        "config": str(path),
        "log": str(args.workdir / f"{name}.log"),
    }
    # The time to failover counts from the data caught up: stopping the mirror is part of it.
    result["caught_up_after_s"], caught_up = mirror_with_ms(args, sc, name, path, target_topic)
    regex = "^" + re.escape(args.run_id) + "-ms-(mid|end)$"
    argv = mirror_sink_argv("failover", str(path), "--groups", regex)
    log(f"    {shlex.join(['mirror-sink', *argv[3:]])}")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    synced = time.monotonic() - caught_up
    (args.workdir / f"{name}.failover.log").write_text(done.stdout + done.stderr)
    result["failover"] = {"exit_code": done.returncode, "stdout": done.stdout[-8000:], "stderr": done.stderr[-8000:]}
    print(done.stdout, end="", flush=True)
    if done.returncode != 0:
        log(f"    `mirror-sink failover` exited with {done.returncode}:\n{done.stderr[-3000:]}")
        return result | {"status": f"failed: `mirror-sink failover` exited with {done.returncode}"}
    outcomes = []
    for kind, group in groups.items():
        per_partition, foreign = resume_on_target(sc.tgt, group, target_topic, sc.plans[kind], sc.counts)
        outcomes.append(
            group_outcome("ms", kind, group, per_partition, foreign, synced_after_s=synced, last_change_after_s=synced)
        )
    return result | {"status": "ok", "groups": [asdict(o) for o in outcomes]}


# -- rendering ---------------------------------------------------------------------------------------


def _n(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def results_table(results: Mapping[str, Any]) -> list[str]:
    """The Markdown table: one row per mirror and group."""
    lines = [
        "| mirror | group | partitions | source committed total | re-read | skipped | no-offset partitions "
        "| caught-up → synced (s) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mirror in results.get("mirrors", []):
        if mirror.get("status") != "ok":
            for kind in GROUP_KINDS:
                lines.append(f"| {mirror['name']} | `{kind}` | - | - | - | - | - | {mirror.get('status', '-')} |")
            continue
        for g in mirror["groups"]:
            lines.append(
                f"| {mirror['name']} | `{g['kind']}` | {g['partitions']} | {_n(g['source_committed_total'])} "
                f"| {_n(g['reread'])} | {_n(g['skipped'])} | {g['no_offset_partitions']} | {_n(g['synced_after_s'])} |"
            )
    return lines


def failover_section(results: Mapping[str, Any], heading: str = "## Consumer-group failover") -> list[str]:
    """The Markdown lines of a docs/benchmarks.md section for these results (``heading`` first)."""
    total = sum(results.get("records_per_partition", {}).values())
    lines = [
        heading,
        "",
        f"`{results.get('command', 'python -m bench.failover')}` writes {total:,} records of ~{RECORD_BYTES} bytes "
        f"({CODEC}, {results.get('partitions', PARTITIONS)} partitions, producer batches of hundreds of records) "
        "and commits two idle source consumer groups per mirror: `mid` about 40% into each partition, at a "
        "batch's base offset + 7 (inside a compressed batch), and `end` at the end offsets. Each mirror copies "
        "the data and carries the groups over (MirrorMaker 2: checkpoints with `sync.group.offsets.enabled=true`,"
        " every other checkpoint setting at its default, exactly once; mirror-sink: `mirror-sink failover` after "
        "the mirror stops). Then a consumer of each group resumes on the target from the group's committed "
        "offsets. *Re-read*: records consumed before the failover and delivered again; *skipped*: records not "
        "yet consumed that the group never gets; a partition with no offset on the target starts from the "
        "beginning. The last column is the time from the data being caught up on the target to the group's "
        "offsets being in place there (MM2: its periodic sync; mirror-sink: stopping the mirror and running "
        "the command).",
        "",
        *results_table(results),
    ]
    for mirror in results.get("mirrors", []):
        if mirror.get("mirror") == "mm2" and mirror.get("status") == "ok":
            lines += _mm2_mid_note(mirror)
    return lines


def _mm2_mid_note(mirror: Mapping[str, Any]) -> list[str]:
    """Why MM2's ``mid`` group re-read what it did, from its offset syncs and checkpoints."""
    mid = next((g for g in mirror["groups"] if g["kind"] == "mid"), None)
    if mid is None or not mid["reread"]:
        return []
    rows = []
    for o in mid["per_partition"]:
        p = o["partition"]
        checkpoint = mid["checkpoints"].get(p) or mid["checkpoints"].get(str(p))
        nearest = mirror["nearest_sync_below_mid"].get(p, mirror["nearest_sync_below_mid"].get(str(p)))
        syncs = mirror["offset_syncs"].get(p, mirror["offset_syncs"].get(str(p)))
        rows.append(
            [str(p), _n(o["source_committed"]), _n(syncs), _n(nearest),
             _n(checkpoint[1]) if checkpoint else "-", _n(o["first_seq_read"]), _n(o["reread"])]
        )  # fmt: skip
    return [
        "",
        "MirrorMaker 2's `mid` group, per partition: the offset syncs MM2 wrote for the topic (`offset.lag.max=100`), "
        "the nearest one at or below the group's offset, the target offset its checkpoint translated the group's "
        "offset to, and the first source record the resumed consumer got. MM2's checkpoint task translates through "
        "an in-memory store of offset syncs (`OffsetSyncStore`, Kafka 3.5+) that keeps roughly one sync per power "
        "of two of distance behind the newest, plus one offset: a group far behind the newest sync when the "
        "checkpoint is taken resumes that far back, however close a sync was written.",
        "",
        "| partition | source offset | offset syncs | nearest sync below | checkpoint → target offset "
        "| first record read | re-read |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(f"| {' | '.join(r)} |" for r in rows),
    ]


def run(args: argparse.Namespace, src: str, tgt: str) -> dict[str, Any]:
    """The whole benchmark; the results dict."""
    args.workdir.mkdir(parents=True, exist_ok=True)
    topic = f"failover-{args.run_id}"
    steps = 2 + len(args.mirrors)
    log(f"[1/{steps}] writing {args.records:,} records of {RECORD_BYTES} B ({CODEC}) to {topic} on the source")
    t0 = time.monotonic()
    counts = write_source(src, topic, args.records, linger_ms=args.linger_ms, batch_bytes=args.batch_bytes)
    verify_source(src, topic, counts)
    log(f"    written and read back in {time.monotonic() - t0:.1f} s: source offset == seq in every partition")
    mid, batches = mid_batch_offsets(src, topic, counts, args.mid_fraction)
    plans = {"mid": mid, "end": dict(counts)}
    log(
        f"[2/{steps}] mid commit per partition (offset in batch base..last, records): "
        + ", ".join(
            f"p{p} {mid[p]:,} in {b.base_offset:,}..{b.last_offset:,} ({b.records})" for p, b in batches.items()
        )
    )
    mirrors: list[dict[str, Any]] = []
    sides = {"mm2": run_mm2_side, "ms": run_ms_side}
    for i, m in enumerate(args.mirrors, start=3):
        log(f"[{i}/{steps}] {MIRROR_NAMES[m]}")
        try:
            mirrors.append(sides[m](args, Scenario(src, tgt, topic, counts, plans)))
        except Exception as exc:  # one side failing must not lose the other's results
            log(f"    {MIRROR_NAMES[m]} failed: {exc!r}")
            mirrors.append({"mirror": m, "name": MIRROR_NAMES[m], "status": f"failed: {exc}", "groups": []})
    return {
        "command": " ".join([".venv/bin/python -m bench.failover", *map(shlex.quote, sys.argv[1:])]),
        "date": datetime.date.today().isoformat(),
        "kafka_version": kafka_version(),
        "source_topic": topic,
        "partitions": PARTITIONS,
        "record_bytes": RECORD_BYTES,
        "codec": CODEC,
        "records_per_partition": counts,
        "mid_fraction": args.mid_fraction,
        "mid_batches": {p: asdict(b) for p, b in batches.items()},
        "source_groups": plans,
        "mm2_settings": MM2_CHECKPOINTS,
        "settle_s": args.settle,
        "sync_timeout_s": args.sync_timeout,
        "mirrors": mirrors,
    }


def render(results: Mapping[str, Any]) -> str:
    """This scenario's section of docs/failover-benchmarks.md, as ``failover_section`` with its heading."""
    return "\n".join(failover_section(results))
