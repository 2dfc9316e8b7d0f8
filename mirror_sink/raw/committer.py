"""The raw path's Committer: the task's cycles as target transactions around the produce pipeline.

With a transactional.id, a cycle is one transaction: the pipeline's batches (partitions added as
they first appear), then the shadow group's next offsets with the owning member's generation
(KIP-447 fencing), then EndTxn. Without one (``transaction.producer=false``) the producer is
idempotent and the offsets are committed by the group member once every batch is acknowledged (at
least once). An aborted cycle takes a new epoch, so sequences restart and nothing partial remains.
"""

from __future__ import annotations

import logging

from confluent_kafka import Consumer, KafkaException, TopicPartition

from mirror_sink.core.errors import AbortCycle, RecoverableTaskFailure
from mirror_sink.raw.producer import ProducePipeline
from mirror_sink.raw.transactions import TransactionClient

log = logging.getLogger(__name__)


class RawCommitter:
    """Makes a cycle of the raw path durable, or voids it (``mirror_sink.core.data_path.Committer``)."""

    def __init__(self, transactions: TransactionClient, pipeline: ProducePipeline) -> None:
        self.transactions = transactions
        self.pipeline = pipeline
        self._open = False

    @property
    def open(self) -> bool:
        """True while a cycle has uncommitted work."""
        return self._open

    def start(self) -> None:
        """InitProducerId: a new epoch; an older holder of the transactional.id is fenced."""
        self._new_epoch()

    def begin(self) -> None:
        """Mark the cycle open (a transaction starts with its first partition or offsets)."""
        self._open = True

    def commit(self, offsets: list[TopicPartition], member: Consumer, metadata: object) -> None:
        """Make every sent batch and ``offsets`` durable together, or raise AbortCycle."""
        self._open = True
        self.pipeline.flush()
        txn = self.transactions
        if not txn.transactional:
            _commit_as_member(offsets, member)
        else:
            if offsets:
                txn.send_offsets(offsets, metadata)
            if txn.in_transaction:
                txn.end(commit=True)
        self._end_cycle()

    def abort(self) -> None:
        """Void the cycle: queued batches dropped, the transaction aborted, a new epoch taken."""
        self.pipeline.discard()
        txn = self.transactions
        if txn.transactional and txn.in_transaction:
            try:
                txn.end(commit=False)
            except (AbortCycle, RecoverableTaskFailure) as exc:
                log.info("abort of %s not confirmed (%s); a new epoch aborts it", txn.transactional_id, exc)
        if self.pipeline.produced or txn.partitions:
            self._new_epoch()  # sequences restart at 0 in the new epoch
        self._end_cycle()

    def _new_epoch(self) -> None:
        self.transactions.init_producer_id()
        self.pipeline.new_epoch()

    def _end_cycle(self) -> None:
        self.transactions.forget_transaction()
        self.pipeline.produced = False
        self._open = False


def _commit_as_member(offsets: list[TopicPartition], member: Consumer) -> None:
    """At least once: the shadow group member commits the offsets once the batches are acknowledged."""
    if not offsets:
        return
    try:
        member.commit(offsets=offsets, asynchronous=False)
    except KafkaException as exc:
        raise AbortCycle(f"offset commit to the shadow group failed: {exc.args[0].str()}") from exc
