"""Record batch v2 headers: parse, check, rewrite for the target; the payload is never touched.

Layout (61 bytes, big-endian): baseOffset int64, batchLength int32, partitionLeaderEpoch int32,
magic int8, crc uint32, attributes int16, lastOffsetDelta int32, baseTimestamp int64,
maxTimestamp int64, producerId int64, producerEpoch int16, baseSequence int32, recordCount int32,
then the (possibly compressed) records. The CRC32C covers attributes..end, so a header rewrite
costs one CRC pass over the batch and no copy of it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

import crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
#: batchLength counts the bytes after itself: the batch is batchLength + 12 bytes long.
LOG_OVERHEAD = 12
#: Bytes needed to read baseOffset, batchLength and magic of any batch (v0/v1 message sets too).
_PREFIX = struct.Struct(">qiib")
_CRC_FROM = 21
#: Smallest batchLength of any message format (a v0 message with no key or value).
_MIN_BATCH_LENGTH = 14
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER = struct.Struct(">qhi")  # producerId, producerEpoch, baseSequence
_CRC = struct.Struct(">I")

CODEC_MASK = 0x07
TIMESTAMP_LOG_APPEND = 0x08
TRANSACTIONAL = 0x10
CONTROL = 0x20
DELETE_HORIZON = 0x40

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
#: Control record keys are (int16 version, int16 type); type 0 marks an abort, 1 a commit.
CONTROL_ABORT = 0
CONTROL_COMMIT = 1


class CorruptBatch(Exception):
    """A source batch whose CRC does not match: it must never be forwarded."""


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fields of a v2 header the mirror looks at."""

    base_offset: int
    length: int  # whole batch, header included
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    producer_id: int
    producer_epoch: int
    record_count: int

    @property
    def last_offset(self) -> int:
        """Offset of the batch's last record (compaction may have removed it; the offset stays)."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset after this batch."""
        return self.last_offset + 1

    @property
    def codec(self) -> int:
        """Compression codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
        return self.attributes & CODEC_MASK

    @property
    def is_control(self) -> bool:
        """A transaction marker batch (written by the broker, never by a client)."""
        return bool(self.attributes & CONTROL)

    @property
    def is_transactional(self) -> bool:
        """Written inside a transaction."""
        return bool(self.attributes & TRANSACTIONAL)


def parse_header(batch: memoryview) -> BatchHeader:
    """The header of a v2 batch (``batch`` starts at its first byte)."""
    base, blen, _epoch, magic, crc, attrs, lod, _bts, _mts, pid, pep, _seq, count = HEADER.unpack_from(batch)
    return BatchHeader(base, blen + LOG_OVERHEAD, magic, crc, attrs, lod, pid, pep, count)


def split_batches(records: memoryview) -> Iterator[tuple[int, int, memoryview]]:
    """(base offset, magic, batch) for every whole batch in a fetched ``records`` buffer.

    A fetch response may end with a partial batch (the broker cuts at the byte limit); it is
    dropped and fetched again from its offset.
    """
    pos, end = 0, len(records)
    while pos + _PREFIX.size <= end:
        base, blen, _epoch, magic = _PREFIX.unpack_from(records, pos)
        if blen < _MIN_BATCH_LENGTH:
            raise CorruptBatch(f"batch at offset {base} claims a length of {blen} bytes")
        size = blen + LOG_OVERHEAD
        if pos + size > end:
            return
        yield base, magic, records[pos : pos + size]
        pos += size


def verify_crc(batch: memoryview, header: BatchHeader) -> None:
    """Raise CorruptBatch unless the stored CRC32C matches the batch's bytes."""
    actual = crc32c.crc32c(batch[_CRC_FROM:])
    if actual != header.crc:
        raise CorruptBatch(
            f"batch at offset {header.base_offset} has CRC {actual:#010x}, header says {header.crc:#010x}"
        )


def control_type(batch: memoryview) -> int:
    """The type of a control batch's marker (CONTROL_ABORT or CONTROL_COMMIT).

    A control batch holds one uncompressed record: length, attributes, timestamp delta and offset
    delta varints, then the key (varint length, int16 version, int16 type).
    """
    pos = HEADER_SIZE
    pos = _skip_varint(batch, pos)  # record length
    pos += 1  # record attributes
    pos = _skip_varint(batch, pos)  # timestamp delta
    pos = _skip_varint(batch, pos)  # offset delta
    pos = _skip_varint(batch, pos)  # key length
    return int(struct.unpack_from(">h", batch, pos + 2)[0])


def _skip_varint(buf: memoryview, pos: int) -> int:
    while buf[pos] & 0x80:
        pos += 1
    return pos + 1


def rewrite_in_place(
    batch: memoryview,
    *,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool,
) -> None:
    """Turn a source batch (a writable view) into one our producer may send to the target.

    baseOffset 0 and leader epoch -1 (the broker assigns both), our producer id, epoch and
    sequence; the transactional bit as asked, the control, LogAppendTime and delete-horizon bits
    cleared (the records' own timestamps become their CreateTime); codec, timestamps and the
    payload kept.
    The CRC is recomputed over the view: the payload is read once and never copied.
    """
    (attrs,) = _ATTRIBUTES.unpack_from(batch, 21)
    # The source cleaner's delete horizon is not the target's: its own delete.retention.ms decides.
    attrs &= ~(CONTROL | TIMESTAMP_LOG_APPEND | TRANSACTIONAL | DELETE_HORIZON)
    if transactional:
        attrs |= TRANSACTIONAL
    _INT64.pack_into(batch, 0, 0)  # baseOffset
    _INT32.pack_into(batch, 12, -1)  # partitionLeaderEpoch
    _ATTRIBUTES.pack_into(batch, 21, attrs)
    _PRODUCER.pack_into(batch, 43, producer_id, producer_epoch, base_sequence)
    _CRC.pack_into(batch, 17, crc32c.crc32c(batch[_CRC_FROM:]))


class ReencodeReason(StrEnum):
    """Why a batch is re-encoded instead of forwarded; the value is its label in progress logs."""

    MID_BATCH_START = "mid-batch start"
    COMPACTED = "compacted"
    TOO_LARGE = "too large"
    OLD_FORMAT = "old format"
    PAST_RANGE_END = "past the range end"


@dataclass(frozen=True, slots=True)
class ForwardProblem:
    """Why a batch cannot be forwarded byte for byte: the reason and its detail for operators."""

    reason: ReencodeReason
    detail: str

    def __str__(self) -> str:
        return self.detail


#: A v0/v1 message set (no v2 header to look at): always re-encoded.
OLD_FORMAT = ForwardProblem(ReencodeReason.OLD_FORMAT, "message format v0/v1")


def forward_problem(
    header: BatchHeader, start_offset: int, max_batch_bytes: int, end_offset: int | None = None
) -> ForwardProblem | None:
    """Why ``header``'s batch cannot be forwarded byte for byte (it is re-encoded), or None.

    The broker requires lastOffsetDelta + 1 == recordCount (compaction leaves gaps) and a batch no
    larger than the topic's max.message.bytes; a batch that starts before the partition's start
    offset would duplicate records already mirrored, one that ends at or past ``end_offset`` (a
    planned range's end) would copy records of the next range.
    """
    if header.magic != 2:
        return ForwardProblem(ReencodeReason.OLD_FORMAT, f"message format v{header.magic}")
    if header.base_offset < start_offset:
        return ForwardProblem(
            ReencodeReason.MID_BATCH_START, f"starts at {header.base_offset}, before the start offset {start_offset}"
        )
    if end_offset is not None and header.base_offset + header.last_offset_delta >= end_offset:
        return ForwardProblem(
            ReencodeReason.PAST_RANGE_END,
            f"ends at {header.base_offset + header.last_offset_delta}, past the range end {end_offset}",
        )
    if header.last_offset_delta + 1 != header.record_count:
        return ForwardProblem(
            ReencodeReason.COMPACTED,
            f"offset gaps (compacted: {header.record_count} records over {header.last_offset_delta + 1} offsets)",
        )
    if header.length > max_batch_bytes:
        return ForwardProblem(
            ReencodeReason.TOO_LARGE, f"{header.length} bytes, over the target's max.message.bytes {max_batch_bytes}"
        )
    return None
