"""The raw producer: record batches into target transactions, offsets fenced by the shadow group.

The same protocol librdkafka's transactional producer speaks, on batches we did not build:

    InitProducerId (fences an older holder of the transactional.id, aborts its open transaction)
    per cycle: AddPartitionsToTxn before a partition's first Produce; Produce (one batch per
    partition per request, many partitions per request, up to five requests in flight per
    connection, sequences per partition from 0 for each producer epoch); AddOffsetsToTxn and
    TxnOffsetCommit with the owning member's generation (KIP-447 fencing); EndTxn.

Without a transactional.id (``transaction.producer=false``) the producer is idempotent and the
offsets are committed by the group member once every batch is acknowledged (at least once).
Any failed Produce voids the cycle (AbortCycle): the epoch is bumped, which resets sequences, and
the task rewinds. Nothing partial is ever committed.
"""

from __future__ import annotations

import logging
import struct
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from kafka.future import Future
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)

from mirror_sink.core.errors import AbortCycle, RecoverableTaskFailure, TaskFailure
from mirror_sink.raw.batches import rewrite_in_place
from mirror_sink.raw.wire import COORDINATOR_GROUP, COORDINATOR_TRANSACTION, RETRY_LATER, WireClient, error_name

log = logging.getLogger(__name__)

TargetTP = tuple[str, int]

_MAX_IN_FLIGHT = 5
_FENCED = frozenset({47, 90})  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED
_NOT_OWNER = frozenset(
    {22, 25, 27, 82}
)  # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID
#: Produce errors no retry can fix: the task fails naming the partition.
_PRODUCE_FATAL = frozenset(
    {
        2,  # CORRUPT_MESSAGE
        10,  # MESSAGE_TOO_LARGE
        18,  # RECORD_LIST_TOO_LARGE
        29,  # TOPIC_AUTHORIZATION_FAILED
        31,  # CLUSTER_AUTHORIZATION_FAILED
        32,  # INVALID_TIMESTAMP (outside the target topic's message.timestamp.*.max.ms)
        43,  # UNSUPPORTED_FOR_MESSAGE_FORMAT
        53,  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        76,  # UNSUPPORTED_COMPRESSION_TYPE
        87,  # INVALID_RECORD
    }
)


def parse_group_metadata(metadata: bytes) -> tuple[int, str, str | None]:
    """(generation, member id, group instance id) from librdkafka's consumer_group_metadata().

    Its serialized form is ``b"CGMDv2:"``, the generation as a host-order int32, then the group
    id, member id and (unless a null flag is set) the group instance id, each NUL-terminated.
    """
    if not metadata.startswith(b"CGMDv2:"):
        raise TaskFailure(f"unknown consumer group metadata format {metadata[:8]!r} from librdkafka")
    (generation,) = struct.unpack_from("=i", metadata, 7)
    _group, member, rest = metadata[11:].split(b"\0", 2)
    instance = None if rest[:1] != b"\0" else rest[1:].split(b"\0", 1)[0].decode()
    return generation, member.decode(), instance


@dataclass(slots=True)
class _Outgoing:
    batch: memoryview
    records: int
    charge: int  # bytes to return to the memory budget once acknowledged
    first_offset: int  # source offset, for messages


@dataclass
class _Request:
    future: Future
    node: Any
    entries: dict[TargetTP, _Outgoing]


@dataclass
class _Cycle:
    partitions: set[TargetTP] = field(default_factory=set)
    offsets_added: bool = False
    produced: bool = False


class RawProducer:
    """Sends rewritten batches to the target; a Committer for the task's cycles.

    Produce is v8-v11 with AddPartitionsToTxn first (v12 on a transaction.version=2 broker would
    add partitions implicitly; v8-v11 work on every broker since Kafka 3.0).
    """

    def __init__(
        self,
        wire: WireClient,
        *,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        group_id: str,
        release: Callable[[int], None],
        request_max_bytes: int,
    ) -> None:
        self.wire = wire
        #: Produce requests hold copies of their batches until answered: keep each one bounded.
        self.request_max_bytes = request_max_bytes
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.group_id = group_id
        self._release = release
        self.producer_id = -1
        self.epoch = -1
        self._sequence: dict[TargetTP, int] = {}
        self._outgoing: dict[TargetTP, deque[_Outgoing]] = {}
        self._in_flight: list[_Request] = []
        self._per_partition: dict[TargetTP, int] = {}
        self._cycle = _Cycle()
        self._open = False
        self._txn_node: Any = None
        self._group_node: Any = None
        self.acked_records = 0
        self._produce_version = wire.negotiate(ProduceRequest, 8, 11)
        self._end_txn_version = wire.negotiate(EndTxnRequest, 3, 4)
        for request, version in (
            (InitProducerIdRequest, 4),
            (AddPartitionsToTxnRequest, 3),  # v4+ is broker to broker
            (AddOffsetsToTxnRequest, 3),
            (TxnOffsetCommitRequest, 3),
            (FindCoordinatorRequest, 4),
        ):
            wire.negotiate(request, version, version)

    @property
    def transactional(self) -> bool:
        """Exactly once (a transactional.id) or at least once (idempotent only)."""
        return self.transactional_id is not None

    @property
    def open(self) -> bool:
        """True while a cycle has uncommitted work."""
        return self._open

    # -- Committer ------------------------------------------------------------------------------
    def start(self) -> None:
        """InitProducerId: a new epoch; an older holder of the transactional.id is fenced."""
        self._init_producer_id()

    def begin(self) -> None:
        """Mark the cycle open (a transaction starts with its first partition or offsets)."""
        self._open = True

    def commit(self, offsets: list[TopicPartition], member: Consumer, metadata: object) -> None:
        """Make every sent batch and ``offsets`` durable together, or raise AbortCycle."""
        self._open = True
        self.flush()
        if not self.transactional:
            self._commit_as_member(offsets, member)
        else:
            if offsets:
                self._send_offsets(offsets, metadata)
            if self._cycle.partitions or self._cycle.offsets_added:
                self._end_transaction(commit=True)
        self._cycle = _Cycle()
        self._open = False

    def abort(self) -> None:
        """Void the cycle: queued batches dropped, the transaction aborted, a new epoch taken."""
        for queue in self._outgoing.values():
            for out in queue:
                self._release(out.charge)
        self._outgoing.clear()
        self._wait_in_flight(raise_errors=False)
        if self.transactional and (self._cycle.partitions or self._cycle.offsets_added):
            try:
                self._end_transaction(commit=False)
            except (AbortCycle, RecoverableTaskFailure) as exc:
                log.info("abort of %s not confirmed (%s); a new epoch aborts it", self.transactional_id, exc)
        if self._cycle.produced or self._cycle.partitions:
            self._init_producer_id()  # sequences restart at 0 in the new epoch
        self._cycle = _Cycle()
        self._open = False

    # -- producing ------------------------------------------------------------------------------
    def send(self, tp: TargetTP, batch: memoryview, records: int, charge: int, first_offset: int) -> None:
        """Queue ``batch`` (a writable view, rewritten here) for ``tp`` in the open cycle."""
        if self.transactional and tp not in self._cycle.partitions:
            self._add_partitions([tp])
        seq = self._sequence.get(tp, 0)
        rewrite_in_place(
            batch,
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=seq,
            transactional=self.transactional,
        )
        self._sequence[tp] = (seq + records) & 0x7FFFFFFF
        self._outgoing.setdefault(tp, deque()).append(_Outgoing(batch, records, charge, first_offset))
        self._cycle.produced = True

    def add_partitions(self, tps: Iterable[TargetTP]) -> None:
        """Register partitions with the transaction up front (one request for many)."""
        if self.transactional:
            todo = [tp for tp in tps if tp not in self._cycle.partitions]
            if todo:
                self._add_partitions(todo)

    def queued(self, tp: TargetTP) -> int:
        """Batches of ``tp`` waiting to be sent."""
        queue = self._outgoing.get(tp)
        return len(queue) if queue else 0

    @property
    def backlog(self) -> int:
        """Batches queued or in flight."""
        return sum(len(q) for q in self._outgoing.values()) + len(self._in_flight)

    def pump(self) -> None:
        """Send what the connections can take: per leader, one request holding the next batch of
        every partition it leads (a partition may have five requests in flight)."""
        by_node: dict[Any, dict[TargetTP, _Outgoing]] = {}
        nodes_busy: dict[Any, int] = {}
        for r in self._in_flight:
            nodes_busy[r.node] = nodes_busy.get(r.node, 0) + 1
        while True:
            by_node.clear()
            sizes: dict[Any, int] = {}
            for tp, queue in self._outgoing.items():
                if not queue or self._per_partition.get(tp, 0) >= _MAX_IN_FLIGHT:
                    continue
                node = self.wire.leader(*tp)
                if node is None or nodes_busy.get(node, 0) >= _MAX_IN_FLIGHT:
                    continue
                size = sizes.get(node, 0)
                if size and size + len(queue[0].batch) > self.request_max_bytes:
                    continue  # the request is full; this partition goes in the next one
                sizes[node] = size + len(queue[0].batch)
                by_node.setdefault(node, {})[tp] = queue[0]
            sent = False
            for node, entries in by_node.items():
                if not self.wire.ready(node):
                    continue
                for tp in entries:
                    self._outgoing[tp].popleft()
                    self._per_partition[tp] = self._per_partition.get(tp, 0) + 1
                self._in_flight.append(_Request(self.wire.send(node, self._produce_request(entries)), node, entries))
                nodes_busy[node] = nodes_busy.get(node, 0) + 1
                sent = True
            if not sent:
                return

    def _produce_request(self, entries: dict[TargetTP, _Outgoing]) -> ProduceRequest:
        p = ProduceRequest
        topics: dict[str, list[Any]] = {}
        for (topic, partition), out in entries.items():
            topics.setdefault(topic, []).append(
                p.TopicProduceData.PartitionProduceData(index=partition, records=out.batch)
            )
        return p(
            version=self._produce_version,
            transactional_id=self.transactional_id,
            acks=-1,
            timeout_ms=30_000,
            topic_data=[p.TopicProduceData(name=t, partition_data=ps) for t, ps in topics.items()],
        )

    def reap(self) -> None:
        """Account completed Produce requests; raise AbortCycle / TaskFailure on a failed one."""
        done = [r for r in self._in_flight if r.future.is_done]
        if not done:
            return
        self._in_flight = [r for r in self._in_flight if not r.future.is_done]
        problems: list[Exception] = []
        for request in done:
            for tp in request.entries:
                self._per_partition[tp] -= 1
            problems.extend(self._account(request))
        if problems:
            raise _worst(problems)

    def _account(self, request: _Request) -> list[Exception]:
        if request.future.failed():
            for out in request.entries.values():
                self._release(out.charge)
            self.wire.refresh_metadata()
            return [AbortCycle(f"produce request to target broker {request.node} failed: {request.future.exception}")]
        results = {(t.name, p.index): p for t in request.future.value.responses for p in t.partition_responses}
        problems: list[Exception] = []
        for tp, out in request.entries.items():
            self._release(out.charge)
            result = results.get(tp)
            code = result.error_code if result is not None else -1
            if code == 0:
                self.acked_records += out.records
                continue
            where = f"target partition {tp[0]}-{tp[1]} (source offset {out.first_offset})"
            message = result.error_message if result is not None else None
            detail = f"{error_name(code)}: {message}" if message else error_name(code)
            if code in _FENCED:
                problems.append(RecoverableTaskFailure(f"producer {self.transactional_id} fenced on {where}: {detail}"))
            elif code in _PRODUCE_FATAL:
                problems.append(TaskFailure(f"the target rejected a batch for {where}: {detail}"))
            else:
                if code in RETRY_LATER:
                    self.wire.refresh_metadata()
                problems.append(AbortCycle(f"produce to {where}: {detail}"))
        return problems

    def flush(self) -> None:
        """Send everything queued and wait until all of it is acknowledged."""
        self._wait_in_flight(raise_errors=True)

    def _wait_in_flight(self, raise_errors: bool) -> None:
        deadline = time.monotonic() + self.transaction_timeout_ms / 1000
        while self._in_flight or (raise_errors and any(self._outgoing.values())):
            if raise_errors:
                self.pump()
            self.wire.poll(0.05)
            try:
                self.reap()
            except (AbortCycle, RecoverableTaskFailure, TaskFailure):
                if raise_errors:
                    raise
            if time.monotonic() > deadline:
                if raise_errors:
                    raise AbortCycle(f"{self.backlog} produce requests unanswered after the transaction timeout")
                for request in self._in_flight:  # given up on: their bytes go back to the budget
                    for out in request.entries.values():
                        self._release(out.charge)
                self._in_flight.clear()
                self._per_partition.clear()
                return

    # -- transaction control --------------------------------------------------------------------
    def _init_producer_id(self) -> None:
        def attempt() -> tuple[int, Any]:
            node = self._txn_coordinator() if self.transactional else self.wire.any_node()
            r = self.wire.call(
                node,
                InitProducerIdRequest(
                    version=4,
                    transactional_id=self.transactional_id,
                    transaction_timeout_ms=self.transaction_timeout_ms,
                    producer_id=-1,
                    producer_epoch=-1,
                ),
                "InitProducerId",
            )
            return r.error_code, r

        response = self._retrying("InitProducerId", attempt)
        self.producer_id, self.epoch = response.producer_id, response.producer_epoch
        self._sequence.clear()
        self._per_partition.clear()
        log.info(
            "producer %s has producer id %d epoch %d",
            self.transactional_id or "(idempotent)",
            self.producer_id,
            self.epoch,
        )

    def _add_partitions(self, tps: list[TargetTP]) -> None:
        a = AddPartitionsToTxnRequest
        topics: dict[str, list[int]] = {}
        for topic, p in tps:
            topics.setdefault(topic, []).append(p)

        def attempt() -> tuple[int, Any]:
            r = self.wire.call(
                self._txn_coordinator(),
                a(
                    version=3,
                    v3_and_below_transactional_id=self.transactional_id,
                    v3_and_below_producer_id=self.producer_id,
                    v3_and_below_producer_epoch=self.epoch,
                    v3_and_below_topics=[a.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in topics.items()],
                ),
                "AddPartitionsToTxn",
            )
            codes = [x.partition_error_code for t in r.results_by_topic_v3_and_below for x in t.results_by_partition]
            return max(codes, key=lambda c: c not in (0, 55)), r  # 55 OPERATION_NOT_ATTEMPTED follows another error

        self._retrying(f"AddPartitionsToTxn for {len(tps)} partitions", attempt)
        self._cycle.partitions.update(tps)

    def _send_offsets(self, offsets: list[TopicPartition], metadata: object) -> None:
        generation, member_id, instance_id = parse_group_metadata(metadata)  # type: ignore[arg-type]
        if not self._cycle.offsets_added:

            def add() -> tuple[int, Any]:
                r = self.wire.call(
                    self._txn_coordinator(),
                    AddOffsetsToTxnRequest(
                        version=3,
                        transactional_id=self.transactional_id,
                        producer_id=self.producer_id,
                        producer_epoch=self.epoch,
                        group_id=self.group_id,
                    ),
                    "AddOffsetsToTxn",
                )
                return r.error_code, r

            self._retrying("AddOffsetsToTxn", add)
            self._cycle.offsets_added = True
        t = TxnOffsetCommitRequest
        topics: dict[str, list[Any]] = {}
        for tp in offsets:
            topics.setdefault(tp.topic, []).append(
                t.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=tp.offset,
                    committed_leader_epoch=-1,
                    committed_metadata="",
                )
            )

        def commit() -> tuple[int, Any]:
            if self._group_node is None:
                self._group_node = self.wire.coordinator(self.group_id, COORDINATOR_GROUP)
            r = self.wire.call(
                self._group_node,
                t(
                    version=3,
                    transactional_id=self.transactional_id,
                    group_id=self.group_id,
                    producer_id=self.producer_id,
                    producer_epoch=self.epoch,
                    generation_id=generation,
                    member_id=member_id,
                    group_instance_id=instance_id,
                    topics=[t.TxnOffsetCommitRequestTopic(name=n, partitions=ps) for n, ps in topics.items()],
                ),
                "TxnOffsetCommit",
            )
            codes = [p.error_code for x in r.topics for p in x.partitions]
            return max(codes, key=lambda c: c != 0), r

        self._retrying(f"TxnOffsetCommit to group {self.group_id}", commit)

    def _end_transaction(self, commit: bool) -> None:
        def attempt() -> tuple[int, Any]:
            r = self.wire.call(
                self._txn_coordinator(),
                EndTxnRequest(
                    version=self._end_txn_version,
                    transactional_id=self.transactional_id,
                    producer_id=self.producer_id,
                    producer_epoch=self.epoch,
                    committed=commit,
                ),
                "EndTxn",
            )
            return r.error_code, r

        self._retrying("commit" if commit else "abort", attempt)

    def _commit_as_member(self, offsets: list[TopicPartition], member: Consumer) -> None:
        if not offsets:
            return
        try:
            member.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            raise AbortCycle(f"offset commit to the shadow group failed: {exc.args[0].str()}") from exc

    def _txn_coordinator(self) -> Any:
        if self._txn_node is None:
            self._txn_node = self.wire.coordinator(str(self.transactional_id), COORDINATOR_TRANSACTION)
        return self._txn_node

    def _retrying(self, what: str, attempt: Callable[[], tuple[int, Any]]) -> Any:
        """Run ``attempt`` until it succeeds, retrying coordinator moves and concurrent transactions."""
        deadline = time.monotonic() + self.transaction_timeout_ms / 1000
        delay = 0.02
        while True:
            try:
                code, response = attempt()
            except RecoverableTaskFailure:  # a connection failed (a coordinator's broker went away?): look again
                if time.monotonic() > deadline:
                    raise
                self._txn_node = self._group_node = None
                time.sleep(0.5)
                continue
            if code == 0:
                return response
            detail = f"{what} for {self.transactional_id or 'the idempotent producer'}: {error_name(code)}"
            if code in _FENCED:
                raise RecoverableTaskFailure(f"fenced: {detail}")
            if code in _NOT_OWNER:
                raise AbortCycle(f"{detail} (this task no longer owns the partitions)")
            if code not in RETRY_LATER:
                raise TaskFailure(detail)
            if time.monotonic() > deadline:
                raise RecoverableTaskFailure(f"{detail}, still after {self.transaction_timeout_ms} ms")
            if code in (14, 15, 16):  # coordinator loading, unavailable or moved
                self._txn_node = self._group_node = None
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def close(self) -> None:
        """Close the connections (an open transaction is aborted by the next InitProducerId or its timeout)."""
        self.wire.close()


def _worst(problems: list[Exception]) -> Exception:
    """The error that decides what happens next: a task failure over a fencing over an abort."""
    for kind in (TaskFailure, RecoverableTaskFailure):
        for p in problems:
            if type(p) is kind:
                return p
    return problems[0]
