"""The DR round trip: fail over to the new primary in a disaster, run there, fail back. MirrorMaker 2's manual
procedure at its defaults against mirror-sink, on the same clusters in one run.

    .venv/bin/python -m bench.round_trip            # local clusters, 60k records; about 6 minutes on 2 cores
    .venv/bin/python -m bench.round_trip --quick    # smoke run: 6k records, MM2's first sync final; about 4 minutes

Cluster A (the local ``source`` cluster) is the old primary, B (``target``) the new one. Each side gets its own
topic and group names and runs the same scenario; every value starts with ``{kind}{partition}-{seq}|`` so a reader
knows exactly which record it got: ``a`` written on A before the disaster (all mirrored), ``d`` written on A after
the forward link stopped (never mirrored: the *diverged* records), ``b`` written on B after the failover, ``f``
written on A after the forward link resumed.

1. A topic of 6 partitions on A gets ``--records`` records (lz4, batches of hundreds; offset == seq, checked). The
   group ``app`` consumes about 40% of each partition on A, commits and leaves (idle).
2. The forward link A -> B runs until caught up (and until the group's offsets are carried over), then stops.
3. Disaster: ``--diverged`` records are written on A (100 per partition by default) and A is taken for lost.
4. Failover: the group moves to B, and ``--new-on-b`` records are written on B where producers write after a
   failover. The group consumes on B from where the failover put it to a stop record: on the even partitions
   half-way through the rest of the mirrored records, on the odd ones half-way through B's new records. It commits
   there and leaves.
5. A is back. Failback: B's new records are copied home to A, the group moves home to A, then the forward link
   resumes with 5 new records per partition written on A.
6. A consumer with the group's id on A (read_committed, ``auto.offset.reset=earliest``, no auto commit) reads every
   topic the group consumes on A from its committed offsets to the end.

Per side: *re-read* counts deliveries of records the group had consumed already (on A before the disaster, on B,
or earlier in the same read), at the failover (on B) and at the failback (on A); *skipped* counts records of the
group's stream (``a``, ``b`` and ``f`` records) it never got; *duplicated* counts extra copies of a record across
the group's topics on A after the round trip, plus records that reached B after the forward link resumed other
than the new ``f`` records and the diverged ``d`` records (an echo); *diverged* gives the records the tool reported
as diverged and those the group consumed on A without being told.

- mirror-sink (raw mode, exactly once, defaults; ``emit.checkpoints.enabled=true``,
  ``emit.checkpoints.interval.seconds=1``, ``source.cluster.alias=a``, ``target.cluster.alias=b``): ``mirror-sink
  run CONFIG`` until its shadow group holds A's end offsets and a checkpoint of the group exists, SIGTERM;
  ``mirror-sink failover`` on a copy of CONFIG whose source address is ``127.0.0.1:1`` (A unreachable: it uses the
  checkpoints). ``b`` records go to ``a.{topic}`` on B (the topic the group reads after the failover). Failback:
  ``mirror-sink failback CONFIG --reverse-config REV --report REPORT``; ``mirror-sink run REV`` until its shadow
  group on A holds B's end offsets, SIGTERM; ``mirror-sink failback CONFIG --finish --groups REGEX
  --wait-caught-up 60``; ``mirror-sink run CONFIG`` until it has mirrored the ``f`` records. The group reads
  ``{topic}`` on A.
- MirrorMaker 2, the manual procedure of its docs and KIP-382 at its defaults: dedicated mode, exactly once, with
  checkpoints, offset syncs and group offset sync on as ``bench.failover`` runs it (``MM2_CHECKPOINTS``; intervals
  60 s). Aliases: A is ``mm2a``, B is ``target`` (``bench.mm2.TARGET_ALIAS``) in both directions. MM2 A -> B
  runs until caught up and until the group synced to B has not changed for ``--settle`` s (or ``--sync-timeout``
  s), then stops. Failover: nothing to run; the group uses its synced offsets on ``mm2a.{topic}`` on B, and ``b``
  records go to a local ``{topic}`` on B (MM2's pattern: consumers read both). Failback: a second MM2 B -> A, the
  same properties with the aliases swapped, mirroring B's ``{topic}`` to ``target.{topic}`` on A (and offered
  ``mm2a.{topic}``, which its cycle check must leave alone), runs until caught up and until the group synced to A
  has settled, then stops. Forward resume: MM2 A -> B again (same alias, so it goes on from its committed offsets;
  offered ``target.{topic}`` too) until it has mirrored everything on A. The group reads ``{topic}`` and
  ``target.{topic}`` on A.

Steps are timed with the machine busy (2 cores, other work running beside it): read them as rough figures.
Results: ``bench/results/round-trip-<timestamp>.json`` (logs and configs in ``bench/results/round-trip-<timestamp>/``)
and Markdown tables on stdout (``bench.round_trip``); ``render(results)`` gives this scenario's section of
docs/failover-benchmarks.md (``bench.failover_report``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shlex
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.common.console import log, tail
from bench.consumer_groups import commit_source_group, group_states, mm2_checkpoints, watch_target_groups
from bench.mm2 import (
    LOG4J2,
    TARGET_ALIAS,
    MM2Process,
    OffsetsReader,
    java_command,
    mm2_properties,
    source_extent,
    stop_process,
    write_properties,
)
from bench.scenarios.failover import (
    CODEC,
    MIRROR_NAMES,
    MM2_CHECKPOINTS,
    PARTITIONS,
    RECORD_BYTES,
    fillers,
    mirror_sink_argv,
)
from devkafka.cluster import free_port
from devkafka.data import ProduceSpec, Rec, committed_offsets, create_topic, end_offsets, produce, read_all, reader
from devkafka.jars import KafkaJars
from devkafka.paths import kafka_version
from devkafka.processes import reap_with_this_process

TOOLS = ("ms", "mm2")
TOOL_NAMES = MIRROR_NAMES
MS_ALIAS = "a"
MS_TARGET_ALIAS = "b"  # the reverse link's source alias: apart from MM2's ``target`` on the same clusters
MM2_ALIAS = "mm2a"
#: mirror-sink's settings beside bench.failover's raw mode, exactly once: checkpoints on, every second.
MS_CHECKPOINTS = {"emit.checkpoints.enabled": "true", "emit.checkpoints.interval.seconds": "1"}
CONSUMED_FRACTION = 0.4
AFTER_PER_PARTITION = 5  # ``f`` records written on A after the forward link resumed
#: Where each kind of record sits in the group's stream (``d`` is not in it: it diverged).
KIND_ORDER = {"a": 0, "d": 1, "b": 2, "f": 3}
STEPS = ("failover", "failback_start", "reverse_catch_up", "group_home", "forward_resume")
STEP_NAMES = {
    "failover": "failover",
    "failback_start": "failback start",
    "reverse_catch_up": "reverse link catch-up",
    "group_home": "group moved home",
    "forward_resume": "forward link resumed",
}

Ident = tuple[str, int, int]  # (kind, partition, seq)
_VALUE = re.compile(rb"([adbf])(\d+)-(\d+)\|")


# -- records -----------------------------------------------------------------------------------------


def value_of(kind: str, partition: int, seq: int, filler: bytes) -> bytes:
    """``{kind}{partition}-{seq}|`` then filler, RECORD_BYTES long (longer only if the prefix is)."""
    head = b"%s%d-%d|" % (kind.encode(), partition, seq)
    return head + filler[: max(0, RECORD_BYTES - len(head))]


def ident_of(value: bytes | None) -> Ident | None:
    """(kind, partition, seq) of a value written by ``value_of``; None for anything else."""
    m = _VALUE.match(value or b"")
    return (m.group(1).decode(), int(m.group(2)), int(m.group(3))) if m else None


def name_of(ident: Ident | None) -> str | None:
    """``a3-4007`` for ("a", 3, 4007)."""
    return None if ident is None else f"{ident[0]}{ident[1]}-{ident[2]}"


def rank(ident: Ident) -> tuple[int, int]:
    """An ident's place within its partition's stream."""
    return KIND_ORDER[ident[0]], ident[2]


def write_records(bootstrap: str, topic: str, kind: str, per_partition: Mapping[int, int]) -> None:
    """``per_partition[p]`` records of ``kind`` into each partition (seq from 0), partitions interleaved."""
    filler = fillers()
    records = [
        Rec(b"k%d" % (seq % 1000), value_of(kind, p, seq, filler[(seq * PARTITIONS + p) % len(filler)]), partition=p)
        for seq in range(max(per_partition.values(), default=0))
        for p, n in sorted(per_partition.items())
        if seq < n
    ]
    produce(bootstrap, topic, records, ProduceSpec(compression=CODEC, linger_ms=50, batch_bytes=256 * 1024))


@dataclass(frozen=True)
class Stored:
    """One record as stored: its offset and identity."""

    offset: int
    ident: Ident | None


def read_idents(bootstrap: str, topic: str) -> dict[int, list[Stored]]:
    """Every committed record of ``topic`` per partition, in offset order."""
    return {
        p: [Stored(r.offset, ident_of(r.value)) for r in recs]
        for p, recs in read_all(bootstrap, topic, timeout=300).items()
    }


def side_topics(bootstrap: str, base: str) -> list[str]:
    """The topics of one side (their names hold ``base``)."""
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics
    return sorted(t for t in topics if base in t)


def copies(bootstrap: str, topics: Iterable[str]) -> Counter[Ident]:
    """How many times each record is stored across ``topics``."""
    out: Counter[Ident] = Counter()
    for topic in topics:
        for recs in read_idents(bootstrap, topic).values():
            out.update(r.ident for r in recs if r.ident is not None)
    return out


# -- a consumer of the group -------------------------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    """One record a consumer of the group got."""

    topic: str
    partition: int
    offset: int
    ident: Ident | None


def consume_as_group(
    bootstrap: str, group: str, stops: Mapping[tuple[str, int], int], *, commit: bool
) -> tuple[list[Delivery], dict[tuple[str, int], int]]:
    """A consumer with ``group``'s id (read_committed, no auto commit) reads each partition from the group's
    committed offset (the beginning where it has none: ``auto.offset.reset=earliest``) up to, not including,
    ``stops[(topic, partition)]``; with ``commit`` it then commits the stops. Assigned, not subscribed: the group
    stays without members. Returns what it got, in order, and the offsets it started from (-1001: none)."""
    start = committed_offsets(bootstrap, group, list(stops))
    consumer = reader(bootstrap, group, **{"auto.offset.reset": "earliest"})
    pending = {tp for tp, stop in stops.items() if max(start[tp], 0) < stop}
    got: list[Delivery] = []
    deadline = time.monotonic() + 300
    try:
        consumer.assign(
            [TopicPartition(t, p, o if (o := start[(t, p)]) >= 0 else OFFSET_BEGINNING) for t, p in pending]
        )
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group}: {sorted(pending)} not read up to {dict(stops)}")
            for msg in consumer.consume(10_000, 0.5):
                tp, err = (msg.topic() or "", msg.partition() or 0), msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(err)
                    pending.discard(tp)
                    continue
                offset = msg.offset() or 0
                if tp not in pending or offset >= stops[tp]:
                    continue  # past the stop: the application stops before it
                got.append(Delivery(tp[0], tp[1], offset, ident_of(msg.value())))
                if offset + 1 >= stops[tp]:
                    pending.discard(tp)
        if commit:
            offsets = [TopicPartition(t, p, max(stop, start[(t, p)])) for (t, p), stop in sorted(stops.items())]
            consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()
    return got, start


def read_to_end(bootstrap: str, group: str, topics: Sequence[str]) -> tuple[list[Delivery], dict[tuple[str, int], int]]:
    """The final read: the group's consumer reads every partition of ``topics`` to its end; commits nothing."""
    stops = {(t, p): end for t in topics for p, end in end_offsets(bootstrap, t).items()}
    return consume_as_group(bootstrap, group, stops, commit=False)


def stops_for(
    stop: Mapping[int, Ident], contents: Mapping[str, Mapping[int, list[Stored]]]
) -> dict[tuple[str, int], int]:
    """Where the group stops in each (topic, partition): at the first record at or past its stop record in the
    stream; after the last record of a topic-partition whose records all come before it."""
    out = {}
    for topic, parts in contents.items():
        for p, recs in parts.items():
            at = next((r.offset for r in recs if r.ident is not None and rank(r.ident) >= rank(stop[p])), None)
            out[(topic, p)] = at if at is not None else (recs[-1].offset + 1 if recs else 0)
    return out


# -- the scenario --------------------------------------------------------------------------------------


@dataclass
class Trip:
    """One side's names and plan."""

    tool: str
    base: str  # held by every topic name of the side
    topic: str  # on A
    group: str
    records: dict[int, int]  # ``a`` records per partition
    diverged: dict[int, int]
    new_on_b: dict[int, int]
    after: dict[int, int]
    consumed_on_a: dict[int, int]  # the group's offset on A before the disaster (== the next seq)
    stop: dict[int, Ident]  # the first record the group has not consumed when it leaves B
    steps: dict[str, float | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def role(self, p: int) -> str:
        """``mirrored``: the group stops on B inside the mirrored records; ``new``: inside B's new records."""
        return "new" if self.stop[p][0] == "b" else "mirrored"


def per_partition(total: int) -> dict[int, int]:
    """``total`` split over the partitions (the first ones get the remainder)."""
    return {p: total // PARTITIONS + (p < total % PARTITIONS) for p in range(PARTITIONS)}


def prepare(args: argparse.Namespace, src: str, tool: str) -> Trip:
    """Write the ``a`` records on A, check offset == seq, let the group consume ~40% there and leave."""
    base = f"{args.run_id}-{tool}"
    records = per_partition(args.records)
    consumed = {p: min(n, int(n * CONSUMED_FRACTION) + 7) for p, n in records.items()}
    new_on_b = per_partition(args.new_on_b)
    stop = {
        p: ("b", p, new_on_b[p] // 2) if p % 2 else ("a", p, consumed[p] + (records[p] - consumed[p]) // 2)
        for p in range(PARTITIONS)
    }
    trip = Trip(
        tool, base, f"{base}-orders", f"{base}-app", records, per_partition(args.diverged), new_on_b,
        dict.fromkeys(range(PARTITIONS), AFTER_PER_PARTITION), consumed, stop,
    )  # fmt: skip
    create_topic(src, trip.topic, PARTITIONS)
    write_records(src, trip.topic, "a", records)
    for p, recs in read_idents(src, trip.topic).items():
        if [(r.offset, r.ident) for r in recs] != [(s, ("a", p, s)) for s in range(records[p])]:
            raise AssertionError(f"{trip.topic}-{p}: offsets are not the records' seqs")
    commit_source_group(src, trip.group, trip.topic, consumed)
    log(f"    {args.records:,} records on A in {trip.topic}; group {trip.group} consumed {consumed} there, idle")
    return trip


def disaster(src: str, trip: Trip) -> None:
    """The forward link is down: records written on A now are never mirrored."""
    write_records(src, trip.topic, "d", trip.diverged)
    log(f"    disaster: {sum(trip.diverged.values()):,} records written on A after the forward link stopped")


def consume_on_b(tgt: str, trip: Trip, topics: Sequence[str]) -> list[Delivery]:
    """The group consumes on B from where the failover put it up to its stop records, commits and leaves."""
    contents = {t: read_idents(tgt, t) for t in topics}
    stops = stops_for(trip.stop, contents)
    got, start = consume_as_group(tgt, trip.group, stops, commit=True)
    log(
        f"    group on B from {_offsets(start)} to {_offsets(stops)}: {len(got):,} records "
        f"(first per partition: {_firsts(got)})"
    )
    return got


def _offsets(offsets: Mapping[tuple[str, int], int]) -> str:
    return ", ".join(f"{t[-12:]}-{p}:{o}" for (t, p), o in sorted(offsets.items()))


def _firsts(got: Sequence[Delivery]) -> dict[str, str | None]:
    first: dict[str, str | None] = {}
    for d in got:
        first.setdefault(f"{d.topic[-12:]}-{d.partition}", name_of(d.ident))
    return first


def arrivals(tgt: str, base: str, before: Mapping[str, Mapping[int, int]]) -> Counter[str]:
    """Records on B's topics of the side past ``before`` (their end offsets earlier), by kind."""
    out: Counter[str] = Counter()
    for topic in side_topics(tgt, base):
        if topic.endswith(".internal"):
            continue
        for p, recs in read_idents(tgt, topic).items():
            since = before.get(topic, {}).get(p, 0)
            out.update(r.ident[0] if r.ident is not None else "?" for r in recs if r.offset >= since)
    return out


def b_ends(tgt: str, base: str) -> dict[str, dict[int, int]]:
    """End offsets of B's topics of the side."""
    return {t: end_offsets(tgt, t) for t in side_topics(tgt, base) if not t.endswith(".internal")}


def evaluate(
    trip: Trip,
    on_b: Sequence[Delivery],
    home: Sequence[Delivery],
    *,
    home_offsets: Mapping[tuple[str, int], int],
    on_a: Counter[Ident],
    to_b: Counter[str],
) -> dict[str, Any]:
    """What the group got against what it had consumed, per partition and in all."""
    parts = range(PARTITIONS)
    stream = {("a", p, s) for p in parts for s in range(trip.records[p])}
    stream |= {("b", p, s) for p in parts for s in range(trip.new_on_b[p])}
    stream |= {("f", p, s) for p in parts for s in range(trip.after[p])}
    seen = {("a", p, s) for p in parts for s in range(trip.consumed_on_a[p])}
    first_new = {p: ("a", p, trip.consumed_on_a[p]) for p in parts}
    due_on_b = {i for i in stream if rank(first_new[i[1]]) <= rank(i) < rank(trip.stop[i[1]])}
    rows = {p: Counter[str]() for p in parts}
    by_topic: Counter[str] = Counter()  # failback re-reads per topic on A
    foreign = 0
    for phase, deliveries in (("failover", on_b), ("failback", home)):
        for d in deliveries:
            if d.ident is None or d.ident[1] != d.partition:
                foreign += 1
                continue
            row = rows[d.partition]
            if d.ident in seen:
                row[f"reread_{phase}"] += 1
                if phase == "failback":
                    by_topic[d.topic] += 1
            seen.add(d.ident)
            if d.ident[0] == "d":
                row["diverged_consumed"] += 1
        if phase == "failover":
            for i in due_on_b - seen:
                rows[i[1]]["skipped_failover"] += 1
    for i in stream - seen:
        rows[i[1]]["skipped"] += 1
    first_home: dict[int, dict[str, str | None]] = {p: {} for p in parts}
    for d in home:
        first_home[d.partition].setdefault(d.topic, name_of(d.ident))
    keys = ("reread_failover", "skipped_failover", "reread_failback", "skipped", "diverged_consumed")
    per = [
        {
            "partition": p, "role": trip.role(p), "consumed_on_a": trip.consumed_on_a[p], "stop": name_of(trip.stop[p]),
            "home_offsets": {t: o for (t, q), o in sorted(home_offsets.items()) if q == p},
            "first_read_home": first_home[p], **{k: rows[p][k] for k in keys},
        }
        for p in parts
    ]  # fmt: skip
    dup_on_a = sum(n - 1 for n in on_a.values() if n > 1)
    echo = sum(n for kind, n in to_b.items() if kind not in ("f", "d")) + max(0, to_b["f"] - sum(trip.after.values()))
    return {
        **{k: sum(r[k] for r in per) for k in keys},
        "reread_failback_by_topic": dict(by_topic),
        "diverged_consumed_unique": len({d.ident for d in (*on_b, *home) if d.ident and d.ident[0] == "d"}),
        "foreign": foreign,
        "copies_on_a": dup_on_a,
        "arrived_on_b_after_resume": dict(to_b),
        "echo_to_b": echo,
        "duplicated": dup_on_a + echo,
        "f_missing_on_b": max(0, sum(trip.after.values()) - to_b["f"]),
        "per_partition": per,
    }


def side_result(trip: Trip, extra: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON of one side."""
    return {
        "tool": trip.tool,
        "name": TOOL_NAMES[trip.tool],
        "topic": trip.topic,
        "group": trip.group,
        "records_per_partition": trip.records,
        "diverged_per_partition": trip.diverged,
        "new_on_b_per_partition": trip.new_on_b,
        "after_per_partition": trip.after,
        "consumed_on_a": trip.consumed_on_a,
        "stop": {p: name_of(i) for p, i in trip.stop.items()},
        "steps_s": trip.steps,
        "notes": trip.notes,
        **extra,
    }


# -- mirror-sink -------------------------------------------------------------------------------------


def _ready(check: Callable[[], bool]) -> bool:
    try:
        return check()
    except (KafkaException, KeyError):
        return False  # a topic or group not there yet


def ms_run_until(args: argparse.Namespace, name: str, path: Path, label: str, ready: Callable[[], bool]) -> float:
    """``mirror-sink run CONFIG`` until ``ready()``, then SIGTERM (it must exit 0); seconds from start to ready."""
    log_path = args.workdir / f"{name}.{label}.log"
    with open(log_path, "wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen(
            mirror_sink_argv("run", str(path), "--worker-id", name), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    reap_with_this_process(pid=proc.pid)
    try:
        while not _ready(ready):
            if proc.poll() is not None:
                raise RuntimeError(f"mirror-sink exited with {proc.returncode}; see {log_path}\n{tail(log_path)}")
            if time.monotonic() - started > args.mirror_timeout:
                raise TimeoutError(f"mirror-sink ({label}) not done in {args.mirror_timeout:.0f} s; see {log_path}")
            time.sleep(0.5)
        seconds = time.monotonic() - started
    finally:
        stop_process(proc, 60)
    if proc.returncode != 0:
        raise RuntimeError(f"mirror-sink ({label}) exited with {proc.returncode} on SIGTERM; see {log_path}")
    log(f"    mirror-sink run ({label}): done {seconds:.1f} s after start; stopped (SIGTERM, exit 0)")
    return seconds


def shadow_caught_up(src: str, src_topic: str, tgt: str, tgt_topic: str, group: str) -> bool:
    """The shadow group holds the source's end offsets and no transaction is open on the target topic."""
    ends = end_offsets(src, src_topic)
    stored = committed_offsets(tgt, group, [(tgt_topic, p) for p in ends], timeout=10)
    if any(stored[(tgt_topic, p)] < e for p, e in ends.items()):
        return False
    return end_offsets(tgt, tgt_topic) == end_offsets(tgt, tgt_topic, isolation="read_uncommitted")


def ms_cli(args: argparse.Namespace, label: str, *argv: str) -> tuple[str, float]:
    """Run one ``mirror-sink`` command (it must exit 0); its output and seconds."""
    started = time.monotonic()
    done = subprocess.run(mirror_sink_argv(*argv), capture_output=True, text=True, timeout=600, check=False)
    seconds = time.monotonic() - started
    (args.workdir / f"{label}.log").write_text(done.stdout + done.stderr)
    log(f"    $ mirror-sink {shlex.join(argv)}   ({seconds:.1f} s, exit {done.returncode})")
    print("\n".join("      " + line for line in done.stdout.splitlines()), flush=True)
    if done.returncode != 0:
        raise RuntimeError(f"`mirror-sink {argv[0]}` exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout, seconds


def ms_config(trip: Trip, src: str, tgt: str) -> dict[str, str]:
    """Raw mode, exactly once, one task, checkpoints every second (bench.failover's setup otherwise)."""
    return {
        "connector.class": "MirrorSinkConnector",
        "source.cluster.alias": MS_ALIAS,
        "target.cluster.alias": MS_TARGET_ALIAS,
        "source.cluster.bootstrap.servers": src,
        "target.cluster.bootstrap.servers": tgt,
        "topics": re.escape(trip.topic),
        "replication.policy.class": "DefaultReplicationPolicy",
        "tasks.max": "1",
        "target.cluster.producer.compression.type": CODEC,
        "mirror.mode": "raw",
        "transaction.producer": "true",
        **MS_CHECKPOINTS,
    }


def ms_forward_and_failover(args: argparse.Namespace, src: str, tgt: str, trip: Trip) -> dict[str, Any]:
    """Forward link until caught up with a checkpoint of the group, the disaster, the failover from checkpoints."""
    name, remote = f"{trip.base}-mirror", f"{MS_ALIAS}.{trip.topic}"
    config = ms_config(trip, src, tgt)
    path, gone = args.workdir / f"{name}.json", args.workdir / f"{name}.gone.json"
    path.write_text(json.dumps({"name": name, "config": config}, indent=2))
    gone.write_text(json.dumps({"name": name, "config": config | {"source.cluster.bootstrap.servers": "127.0.0.1:1"}}))

    def checkpointed() -> bool:
        held = mm2_checkpoints(tgt, MS_ALIAS, [trip.group])[trip.group]
        return all(held.get(p, (-1, -1))[0] == o for p, o in trip.consumed_on_a.items())

    caught = ms_run_until(
        args, name, path, "forward",
        lambda: shadow_caught_up(src, trip.topic, tgt, remote, f"connect-{name}") and checkpointed(),
    )  # fmt: skip
    checkpoints = mm2_checkpoints(tgt, MS_ALIAS, [trip.group])[trip.group]
    disaster(src, trip)
    regex = f"^{re.escape(trip.group)}$"
    out, trip.steps["failover"] = ms_cli(args, f"{name}.failover", "failover", str(gone), "--groups", regex)
    return {
        "config": str(path),
        "config_source_gone": str(gone),
        "remote_topic": remote,
        "forward_caught_up_s": caught,
        "checkpoints": checkpoints,
        "failover_output": out,
        "group_on_b_after_failover": {
            p: o for (_, p), o in committed_offsets(tgt, trip.group, [(remote, p) for p in range(PARTITIONS)]).items()
        },
    }


def ms_failback(args: argparse.Namespace, src: str, tgt: str, trip: Trip, path: Path) -> dict[str, Any]:
    """Failback start, the reverse link until caught up, the groups home, the forward link resumed."""
    name, remote = f"{trip.base}-mirror", f"{MS_ALIAS}.{trip.topic}"
    rev_path, report_path = args.workdir / f"{name}.reverse.json", args.workdir / f"{name}.divergence.json"
    out, trip.steps["failback_start"] = ms_cli(
        args, f"{name}.failback", "failback", str(path), "--reverse-config", str(rev_path), "--report", str(report_path)
    )
    report = json.loads(report_path.read_text())
    reverse = json.loads(rev_path.read_text())
    rev_name = reverse["name"]
    trip.steps["reverse_catch_up"] = ms_run_until(
        args, rev_name, rev_path, "reverse",
        lambda: shadow_caught_up(tgt, remote, src, trip.topic, f"connect-{rev_name}"),
    )  # fmt: skip
    regex = f"^{re.escape(trip.group)}$"
    finish, trip.steps["group_home"] = ms_cli(
        args, f"{name}.finish", "failback", str(path), "--finish", "--groups", regex, "--wait-caught-up", "60"
    )
    home = committed_offsets(src, trip.group, [(trip.topic, p) for p in range(PARTITIONS)])
    before = b_ends(tgt, trip.base)
    write_records(src, trip.topic, "f", trip.after)
    trip.steps["forward_resume"] = ms_run_until(
        args, name, path, "resumed", lambda: shadow_caught_up(src, trip.topic, tgt, remote, f"connect-{name}")
    )
    kept = [t for t in side_topics(src, trip.base) if ".diverged-" in t]
    held = copies(src, kept)
    written = Counter({("d", p, s): 1 for p, n in trip.diverged.items() for s in range(n)})
    return {
        "failback_output": out,
        "divergence_report": {k: report.get(k) for k in ("failover", "records", "ranges")},
        "diverged_reported": report.get("records"),
        "reverse_config": reverse,
        "finish_output": finish,
        "group_home": {p: o for (_, p), o in home.items()},
        "b_ends_before_resume": before,
        "diverged_kept_in": kept,
        "diverged_kept_exactly": held == written,
    }


def run_ms_side(args: argparse.Namespace, src: str, tgt: str) -> dict[str, Any]:
    """mirror-sink's round trip."""
    trip = prepare(args, src, "ms")
    remote = f"{MS_ALIAS}.{trip.topic}"
    forward = ms_forward_and_failover(args, src, tgt, trip)
    write_records(tgt, remote, "b", trip.new_on_b)
    log(f"    {sum(trip.new_on_b.values()):,} records written on B to {remote}")
    on_b = consume_on_b(tgt, trip, [remote])
    back = ms_failback(args, src, tgt, trip, Path(forward["config"]))
    to_b = arrivals(tgt, trip.base, back.pop("b_ends_before_resume"))
    home, start = read_to_end(src, trip.group, [trip.topic])
    on_a = copies(src, [t for t in side_topics(src, trip.base) if not t.endswith(".internal")])
    outcome = evaluate(trip, on_b, home, home_offsets=start, on_a=on_a, to_b=to_b)
    outcome["diverged_reported"] = back["diverged_reported"]
    return side_result(trip, {"status": "ok", "outcome": outcome, **forward, **back})


# -- MirrorMaker 2 -----------------------------------------------------------------------------------


def swap_aliases(props: Mapping[str, str], one: str, other: str) -> dict[str, str]:
    """``props`` with the cluster aliases ``one`` and ``other`` swapped: in ``clusters`` and in every
    ``{alias}.key`` and ``{alias}->{alias}.key``. ``mm2_properties`` names the target ``TARGET_ALIAS``; the
    reverse link keeps each cluster's alias by swapping them back."""
    swap = {one: other, other: one}
    out = {}
    for key, value in props.items():
        head, dot, rest = key.partition(".")
        renamed = key
        if "->" in head:
            left, right = head.split("->", 1)
            renamed = f"{swap.get(left, left)}->{swap.get(right, right)}{dot}{rest}"
        elif dot and head in swap:
            renamed = f"{swap[head]}{dot}{rest}"
        out[renamed] = value
    out["clusters"] = ", ".join(swap.get(a.strip(), a.strip()) for a in props["clusters"].split(","))
    return out


def mm2_link_properties(source: str, target: str, topics: Sequence[str], source_alias: str) -> dict[str, str]:
    """One MM2 flow ``{source_alias}->target`` as bench.failover runs it: exactly once, checkpoints on."""
    props = mm2_properties(
        source, target, list(topics), alias=source_alias, exactly_once=True, tasks=PARTITIONS,
        rest_port=free_port(), compression=CODEC,
    )  # fmt: skip
    return props | MM2_CHECKPOINTS


def start_mm2_link(args: argparse.Namespace, props: Mapping[str, str], stem: str, alias: str, topic: str) -> MM2Process:
    """Start MM2 with ``props`` (files ``{stem}.*`` in the workdir); ``alias`` is the source cluster's."""
    props_path, log4j2_path, log_path = (
        args.workdir / f"{stem}{s}" for s in (".properties", ".log4j2.properties", ".log")
    )
    write_properties(props_path, props)
    log4j2_path.write_text(LOG4J2)
    cmd = java_command(KafkaJars.ensure(), props_path, log4j2_path, "2g")
    with open(log_path, "wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    reap_with_this_process(pid=proc.pid)
    log(f"    MM2 {props['clusters']} ({stem}), log {log_path}")
    return MM2Process(proc, alias, topic, log_path, started)


def mm2_mirrored(
    args: argparse.Namespace, mm2: MM2Process, source: str, target: str, topic: str
) -> tuple[float, float]:
    """Wait until MM2's committed offsets cover every record of ``topic`` (as it is now): the seconds from its
    start to its first commit of ``topic`` and to caught up (bench.mm2's completion check)."""
    extent = source_extent(source, topic, "read_committed")
    reader = OffsetsReader(target, mm2.alias, [topic])
    first: float | None = None
    try:
        while True:
            committed = reader.poll()
            now = time.monotonic()
            if first is None and any(t == topic for t, _ in committed):
                first = now - mm2.started
            if all(last is None or committed.get((topic, p), -1) >= last for p, (_, _, last) in extent.items()):
                log(f"    MM2 mirrored {topic} {now - mm2.started:.1f} s after its start")
                return first if first is not None else now - mm2.started, now
            if mm2.proc.poll() is not None:
                raise RuntimeError(f"MM2 exited with {mm2.proc.returncode}; see {mm2.log}\n{tail(mm2.log)}")
            if now - mm2.started > args.mirror_timeout:
                raise TimeoutError(f"MM2 did not mirror {topic} in {args.mirror_timeout:.0f} s; see {mm2.log}")
            time.sleep(0.5)
    finally:
        reader.close()


def mm2_sync_log(path: Path, group: str) -> list[str]:
    """MM2's log lines about syncing or checkpointing ``group`` at WARN or ERROR."""
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    return [ln[:400] for ln in lines if group in ln and (" WARN " in ln or " ERROR " in ln)][:10]


def mm2_forward(args: argparse.Namespace, src: str, tgt: str, trip: Trip) -> dict[str, Any]:
    """MM2 A -> B until caught up and the group synced to B has settled; then the disaster (MM2 stopped)."""
    remote = f"{MM2_ALIAS}.{trip.topic}"
    mm2 = start_mm2_link(
        args, mm2_link_properties(src, tgt, [trip.topic], MM2_ALIAS), f"{trip.base}-forward", MM2_ALIAS, remote
    )
    try:
        _, caught_up = mm2_mirrored(args, mm2, src, tgt, trip.topic)
        watch = watch_target_groups(
            tgt, [trip.group], remote, range(PARTITIONS), since=caught_up, settle_s=args.settle,
            timeout_s=args.sync_timeout, alive=lambda: mm2.proc.poll() is None,
        )  # fmt: skip
    finally:
        mm2.stop()
    disaster(src, trip)
    synced = committed_offsets(tgt, trip.group, [(remote, p) for p in range(PARTITIONS)])
    trip.steps["failover"] = None  # nothing to run: the consumers start on B with what MM2 synced before
    trip.notes.append(
        "failover: nothing to run; the group's offsets on B are those MM2 synced "
        f"{_sec(watch.first_full_s[trip.group])} s after the data caught up, before the disaster"
    )
    return {
        "remote_topic": remote,
        "forward_caught_up_s": caught_up - mm2.started,
        "forward_log": str(mm2.log),
        "synced_to_b_after_s": watch.first_full_s[trip.group],
        "sync_history_b": watch.history[trip.group],
        "checkpoints_forward": mm2_checkpoints(tgt, MM2_ALIAS, [trip.group])[trip.group],
        "group_on_b_after_failover": {p: o for (_, p), o in synced.items()},
    }


def mm2_failback(args: argparse.Namespace, src: str, tgt: str, trip: Trip) -> dict[str, Any]:
    """MM2 B -> A (the aliases swapped) until caught up and the group synced to A has settled."""
    local, remote, home_remote = trip.topic, f"{MM2_ALIAS}.{trip.topic}", f"{TARGET_ALIAS}.{trip.topic}"
    props = swap_aliases(mm2_link_properties(tgt, src, [local, remote], MM2_ALIAS), MM2_ALIAS, TARGET_ALIAS)
    mm2 = start_mm2_link(args, props, f"{trip.base}-reverse", TARGET_ALIAS, home_remote)
    try:
        trip.steps["failback_start"], caught_up = mm2_mirrored(args, mm2, tgt, src, local)
        trip.steps["reverse_catch_up"] = caught_up - mm2.started
        states = group_states(src, [trip.group])
        watch = watch_target_groups(
            src, [trip.group], home_remote, range(PARTITIONS), since=caught_up, settle_s=args.settle,
            timeout_s=args.sync_timeout, alive=lambda: mm2.proc.poll() is None,
        )  # fmt: skip
    finally:
        mm2.stop()
    trip.steps["group_home"] = watch.first_full_s[trip.group]
    trip.notes.append(
        "failback start: MM2 B -> A's start to its first commit; group moved home: from the reverse link caught "
        "up to MM2's periodic sync writing the group's offsets on A"
    )
    if watch.first_full_s[trip.group] is None:
        trip.notes.append(f"MM2 B -> A did not sync the group to A within {args.sync_timeout:.0f} s")
    return {
        "reverse_log": str(mm2.log),
        "reverse_properties": props,
        "group_state_on_a_during_sync": states,
        "synced_to_a_after_s": watch.first_full_s[trip.group],
        "sync_history_a": watch.history[trip.group],
        "checkpoints_reverse": mm2_checkpoints(src, TARGET_ALIAS, [trip.group])[trip.group],
        "reverse_warnings": mm2_sync_log(mm2.log, trip.group),
        "echo_topic_on_a": f"{TARGET_ALIAS}.{remote}" in side_topics(src, trip.base),
    }


def mm2_resume(args: argparse.Namespace, src: str, tgt: str, trip: Trip) -> dict[str, dict[int, int]]:
    """MM2 A -> B again, the same alias (it goes on from its committed offsets), until it has mirrored the ``f``
    records; returns B's end offsets before it started."""
    before = b_ends(tgt, trip.base)
    write_records(src, trip.topic, "f", trip.after)
    topics = [trip.topic, f"{TARGET_ALIAS}.{trip.topic}"]  # the second is a cycle: MM2 must leave it alone
    props = mm2_link_properties(src, tgt, topics, MM2_ALIAS)
    mm2 = start_mm2_link(args, props, f"{trip.base}-resumed", MM2_ALIAS, f"{MM2_ALIAS}.{trip.topic}")
    try:
        _, caught_up = mm2_mirrored(args, mm2, src, tgt, trip.topic)
        trip.steps["forward_resume"] = caught_up - mm2.started
    finally:
        mm2.stop()
    return before


def run_mm2_side(args: argparse.Namespace, src: str, tgt: str) -> dict[str, Any]:
    """MirrorMaker 2's round trip, its manual procedure at its defaults."""
    trip = prepare(args, src, "mm2")
    forward = mm2_forward(args, src, tgt, trip)
    local, remote = trip.topic, forward["remote_topic"]
    create_topic(tgt, local, PARTITIONS)
    write_records(tgt, local, "b", trip.new_on_b)
    log(f"    {sum(trip.new_on_b.values()):,} records written on B to its local {local}")
    on_b = consume_on_b(tgt, trip, [remote, local])
    back = mm2_failback(args, src, tgt, trip)
    before = mm2_resume(args, src, tgt, trip)
    to_b = arrivals(tgt, trip.base, before)
    home_topics = [trip.topic, f"{TARGET_ALIAS}.{trip.topic}"]
    home, start = read_to_end(src, trip.group, home_topics)
    on_a = copies(src, [t for t in side_topics(src, trip.base) if not t.endswith(".internal")])
    outcome = evaluate(trip, on_b, home, home_offsets=start, on_a=on_a, to_b=to_b)
    outcome["diverged_reported"] = 0  # nothing in MM2 looks for them
    extra = {"status": "ok", "outcome": outcome, "home_topics": home_topics, **forward, **back}
    return side_result(trip, extra | {"b_ends_before_resume": before})


# -- report ------------------------------------------------------------------------------------------


def _sec(value: object) -> str:
    return f"{value:,.1f}" if isinstance(value, int | float) else "-"


def _n(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else "-"


def results_tables(results: Mapping[str, Any]) -> list[str]:
    """The Markdown tables: records per tool and group, then the time of each step."""
    lines = [
        "| tool | group | re-read at failover | re-read at failback | skipped | duplicated "
        "| diverged: reported / consumed on A |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    times = [
        "| tool | " + " | ".join(f"{STEP_NAMES[s]} (s)" for s in STEPS) + " |",
        "| --- |" + " ---: |" * len(STEPS),
    ]
    for side in results.get("sides", []):
        o = side.get("outcome")
        if side.get("status") != "ok" or o is None:
            lines.append(f"| {side['name']} | - | - | - | - | - | {side.get('status', '-')} |")
            continue
        diverged = f"{_n(o['diverged_reported'])} / {_n(o['diverged_consumed_unique'])}"
        lines.append(
            f"| {side['name']} | `app` | {_n(o['reread_failover'])} | {_n(o['reread_failback'])} | {_n(o['skipped'])} "
            f"| {_n(o['duplicated'])} | {diverged} |"
        )
        steps = side.get("steps_s", {})
        nothing = "nothing to run" if side["tool"] == "mm2" else "-"
        cells = [_sec(steps.get(s)) if steps.get(s) is not None else nothing if s == "failover" else "-" for s in STEPS]
        times.append(f"| {side['name']} | {' | '.join(cells)} |")
    return [*lines, "", *times]


def _method(results: Mapping[str, Any]) -> list[str]:
    """What each side did, from the results."""
    n, k = results.get("records", 0), results.get("diverged", 0)
    m, f = results.get("new_on_b", 0), AFTER_PER_PARTITION * results.get("partitions", PARTITIONS)
    settle, timeout = (f"{results.get(k, 0):g}" for k in ("settle_s", "sync_timeout_s"))
    ms_settings = ", ".join(f"`{k}={v}`" for k, v in results.get("ms_settings", MS_CHECKPOINTS).items())
    mm2_settings = ", ".join(f"`{k}={v}`" for k, v in results.get("mm2_settings", MM2_CHECKPOINTS).items())
    return [
        f"`{results.get('command', 'python -m bench.round_trip')}` runs both tools on the same two clusters, each "
        f"with its own topic and group. A topic of {results.get('partitions', PARTITIONS)} partitions on A (the old "
        f"primary) gets {n:,} records; the group `app` consumes about "
        f"{results.get('consumed_fraction', CONSUMED_FRACTION):.0%} of each partition there and leaves. The forward "
        f"link copies A to B; then the disaster: the link stops and {k:,} records are written on A that are never "
        f"mirrored (the diverged records). The group fails over to B, {m:,} new records are written on B, and the "
        "group consumes on B to half-way through the rest of the mirrored records (even partitions) or half-way "
        "through B's new records (odd partitions), commits and leaves. A comes back: the group fails back to A and "
        f"the forward link resumes, with {f} new records written on A. Finally a consumer with the group's id on A "
        "reads from its committed offsets to the end. Each value names its record, so: *re-read* counts records the "
        "group had consumed already and got again (on B at the failover, on A at the failback); *skipped*, records "
        "of its stream (A's mirrored records, B's new ones, A's new ones) it never got; *duplicated*, extra copies of "
        "a record across the group's topics on A, plus records other than A's new ones and the diverged ones that "
        "reached B after the forward link resumed (an echo); *diverged*, the diverged records the tool reported, "
        "and how many the group consumed on A without being told.",
        "",
        f"- mirror-sink: raw mode, exactly once, defaults but for {ms_settings}; the clusters are named "
        f"`source.cluster.alias={MS_ALIAS}` and `target.cluster.alias={MS_TARGET_ALIAS}`. "
        "`mirror-sink run CONFIG` until "
        "its shadow group holds A's end offsets and a checkpoint of the group exists, SIGTERM; `mirror-sink failover "
        "CONFIG --groups REGEX` with A's address replaced by `127.0.0.1:1` (A unreachable: from the checkpoints); "
        "B's new records go to `a.{topic}` on B, the topic the group reads there. `mirror-sink failback CONFIG "
        "--reverse-config REV --report REPORT` (the diverged count is the report's), `mirror-sink run REV` until "
        "its shadow group on A holds B's end offsets, SIGTERM; `mirror-sink failback CONFIG --finish --groups REGEX "
        "--wait-caught-up 60`; `mirror-sink run CONFIG` until A's new records are on B. The group reads `{topic}` "
        "on A.",
        f"- MirrorMaker 2, its manual procedure at its defaults: dedicated mode, exactly once, "
        f"{mm2_settings} (checkpoint and group sync intervals 60 "
        f"s). A is `{MM2_ALIAS}`, B `{TARGET_ALIAS}`, in both directions. MM2 A -> B runs until caught up and until "
        f"the group it syncs to B has not changed for {settle} s (at most {timeout} s), then stops. Failover: "
        f"nothing to run: the group reads `{MM2_ALIAS}.{{topic}}` on B from its synced offsets, and B's new records "
        "go to a local `{topic}` on B, which the group reads too (MM2's pattern). Failback: a second MM2, B -> A, "
        "the same properties with the aliases swapped, copies B's `{topic}` to "
        f"`{TARGET_ALIAS}.{{topic}}` on A (and is offered `{MM2_ALIAS}.{{topic}}`, which its cycle check leaves "
        "alone) until caught up and until the group it syncs to A has settled the same way, then stops. Forward "
        "resume: MM2 A -> B again with the same alias, so it goes on from its committed offsets, until A's new "
        f"records are on B. The group reads `{{topic}}` (from its offsets of before the disaster: nothing "
        f"translates its position on `{MM2_ALIAS}.{{topic}}` back) and `{TARGET_ALIAS}.{{topic}}` on A.",
        "- Step times: mirror-sink's are its commands' wall times and, for the links, from `mirror-sink run`'s start "
        "to caught up. MirrorMaker 2's failback start is from the reverse MM2's start to its first commit, the "
        "reverse catch-up from its start to caught up, the group's move home from caught up to MM2's periodic sync "
        "writing the group's offsets on A, the forward resume from the JVM's start to caught up. The machine has "
        "2 cores and ran other work beside the benchmark: the times are rough.",
    ]


def _list(values: Sequence[int]) -> str:
    """``1``, ``1 or 3,233``, ``0, 1 or 2``."""
    shown = [f"{v:,}" for v in values]
    return " or ".join([", ".join(shown[:-1]), shown[-1]]) if len(shown) > 1 else (shown[0] if shown else "-")


def _findings(results: Mapping[str, Any]) -> list[str]:
    """Per tool, where the figures come from, in a paragraph each."""
    out = []
    for side in results.get("sides", []):
        o = side.get("outcome")
        if side.get("status") != "ok" or o is None:
            continue
        by_role: dict[str, Counter[str]] = {"mirrored": Counter(), "new": Counter()}
        for row in o["per_partition"]:
            by_role[row["role"]].update({k: row[k] for k in ("reread_failback", "diverged_consumed")})
        mid, new = by_role["mirrored"], by_role["new"]
        arrived = ", ".join(f"`{k}` {v:,}" for k, v in sorted(o["arrived_on_b_after_resume"].items())) or "none"
        named = {t.replace(side["topic"], "{topic}"): v for t, v in o.get("reread_failback_by_topic", {}).items()}
        reread = ", ".join(f"{v:,} on `{t}`" for t, v in sorted(named.items()) if v)
        on_b = sorted(set(side.get("group_on_b_after_failover", {}).values()))
        on_a = sorted(set(side.get("consumed_on_a", {}).values()))
        text = (
            f"- {side['name']}: the failover put the group at offset {_list(on_b)} of the topic it reads on B for "
            f"its offset {_list(on_a)} on A, so it re-read {o['reread_failover']:,} records there. "
            f"At the failback, the partitions where the group had stopped on B inside the mirrored "
            f"records re-read {mid['reread_failback']:,} records and consumed {mid['diverged_consumed']:,} diverged "
            f"ones; those where it had stopped inside B's new records re-read {new['reread_failback']:,} and consumed "
            f"{new['diverged_consumed']:,} diverged ones (re-read: {reread or 'none'}). Records that reached B after "
            f"the forward link resumed: {arrived} (`f` A's new records, `d` the diverged ones)."
        )
        if side["tool"] == "ms":
            text += (
                " `failback --finish` puts a group that had stopped inside the mirrored records at that record on A, "
                "before the failover's cut; the diverged records stay in the topic on A past the cut (the side topic "
                "holds a copy), so that group reads them, after the rest of the mirrored records and before B's "
                "records; the report lists every one. A group that had read into B's records is put after them. The "
                "forward link goes on from A's end, so the diverged records never reach B."
            )
        else:
            states = ", ".join(f"{v}" for v in side.get("group_state_on_a_during_sync", {}).values()) or "-"
            back = named.get(f"{TARGET_ALIAS}.{{topic}}", 0)
            text += (
                " Nothing translates the group's position on the remote topic on B back to the topic on A, so on A "
                "it resumes that topic at its offset of before the disaster, re-reading what it had consumed of it on "
                f"B and passing the diverged records, which nothing reports. On `{TARGET_ALIAS}.{{topic}}` MM2's sync "
                f"(through offset syncs every `offset.lag.max=100` records) accounts for {back:,} of the re-reads. The "
                f"group was idle ({states}) on A while MM2 synced it (MM2 syncs only groups without members). At the "
                "failover, MM2's checkpoint translated the group's offset through the offset syncs its in-memory "
                "store had kept (see the failover accuracy section above), which varies from run to run. MM2 resumed "
                "from its committed offsets, which are before the diverged records, so it copied them to B then."
            )
        out.append(text)
    return out


def round_trip_section(results: Mapping[str, Any], heading: str = "## The DR round trip") -> list[str]:
    """The Markdown lines of the round trip's section of docs/failover-benchmarks.md (``heading`` first)."""
    return [heading, "", *_method(results), "", *results_tables(results), "", *_findings(results)]


def run(args: argparse.Namespace, src: str, tgt: str) -> dict[str, Any]:
    """Both sides, one after the other; the results dict."""
    sides: list[dict[str, Any]] = []
    runners = {"ms": run_ms_side, "mm2": run_mm2_side}
    for i, tool in enumerate(args.tools, start=1):
        log(f"[{i}/{len(args.tools)}] {TOOL_NAMES[tool]}")
        started = time.monotonic()
        try:
            side = runners[tool](args, src, tgt)
        except Exception as exc:  # one side failing must not lose the other's results
            log(f"    {TOOL_NAMES[tool]} failed: {exc!r}")
            side = {"tool": tool, "name": TOOL_NAMES[tool], "status": f"failed: {exc}"}
        side["wall_s"] = time.monotonic() - started
        log(f"    {TOOL_NAMES[tool]}: {side['wall_s']:.0f} s")
        sides.append(side)
    return {
        "command": " ".join([".venv/bin/python -m bench.round_trip", *map(shlex.quote, sys.argv[1:])]),
        "date": datetime.date.today().isoformat(),
        "kafka_version": kafka_version(),
        "partitions": PARTITIONS,
        "record_bytes": RECORD_BYTES,
        "codec": CODEC,
        "records": args.records,
        "diverged": args.diverged,
        "new_on_b": args.new_on_b,
        "after_per_partition": AFTER_PER_PARTITION,
        "consumed_fraction": CONSUMED_FRACTION,
        "ms_settings": MS_CHECKPOINTS,
        "mm2_settings": MM2_CHECKPOINTS,
        "mm2_aliases": {"A": MM2_ALIAS, "B": TARGET_ALIAS},
        "settle_s": args.settle,
        "sync_timeout_s": args.sync_timeout,
        "workdir": str(args.workdir),
        "sides": sides,
    }


def render(results: Mapping[str, Any]) -> str:
    """This scenario's section of docs/failover-benchmarks.md, as ``round_trip_section`` with its heading."""
    return "\n".join(round_trip_section(results))
