"""Where the raw producer's transaction stands: one object, read and written by the three that drive it.

``TransactionClient`` writes what the coordinator answered (producer id and epoch, the state, the
partitions and the group added), ``ProducePipeline`` what it produced (that a batch went out, the
acknowledged batches' offsets, version 2's marker wait) and ``RawCommitter`` where the task's cycle
is (begun, open); ``end_cycle`` clears a cycle's part at once. Before, these lived in the three
objects themselves, and the committer reset the others' fields after each cycle.
"""

from __future__ import annotations

from enum import StrEnum

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.offset_syncs import CycleOffsets


class TransactionState(StrEnum):
    """Where the producer's transaction stands, as the coordinator sees it (aiokafka's and the Java
    producer's ``TransactionManager`` states, without the ones librdkafka-free raw mode never needs)."""

    UNINITIALIZED = "UNINITIALIZED"  # no producer id yet
    READY = "READY"  # a producer id and epoch; no transaction open
    IN_TRANSACTION = "IN_TRANSACTION"  # the coordinator holds partitions or the group's offsets of it
    COMMITTING = "COMMITTING"  # EndTxn(commit) sent, not confirmed
    ABORTING = "ABORTING"  # EndTxn(abort) sent, not confirmed


#: The moves a transaction may make; InitProducerId (a new epoch) ends whatever was open, from any state.
_MOVES: dict[TransactionState, frozenset[TransactionState]] = {
    TransactionState.UNINITIALIZED: frozenset(),
    TransactionState.READY: frozenset({TransactionState.IN_TRANSACTION}),
    TransactionState.IN_TRANSACTION: frozenset({TransactionState.COMMITTING, TransactionState.ABORTING}),
    # A commit that failed is aborted; an abort that failed is ended by the next epoch.
    TransactionState.COMMITTING: frozenset({TransactionState.READY, TransactionState.ABORTING}),
    TransactionState.ABORTING: frozenset({TransactionState.READY}),
}


class RawTransaction:
    """The raw producer's identity (producer id, epoch) and its current transaction's state and contents.

    Without a transactional.id only the idempotent producer id is kept here; the transaction's fields
    then stay empty.
    """

    def __init__(self, transactional_id: str | None) -> None:
        self.transactional_id = transactional_id
        # -- the producer, across transactions --------------------------------------------------
        self.producer_id = -1
        self.epoch = -1
        #: Set when EndTxn gave a new producer id or epoch (version 2): the pipeline restamps from it.
        self.epoch_changed = False
        self.state = TransactionState.UNINITIALIZED
        #: How long the latest transaction waited for the previous one's markers: its first
        #: AddPartitionsToTxn (version 1) or its first batches' refusals (version 2) until accepted.
        self.marker_wait_s = 0.0
        # -- the task's cycle: cleared by ``end_cycle`` -----------------------------------------
        #: The task began the cycle (``RawCommitter.begin``): the data path may write.
        self.begun = False
        #: The cycle has uncommitted work (``RawCommitter.open``).
        self.open = False
        #: Target partitions added to the open transaction (AddPartitionsToTxn, or version 2's first Produce).
        self.partitions: set[TargetPartition] = set()
        #: The shadow group was added to the open transaction (AddOffsetsToTxn).
        self.offsets_added = False
        #: A batch was queued since the cycle began (an abort then needs a new epoch: sequences were used).
        self.produced = False
        # -- kept across cycles, taken or cleared by the committer ---------------------------------
        #: Each acknowledged batch's source offsets and target base offset, for the offset syncs
        #: (None: this producer writes no syncs).
        self.offsets: CycleOffsets | None = None

    @property
    def in_transaction(self) -> bool:
        """True once the coordinator holds something of this cycle (partitions or the group's offsets)
        and until it confirmed its end."""
        return self.state in (TransactionState.IN_TRANSACTION, TransactionState.COMMITTING, TransactionState.ABORTING)

    def check_move(self, state: TransactionState) -> None:
        """Fail unless the transaction may move to ``state``: a move the protocol does not allow is a
        bug, never retried."""
        if state is not self.state and state not in _MOVES[self.state]:
            raise TaskFailure(
                f"internal error: the transaction of {self.transactional_id} cannot go from {self.state} to {state}"
            )

    def move_to(self, state: TransactionState) -> None:
        """Move to ``state`` where the protocol allows it (``check_move``)."""
        self.check_move(state)
        self.state = state

    def end_cycle(self) -> None:
        """The cycle is over (committed, or aborted and ended by a new epoch, or aborted unconfirmed):
        the next cycle registers its contents anew."""
        self.partitions = set()
        self.offsets_added = False
        if self.state is TransactionState.ABORTING:  # unconfirmed: the coordinator ends it by its timeout
            self.move_to(TransactionState.READY)
        self.produced = False
        self.begun = self.open = False
