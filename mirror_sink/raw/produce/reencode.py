"""The per-batch fallback: re-encode a source batch the target would reject or that must be trimmed.

Used only for batches that cannot pass byte for byte (see ``batches.forward_problem``): offset gaps
left by compaction, a first fetch that starts inside a batch, a batch that crosses a planned
range's end (Spark), a batch over the target's max.message.bytes, or the old v0/v1 message format.
Records keep key, value, headers and timestamp and the source codec; the batches built here are
plain v2 batches that the producer stamps with its id, epoch and sequence like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.raw.wire.batches import CorruptBatch


class Rebuilt(NamedTuple):
    """A re-encoded batch and the source offset of each of its records (for the offset syncs)."""

    batch: bytearray
    offsets: list[int]


@dataclass(frozen=True, slots=True)
class _Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def reencode(
    batch: memoryview, codec: int, start_offset: int, max_batch_bytes: int, where: str, *, end_offset: int | None = None
) -> list[Rebuilt]:
    """The records of ``batch`` at or after ``start_offset`` (and before ``end_offset``, if given) as v2
    batches of at most ``max_batch_bytes``.

    ``codec`` is the source batch's (kept where the target can decode it: every v2 codec).
    Raises TaskFailure naming ``where`` when a single record is larger than the target accepts.
    """
    records = [
        _Record(r.offset, r.timestamp, r.key, r.value, list(r.headers))
        for b in _batches(batch)
        for r in b
        if r.offset >= start_offset and (end_offset is None or r.offset < end_offset)
    ]
    out: list[Rebuilt] = []
    limit = max_batch_bytes
    i = 0
    while i < len(records):
        built, taken = _build(records, i, codec, limit)
        if len(built) > max_batch_bytes:
            if taken == 1:
                raise TaskFailure(
                    f"record too large for the target: a record of {where} is {len(built)} bytes as a batch, "
                    f"over the target topic's max.message.bytes {max_batch_bytes}"
                )
            limit = max(limit // 2, 1)  # compression did not shrink it enough: smaller batches
            continue
        out.append(Rebuilt(built, [r.offset for r in records[i : i + taken]]))
        i += taken
    return out


def _batches(batch: memoryview) -> list[Any]:
    """kafka-python's view of the batch (a v0/v1 wrapper holds its records compressed inside)."""
    records = MemoryRecords(bytes(batch))
    found = []
    while (b := records.next_batch()) is not None:
        if not b.validate_crc():
            raise CorruptBatch(f"batch at offset {b.base_offset} fails its CRC check")
        found.append(b)
    return found


def _build(records: list[_Record], first: int, codec: int, limit: int) -> tuple[bytearray, int]:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=limit,
    )
    taken = 0
    for delta, rec in enumerate(records[first:]):
        if builder.append(delta, rec.timestamp, rec.key, rec.value, rec.headers) is None:
            break
        taken += 1
    return builder.build(), taken
