"""``mirror-sink verify``: the target equals the source, record for record, through the offset map.

Every exactly-once transaction writes, with its records, the runs of source offsets it mirrored and
the target offsets they landed at (``mirror_sink.core.formats.offset_syncs``). Verification reads the
committed syncs, then both sides' committed records of each synced partition, and walks them
together: the target record at ``target + i`` of a run must equal the source record at
``source + i`` in key, value, headers and timestamp. It compares records, not bytes, so a raw
batch's re-stamped header and a re-encoded batch are judged alike.

What it concludes, per target partition:

- **verified**: equal on both sides (and the bytes compared);
- **mismatch**: a record that differs, or a committed target record that maps to no source offset
  (one appended by hand: a forged copy). The first is named with both sides' offsets;
- **unverifiable**, counted by reason, never as a mismatch: the source record is gone (compaction or
  retention after mirroring), the target record is gone (target retention or compaction), the target
  record has no offset sync (written before the syncs kept, which expire after
  ``offset-syncs.topic.retention.ms``), or the source range was skipped on purpose
  (``offset.gap.policy=skip``).

A target record counts as forged only below the target's last stable offset read *before* the syncs
are read to their end: every transaction committed by then has its sync in what was read, so a
record there with no run is not the mirror's.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.formats.offset_syncs import OffsetIndex, SyncRun
from mirror_sink.core.runtime.repeating_job import Stopped
from mirror_sink.failover.common.readers import OffsetSyncReader, assigned_reader, unused_group_error
from mirror_sink.failover.common.watermarks import read_watermarks

#: Reasons a record cannot be verified (the keys of ``PartitionVerdict.unverifiable``).
SOURCE_GONE = "source record gone (compaction or retention)"
TARGET_GONE = "target record gone (retention or compaction)"
NO_SYNC = "no offset sync (expired, or mirrored before syncs)"
SKIPPED = "skipped on purpose (offset.gap.policy=skip)"
#: Each reason in a few words, for the per-partition column of the table.
SHORT_REASONS = {SOURCE_GONE: "source gone", TARGET_GONE: "target gone", NO_SYNC: "no sync", SKIPPED: "skipped"}

#: A read that gets no record for this long fails (a slow one, under the byte-rate cap, goes on).
_STALL_S = 120.0
#: A consume call waits this long for a full batch: short, or each partition's last batch waits it out.
_POLL_S = 0.05
_BATCH = 5000

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Record:
    """What is compared of one record."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int

    @property
    def size(self) -> int:
        """Key, value and header bytes."""
        return len(self.key or b"") + len(self.value or b"") + sum(len(k) + len(v or b"") for k, v in self.headers)

    def difference(self, other: Record) -> str | None:
        """What differs from ``other`` (the source's record), or None."""
        for what, mine, theirs in (
            ("key", self.key, other.key),
            ("value", self.value, other.value),
            ("headers", self.headers, other.headers),
            ("timestamp", self.timestamp, other.timestamp),
        ):
            if mine != theirs:
                return f"{what} differs"
        return None


@dataclass(frozen=True)
class Mismatch:
    """A target record that is not the source's: where on both sides, and how."""

    target: TargetPartition
    target_offset: int
    source: SourcePartition
    source_offset: int | None  # None: it maps to no source offset
    what: str

    def __str__(self) -> str:
        at = "no source offset" if self.source_offset is None else f"{self.source.topic}-{self.source.partition}"
        where = at if self.source_offset is None else f"{at}@{self.source_offset}"
        return f"{self.target.topic}-{self.target.partition}@{self.target_offset} vs {where}: {self.what}"


@dataclass
class PartitionVerdict:
    """One target partition's outcome."""

    target: TargetPartition
    source: SourcePartition
    verified: int = 0
    bytes: int = 0
    mismatches: int = 0
    first_mismatch: Mismatch | None = None
    unverifiable: Counter[str] = field(default_factory=Counter)
    #: The target offset after the last record verified equal (None: none was).
    verified_to: int | None = None

    def mismatch(self, found: Mismatch) -> None:
        """Count one mismatch; the first is kept."""
        self.mismatches += 1
        if self.first_mismatch is None:
            self.first_mismatch = found


def compare_partition(
    target: TargetPartition,
    source: SourcePartition,
    runs: list[SyncRun],
    target_records: Iterable[Record],
    source_records: Iterable[Record],
    *,
    window: tuple[int, int],
    synced_from: int | None = None,
    skipped: int = 0,
) -> PartitionVerdict:
    """Walk a partition's committed target records in ``window`` (target offsets ``[start, end)``,
    ascending) with its source records (ascending) through ``runs`` (ascending on both sides).

    ``synced_from`` is the target offset of the oldest sync kept (default: the first run's): a record
    below it predates the syncs, a record at or past it with no run is not the mirror's. Pure: both
    sides are given as iterables."""
    start, end = window
    verdict = PartitionVerdict(target, source)
    if skipped:
        verdict.unverifiable[SKIPPED] += skipped
    first_synced = synced_from if synced_from is not None else (runs[0].target if runs else None)
    sources: Iterator[Record] = iter(source_records)
    current: Record | None = next(sources, None)
    i, mapped = 0, 0
    for rec in target_records:
        t = rec.offset
        while i < len(runs) and t >= runs[i].target + runs[i].length:
            i += 1
        if i < len(runs) and runs[i].target <= t:
            mapped += 1
            s = runs[i].source + t - runs[i].target
            while current is not None and current.offset < s:
                current = next(sources, None)
            if current is None or current.offset != s:
                verdict.unverifiable[SOURCE_GONE] += 1
                continue
            what = rec.difference(current)
            if what is None:
                verdict.verified += 1
                verdict.bytes += rec.size
                verdict.verified_to = t + 1
            else:
                verdict.mismatch(Mismatch(target, t, source, s, what))
        elif first_synced is None or t < first_synced:
            verdict.unverifiable[NO_SYNC] += 1
        else:
            verdict.mismatch(Mismatch(target, t, source, None, "maps to no source offset"))
    # Runs past the window are transactions committed after it was read: not yet this round's.
    expected = sum(max(0, min(r.target + r.length, end) - max(r.target, start)) for r in runs)
    if expected > mapped:
        verdict.unverifiable[TARGET_GONE] += expected - mapped
    return verdict


@dataclass
class VerifyReport:
    """Every verified partition of one connector."""

    connector: str
    partitions: list[PartitionVerdict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def verified(self) -> int:
        """Records verified equal, in all."""
        return sum(p.verified for p in self.partitions)

    @property
    def mismatches(self) -> int:
        """Mismatches, in all."""
        return sum(p.mismatches for p in self.partitions)

    @property
    def unverifiable(self) -> Counter[str]:
        """Unverifiable records by reason, in all."""
        total: Counter[str] = Counter()
        for p in self.partitions:
            total.update(p.unverifiable)
        return total

    @property
    def first_mismatch(self) -> Mismatch | None:
        """The first mismatch found, in partition order."""
        return next((p.first_mismatch for p in self.partitions if p.first_mismatch is not None), None)

    def table(self) -> str:
        """For operators: one line per partition, then the totals and the first mismatch."""
        rows = [("target partition", "verified", "bytes", "mismatches", "unverifiable", "verified to")]
        for p in self.partitions:
            rows.append(
                (
                    f"{p.target.topic}-{p.target.partition}",
                    str(p.verified),
                    str(p.bytes),
                    str(p.mismatches),
                    _unverifiable_cell(p.unverifiable),
                    "-" if p.verified_to is None else str(p.verified_to),
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        bytes_ = sum(p.bytes for p in self.partitions)
        lines.append(
            f"verified {self.verified} records ({bytes_} bytes) in {len(self.partitions)} partitions in "
            f"{self.seconds:.1f} s; {self.mismatches} mismatches"
        )
        lines += [f"unverifiable: {n} records: {reason}" for reason, n in sorted(self.unverifiable.items())]
        if (first := self.first_mismatch) is not None:
            lines.append(f"first mismatch: {first}")
        return "\n".join(lines)

    def to_json(self) -> str:
        """The report as JSON."""
        return json.dumps(
            {
                "connector": self.connector,
                "verified": self.verified,
                "mismatches": self.mismatches,
                "unverifiable": dict(self.unverifiable),
                "seconds": round(self.seconds, 3),
                "first_mismatch": None if self.first_mismatch is None else str(self.first_mismatch),
                "partitions": [
                    {
                        "target": {"topic": p.target.topic, "partition": p.target.partition},
                        "source": {"topic": p.source.topic, "partition": p.source.partition},
                        "verified": p.verified,
                        "bytes": p.bytes,
                        "mismatches": p.mismatches,
                        "first_mismatch": None if p.first_mismatch is None else str(p.first_mismatch),
                        "unverifiable": dict(p.unverifiable),
                        "verified_to": p.verified_to,
                    }
                    for p in self.partitions
                ],
            },
            indent=2,
        )


def _unverifiable_cell(counts: Counter[str]) -> str:
    """``0``, or the count with its reasons: ``15 (12 source gone, 3 no sync)``."""
    total = sum(counts.values())
    if not total:
        return "0"
    why = ", ".join(f"{n} {SHORT_REASONS.get(reason, reason)}" for reason, n in sorted(counts.items()) if n)
    return f"{total} ({why})"


class ByteRate:
    """Caps the bytes read per second (``None``: no cap), so verification never starves mirroring.

    It looks at the clock once per ``_CHECK_S`` worth of bytes (at most 64 KiB) and sleeps only when
    that far ahead: a sleep per record cost three times verification's own CPU (bench.evidence)."""

    _CHECK_S = 0.02
    _CHECK_MAX_BYTES = 64 * 1024

    def __init__(self, max_bytes_per_s: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.max = max_bytes_per_s
        self.clock = clock
        self.started = clock()
        self.read = 0
        self._unchecked = 0
        self._every = min(self._CHECK_MAX_BYTES, max(1, int((max_bytes_per_s or 0) * self._CHECK_S)))

    def take(self, n: int, stop: threading.Event | None = None, sleep: Callable[[float], None] | None = None) -> None:
        """Count ``n`` bytes; sleep until the rate is back under the cap (or ``stop`` is set)."""
        self.read += n
        if not self.max:
            return
        self._unchecked += n
        if self._unchecked < self._every:
            return
        self._unchecked = 0
        ahead = self.read / self.max - (self.clock() - self.started)
        if ahead >= self._CHECK_S:
            if sleep is not None:
                sleep(ahead)
            elif stop is not None:
                stop.wait(ahead)  # a stopping connector does not sleep out the cap
            else:
                time.sleep(ahead)


def mirrored_by(config: MirrorSinkConfig) -> Callable[[TargetPartition, str], bool]:
    """Whether a synced target partition (and its source topic) is this connector's: the offset-syncs
    topic is one per source alias, shared by every connector that mirrors from that cluster."""
    accepts = config.topic_filter().accepts
    policy = config.replication_policy()

    def own(target: TargetPartition, source_topic: str) -> bool:
        return accepts(source_topic) and policy.format_remote_topic(config.source_alias, source_topic) == target.topic

    return own


def mirrored_partitions(config: MirrorSinkConfig, index: OffsetIndex) -> dict[tuple[str, int], TargetPartition]:
    """The source partitions the syncs know that this connector mirrors, with their target partitions."""
    own = mirrored_by(config)
    return {(index.source_topics[tp], tp.partition): tp for tp in index.partitions if own(tp, index.source_topics[tp])}


class Verifier:
    """Verifies one connector's committed mirror through its offset syncs, round after round: each
    round goes on from where the last one ended (``mirror-sink verify`` runs one, from the start)."""

    def __init__(
        self,
        config: MirrorSinkConfig,
        *,
        max_bytes_per_s: float | None = None,
        topics: re.Pattern[str] | None = None,
        tail: int | None = None,
        stop: threading.Event | None = None,
        say: Callable[[str], None] = print,
    ) -> None:
        syncs = config.offset_syncs_partition
        if syncs is None:
            raise ConfigError(
                "emit.offset-syncs.enabled",
                f"connector {config.name} writes no offset syncs, and verify reads the offset map from them: "
                "they are written with emit.offset-syncs.enabled=true and transaction.producer=true (the defaults)",
            )
        self.config = config
        self.topics = topics
        self.say = say
        self.max_bytes_per_s = max_bytes_per_s
        #: The first round's start per partition: the last ``tail`` target offsets (None: from the start).
        self.tail = tail
        #: Set when the connector stops: a round ends at its next record (``Stopped``).
        self.stop = stop
        self._client_id = f"{config.name}-verify"
        self._syncs = OffsetSyncReader(config.target_consumer(), syncs.topic, f"{self._client_id}-syncs")
        self._target = assigned_reader(config.target_consumer(), self._client_id, eof=True)
        self._source = assigned_reader(config.source_consumer(), self._client_id, eof=True)
        #: Per target partition, the target offset the next round starts at.
        self.next: dict[TargetPartition, int] = {}
        self._gaps_counted: dict[TargetPartition, set[tuple[int, int]]] = {}
        self.rounds = 0

    def close(self) -> None:
        """Release the clients."""
        self._syncs.close()
        self._target.close()
        self._source.close()

    def run(self) -> VerifyReport:
        """One round: read the syncs, snapshot the target's ends, read the syncs again to their end
        (every transaction committed below the ends has its sync then), compare up to the ends."""
        started = time.monotonic()
        rate = ByteRate(self.max_bytes_per_s)
        index = self._syncs.catch_up()
        own = mirrored_by(self.config)
        chosen = sorted(
            tp
            for tp in index.partitions
            if own(tp, index.source_topics[tp]) and (self.topics is None or self.topics.fullmatch(tp.topic))
        )
        ends = {tp: read_watermarks(self._target, tp.topic, tp.partition, "target") for tp in chosen}
        index = self._syncs.catch_up()
        report = VerifyReport(self.config.name)
        for n, tp in enumerate(chosen, 1):
            low, high = ends[tp]
            first = 0 if self.tail is None else max(0, high - self.tail)
            start = max(low, self.next.get(tp, first))
            verdict = self._partition(index, tp, (start, high), rate)
            self.next[tp] = max(start, high)
            # Nothing below the next start is asked again: the index may forget it.
            source_floor = index.partitions[tp].source_of(self.next[tp])
            if source_floor is not None:
                self._syncs.floors[tp] = source_floor
            report.partitions.append(verdict)
            self.say(
                f"[{n}/{len(chosen)}] {tp.topic}-{tp.partition}: {verdict.verified} verified, "
                f"{verdict.mismatches} mismatches, {sum(verdict.unverifiable.values())} unverifiable"
            )
        self.rounds += 1
        report.seconds = time.monotonic() - started
        return report

    def _partition(
        self, index: OffsetIndex, tp: TargetPartition, window: tuple[int, int], rate: ByteRate
    ) -> PartitionVerdict:
        part = index.partitions[tp]
        every = part.run_list()
        start, end = window
        runs = [r for r in every if r.target + r.length > start and r.target < end]
        src = SourcePartition(index.source_topics[tp], tp.partition)
        target_records = read_range(self._target, tp, window, "target", rate=rate, stop=self.stop)
        source_records: Iterable[Record] = ()
        skipped = 0
        if runs:
            first, last = runs[0], runs[-1]
            from_source = first.source + max(0, start - first.target)
            to_source = last.source + min(last.length, end - last.target)
            source_records = read_range(
                self._source, src, (from_source, to_source), "source", rate=rate, stop=self.stop
            )
            # A skipped range counts once: in the round whose mirrored records follow it.
            counted = self._gaps_counted.setdefault(tp, set())
            new = [(a, b) for a, b in part.gaps if (a, b) not in counted and from_source <= b <= to_source]
            counted.update(new)
            skipped = sum(b - a for a, b in new)
        return compare_partition(
            tp,
            src,
            runs,
            target_records,
            source_records,
            window=window,
            synced_from=every[0].target if every else None,
            skipped=skipped,
        )


def read_range(
    consumer: Consumer,
    tp: tuple[str, int],
    window: tuple[int, int],
    role: str,
    *,
    rate: ByteRate | None = None,
    stop: threading.Event | None = None,
) -> Generator[Record, None, None]:
    """The committed records of partition ``tp`` in ``window`` (``[start, end)``), ascending, one at a
    time. TaskFailure when no record arrives for ``_STALL_S`` (a read that makes progress, however slow
    under the byte-rate cap, goes on); Stopped when ``stop`` is set."""
    topic, partition = tp
    start, end = window
    if start >= end:
        return
    consumer.assign([TopicPartition(topic, partition, start)])
    progress = time.monotonic()
    try:
        while True:
            if stop is not None and stop.is_set():
                raise Stopped
            if time.monotonic() - progress > _STALL_S:
                raise TaskFailure(
                    f"reading {topic}-{partition} on the {role}: nothing for {_STALL_S:.0f} s, not at {end}"
                )
            for msg in consumer.consume(_BATCH, _POLL_S):
                err = msg.error()
                if err is not None:
                    if unused_group_error(err):
                        continue
                    if err.code() == KafkaError._PARTITION_EOF:
                        return
                    raise TaskFailure(f"reading {topic}-{partition} on the {role}: {err.str()}")
                rec = record_of(msg)
                if rec.offset >= end:
                    return
                progress = time.monotonic()
                if rate is not None:
                    rate.take(rec.size, stop)
                yield rec
                if rec.offset + 1 >= end:
                    return
    finally:
        consumer.unassign()


def record_of(msg: Message) -> Record:
    """What is compared of a consumed record."""
    headers = msg.headers() or []
    pairs = headers.items() if isinstance(headers, dict) else headers
    kept: Headers = tuple((name, value if isinstance(value, bytes | None) else value.encode()) for name, value in pairs)
    return Record(msg.offset() or 0, msg.key(), msg.value(), kept, msg.timestamp()[1])
