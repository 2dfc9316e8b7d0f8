"""Offset syncs: which target offset every mirrored source offset landed at, written in the same transaction.

For each target partition a transaction touches, the mirror writes one record to the offset-syncs
topic on the target, inside that transaction, so the mapping is visible exactly when the records it
describes are (read_committed), and a zombie's or an aborted cycle's mapping never is.

A sync describes one transaction of one partition: the source range it consumed
``[source_start, source_end)`` (the shadow group's offset before and after) and the runs of mirrored
records in it, each ``(source offset, target offset, count)`` with both sides consecutive. Forwarded
raw batches are one run each (and consecutive batches merge); compaction gaps, a start inside a
batch, aborted transactions and control records only split runs. Source offsets inside the range and
outside every run held no record to mirror.

Translation (MirrorMaker 2's meaning, made exact): a source group's committed offset ``S`` maps to the
target offset of the first mirrored record whose source offset is ``>= S``; when every source record
below ``S`` is mirrored and none at or after it yet, to the target offset after the last mirrored one
(the records between are only transaction markers).

Skipped ranges (``offset.gap.policy=skip``, ``mirror_sink.core.formats.skipped_ranges``). A sync may start
with a gap: source offsets ``[source_start, skipped_to)`` were deleted on the source before they
were mirrored and were stepped over on purpose. Translation never crosses a gap: a source offset
whose first mirrored record at or after it lies past a gap has no exact target offset.

A new incarnation (``topic.recreation.policy=continue``). A sync may open a new incarnation of the
source topic: it was deleted and created again under its name (its new topic id given), and its
offsets start again from 0. Everything known of the partition before that sync belongs to the old
topic: it no longer translates, so no source offset is ever answered with the old topic's target
offsets. The new incarnation's records follow the old ones in the same target partition.

Encoding. Key: MirrorMaker 2's OffsetSync key (int16-length topic, int32 partition) of the target
partition. Value: int16 version, int16-length source topic, in version 2 only the int16-length new
topic id, then int64 source_start, int64 source_end, in versions 1 and 2 int64 skipped_to (equal to
source_start when nothing was skipped), then int32 run count, then per run three unsigned LEB128
varints: the source offset's distance from the previous run's end (from ``source_start`` for the
first), the target offset's distance from the previous run's end (absolute for the first), and the
count. A typical sync is about 40 bytes. Version 0 is written whenever nothing was skipped or
continued, so older readers read every sync that carries no marker.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.checkpoints import kafka_string, read_kafka_string

VERSION = 0
#: The version of a sync that starts with a skipped range.
VERSION_WITH_GAP = 1
#: The version of a sync that opens a new incarnation of its source topic (and may start with a gap).
VERSION_NEW_INCARNATION = 2
_HEAD = struct.Struct(">h")
_RANGE = struct.Struct(">qqi")
_RANGE_WITH_GAP = struct.Struct(">qqqi")
_PARTITION = struct.Struct(">i")


def offset_syncs_topic(source_alias: str) -> str:
    """The offset-syncs topic on the target, per source cluster alias.

    Not MirrorMaker 2's ``mm2-offset-syncs.*`` name: its records hold runs, not MM2's single offset
    pairs, and MM2's checkpoint task must not try to read them. ``.internal`` keeps it out of every
    mirror's default ``topics.exclude``.
    """
    return f"mirror-sink-offset-syncs.{source_alias}.internal"


class SyncRun(NamedTuple):
    """``length`` mirrored records: source offsets ``source..source+length-1`` at ``target..target+length-1``."""

    source: int
    target: int
    length: int


class SyncSpan(NamedTuple):
    """What a transaction consumed from one source partition and where it went."""

    target: TargetPartition
    source_topic: str
    source_start: int  # the shadow group's offset before the transaction
    source_end: int  # ... and after it
    #: Offsets from ``source_start`` up to here were skipped on purpose (None: nothing skipped).
    skipped_to: int | None = None
    #: The span opens a new incarnation of the source topic, with this id (None: it does not).
    new_topic_id: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """One transaction's mapping for one target partition."""

    target: TargetPartition
    source_topic: str
    source_start: int
    source_end: int
    runs: tuple[SyncRun, ...]
    #: ``[source_start, skipped_to)`` was skipped on purpose, never mirrored (None: nothing skipped).
    skipped_to: int | None = None
    #: The sync opens a new incarnation of the source topic, with this id (None: it does not).
    new_topic_id: str | None = None

    def encode_key(self) -> bytes:
        """MirrorMaker 2's OffsetSync key layout: the target topic and partition."""
        return kafka_string(self.target.topic) + _PARTITION.pack(self.target.partition)

    def encode_value(self) -> bytes:
        """The compact value (see the module docstring)."""
        if self.new_topic_id is not None:
            out = bytearray(_HEAD.pack(VERSION_NEW_INCARNATION))
            out += kafka_string(self.source_topic)
            out += kafka_string(self.new_topic_id)
            skipped_to = self.source_start if self.skipped_to is None else self.skipped_to
            out += _RANGE_WITH_GAP.pack(self.source_start, self.source_end, skipped_to, len(self.runs))
        elif self.skipped_to is None:
            out = bytearray(_HEAD.pack(VERSION))
            out += kafka_string(self.source_topic)
            out += _RANGE.pack(self.source_start, self.source_end, len(self.runs))
        else:
            out = bytearray(_HEAD.pack(VERSION_WITH_GAP))
            out += kafka_string(self.source_topic)
            out += _RANGE_WITH_GAP.pack(self.source_start, self.source_end, self.skipped_to, len(self.runs))
        source, target = self.source_start, 0
        for run in self.runs:
            _varint(out, run.source - source)
            _varint(out, run.target - target)
            _varint(out, run.length)
            source, target = run.source + run.length, run.target + run.length
        return bytes(out)

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> OffsetSync:
        """Parse a record written by ``encode_key`` / ``encode_value``; ValueError if it is not one."""
        try:
            topic, at = read_kafka_string(key, 0)
            (partition,) = _PARTITION.unpack_from(key, at)
            (version,) = _HEAD.unpack_from(value, 0)
            skipped_to: int | None = None
            new_topic_id: str | None = None
            source_topic, at = read_kafka_string(value, 2)
            if version == VERSION:
                source_start, source_end, count = _RANGE.unpack_from(value, at)
                at += _RANGE.size
            elif version in (VERSION_WITH_GAP, VERSION_NEW_INCARNATION):
                if version == VERSION_NEW_INCARNATION:
                    new_topic_id, at = read_kafka_string(value, at)
                source_start, source_end, skipped_to, count = _RANGE_WITH_GAP.unpack_from(value, at)
                at += _RANGE_WITH_GAP.size
                if skipped_to == source_start and new_topic_id is not None:
                    skipped_to = None
            else:
                known = f"{VERSION} to {VERSION_NEW_INCARNATION}"
                raise ValueError(f"offset sync version {version} (this reader knows {known})")
            runs = []
            source, target = source_start, 0
            for _ in range(count):
                ds, at = _read_varint(value, at)
                dt, at = _read_varint(value, at)
                n, at = _read_varint(value, at)
                run = SyncRun(source + ds, target + dt, n)
                runs.append(run)
                source, target = run.source + n, run.target + n
        except (struct.error, IndexError, UnicodeDecodeError) as exc:
            raise ValueError(f"not an offset sync record: {exc}") from exc
        where = TargetPartition(topic, partition)
        return cls(where, source_topic, source_start, source_end, tuple(runs), skipped_to, new_topic_id)


class CycleOffsets:
    """The runs of the open cycle per target partition, as the target acknowledges its records."""

    __slots__ = ("_runs",)

    def __init__(self) -> None:
        self._runs: dict[TargetPartition, list[list[int]]] = {}

    def add(self, tp: TargetPartition, source: int, target: int, count: int) -> None:
        """``count`` records with consecutive source offsets from ``source`` landed from ``target`` on."""
        runs = self._runs.get(tp)
        if runs is None:
            self._runs[tp] = [[source, target, count]]
            return
        last = runs[-1]
        n = last[2]
        if last[0] + n == source and last[1] + n == target:
            last[2] = n + count
        else:
            runs.append([source, target, count])

    def add_offsets(self, tp: TargetPartition, sources: Iterable[int], target: int) -> None:
        """Records with these source offsets (ascending) landed at consecutive offsets from ``target``."""
        for i, source in enumerate(sources):
            self.add(tp, source, target + i, 1)

    def take(self) -> dict[TargetPartition, tuple[SyncRun, ...]]:
        """The cycle's runs; the collector starts empty again."""
        runs, self._runs = self._runs, {}
        return {tp: tuple(SyncRun(*r) for r in rs) for tp, rs in runs.items()}

    def clear(self) -> None:
        """Forget the cycle (it was aborted)."""
        self._runs = {}


#: Runs per sync record at most (about 40 KB encoded): a compacted source can split a transaction's
#: records into one run each, and a record must stay far below any topic's max.message.bytes.
MAX_RUNS_PER_SYNC = 4096


def offset_syncs(
    spans: Iterable[SyncSpan],
    runs: Mapping[TargetPartition, tuple[SyncRun, ...]],
    max_runs: int = MAX_RUNS_PER_SYNC,
) -> list[OffsetSync]:
    """The syncs of a transaction: per span one, or several consecutive ones when it holds more than
    ``max_runs`` runs (each covers the source range up to the next one's first run).

    Raises ValueError when runs were acknowledged for a partition with no span.
    """
    spans = list(spans)
    unexplained = set(runs) - {s.target for s in spans}
    if unexplained:
        raise ValueError(f"records acknowledged on {sorted(unexplained)} but no source offset moved there")
    out = []
    for span in spans:
        mine = runs.get(span.target, ())
        start = span.source_start
        for i in range(0, max(len(mine), 1), max_runs):
            chunk = mine[i : i + max_runs]
            end = mine[i + max_runs].source if i + max_runs < len(mine) else span.source_end
            # A gap and a new incarnation always open the span.
            skipped_to, new_id = (span.skipped_to, span.new_topic_id) if i == 0 else (None, None)
            out.append(OffsetSync(span.target, span.source_topic, start, end, chunk, skipped_to, new_id))
            start = end
    return out


class PartitionIndex:
    """Every committed sync of one target partition, for exact translation.

    Runs are kept in three int64 arrays (24 bytes per run; a run per transaction per partition in
    the common case). A sync that starts below what is known (the shadow group was reset and the
    source re-mirrored) replaces what it overlaps: the newest mapping wins. Skipped ranges are
    kept beside the runs, so that translation never crosses one. A sync that opens a new
    incarnation of the source topic replaces everything: the old topic's offsets mean nothing now.
    """

    __slots__ = ("_count", "_source", "_target", "gaps", "oldest", "source_end", "source_start")

    def __init__(self) -> None:
        self._source = array("q")
        self._target = array("q")
        self._count = array("q")
        self.source_start: int | None = None  # lowest source offset the runs kept translate
        self.oldest: int | None = None  # lowest source offset any sync read covered (before forgetting)
        self.source_end = -1  # every source offset below it is mirrored (or skipped) and known
        #: Skipped ranges ``(first missing, first present)``, ascending; few (one per gap ever skipped).
        self.gaps: list[tuple[int, int]] = []

    def add(self, sync: OffsetSync) -> None:
        """Take a committed sync (in commit order)."""
        if sync.new_topic_id is not None:
            self._forget_from(-1)  # the topic was created again: nothing known before translates
            self.source_start = self.oldest = self.source_end = sync.source_start
        elif self.source_start is None or sync.source_start < self.source_start:
            self._forget_from(-1)  # first sync, or a re-mirror from below everything known
            self.source_start = sync.source_start
            self.oldest = sync.source_start if self.oldest is None else min(self.oldest, sync.source_start)
            self.source_end = sync.source_start
        elif sync.source_start > self.source_end:
            # A hole: records between were mirrored without syncs (another runtime, or the shadow
            # group moved by hand). Nothing below the hole can be translated exactly any more.
            self._forget_from(-1)
            self.source_start = self.oldest = self.source_end = sync.source_start
        elif sync.source_start < self.source_end:
            self._forget_from(sync.source_start)  # re-mirrored: the newest mapping wins
            self.source_end = sync.source_start
        if sync.skipped_to is not None and sync.skipped_to > sync.source_start:
            self.gaps.append((sync.source_start, sync.skipped_to))
        for run in sync.runs:
            self._source.append(run.source)
            self._target.append(run.target)
            self._count.append(run.length)
        self.source_end = max(self.source_end, sync.source_end)

    def _forget_from(self, source: int) -> None:
        self.gaps = [(a, min(b, source)) for a, b in self.gaps if a < source]
        while self._source and self._source[-1] >= source:
            for a in (self._source, self._target, self._count):
                a.pop()
        if self._source and self._source[-1] + self._count[-1] > source:
            self._count[-1] = source - self._source[-1]

    def forget_below(self, source_offset: int) -> None:
        """Drop what only translates offsets below ``source_offset`` (bounded memory for a long-lived index)."""
        if self.source_start is None or source_offset <= self.source_start:
            return
        source_offset = min(source_offset, self.source_end)
        keep = bisect_right(self._source, source_offset) - 1
        if keep >= 0 and source_offset >= self._source[keep] + self._count[keep]:
            keep += 1  # the run ends before the offset: the next one answers it
        # The last run always stays: it answers offsets past every mirrored record.
        keep = max(0, min(keep, len(self._source) - 1))
        if keep:
            for a in (self._source, self._target, self._count):
                del a[:keep]
        self.source_start = source_offset
        # A gap ending at or below the floor cannot be crossed by an offset at or above it.
        self.gaps = [(a, b) for a, b in self.gaps if b > source_offset]

    def source_of(self, target_offset: int) -> int | None:
        """The map read backwards (failback): the source offset of the first mirrored record at or
        after ``target_offset`` on the target, or the end of what is mirrored when none is; None
        below the oldest run kept (the syncs expired) or when nothing is known."""
        if not self._source or self.source_start is None or target_offset < self._target[0]:
            return None
        i = bisect_right(self._target, target_offset) - 1
        if target_offset < self._target[i] + self._count[i]:
            found = self._source[i] + target_offset - self._target[i]
        elif i + 1 < len(self._target):
            found = self._source[i + 1]
        else:
            found = self.source_end
        return found if found >= self.source_start else None

    def records_from(self, source_offset: int) -> int:
        """How many mirrored records have a source offset at or after ``source_offset``."""
        total = 0
        for i in range(len(self._source) - 1, -1, -1):
            start, n = self._source[i], self._count[i]
            if start + n <= source_offset:
                break
            total += n - max(0, source_offset - start)
        return total

    @property
    def runs(self) -> int:
        """Runs held (for memory estimates)."""
        return len(self._source)

    def run_list(self) -> list[SyncRun]:
        """The runs held, ascending (on both sides): what ``verify`` compares record by record."""
        return [SyncRun(s, t, n) for s, t, n in zip(self._source, self._target, self._count, strict=True)]

    def translate(self, source_offset: int) -> int | None:
        """The target offset of the first mirrored record at or after ``source_offset``; None when
        that is not known yet (not mirrored that far) or no longer (below the oldest sync kept)."""
        if self.source_start is None or source_offset < self.source_start or source_offset > self.source_end:
            return None
        i = bisect_right(self._source, source_offset) - 1
        if i >= 0 and source_offset < self._source[i] + self._count[i]:
            return self._target[i] + source_offset - self._source[i]
        if i + 1 < len(self._source):
            answer, answer_source = self._target[i + 1], self._source[i + 1]
        elif not self._source:
            return None  # nothing mirrored yet: no target offset to name
        else:
            answer, answer_source = self._target[-1] + self._count[-1], self.source_end
        if self._gap_between(source_offset, answer_source) is not None:
            return None  # the records between were skipped, not mirrored: no exact answer
        return answer

    def gap_in_the_way(self, source_offset: int) -> tuple[int, int] | None:
        """The skipped range that keeps ``source_offset`` from translating: it lies in the range, or
        only transaction markers lie between it and the range (None: no range is in the way)."""
        if self.source_start is None or not self.source_start <= source_offset <= self.source_end:
            return None
        i = bisect_right(self._source, source_offset) - 1
        if i >= 0 and source_offset < self._source[i] + self._count[i]:
            return None
        next_source = self._source[i + 1] if i + 1 < len(self._source) else self.source_end
        return self._gap_between(source_offset, next_source)

    def _gap_between(self, source_from: int, source_to: int) -> tuple[int, int] | None:
        """A skipped range ending in ``(source_from, source_to]``: going from one to the other steps
        over records that were never mirrored."""
        return next(((a, b) for a, b in self.gaps if source_from < b <= source_to), None)


class OffsetIndex:
    """Committed syncs of every target partition."""

    def __init__(self) -> None:
        self.partitions: dict[TargetPartition, PartitionIndex] = {}
        self.source_topics: dict[TargetPartition, str] = {}

    def add(self, sync: OffsetSync) -> None:
        """Take a committed sync."""
        index = self.partitions.get(sync.target)
        if index is None:
            index = self.partitions[sync.target] = PartitionIndex()
        index.add(sync)
        self.source_topics[sync.target] = sync.source_topic

    def translate(self, target: TargetPartition, source_offset: int) -> int | None:
        """The exact target offset for a source group at ``source_offset`` (see ``PartitionIndex``)."""
        index = self.partitions.get(target)
        return None if index is None else index.translate(source_offset)

    def forget_below(self, floors: Mapping[TargetPartition, int]) -> None:
        """Per partition, drop what only translates offsets below its floor."""
        for tp, floor in floors.items():
            index = self.partitions.get(tp)
            if index is not None:
                index.forget_below(floor)

    def source_start(self, target: TargetPartition) -> int | None:
        """The lowest source offset ``target``'s syncs still translate."""
        index = self.partitions.get(target)
        return None if index is None else index.source_start

    def gaps(self, target: TargetPartition) -> list[tuple[int, int]]:
        """The skipped source ranges ``(first missing, first present)`` ``target``'s syncs still know."""
        index = self.partitions.get(target)
        return [] if index is None else list(index.gaps)

    def gap_in_the_way(self, target: TargetPartition, source_offset: int) -> tuple[int, int] | None:
        """The skipped range that keeps ``source_offset`` from translating (``PartitionIndex``)."""
        index = self.partitions.get(target)
        return None if index is None else index.gap_in_the_way(source_offset)

    def mirrored_to(self, target: TargetPartition) -> int | None:
        """The source offset below which everything of ``target``'s source partition is mirrored."""
        index = self.partitions.get(target)
        return None if index is None or index.source_start is None else index.source_end


def _varint(out: bytearray, n: int) -> None:
    if n < 0:
        raise ValueError(f"offset runs must ascend (delta {n})")
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _read_varint(buf: bytes, at: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = buf[at]
        at += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, at
        shift += 7
