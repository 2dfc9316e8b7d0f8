"""The raw produce pipeline: rewritten source batches to the target, many requests in flight.

Produce v12 on a transaction.version=2 target (the broker adds each partition to the transaction),
else v8-v11 (every broker since Kafka 3.0): one batch per partition per request, many partitions per request,
up to five requests in flight per connection and per partition, sequences per partition from 0 for
each producer epoch. The transaction around it (producer id and epoch, AddPartitionsToTxn, EndTxn)
is ``transactions.TransactionClient``'s; ``committer.RawCommitter`` drives both for the task's cycles.

Any failed Produce voids the cycle (AbortCycle): the committer bumps the epoch, which resets the
sequences, and the task rewinds. Nothing partial is ever committed.

One refusal is waited out instead. With transactions version 2 the leader adds a partition to the
transaction when its first batch arrives, and the coordinator refuses that (CONCURRENT_TRANSACTIONS)
until the previous transaction's markers are written: version 1's AddPartitionsToTxn wait, moved
into the Produce (a coordinator moving or loading reaches us as NOT_ENOUGH_REPLICAS). Such a batch
was not appended, so it is sent again as it is, after a backoff, as the Java producer does. To
keep that safe, a partition's first batch of a transaction travels alone: the partition's later
batches follow once it is accepted, so none of them can arrive out of sequence behind a refusal.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kafka.future import Future
from kafka.protocol.producer import ProduceRequest

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.error_codes import FATAL_WRITE, FENCED, RETRIABLE, KafkaErrorCode
from mirror_sink.core.base.errors import AbortCycle, RecoverableTaskFailure, TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.raw.txn.transactions import TransactionClient
from mirror_sink.raw.wire import produce_request
from mirror_sink.raw.wire.batches import rewrite_in_place
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.produce_request import ChunkedProduce
from mirror_sink.raw.wire.wire import REQUESTS_IN_FLIGHT, NodeId, WireClient, error_name

log = logging.getLogger(__name__)

_MAX_IN_FLIGHT = REQUESTS_IN_FLIGHT
#: A first batch refused this long is said in the log (the previous markers wait on a broker failover).
_JOIN_WAIT_SAID_S = 1.0
#: Backoff before a first batch refused for the previous transaction's markers is sent again
#: (version 1 retried its AddPartitionsToTxn from 5 ms, doubling up to 0.5 s).
_JOIN_FIRST_DELAY_S = 0.005
_JOIN_MAX_DELAY_S = 0.2
#: A first batch answered with these was not appended, and the coordinator may yet add its partition:
#: the previous markers not all written (51), or the coordinator moving or loading, which the leader
#: reports as NOT_ENOUGH_REPLICAS (19), as it does a real shortage of in-sync replicas.
_JOIN_AGAIN = frozenset({KafkaErrorCode.CONCURRENT_TRANSACTIONS, KafkaErrorCode.NOT_ENOUGH_REPLICAS})
#: Compared once per acknowledged batch: a module constant, not an enum attribute lookup.
_NONE = KafkaErrorCode.NONE


@dataclass(slots=True)
class _Outgoing:
    batch: memoryview
    records: int
    charge: int  # bytes to return to the memory budget once acknowledged
    #: The records' source offsets: the first of ``records`` consecutive ones, each one's (a
    #: re-encoded batch with gaps), or None for a batch that mirrors nothing (the offset syncs).
    sources: int | Sequence[int] | None

    @property
    def first_source_offset(self) -> int | None:
        s = self.sources
        return s if isinstance(s, int) or s is None else (s[0] if s else None)


@dataclass
class _Request:
    future: Future
    node: NodeId
    entries: dict[TargetPartition, _Outgoing]


class ProducePipeline:
    """Queues rewritten batches per target partition and keeps the leaders' connections busy.

    Every batch's bytes stay charged to ``budget`` until the target acknowledges them (or they are
    dropped); they are given back here. What it does to the transaction is kept in the transaction
    client's ``RawTransaction``: that a batch was produced, and, with its ``offsets`` set, every
    acknowledged batch's source offsets with the target offsets the Produce response gives (its base
    offset).
    """

    def __init__(
        self, wire: WireClient, transactions: TransactionClient, budget: MemoryBudget, *, request_max_bytes: int
    ) -> None:
        self.wire = wire
        self._txn = transactions
        #: The transaction's state, shared with the client and the committer.
        self._transaction = transactions.transaction
        self._budget = budget
        #: A Produce request's size bound (batches of many partitions share a request up to it).
        self.request_max_bytes = request_max_bytes
        # Fixed for the producer's life: read once here, not per batch.
        self._transactional = transactions.transactional
        self._transactional_id = transactions.transactional_id
        self._producer_id = self._transaction.producer_id
        self._epoch = self._transaction.epoch
        self._sequence: dict[TargetPartition, int] = {}
        self._outgoing: dict[TargetPartition, deque[_Outgoing]] = {}
        self._in_flight: list[_Request] = []
        self._per_partition: dict[TargetPartition, int] = {}
        self.acked_records = 0
        #: Version 2: partitions whose first batch of the open transaction is not accepted yet, with
        #: when it may be sent (again) and the backoff after its next refusal.
        self._joining: dict[TargetPartition, tuple[float, float]] = {}
        self._adds_itself = transactions.transactional and transactions.version == 2
        #: Version 2's marker wait (``RawTransaction.marker_wait_s``): from the transaction's first
        #: refusal for the previous one's markers until its first accepted batch.
        self._first_refused_at: float | None = None
        self._joined_once = False
        self._join_wait_said = False
        # Produce v12 tells a version 2 broker to add the partition to the transaction itself; v8-v11
        # work on every broker since Kafka 3.0, and a version 1 transaction may not use v12.
        self._produce_version = 12 if transactions.version == 2 else wire.negotiate(ProduceRequest, 8, 11)
        #: Requests are sent from the batches' own memory when the connections can (``produce_request.install``).
        self._chunked = produce_request.installed()

    def new_epoch(self) -> None:
        """Stamp batches with the transaction's new producer id and epoch: sequences restart at 0."""
        self._producer_id, self._epoch = self._transaction.producer_id, self._transaction.epoch
        self._sequence.clear()
        self._per_partition.clear()
        self._joining.clear()
        self._first_refused_at = None
        self._joined_once = False
        self._join_wait_said = False

    def send(
        self,
        tp: TargetPartition,
        batch: memoryview,
        records: int,
        charge: int,
        sources: int | Sequence[int] | None,
    ) -> None:
        """Queue ``batch`` (a writable view, rewritten here) for ``tp`` in the open cycle.

        ``charge`` bytes go back to the budget once the target acknowledges it (or it is dropped).
        ``sources``: the first source offset of ``records`` consecutive ones, or each record's, or
        None when the batch mirrors no source records.
        """
        if self._transactional and tp not in self._transaction.partitions:
            self._txn.add_partitions([tp])
            if self._adds_itself:
                self._joining[tp] = (0.0, _JOIN_FIRST_DELAY_S)
        seq = self._sequence.get(tp, 0)
        rewrite_in_place(
            batch,
            producer_id=self._producer_id,
            producer_epoch=self._epoch,
            base_sequence=seq,
            transactional=self._transactional,
        )
        self._sequence[tp] = (seq + records) & 0x7FFFFFFF
        self._outgoing.setdefault(tp, deque()).append(_Outgoing(batch, records, charge, sources))
        self._transaction.produced = True

    def queued(self, tp: TargetPartition) -> int:
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
        by_node: dict[NodeId, dict[TargetPartition, _Outgoing]] = {}
        nodes_busy: dict[NodeId, int] = {}
        now = time.monotonic() if self._joining else 0.0
        for r in self._in_flight:
            nodes_busy[r.node] = nodes_busy.get(r.node, 0) + 1
        while True:
            by_node.clear()
            sizes: dict[NodeId, int] = {}
            for tp, queue in self._outgoing.items():
                if not queue or self._per_partition.get(tp, 0) >= _MAX_IN_FLIGHT:
                    continue
                joining = self._joining.get(tp) if self._joining else None
                if joining is not None and (self._per_partition.get(tp, 0) or now < joining[0]):
                    continue  # a first batch of the transaction goes alone, once its backoff passed
                leader = self.wire.leader(*tp)
                if leader is None or nodes_busy.get(leader, 0) >= _MAX_IN_FLIGHT:
                    continue
                size = sizes.get(leader, 0)
                if size and size + len(queue[0].batch) > self.request_max_bytes:
                    continue  # the request is full; this partition goes in the next one
                sizes[leader] = size + len(queue[0].batch)
                by_node.setdefault(leader, {})[tp] = queue[0]
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

    def _produce_request(self, entries: dict[TargetPartition, _Outgoing]) -> ChunkedProduce | ProduceRequest:
        if self._chunked:
            batches: dict[str, list[tuple[int, memoryview]]] = {}
            for (topic, partition), out in entries.items():
                batches.setdefault(topic, []).append((partition, out.batch))
            return ChunkedProduce(self._produce_version, self._transactional_id, -1, 30_000, batches)
        p = ProduceRequest
        topics: dict[str, list[Any]] = {}
        for (topic, partition), out in entries.items():
            topics.setdefault(topic, []).append(
                p.TopicProduceData.PartitionProduceData(index=partition, records=out.batch)
            )
        return p(
            version=self._produce_version,
            transactional_id=self._transactional_id,
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
                self._budget.give_back(out.charge)
            self.wire.refresh_metadata()
            return [AbortCycle(f"produce request to target broker {request.node} failed: {request.future.exception}")]
        results = {(t.name, p.index): p for t in request.future.value.responses for p in t.partition_responses}
        offsets = self._transaction.offsets
        problems: list[Exception] = []
        for tp, out in request.entries.items():
            result = results.get(tp)
            code = result.error_code if result is not None else KafkaErrorCode.UNKNOWN_SERVER_ERROR
            if self._joining and tp in self._joining and self._join_refused(tp, out, code):
                continue  # sent again after its backoff, still charged to the budget
            self._budget.give_back(out.charge)
            if code == _NONE:
                self.acked_records += out.records
                if offsets is not None and out.sources is not None:
                    assert result is not None
                    if isinstance(out.sources, int):
                        offsets.add(tp, out.sources, result.base_offset, out.records)
                    else:
                        offsets.add_offsets(tp, out.sources, result.base_offset)
                continue
            where = f"target partition {tp} (source offset {out.first_source_offset})"
            message = result.error_message if result is not None else None
            detail = f"{error_name(code)}: {message}" if message else error_name(code)
            # Only a topic refusal is about this topic; others (53, 31) keep their plain detail.
            denied = (
                self.wire.denied(code, "WRITE", [tp.topic])
                if code == KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED
                else None
            )
            if denied is not None:
                problems.append(denied)
            elif code in FENCED:
                problems.append(
                    RecoverableTaskFailure(
                        f"producer {self._transactional_id} fenced on {where} at epoch {self._epoch}: {detail}"
                    )
                )
            elif code in FATAL_WRITE:
                problems.append(TaskFailure(f"the target rejected a batch for {where}: {detail}"))
            else:
                if code in RETRIABLE:
                    self.wire.refresh_metadata()
                problems.append(AbortCycle(f"produce to {where}: {detail}"))
        return problems

    def _join_refused(self, tp: TargetPartition, out: _Outgoing, code: int) -> bool:
        """Version 2, ``tp``'s first batch of the transaction answered ``code``: True when it is queued
        to be sent again (the coordinator was still writing the previous transaction's markers)."""
        now = time.monotonic()
        if code not in _JOIN_AGAIN:
            del self._joining[tp]  # accepted (the partition is in the transaction), or a real error
            if code == _NONE and not self._joined_once:  # the transaction's first: the markers are done
                self._joined_once = True
                first, self._first_refused_at = self._first_refused_at, None
                self._transaction.marker_wait_s = 0.0 if first is None else now - first
                if self._join_wait_said:
                    log.info(
                        "producer %s: the target took the transaction's first batches after %.1f s",
                        self._transactional_id,
                        self._transaction.marker_wait_s,
                    )
            return False
        if self._first_refused_at is None:
            self._first_refused_at = now
        elif not self._join_wait_said and now - self._first_refused_at >= _JOIN_WAIT_SAID_S:
            self._join_wait_said = True
            log.info(
                "producer %s: target partition %s refuses the transaction's first batch (%s) for %.1f s now: "
                "the previous transaction's markers are not all written yet (a partition leader moving?)",
                self._transactional_id,
                tp,
                error_name(code),
                now - self._first_refused_at,
            )
        delay = self._joining[tp][1]
        self._joining[tp] = (now + delay, min(2 * delay, _JOIN_MAX_DELAY_S))
        self._outgoing.setdefault(tp, deque()).appendleft(out)
        return True

    def flush(self) -> None:
        """Send everything queued and wait until all of it is acknowledged."""
        self._wait_in_flight(raise_errors=True)

    def discard(self) -> None:
        """Drop the queued batches and wait out (or, after the transaction timeout, give up on) those in flight.

        Their bytes go back to the budget; errors of the requests in flight are ignored: the cycle is void.
        """
        for queue in self._outgoing.values():
            for out in queue:
                self._budget.give_back(out.charge)
        self._outgoing.clear()
        # A first batch refused while it is waited out must not be queued again: sent after the
        # abort, under the old epoch, it would be fenced and cost the task its clients.
        self._joining.clear()
        self._wait_in_flight(raise_errors=False)

    def _wait_in_flight(self, raise_errors: bool) -> None:
        deadline = Deadline(self._txn.transaction_timeout_ms / 1000)
        while self._in_flight or (raise_errors and any(self._outgoing.values())):
            if raise_errors:
                self.pump()
            self.wire.poll(0.05 if self._in_flight or not self._joining else _JOIN_FIRST_DELAY_S)
            try:
                self.reap()
            except (AbortCycle, RecoverableTaskFailure, TaskFailure):
                if raise_errors:
                    raise
            if deadline.passed:
                if raise_errors:
                    raise AbortCycle(f"{self.backlog} produce requests unanswered after the transaction timeout")
                for request in self._in_flight:  # given up on: their bytes go back to the budget
                    for out in request.entries.values():
                        self._budget.give_back(out.charge)
                self._in_flight.clear()
                self._per_partition.clear()
                return

    def close(self) -> None:
        """Close the target connections (an open transaction is aborted by the next InitProducerId or its timeout)."""
        self.wire.close()


def _worst(problems: list[Exception]) -> Exception:
    """The error that decides what happens next: a task failure over a fencing over an abort."""
    for kind in (TaskFailure, RecoverableTaskFailure):
        for p in problems:
            if type(p) is kind:
                return p
    return problems[0]
