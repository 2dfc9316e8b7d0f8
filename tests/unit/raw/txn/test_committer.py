"""Raw mode's producer side without a broker: the transaction client, the produce pipeline, the committer."""

from __future__ import annotations

import itertools
import struct
import time
from collections.abc import Iterable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from kafka.future import Future
from kafka.record.default_records import DefaultRecordBatchBuilder

from mirror_sink.core.base.errors import AbortCycle, RecoverableTaskFailure, TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients.authorization import AuthorizationFailure, denial
from mirror_sink.core.formats.group_metadata import GroupMetadata, parse_group_metadata
from mirror_sink.raw.produce.producer import ProducePipeline
from mirror_sink.raw.txn.committer import RawCommitter
from mirror_sink.raw.txn.transactions import TransactionClient, TransactionState
from mirror_sink.raw.wire.batches import parse_header
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.produce_request import ChunkedProduce
from mirror_sink.raw.wire.wire import NodeId

#: librdkafka's group metadata for generation 3, member "m-1", no group instance id.
LIBRDKAFKA_METADATA = b"CGMDv2:" + struct.pack("=i", 3) + b"shadow\0m-1\0\x01"
METADATA = GroupMetadata(*parse_group_metadata(LIBRDKAFKA_METADATA), LIBRDKAFKA_METADATA)
T0 = TargetPartition("orders.copy", 0)
T1 = TargetPartition("orders.copy", 1)

Answer = Any | Exception


class FakeWire:
    """The target cluster: canned answers per API for blocking calls, futures for Produce requests."""

    def __init__(self, transaction_version: int = 1, **answers: Iterator[Answer]) -> None:
        self.transaction_version = transaction_version
        self.answers = answers
        self.calls: list[tuple[NodeId, str, Any]] = []
        self.produced: list[tuple[NodeId, Any, Future]] = []
        self.lookups = 0
        self.metadata_refreshes = 0

    def negotiate(self, request_class: object, lowest: int, highest: int) -> int:
        return highest

    def negotiate_or_none(self, request_class: object, lowest: int, highest: int) -> int | None:
        return highest

    def finalized_feature(self, name: str) -> int:
        assert name == "transaction.version"
        return self.transaction_version

    def denied(
        self, code: int, operation: str, resources: Iterable[str], implied_by: str | None = None
    ) -> AuthorizationFailure | None:
        props = {"security.protocol": "SASL_SSL", "sasl.username": "mirror"}
        return denial(code, "target", props, operation, resources, implied_by=implied_by)

    def call(self, node: NodeId, request: Any, what: str, timeout_s: float = 30.0) -> Any:
        self.calls.append((node, what, request))
        answer = next(self.answers[what])
        if isinstance(answer, Exception):
            raise answer
        return answer

    def coordinator(self, key: str, key_type: int, timeout_s: float = 60.0) -> int:
        self.lookups += 1
        return 7

    def any_node(self) -> NodeId:
        return "bootstrap-0"

    def leader(self, topic: str, partition: int) -> int:
        return partition % 2 + 1  # partitions 0 and 1 on different brokers

    def ready(self, node: NodeId) -> bool:
        return True

    def send(self, node: NodeId, request: Any) -> Future:
        future = Future()
        self.produced.append((node, request, future))
        return future

    def poll(self, timeout_s: float) -> None:
        for _, request, future in self.produced:
            if not future.is_done:
                future.success(_produce_response(request, 0))

    def refresh_metadata(self) -> None:
        self.metadata_refreshes += 1

    def apis(self) -> list[str]:
        return [what for _, what, _ in self.calls]


def _code(code: int, **fields: Any) -> SimpleNamespace:
    return SimpleNamespace(error_code=code, **fields)


def _always(answer: Answer) -> Iterator[Answer]:
    return itertools.repeat(answer)


def _partitions_added(*codes: int) -> SimpleNamespace:
    partitions = [SimpleNamespace(partition_error_code=c) for c in codes]
    return SimpleNamespace(results_by_topic_v3_and_below=[SimpleNamespace(results_by_partition=partitions)])


def _produce_response(request: ChunkedProduce, code: int) -> SimpleNamespace:
    return SimpleNamespace(
        responses=[
            SimpleNamespace(
                name=topic,
                partition_responses=[
                    SimpleNamespace(index=index, error_code=code, error_message=None) for index, _ in partitions
                ],
            )
            for topic, partitions in request.topics.items()
        ]
    )


def _client(wire: FakeWire, transactional_id: str | None = "tx-1", timeout_ms: int = 10_000) -> TransactionClient:
    """A client whose transaction is open, as after InitProducerId and a first AddPartitionsToTxn
    (an idempotent one has no transaction)."""
    client = TransactionClient(
        wire,  # type: ignore[arg-type]
        transactional_id=transactional_id,
        transaction_timeout_ms=timeout_ms,
        group_id="shadow",
    )
    if transactional_id is not None:
        client.transaction.state = TransactionState.IN_TRANSACTION
    return client


def _batch(records: int) -> memoryview:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=10**6)
    for i in range(records):
        builder.append(i, 1_700_000_000_000, b"k", b"v" * 10, [])
    return memoryview(bytearray(builder.build()))


def _raw(
    transactional_id: str | None = "tx-1", transaction_version: int = 1, **answers: Iterator[Answer]
) -> tuple[FakeWire, RawCommitter, ProducePipeline, MemoryBudget]:
    wire = FakeWire(
        transaction_version,
        InitProducerId=iter(_code(0, producer_id=40 + i, producer_epoch=i) for i in itertools.count()),
    )
    wire.answers.update(answers)
    budget = MemoryBudget(1 << 20)
    txn = _client(wire, transactional_id)
    pipeline = ProducePipeline(wire, txn, budget, request_max_bytes=1 << 20)  # type: ignore[arg-type]
    committer = RawCommitter(txn, pipeline)
    committer.start()
    return wire, committer, pipeline, budget


# -- the transaction client -------------------------------------------------------------------------
def test_a_moved_coordinator_is_looked_up_again_and_the_request_retried() -> None:
    wire = FakeWire(InitProducerId=iter([_code(16), _code(0, producer_id=5, producer_epoch=2)]))  # NOT_COORDINATOR
    txn = _client(wire)
    txn.init_producer_id()
    assert (txn.transaction.producer_id, txn.transaction.epoch) == (5, 2)
    assert wire.lookups == 2, "the coordinator was forgotten after NOT_COORDINATOR"


@pytest.mark.parametrize(
    ("code", "error", "message"),
    [
        (47, RecoverableTaskFailure, r"^fenced: commit for tx-1: INVALID_PRODUCER_EPOCH \(47\)$"),
        (90, RecoverableTaskFailure, r"^fenced: commit for tx-1: PRODUCER_FENCED \(90\)$"),
        (22, AbortCycle, r"^commit for tx-1: ILLEGAL_GENERATION \(22\) \(this task no longer owns the partitions\)$"),
        (87, TaskFailure, r"^commit for tx-1: INVALID_RECORD \(87\)$"),
    ],
)
def test_coordinator_errors_end_the_request_as_the_task_s_error_classes(
    code: int, error: type[Exception], message: str
) -> None:
    wire = FakeWire(EndTxn=_always(_code(code)))
    with pytest.raises(error, match=message) as raised:
        _client(wire).end(commit=True)
    assert type(raised.value) is error
    assert wire.apis() == ["EndTxn"], "not retried"


def test_a_retriable_error_past_the_transaction_timeout_gives_up_recoverably() -> None:
    wire = FakeWire(EndTxn=_always(_code(51)))  # CONCURRENT_TRANSACTIONS
    with pytest.raises(
        RecoverableTaskFailure, match=r"^abort for tx-1: CONCURRENT_TRANSACTIONS \(51\), still after 200 ms$"
    ):
        _client(wire, timeout_ms=200).end(commit=False)
    assert len(wire.calls) > 2


def test_a_failed_connection_is_retried_with_fresh_coordinators_then_raised_as_it_was() -> None:
    down = RecoverableTaskFailure("EndTxn on the target cluster failed: connection refused")
    wire = FakeWire(EndTxn=_always(down))
    with pytest.raises(RecoverableTaskFailure) as raised:
        _client(wire, timeout_ms=200).end(commit=True)
    assert raised.value is down
    assert wire.lookups == len(wire.calls) > 2, "every attempt looked the coordinator up again"


def test_add_partitions_registers_new_partitions_once_and_names_the_real_error() -> None:
    wire = FakeWire(
        AddPartitionsToTxn=iter([_partitions_added(0, 0), _partitions_added(55, 87)]), EndTxn=_always(_code(0))
    )
    txn = _client(wire)
    txn.add_partitions([T0, T1])
    txn.add_partitions([T1, T0])
    state = txn.transaction
    assert wire.apis() == ["AddPartitionsToTxn"] and state.partitions == {T0, T1} and state.in_transaction
    with pytest.raises(TaskFailure, match=r"AddPartitionsToTxn for 1 partitions for tx-1: INVALID_RECORD \(87\)"):
        txn.add_partitions([TargetPartition("other", 0)])
    txn.end(commit=False)
    txn.transaction.end_cycle()
    assert not txn.transaction.in_transaction


def test_the_transaction_moves_through_its_states_and_refuses_a_move_the_protocol_has_not() -> None:
    wire = FakeWire(
        InitProducerId=_always(_code(0, producer_id=5, producer_epoch=0)),
        AddPartitionsToTxn=_always(_partitions_added(0)),
        EndTxn=_always(_code(0)),
    )
    txn = _client(wire)
    txn.transaction.state = TransactionState.UNINITIALIZED  # as constructed
    seen = [txn.transaction.state]
    txn.init_producer_id()
    seen.append(txn.transaction.state)
    with pytest.raises(
        TaskFailure, match=r"^internal error: the transaction of tx-1 cannot go from READY to COMMITTING$"
    ):
        txn.end(commit=True)  # nothing open: a bug, not a request
    txn.add_partitions([T0])
    seen.append(txn.transaction.state)
    txn.end(commit=True)
    seen.append(txn.transaction.state)
    assert seen == ["UNINITIALIZED", "READY", "IN_TRANSACTION", "READY"]
    assert wire.apis() == ["InitProducerId", "AddPartitionsToTxn", "EndTxn"]


def test_a_refused_first_add_leaves_no_transaction_open() -> None:
    wire = FakeWire(AddPartitionsToTxn=_always(_partitions_added(87)))  # INVALID_RECORD
    txn = _client(wire)
    txn.transaction.state = TransactionState.READY
    with pytest.raises(TaskFailure):
        txn.add_partitions([T0])
    assert txn.transaction.state is TransactionState.READY and not txn.transaction.in_transaction


def test_an_idempotent_producer_sends_no_transaction_requests() -> None:
    wire = FakeWire(InitProducerId=iter([_code(0, producer_id=9, producer_epoch=0)]))
    txn = _client(wire, transactional_id=None)
    txn.init_producer_id()
    txn.add_partitions([T0])
    assert [(node, what) for node, what, _ in wire.calls] == [("bootstrap-0", "InitProducerId")]
    assert wire.lookups == 0 and not txn.transaction.in_transaction


# -- the produce pipeline ---------------------------------------------------------------------------
def test_batches_are_stamped_with_the_epoch_and_sequences_per_partition() -> None:
    wire, committer, pipeline, _ = _raw(AddPartitionsToTxn=_always(_partitions_added(0)), EndTxn=_always(_code(0)))
    batches = [(T0, _batch(3)), (T0, _batch(2)), (T1, _batch(4))]
    for tp, batch in batches:
        pipeline.send(tp, batch, parse_header(batch).record_count, 0, 0)
    stamped = [
        (h.producer_id, h.producer_epoch, int.from_bytes(b[53:57], "big"))
        for _, b in batches
        for h in [parse_header(b)]
    ]
    assert stamped == [(40, 0, 0), (40, 0, 3), (40, 0, 0)]
    assert all(parse_header(b).is_transactional for _, b in batches)
    assert wire.apis() == ["InitProducerId", "AddPartitionsToTxn", "AddPartitionsToTxn"], "each partition added once"
    committer.abort()  # nothing acknowledged yet: the cycle is void, a new epoch restarts the sequences
    again = _batch(1)
    pipeline.send(T0, again, 1, 0, 0)
    assert (parse_header(again).producer_epoch, int.from_bytes(again[53:57], "big")) == (1, 0)


def test_one_request_per_leader_carries_the_next_batch_of_each_partition_and_acks_free_the_budget() -> None:
    wire, _, pipeline, budget = _raw(transactional_id=None)
    budget.take(300)
    for tp, charge in ((T0, 100), (T0, 100), (T1, 100)):
        pipeline.send(tp, _batch(2), 2, charge, 0)
    pipeline.pump()
    assert sorted(node for node, _, _ in wire.produced) == [1, 1, 2], "T0's second batch is pipelined behind its first"
    assert all(len(partitions) == 1 for _, r, _ in wire.produced for partitions in r.topics.values())
    assert pipeline.backlog == 3
    wire.poll(0)
    pipeline.reap()
    assert (pipeline.backlog, pipeline.acked_records, budget.used) == (0, 6, 0)


@pytest.mark.parametrize(
    ("codes", "error", "message"),
    [
        ((6, 0), AbortCycle, r"^produce to target partition orders.copy-0 \(source offset 10\): NOT_LEADER"),
        (
            (6, 47),
            RecoverableTaskFailure,
            r"^producer None fenced on target partition orders.copy-1 \(source offset 20\)",
        ),
        (
            (29, 0),
            AuthorizationFailure,
            r"^the target cluster denied WRITE on TOPIC 'orders.copy' to User:mirror; grant it with kafka-acls.sh "
            r"--add --allow-principal User:mirror --operation Write --topic 'orders.copy'$",
        ),
        (
            (47, 10),
            TaskFailure,
            r"^the target rejected a batch for target partition orders.copy-1 .*MESSAGE_SIZE_TOO_LARGE \(10\)$",
        ),
    ],
)
def test_a_failed_produce_raises_the_worst_of_its_errors_and_still_frees_the_budget(
    codes: tuple[int, int], error: type[Exception], message: str
) -> None:
    wire, _, pipeline, budget = _raw(transactional_id=None)
    budget.take(200)
    pipeline.send(T0, _batch(1), 1, 100, 10)
    pipeline.send(T1, _batch(1), 1, 100, 20)
    pipeline.pump()
    code_of_leader = {1: codes[0], 2: codes[1]}  # T0's leader is broker 1, T1's broker 2
    for node, request, future in wire.produced:
        future.success(_produce_response(request, code_of_leader[int(node)]))
    with pytest.raises(error, match=message) as raised:
        pipeline.reap()
    assert type(raised.value) is error
    assert budget.used == 0 and pipeline.acked_records == codes.count(0)


# -- the committer ----------------------------------------------------------------------------------
def test_a_transactional_cycle_commits_its_batches_and_offsets_in_one_transaction() -> None:
    wire, committer, pipeline, _ = _raw(
        AddPartitionsToTxn=_always(_partitions_added(0)),
        AddOffsetsToTxn=_always(_code(0)),
        TxnOffsetCommit=_always(SimpleNamespace(topics=[SimpleNamespace(partitions=[_code(0)])])),
        EndTxn=_always(_code(0)),
    )
    committer.begin()
    committer.enlist([T0])
    pipeline.send(T0, _batch(2), 2, 0, 0)
    was_open = committer.open
    committer.commit([TopicPartition("orders.copy", 0, 2)], None, METADATA)  # type: ignore[arg-type]
    assert wire.apis() == ["InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"]
    offsets = wire.calls[3][2]
    assert (offsets.generation_id, offsets.member_id, offsets.group_instance_id) == (3, "m-1", None)
    assert wire.calls[4][2].committed and pipeline.acked_records == 2
    assert was_open and not committer.open
    committer.commit([TopicPartition("orders.copy", 0, 2)], None, METADATA)  # type: ignore[arg-type]
    assert wire.apis()[5:] == ["AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"], "the next transaction adds them anew"


def test_the_cycle_begins_without_a_request_and_a_write_before_it_began_is_refused() -> None:
    wire, committer, _, _ = _raw(AddPartitionsToTxn=_always(_partitions_added(0)))
    with pytest.raises(TaskFailure, match=r"^internal error: the data path wrote before the cycle began$"):
        committer.enlist([T0])
    committer.begin()
    committer.begin()
    assert wire.apis() == ["InitProducerId"] and not committer.open, "an idle cycle costs no request"
    committer.abort()
    assert wire.apis() == ["InitProducerId"], "nothing to abort: nothing was enlisted"
    committer.begin()
    committer.enlist([T0])
    assert wire.apis()[1:] == ["AddPartitionsToTxn"] and committer.open


def test_an_aborted_cycle_ends_its_transaction_and_takes_a_new_epoch() -> None:
    wire, committer, pipeline, budget = _raw(
        AddPartitionsToTxn=_always(_partitions_added(0)), EndTxn=iter([_code(15), _code(0)])
    )
    budget.take(100)
    committer.begin()
    committer.enlist([T0])
    pipeline.send(T0, _batch(2), 2, 100, 0)
    committer.abort()
    assert wire.apis() == ["InitProducerId", "AddPartitionsToTxn", "EndTxn", "EndTxn", "InitProducerId"]
    assert not wire.calls[3][2].committed and budget.used == 0 and not committer.open
    committer.abort()
    assert len(wire.calls) == 5, "nothing to abort in an empty cycle"


def test_an_idempotent_cycle_is_committed_by_the_group_member_once_acknowledged() -> None:
    committed: list[list[TopicPartition]] = []
    member = SimpleNamespace(commit=lambda offsets, asynchronous: committed.append(offsets))
    wire, committer, pipeline, _ = _raw(transactional_id=None)
    committer.begin()
    committer.enlist([T0])
    pipeline.send(T0, _batch(2), 2, 0, 0)
    committer.commit([TopicPartition("orders", 0, 2)], member, METADATA)  # type: ignore[arg-type]
    assert pipeline.acked_records == 2 and len(committed) == 1 and wire.apis() == ["InitProducerId"]


def test_a_member_commit_failure_voids_the_cycle() -> None:
    from confluent_kafka import KafkaError, KafkaException

    def fail(offsets: list[TopicPartition], asynchronous: bool) -> None:
        raise KafkaException(KafkaError(KafkaError.ILLEGAL_GENERATION))

    _, committer, _, _ = _raw(transactional_id=None)
    member = SimpleNamespace(commit=fail)
    with pytest.raises(AbortCycle, match="offset commit to the shadow group failed"):
        committer.commit([TopicPartition("orders", 0, 2)], member, METADATA)  # type: ignore[arg-type]
    assert committer.open, "still open: the task aborts it"


# -- transactions version 2 (KIP-890 part 2) --------------------------------------------------------
_OFFSETS_OK = SimpleNamespace(topics=[SimpleNamespace(partitions=[_code(0)])])


def _stamp(batch: memoryview) -> tuple[int, int, int]:
    header = parse_header(batch)
    return header.producer_id, header.producer_epoch, int.from_bytes(batch[53:57], "big")


def test_version_2_adds_nothing_itself_and_each_commit_gives_the_next_epoch() -> None:
    wire, committer, pipeline, _ = _raw(
        transaction_version=2,
        TxnOffsetCommit=_always(_OFFSETS_OK),
        EndTxn=iter([_code(0, producer_id=40, producer_epoch=1), _code(0, producer_id=40, producer_epoch=2)]),
    )
    assert committer.transactions.version == 2
    for expected_epoch in (0, 1):
        committer.begin()
        committer.enlist([T0])
        first, second = _batch(2), _batch(1)
        pipeline.send(T0, first, 2, 0, 0)
        pipeline.send(T0, second, 1, 0, 2)
        assert [_stamp(first), _stamp(second)] == [(40, expected_epoch, 0), (40, expected_epoch, 2)]
        committer.commit([TopicPartition("orders.copy", 0, 3)], None, METADATA)  # type: ignore[arg-type]
    assert wire.apis() == ["InitProducerId", "TxnOffsetCommit", "EndTxn", "TxnOffsetCommit", "EndTxn"], (
        "no AddPartitionsToTxn or AddOffsetsToTxn: the brokers add them"
    )
    assert {wire.calls[i][2].API_VERSION for i in (1, 2)} == {5}, "TxnOffsetCommit v5 and EndTxn v5"
    assert {r.API_VERSION for _, r, _ in wire.produced} == {12}, "Produce v12 asks the leader to add the partition"
    again = _batch(1)
    committer.begin()
    pipeline.send(T0, again, 1, 0, 3)
    assert _stamp(again) == (40, 2, 0), "the second commit's epoch, sequences from 0"


def test_version_2_aborts_into_the_next_epoch_and_takes_a_new_id_only_when_the_abort_is_unconfirmed() -> None:
    wire, committer, pipeline, _ = _raw(
        transaction_version=2,
        EndTxn=iter([_code(0, producer_id=40, producer_epoch=1), _code(51)] + [_code(51)] * 400),
    )
    committer.begin()
    pipeline.send(T0, _batch(2), 2, 0, 0)
    committer.abort()
    assert wire.apis() == ["InitProducerId", "EndTxn"], "a confirmed abort needs no InitProducerId"
    assert not wire.calls[1][2].committed
    batch = _batch(1)
    committer.begin()
    pipeline.send(T0, batch, 1, 0, 0)
    assert _stamp(batch) == (40, 1, 0)
    committer.transactions.transaction_timeout_ms = 50  # CONCURRENT_TRANSACTIONS until given up
    committer.transactions._coordinators.timeout_ms = 50
    committer.abort()
    assert wire.apis()[-1] == "InitProducerId", "an unconfirmed abort is ended by a new epoch"
    batch = _batch(1)
    committer.begin()
    pipeline.send(T0, batch, 1, 0, 0)
    assert _stamp(batch) == (41, 1, 0)


def test_version_2_follows_the_coordinator_to_a_new_producer_id_when_the_epoch_is_exhausted() -> None:
    _, committer, pipeline, _ = _raw(
        transaction_version=2,
        TxnOffsetCommit=_always(_OFFSETS_OK),
        EndTxn=iter([_code(0, producer_id=77, producer_epoch=0)]),
    )
    committer.transaction.epoch = 32766
    pipeline.new_epoch()
    committer.begin()
    pipeline.send(T0, _batch(1), 1, 0, 0)
    committer.commit([TopicPartition("orders.copy", 0, 1)], None, METADATA)  # type: ignore[arg-type]
    batch = _batch(1)
    committer.begin()
    pipeline.send(T0, batch, 1, 0, 1)
    assert _stamp(batch) == (77, 0, 0)


def test_version_2_ends_no_transaction_that_wrote_nothing() -> None:
    wire, committer, _, _ = _raw(transaction_version=2)
    committer.begin()
    committer.enlist([T0])
    committer.commit([], None, METADATA)  # type: ignore[arg-type]
    committer.begin()
    committer.enlist([T0])
    committer.abort()
    assert wire.apis() == ["InitProducerId"], "enlisting alone reaches no broker in version 2"


def test_version_1_is_spoken_where_the_target_has_no_version_2_or_it_is_asked_for() -> None:
    assert _raw(transaction_version=1)[1].transactions.version == 1
    wire = FakeWire(2)
    forced = TransactionClient(
        wire,  # type: ignore[arg-type]
        transactional_id="tx-1",
        transaction_timeout_ms=1000,
        group_id="shadow",
        version=1,
    )
    assert forced.version == 1
    assert _raw(transactional_id=None, transaction_version=2)[1].transactions.version == 1, "no transactions at all"


@pytest.mark.parametrize("refusal", [51, 19])  # CONCURRENT_TRANSACTIONS, NOT_ENOUGH_REPLICAS
def test_version_2_sends_a_first_batch_alone_and_again_while_the_previous_markers_are_written(refusal: int) -> None:
    wire, committer, pipeline, budget = _raw(transaction_version=2)
    budget.take(300)
    committer.begin()
    batches = [_batch(2), _batch(3), _batch(1)]
    for i, batch in enumerate(batches):
        pipeline.send(T0, batch, parse_header(batch).record_count, 100, i * 10)
    pipeline.pump()
    assert len(wire.produced) == 1, "the partition's later batches wait until its first one is accepted"
    _, request, future = wire.produced[0]
    future.success(_produce_response(request, refusal))  # the markers are being written, or the coordinator moves
    pipeline.reap()
    assert budget.used == 300, "the refused batch stays charged: it is sent again"
    time.sleep(0.01)  # its backoff
    pipeline.pump()
    assert len(wire.produced) == 2 and wire.produced[1][1].topics == request.topics, "the same batch, again"
    _, again, future = wire.produced[1]
    future.success(_produce_response(again, 0))
    pipeline.reap()
    assert committer.transaction.marker_wait_s > 0
    pipeline.pump()
    assert len(wire.produced) == 4, "accepted: the later batches are pipelined"
    wire.poll(0)
    pipeline.reap()
    assert (pipeline.acked_records, budget.used) == (6, 0)
    sequences = [int.from_bytes(b[53:57], "big") for b in batches]
    assert sequences == [0, 2, 5], "one sequence per record, unchanged by the resend"


def test_version_2_voids_the_cycle_on_any_other_refusal_of_a_first_batch() -> None:
    wire, committer, pipeline, _ = _raw(transaction_version=2)
    committer.begin()
    pipeline.send(T0, _batch(1), 1, 0, 0)
    pipeline.pump()
    _, request, future = wire.produced[0]
    future.success(_produce_response(request, 6))  # NOT_LEADER_OR_FOLLOWER
    with pytest.raises(AbortCycle, match="NOT_LEADER"):
        pipeline.reap()


def test_version_2_drops_a_first_batch_refused_while_its_cycle_is_discarded() -> None:
    """Found by the soak: a first batch answered CONCURRENT_TRANSACTIONS during the abort's wait for
    requests in flight was queued again, then sent after the abort under the old epoch and fenced."""
    wire, committer, pipeline, budget = _raw(
        transaction_version=2, EndTxn=_always(_code(0, producer_id=40, producer_epoch=1))
    )
    budget.take(100)
    committer.begin()
    pipeline.send(T0, _batch(2), 2, 100, 0)
    pipeline.pump()
    _, request, future = wire.produced[0]
    wire.poll = lambda timeout_s: future.success(_produce_response(request, 51)) if not future.is_done else None  # type: ignore[method-assign]
    committer.abort()
    assert (pipeline.backlog, budget.used) == (0, 0), "nothing left to send, nothing left charged"
    pipeline.pump()
    assert len(wire.produced) == 1, "the refused batch of the aborted cycle is never sent again"
