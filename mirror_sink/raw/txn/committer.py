"""The raw path's Committer: the task's cycles as target transactions around the produce pipeline.

With a transactional.id, a cycle is one transaction: the pipeline's batches (partitions added as
they first appear), then the shadow group's next offsets with the owning member's generation
(KIP-447 fencing), then EndTxn. Without one (``transaction.producer=false``) the producer is
idempotent and the offsets are committed by the group member once every batch is acknowledged (at
least once). An aborted cycle takes a new epoch, so sequences restart and nothing partial remains.

With an offset-syncs partition, a transaction also carries one offset sync per partition it moved
(``mirror_sink.core.formats.offset_syncs``), sent once every data batch is acknowledged, since the Produce
responses give the target offsets the syncs record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Sequence
from typing import Protocol

from confluent_kafka import Consumer, KafkaException, TopicPartition
from kafka.record.default_records import DefaultRecordBatchBuilder

from mirror_sink.core.base.errors import AbortCycle, RecoverableTaskFailure, TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.group_metadata import GroupMetadata
from mirror_sink.core.formats.offset_syncs import CycleOffsets, SyncSpan, offset_syncs
from mirror_sink.core.formats.skipped_ranges import AuditRecord
from mirror_sink.raw.txn.transactions import TransactionClient

log = logging.getLogger(__name__)

#: Offset-sync batches stay well under any topic's max.message.bytes (1 MB by default).
_SYNC_BATCH_BYTES = 256 * 1024


class Pipeline(Protocol):
    """What the committer needs of the produce pipeline (``mirror_sink.raw.produce.producer.ProducePipeline``):
    named here so that the transaction room does not import the produce room, which imports it. What
    the pipeline knows of the transaction (what it produced, the offsets acknowledged) it keeps in the
    ``RawTransaction`` they share."""

    def send(
        self, tp: TargetPartition, batch: memoryview, records: int, charge: int, sources: int | Sequence[int] | None
    ) -> None:
        """Queue ``batch`` for ``tp`` in the open cycle."""

    def flush(self) -> None:
        """Send everything queued and wait until all of it is acknowledged."""

    def discard(self) -> None:
        """Drop the queued batches and wait out those in flight."""

    def new_epoch(self) -> None:
        """Stamp batches with the transaction client's new producer id and epoch."""


class RawCommitter:
    """Makes a cycle of the raw path durable, or voids it (``mirror_sink.core.interfaces.data_path.Committer``)."""

    def __init__(
        self,
        transactions: TransactionClient,
        pipeline: Pipeline,
        sync_partition: TargetPartition | None = None,
    ) -> None:
        self.transactions = transactions
        #: The transaction's state, the cycle's included (begun, open): shared with the client and the pipeline.
        self.transaction = transactions.transaction
        self.pipeline = pipeline
        #: Where this committer's offset syncs go (None: no syncs).
        self.sync_partition = sync_partition
        if sync_partition is not None:
            self.transaction.offsets = CycleOffsets()
        #: Added to each transaction with its first data partitions: one AddPartitionsToTxn, not two.
        self._with_syncs = {sync_partition} if sync_partition is not None and transactions.transactional else set()

    @property
    def open(self) -> bool:
        """True while a cycle has uncommitted work."""
        return self.transaction.open

    def start(self) -> None:
        """InitProducerId: a new epoch; an older holder of the transactional.id is fenced."""
        self._new_epoch()

    def begin(self) -> None:
        """The cycle starts; its transaction reaches the coordinator with the first enlisted partitions."""
        self.transaction.begun = True

    def enlist(self, partitions: Collection[TargetPartition] = ()) -> None:
        """Mark the cycle open, and register ``partitions`` with its transaction before their first
        batch (the offset-syncs partition with the first ones): the transaction starts with them."""
        if not self.transaction.begun:
            raise TaskFailure("internal error: the data path wrote before the cycle began")
        self.transaction.open = True
        # Version 2 has no AddPartitionsToTxn: each partition joins with its first Produce.
        if partitions and self.transactions.version == 1:
            self.transactions.add_partitions({*partitions, *self._with_syncs})

    def commit(
        self,
        offsets: list[TopicPartition],
        member: Consumer,
        metadata: GroupMetadata,
        spans: Sequence[SyncSpan] = (),
        audit: Sequence[AuditRecord] = (),
    ) -> None:
        """Make every sent batch, its offset syncs, ``audit`` and ``offsets`` durable together, or raise
        AbortCycle."""
        self.transaction.open = True
        self.pipeline.flush()
        txn = self.transactions
        if not txn.transactional:
            if audit:
                raise TaskFailure("internal error: audit records need a transaction")
            _commit_as_member(offsets, member)
        else:
            if self.sync_partition is not None and spans:
                self._send_syncs(self.sync_partition, spans)
            for where, key, value in audit:
                (batch, count), *_ = _batches([(key, value)])
                self.pipeline.send(where, memoryview(batch), count, 0, None)
            if audit or (self.sync_partition is not None and spans):
                self.pipeline.flush()
            if offsets:
                txn.send_offsets(offsets, metadata)
            if self.transaction.in_transaction:
                txn.end(commit=True)
                self._take_next_epoch()
        self._end_cycle()

    def _send_syncs(self, where: TargetPartition, spans: Sequence[SyncSpan]) -> None:
        assert self.transaction.offsets is not None
        try:
            syncs = offset_syncs(spans, self.transaction.offsets.take())
        except ValueError as exc:
            raise TaskFailure(f"internal error: offset syncs do not match the cycle: {exc}") from exc
        for batch, count in _batches([(sync.encode_key(), sync.encode_value()) for sync in syncs]):
            self.pipeline.send(where, memoryview(batch), count, 0, None)

    def abort(self) -> None:
        """Void the cycle: queued batches dropped, the transaction aborted, a new epoch taken."""
        self.pipeline.discard()
        state = self.transaction
        if state.offsets is not None:
            state.offsets.clear()
        txn = self.transactions
        if txn.transactional and state.in_transaction:
            try:
                txn.end(commit=False)
            except (AbortCycle, RecoverableTaskFailure) as exc:
                log.info("abort of %s not confirmed (%s); a new epoch aborts it", txn.transactional_id, exc)
        if state.epoch_changed:  # version 2: the confirmed abort gave the next epoch
            self._take_next_epoch()
        elif state.produced or state.partitions:
            self._new_epoch()  # sequences restart at 0 in the new epoch
        self._end_cycle()

    def _new_epoch(self) -> None:
        self.transactions.init_producer_id()
        self.transaction.epoch_changed = False
        self.pipeline.new_epoch()

    def _take_next_epoch(self) -> None:
        """Version 2: EndTxn gave the next transaction's epoch; sequences restart at 0 with it."""
        if self.transaction.epoch_changed:
            self.transaction.epoch_changed = False
            self.pipeline.new_epoch()

    def _end_cycle(self) -> None:
        self.transaction.end_cycle()


def _batches(records: list[tuple[bytes, bytes]]) -> list[tuple[bytearray, int]]:
    """Plain v2 batches holding ``(key, value)`` records (the pipeline stamps producer id, epoch and sequence)."""
    out: list[tuple[bytearray, int]] = []
    now = int(time.time() * 1000)
    i = 0
    while i < len(records):
        builder = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=0,
            is_transactional=False,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=_SYNC_BATCH_BYTES,
        )
        first = i
        while i < len(records):
            key, value = records[i]
            if builder.append(i - first, now, key, value, []) is None:
                break
            i += 1
        out.append((builder.build(), i - first))
    return out


def _commit_as_member(offsets: list[TopicPartition], member: Consumer) -> None:
    """At least once: the shadow group member commits the offsets once the batches are acknowledged."""
    if not offsets:
        return
    try:
        member.commit(offsets=offsets, asynchronous=False)
    except KafkaException as exc:
        raise AbortCycle(f"offset commit to the shadow group failed: {exc.args[0].str()}") from exc
