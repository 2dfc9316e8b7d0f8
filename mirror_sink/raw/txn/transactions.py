"""The raw producer's transaction: where it stands (``RawTransaction``) and the coordinator requests
around the Produce pipeline that move it (``TransactionClient``).

``RawTransaction`` is one object, read and written by the three that drive the transaction:
``TransactionClient`` writes what the coordinator answered (producer id and epoch, the state, the
partitions and the group added), ``ProducePipeline`` what it produced (that a batch went out, the
acknowledged batches' offsets, version 2's marker wait) and ``RawCommitter`` where the task's cycle
is (begun, open); ``end_cycle`` clears a cycle's part at once. Before, these lived in the three
objects themselves, and the committer reset the others' fields after each cycle.

``TransactionClient`` sends:

    InitProducerId (fences an older holder of the transactional.id, aborts its open transaction);
    per cycle: AddPartitionsToTxn before a partition's first Produce; AddOffsetsToTxn and
    TxnOffsetCommit with the owning member's generation (KIP-447 fencing); EndTxn.

With transactions version 2 (KIP-890 part 2: ``transaction.version=2`` finalized on the target, the
default of Kafka 4.0+), the brokers add partitions and the shadow group to the transaction
themselves as Produce v12 and TxnOffsetCommit v5 reach them, so neither AddPartitionsToTxn nor
AddOffsetsToTxn is sent; EndTxn v5 ends every transaction, committed or aborted, with a new epoch
(or, when the epoch is exhausted, a new producer id), so a late write of an ended transaction is
fenced rather than joining the next one. Against a version 1 target nothing changes.

Each request is retried under the one retry policy while the coordinator loads, moves or is busy,
up to the transaction timeout. What an error code means decides what the caller sees: a fenced
epoch is a RecoverableTaskFailure (new clients), a rebalanced group an AbortCycle, anything no
retry can fix a TaskFailure.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Any

from confluent_kafka import TopicPartition
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)

from mirror_sink.core.base.error_codes import COORDINATOR_MOVED, FENCED, NOT_OWNER, RETRIABLE, KafkaErrorCode
from mirror_sink.core.base.errors import AbortCycle, RecoverableTaskFailure, TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients.authorization import AUTHORIZATION_ERRORS
from mirror_sink.core.formats.group_metadata import GroupMetadata
from mirror_sink.core.formats.offset_syncs import CycleOffsets
from mirror_sink.core.interfaces.data_path import OFFSETS_PER_REQUEST
from mirror_sink.core.runtime.retry import TryAgain, retry_or_give_up
from mirror_sink.raw.wire.wire import COORDINATOR_GROUP, COORDINATOR_TRANSACTION, NodeId, WireClient, error_name

log = logging.getLogger(__name__)

#: Backoff between attempts: coordinator moves and concurrent transactions clear up quickly.
_FIRST_DELAY_S = 0.005
_MAX_DELAY_S = 0.5
#: A coordinator request retried for this long is logged when it goes through (a broker failover).
_SLOW_REQUEST_S = 1.0


def _as_librdkafka_writes(metadata: str | None) -> str:
    """Offset metadata with the NUL confluent-kafka writes after every metadata string (its length
    + 1). confluent-kafka reads metadata back as a C string: one committed here without the NUL was
    read past its end, into heap bytes that were not UTF-8, and the task failed on the decode."""
    return f"{metadata}\0" if metadata else ""


def _first_error(codes: Iterable[int], besides: int | None = None) -> int:
    """The first of a response's per-partition codes that is an error (not NONE, not ``besides``), else the first."""
    return int(max(codes, key=lambda c: c not in (KafkaErrorCode.NONE, besides)))


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


class TransactionClient:
    """The coordinator requests of one task's target producer. What they establish (the producer id
    and epoch, the open transaction's state and contents) is kept in ``transaction``, a
    ``RawTransaction``. ``RawCommitter`` alone opens, commits and aborts the transaction. ``version``:
    the transaction protocol to speak at most (None: the highest the target has).

    Without a transactional.id it only takes an idempotent producer id (at least once); the
    transaction requests are then never sent.
    """

    def __init__(
        self,
        wire: WireClient,
        *,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        group_id: str,
        version: int | None = None,
    ) -> None:
        self.wire = wire
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.group_id = group_id
        #: The producer id and epoch, and the open transaction's state and contents: written here as
        #: the coordinator answers, read and written by the pipeline and the committer too.
        self.transaction = RawTransaction(transactional_id)
        self._coordinators = CoordinatorRequests(wire, transactional_id, group_id, transaction_timeout_ms)
        self._request = self._coordinators.request
        #: The transaction protocol spoken: 2 (KIP-890 part 2) where the target has it finalized, else 1.
        #: (``version=1`` forces version 1 on any target, for comparing the two in ``bench.markers``.)
        self.version = min(version or 2, transaction_version(wire)) if self.transactional else 1
        self._end_txn_version = 5 if self.version == 2 else wire.negotiate(EndTxnRequest, 3, 4)
        self._offset_commit_version = 5 if self.version == 2 else 3
        for request, fixed in (
            (InitProducerIdRequest, 4),
            (AddPartitionsToTxnRequest, 3),  # v4+ is broker to broker
            (AddOffsetsToTxnRequest, 3),
            (FindCoordinatorRequest, 4),
        ):
            wire.negotiate(request, fixed, fixed)
        wire.negotiate(TxnOffsetCommitRequest, self._offset_commit_version, self._offset_commit_version)

    @property
    def transactional(self) -> bool:
        """Exactly once (a transactional.id) or at least once (idempotent only)."""
        return self.transactional_id is not None

    def init_producer_id(self) -> None:
        """A new producer id or epoch; an older holder of the transactional.id is fenced."""
        response = self._request(
            "InitProducerId",
            "InitProducerId",
            self._coordinators.txn_coordinator if self.transactional else self.wire.any_node,
            lambda: InitProducerIdRequest(
                version=4,
                transactional_id=self.transactional_id,
                transaction_timeout_ms=self.transaction_timeout_ms,
                producer_id=-1,
                producer_epoch=-1,
            ),
            lambda r: int(r.error_code),
        )
        self.transaction.producer_id, self.transaction.epoch = response.producer_id, response.producer_epoch
        self.transaction.state = TransactionState.READY  # a new epoch ends whatever the previous one had open
        log.info(
            "producer %s has producer id %d epoch %d",
            self.transactional_id or "(idempotent)",
            self.transaction.producer_id,
            self.transaction.epoch,
        )

    def add_partitions(self, tps: Iterable[TargetPartition]) -> None:
        """Register partitions with the transaction before their first Produce (one request for many).

        Version 2: the leader adds each partition as its first Produce arrives; the transaction is
        open from here on, as the Java producer counts it (its EndTxn ends it even if no Produce
        reached a broker).
        """
        if not self.transactional:
            return
        todo = [tp for tp in tps if tp not in self.transaction.partitions]
        if not todo:
            return
        if self.version == 2:
            self.transaction.move_to(TransactionState.IN_TRANSACTION)
            self.transaction.partitions.update(todo)
            return
        first = not self.transaction.partitions
        started = time.monotonic()
        # Open once the coordinator accepted the partitions: a refused first request leaves none open.
        self.transaction.check_move(TransactionState.IN_TRANSACTION)
        a = AddPartitionsToTxnRequest
        topics: dict[str, list[int]] = {}
        for tp in todo:
            topics.setdefault(tp.topic, []).append(tp.partition)

        self._request(
            f"AddPartitionsToTxn for {len(todo)} partitions",
            "AddPartitionsToTxn",
            self._coordinators.txn_coordinator,
            lambda: a(
                version=3,
                v3_and_below_transactional_id=self.transactional_id,
                v3_and_below_producer_id=self.transaction.producer_id,
                v3_and_below_producer_epoch=self.transaction.epoch,
                v3_and_below_topics=[a.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in topics.items()],
            ),
            # OPERATION_NOT_ATTEMPTED only follows another partition's error: report that one.
            lambda r: _first_error(
                (x.partition_error_code for t in r.results_by_topic_v3_and_below for x in t.results_by_partition),
                besides=KafkaErrorCode.OPERATION_NOT_ATTEMPTED,
            ),
        )
        self.transaction.move_to(TransactionState.IN_TRANSACTION)
        self.transaction.partitions.update(todo)
        if first:
            self.transaction.marker_wait_s = time.monotonic() - started

    def send_offsets(self, offsets: list[TopicPartition], metadata: GroupMetadata) -> None:
        """Put the shadow group's next ``offsets`` in the transaction, fenced by ``metadata``'s generation.

        In requests of at most ``OFFSETS_PER_REQUEST`` partitions: the group coordinator appends each
        request's offsets as one batch to __consumer_offsets, and refuses a batch over its 1 MB limit
        (UNKNOWN_SERVER_ERROR; 10,000 partitions made 1.2 MB). The transaction makes them one commit.
        """
        if not self.transaction.offsets_added:
            if self.version == 2:  # the group coordinator adds the group with the first TxnOffsetCommit
                self.transaction.move_to(TransactionState.IN_TRANSACTION)
                self.transaction.offsets_added = True
            else:
                self._add_offsets()
        for start in range(0, len(offsets), OFFSETS_PER_REQUEST):
            part = offsets[start : start + OFFSETS_PER_REQUEST]
            self._commit_offsets(part, metadata.generation, metadata.member_id, metadata.instance_id)

    def _commit_offsets(
        self, offsets: list[TopicPartition], generation: int, member_id: str, instance_id: str | None
    ) -> None:
        t = TxnOffsetCommitRequest
        topics: dict[str, list[Any]] = {}
        for tp in offsets:
            topics.setdefault(tp.topic, []).append(
                t.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=tp.offset,
                    committed_leader_epoch=-1,
                    committed_metadata=_as_librdkafka_writes(tp.metadata),
                )
            )
        self._request(
            f"TxnOffsetCommit to group {self.group_id}",
            "TxnOffsetCommit",
            self._coordinators.group_coordinator,
            lambda: t(
                version=self._offset_commit_version,
                transactional_id=self.transactional_id,
                group_id=self.group_id,
                producer_id=self.transaction.producer_id,
                producer_epoch=self.transaction.epoch,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance_id,
                topics=[t.TxnOffsetCommitRequestTopic(name=n, partitions=ps) for n, ps in topics.items()],
            ),
            lambda r: _first_error(p.error_code for x in r.topics for p in x.partitions),
        )

    def _add_offsets(self) -> None:
        self.transaction.check_move(TransactionState.IN_TRANSACTION)
        self._request(
            "AddOffsetsToTxn",
            "AddOffsetsToTxn",
            self._coordinators.txn_coordinator,
            lambda: AddOffsetsToTxnRequest(
                version=3,
                transactional_id=self.transactional_id,
                producer_id=self.transaction.producer_id,
                producer_epoch=self.transaction.epoch,
                group_id=self.group_id,
            ),
            lambda r: int(r.error_code),
        )
        self.transaction.move_to(TransactionState.IN_TRANSACTION)
        self.transaction.offsets_added = True

    def end(self, *, commit: bool) -> None:
        """EndTxn: commit or abort the open transaction (READY once the coordinator confirmed it).

        Version 2: the answer carries the epoch (or producer id) of the next transaction, and
        ``epoch_changed`` is set for the pipeline to stamp its batches with it.
        """
        self.transaction.move_to(TransactionState.COMMITTING if commit else TransactionState.ABORTING)
        response = self._request(
            "commit" if commit else "abort",
            "EndTxn",
            self._coordinators.txn_coordinator,
            lambda: EndTxnRequest(
                version=self._end_txn_version,
                transactional_id=self.transactional_id,
                producer_id=self.transaction.producer_id,
                producer_epoch=self.transaction.epoch,
                committed=commit,
            ),
            lambda r: int(r.error_code),
        )
        self.transaction.move_to(TransactionState.READY)
        if self.version == 2:
            before = self.transaction.epoch
            self._take_next_epoch(int(response.producer_id), int(response.producer_epoch))
            if not commit:  # rare, and the epoch it leaves is what the next transaction is fenced by
                log.info(
                    "producer %s aborted its transaction at epoch %d; the next one writes with epoch %d",
                    self.transactional_id,
                    before,
                    self.transaction.epoch,
                )

    def _take_next_epoch(self, producer_id: int, epoch: int) -> None:
        """Version 2's EndTxn answer: the producer id and epoch the next transaction writes with."""
        if producer_id < 0 or epoch < 0:
            raise TaskFailure(
                f"internal error: EndTxn v5 for {self.transactional_id} gave no next epoch "
                f"(producer id {producer_id}, epoch {epoch})"
            )
        if producer_id != self.transaction.producer_id:  # the epoch was exhausted: the coordinator gave a new id
            log.info(
                "producer %s: epoch %d exhausted, the coordinator gave producer id %d epoch %d",
                self.transactional_id,
                self.transaction.epoch,
                producer_id,
                epoch,
            )
        self.transaction.producer_id, self.transaction.epoch = producer_id, epoch
        self.transaction.epoch_changed = True


def transaction_version(wire: WireClient) -> int:
    """2 when the cluster has ``transaction.version`` 2+ finalized and its brokers speak the requests
    that carry it (Produce v12, EndTxn v5, TxnOffsetCommit v5), else 1."""
    if wire.finalized_feature("transaction.version") < 2:
        return 1
    for request, version in ((ProduceRequest, 12), (EndTxnRequest, 5), (TxnOffsetCommitRequest, 5)):
        if wire.negotiate_or_none(request, version, version) is None:
            return 1
    return 2


class CoordinatorRequests:
    """The transaction requests of one producer, each sent to its coordinator until answered.

    The transaction and group coordinators are looked up once and again only after they moved or a
    connection failed; errors end a request as the task's error classes (``core.errors``).
    """

    def __init__(self, wire: WireClient, transactional_id: str | None, group_id: str, timeout_ms: int) -> None:
        self.wire = wire
        self.transactional_id = transactional_id
        self.group_id = group_id
        self.timeout_ms = timeout_ms
        self._txn_node: NodeId | None = None
        self._group_node: NodeId | None = None

    def _denied_resource(self, api: str, response: Any, code: int) -> tuple[str, list[str]]:
        """The operation and resources behind an authorization error of ``api``'s ``response``."""
        resource = AUTHORIZATION_ERRORS[code]
        if resource == "TRANSACTIONAL_ID":
            return "WRITE", [str(self.transactional_id)]
        if resource == "GROUP":
            return "READ", [self.group_id]
        if resource == "CLUSTER":
            return "IDEMPOTENT_WRITE", []
        if api == "AddPartitionsToTxn":  # WRITE on the topics the transaction would write
            results = response.results_by_topic_v3_and_below
            return "WRITE", [
                t.name for t in results if any(x.partition_error_code == code for x in t.results_by_partition)
            ]
        # TxnOffsetCommit: offsets are stored under the target partitions, which needs READ on them.
        return "READ", [t.name for t in response.topics if any(x.error_code == code for x in t.partitions)]

    def txn_coordinator(self) -> NodeId:
        """The transaction coordinator of the transactional.id."""
        if self._txn_node is None:
            self._txn_node = self.wire.coordinator(str(self.transactional_id), COORDINATOR_TRANSACTION)
        return self._txn_node

    def group_coordinator(self) -> NodeId:
        """The group coordinator of the shadow group."""
        if self._group_node is None:
            self._group_node = self.wire.coordinator(self.group_id, COORDINATOR_GROUP)
        return self._group_node

    def request(
        self,
        what: str,
        api: str,
        node: Callable[[], NodeId],
        request: Callable[[], Any],
        error_of: Callable[[Any], int],
    ) -> Any:
        """Send ``request()`` to ``node()`` until ``error_of`` its response is NONE, within the transaction timeout.

        Coordinator moves, concurrent transactions and failed connections are retried (the
        coordinators looked up again); a fenced epoch, a rebalanced group or any other error ends it.
        A request that needed more than a moment says so when it went through, with why it waited
        (a broker failure's recovery is read from these lines).
        """
        started = time.monotonic()
        waited_for: list[str] = []

        def attempt() -> Any:
            try:
                response = self.wire.call(node(), request(), api)
            except RecoverableTaskFailure as exc:  # a connection failed (a coordinator's broker went away?)
                self._txn_node = self._group_node = None  # look again
                waited_for.append("a failed connection")
                raise TryAgain(str(exc), give_up=exc) from exc
            code = error_of(response)
            if code == KafkaErrorCode.NONE:
                return response
            if code in AUTHORIZATION_ERRORS:
                operation, names = self._denied_resource(api, response, code)
                raise self.wire.denied(code, operation, names) or TaskFailure(what)
            detail = f"{what} for {self.transactional_id or 'the idempotent producer'}: {error_name(code)}"
            if code in FENCED:
                raise RecoverableTaskFailure(f"fenced: {detail}")
            if code in NOT_OWNER:
                raise AbortCycle(f"{detail} (this task no longer owns the partitions)")
            if code not in RETRIABLE:
                raise TaskFailure(detail)
            if code in COORDINATOR_MOVED:
                self._txn_node = self._group_node = None
            waited_for.append(error_name(code))
            raise TryAgain(detail, give_up=RecoverableTaskFailure(f"{detail}, still after {self.timeout_ms} ms"))

        response = retry_or_give_up(
            attempt,
            what,
            deadline_s=self.timeout_ms / 1000,
            first_delay_s=_FIRST_DELAY_S,
            max_delay_s=_MAX_DELAY_S,
        )
        took = time.monotonic() - started
        if took >= _SLOW_REQUEST_S and waited_for:
            log.info(
                "%s for %s went through after %.1f s (%d retries: %s)",
                what,
                self.transactional_id or "the idempotent producer",
                took,
                len(waited_for),
                ", ".join(dict.fromkeys(waited_for)),
            )
        return response
