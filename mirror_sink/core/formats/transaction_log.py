"""The records of ``__transaction_state``: what a source cluster's transaction coordinator knows.

Only the coordinator knows a transaction's whole partition set: each partition gets its own commit
marker, written independently. The coordinator keeps its state in the compacted internal topic
``__transaction_state``, keyed by transactional.id, one value per state change. Read from Kafka's
own schemas (transaction-coordinator ``TransactionLogKey.json`` and ``TransactionLogValue.json``):

- key: int16 prefix 0, then ``TransactionalId`` (int16 length + UTF-8);
- value: int16 version (0, or 1 once the cluster's ``transaction.version`` feature is at least 1),
  then ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32, TransactionStatus int8,
  TransactionPartitions (nullable array of Topic + PartitionIds), TransactionLastUpdateTimestampMs
  int64, TransactionStartTimestampMs int64. Version 1 is a flexible version (compact strings and
  arrays, a tagged-field section ending every struct); its tags: 0 PreviousProducerId, 1
  NextProducerId, 2 ClientTransactionVersion. Unknown tags are skipped, as the schema promises
  new fields only as tags;
- a null value (tombstone) is an expired transactional.id.

PrepareCommit and PrepareAbort list every partition of the transaction (``__consumer_offsets``
partitions too when it sent offsets); CompleteCommit and CompleteAbort follow once every marker is
written, with an empty list. With transactions version 2 (KIP-890) the epoch is bumped when the
Prepare record is written, so (producer id, epoch) names one transaction; with version 1 one
(producer id, epoch) spans consecutive transactions.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

#: The internal topic the coordinator writes.
TRANSACTION_STATE_TOPIC = "__transaction_state"


class TransactionStatus(IntEnum):
    """``TransactionStatus`` as stored (Dead and PrepareEpochFence are never written)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def prepared(self) -> bool:
        """PrepareCommit or PrepareAbort: the record that lists the transaction's whole partition set."""
        return self in (TransactionStatus.PREPARE_COMMIT, TransactionStatus.PREPARE_ABORT)

    @property
    def complete(self) -> bool:
        """CompleteCommit or CompleteAbort: every marker of the transaction is written."""
        return self in (TransactionStatus.COMPLETE_COMMIT, TransactionStatus.COMPLETE_ABORT)


@dataclass(frozen=True)
class TransactionLogValue:
    """One state of one transactional.id."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: TransactionStatus
    #: (topic, partition) of every partition in the transaction (empty outside Ongoing and Prepare*).
    partitions: frozenset[tuple[str, int]]
    last_update_ms: int
    start_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    #: The client's transactions version (2: KIP-890, an epoch per transaction); 0 when not recorded.
    client_transaction_version: int = 0


class TransactionLogFormatError(ValueError):
    """A ``__transaction_state`` record this decoder cannot read (a newer format, or corrupt)."""


class _Reader:
    """Big-endian reads over one record's bytes, for Kafka's generated message formats."""

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise TransactionLogFormatError(f"record ends at {len(self.data)} bytes, {n} more wanted at {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def fixed(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        value: int = struct.unpack(fmt, self.take(size))[0]
        return value

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise TransactionLogFormatError("unsigned varint longer than 5 bytes")

    def string(self, *, compact: bool) -> str:
        n = self.uvarint() - 1 if compact else self.fixed(">h")
        if n < 0:
            raise TransactionLogFormatError("null string where the schema allows none")
        return bytes(self.take(n)).decode()

    def array_length(self, *, compact: bool) -> int:
        """The element count; -1 for a null array."""
        return self.uvarint() - 1 if compact else self.fixed(">i")

    def tagged_fields(self) -> dict[int, memoryview]:
        fields = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            fields[tag] = self.take(self.uvarint())
        return fields


def decode_key(data: bytes | None) -> str | None:
    """The transactional.id of a record's key; None for a key of another kind (an unknown prefix)."""
    if data is None or len(data) < 2:
        return None
    reader = _Reader(data)
    if reader.fixed(">h") != 0:
        return None
    return reader.string(compact=False)


def decode_value(data: bytes | None) -> TransactionLogValue | None:
    """One state of a transactional.id; None for a tombstone (the id expired).
    TransactionLogFormatError for a version this decoder does not know."""
    if data is None:
        return None
    reader = _Reader(data)
    version = reader.fixed(">h")
    if version not in (0, 1):
        raise TransactionLogFormatError(f"TransactionLogValue version {version} (this decoder reads 0 and 1)")
    flexible = version >= 1
    producer_id = reader.fixed(">q")
    epoch = reader.fixed(">h")
    timeout_ms = reader.fixed(">i")
    status_byte = reader.fixed(">b")
    try:
        status = TransactionStatus(status_byte)
    except ValueError as exc:
        raise TransactionLogFormatError(f"unknown TransactionStatus {status_byte}") from exc
    partitions: set[tuple[str, int]] = set()
    for _ in range(max(0, reader.array_length(compact=flexible))):
        topic = reader.string(compact=flexible)
        for _ in range(max(0, reader.array_length(compact=flexible))):
            partitions.add((topic, reader.fixed(">i")))
        if flexible:
            reader.tagged_fields()  # none defined for PartitionsSchema
    last_update_ms = reader.fixed(">q")
    start_ms = reader.fixed(">q")
    tags = reader.tagged_fields() if flexible else {}

    def tagged(tag: int, fmt: str, default: int) -> int:
        if tag not in tags:
            return default
        value: int = struct.unpack(fmt, tags[tag])[0]
        return value

    return TransactionLogValue(
        producer_id,
        epoch,
        timeout_ms,
        status,
        frozenset(partitions),
        last_update_ms,
        start_ms,
        previous_producer_id=tagged(0, ">q", -1),
        next_producer_id=tagged(1, ">q", -1),
        client_transaction_version=tagged(2, ">h", 0),
    )


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (31*h + c over UTF-16 code units, signed 32-bit)."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def coordinator_partition(transactional_id: str, partitions: int) -> int:
    """The ``__transaction_state`` partition of ``transactional_id`` (Kafka's ``Utils.abs(hash) % n``)."""
    h = java_string_hash(transactional_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions
