"""How a cycle's records and source offsets become durable on the target.

``TransactionalCommitter`` (``transaction.producer=true``): records and offsets in one target
transaction, the offsets sent with the shadow-group member's metadata so the group coordinator
fences a stale owner (KIP-447); with an offset-syncs topic, the transaction also carries one
offset sync per partition it moved, built from the delivery reports once every record is
acknowledged. ``AtLeastOnceCommitter``: idempotent produce, then a plain offset commit by the same
group member once every record is acknowledged.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from mirror_sink.core.base.error_codes import FATAL_WRITE, KafkaErrorCode
from mirror_sink.core.base.errors import AbortCycle, RecoverableTaskFailure, Retriable, TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.authorization import AuthorizationFailure, ClientIdentity, lacking, principal_of
from mirror_sink.core.clients.clients import classify, is_fatal
from mirror_sink.core.formats.group_metadata import GroupMetadata
from mirror_sink.core.formats.offset_syncs import CycleOffsets, SyncRun, SyncSpan, offset_syncs
from mirror_sink.core.formats.skipped_ranges import AuditRecord
from mirror_sink.core.interfaces.data_path import OFFSETS_PER_REQUEST
from mirror_sink.core.runtime.bounded import call_bounded
from mirror_sink.core.runtime.retry import retry_call

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Delivery errors no retry can fix: the task fails with the partition named. The shared table of
#: fatal writes, plus a target partition librdkafka could not find even after its own retries.
_FATAL_DELIVERY = FATAL_WRITE | {
    KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._UNKNOWN_TOPIC,
}


#: How much longer than its own timeout a librdkafka call may take before it counts as hung.
_HANG_GRACE_S = 15.0


def _unacknowledged(remaining: int, timeout_s: float, errors: object) -> str:
    said = f"; delivery errors: {errors}" if errors else ""
    return f"{remaining} records not acknowledged by the target cluster within {timeout_s:.0f} s{said}"


class DeliveryTracker:
    """Keeps the first delivery error of each partition and, when offsets are tracked, the target
    offset of every acknowledged record.

    With ``track_offsets`` the copier notes each record's source offset in ``sources`` as it
    produces it; librdkafka reports deliveries of a partition in produce order, so the n-th
    acknowledged offset of a partition belongs to its n-th produced record.
    """

    def __init__(self, *, track_offsets: bool = False, identity: ClientIdentity | None = None) -> None:
        self.errors: dict[TargetPartition, KafkaError] = {}
        #: Names the operation, resource and principal when the target refuses a write.
        self.identity = identity
        #: Set while the task aborts: librdkafka purges the queue then, which says nothing about rights.
        self.aborting = False
        self._rights_checked: set[str] = set()
        self.sources: dict[tuple[str, int], list[int]] | None = {} if track_offsets else None
        self._targets: dict[tuple[str, int], list[int | None]] = {}

    def __call__(self, err: KafkaError | None, msg: object) -> None:
        """The producer's on_delivery callback."""
        if err is not None:
            topic, partition = msg.topic(), msg.partition()  # type: ignore[attr-defined]
            self.errors.setdefault(TargetPartition(topic, partition), err)
        elif self.sources is not None:
            key = (msg.topic(), msg.partition())  # type: ignore[attr-defined]
            targets = self._targets.get(key)
            if targets is None:
                targets = self._targets[key] = []
            targets.append(msg.offset())  # type: ignore[attr-defined]  # None: delivered, offset unknown

    def take_runs(self) -> dict[TargetPartition, tuple[SyncRun, ...]]:
        """The cycle's source -> target runs; AbortCycle when a produced record is unacknowledged."""
        sources, targets = self.sources or {}, self._targets
        offsets = CycleOffsets()
        for key, source_offsets in sources.items():
            reported = targets.get(key, [])
            acked = [offset for offset in reported if offset is not None]
            if len(reported) != len(source_offsets):
                raise AbortCycle(f"{len(source_offsets) - len(reported)} records to {key[0]}-{key[1]} unacknowledged")
            if len(acked) != len(reported):
                # librdkafka acknowledges a retried batch the broker already had (DUPLICATE_SEQUENCE)
                # without its offset: the cycle's sync could not be exact, so it is copied again.
                raise AbortCycle(
                    f"{len(reported) - len(acked)} records to {key[0]}-{key[1]} acknowledged without their "
                    "target offset (a retried produce); copying the cycle again"
                )
            tp = TargetPartition(*key)
            n = len(source_offsets)
            if n and source_offsets[-1] - source_offsets[0] == n - 1 and acked[-1] - acked[0] == n - 1:
                offsets.add(tp, source_offsets[0], acked[0], n)  # both ascend: one run, no per-record loop
                continue
            for source, target in zip(source_offsets, acked, strict=True):
                offsets.add(tp, source, target, 1)
        self.forget_offsets()
        return offsets.take()

    def forget_offsets(self) -> None:
        """Start the next cycle's offset tracking empty."""
        if self.sources is not None:
            self.sources.clear()
        self._targets = {}

    def raise_if_fatal(self) -> None:
        """TaskFailure naming the partition when a delivery failed for a reason retries cannot fix;
        an ``AuthorizationFailure`` when the target refused the write."""
        for (topic, partition), err in list(self.errors.items()):
            denied = self.identity.refused(err.code(), err.str(), [topic], "WRITE") if self.identity else None
            if denied is not None:
                raise denied
            if err.code() in _FATAL_DELIVERY:
                raise TaskFailure(f"cannot write to target partition {topic}-{partition}: {err.str()}")
        purged = {tp.topic for tp, err in list(self.errors.items()) if err.code() == KafkaError._PURGE_QUEUE}
        purged -= self._rights_checked
        if purged and self.identity is not None and not self.aborting:
            self._rights_checked |= purged  # once per topic and run: it is a diagnosis, not a gate
            # librdkafka purges a transaction's records when the broker refuses to add their
            # partitions to it (no WRITE): the refusal itself reaches only its log, so ask the broker.
            admin = clients.admin(self.identity.props, "mirror-sink-rights-check")
            refused = lacking(admin, purged, "WRITE")
            if refused:
                raise AuthorizationFailure(
                    "target", "WRITE", "TOPIC", refused, principal_of(self.identity.props),
                    cause="records purged from the transaction",
                )  # fmt: skip

    def take(self) -> dict[TargetPartition, KafkaError]:
        """The errors since the last call."""
        errors, self.errors = self.errors, {}
        return errors


def _call(
    what: str, fn: Callable[[], T], deadline_s: float, refused: Callable[[KafkaError], Exception | None] | None = None
) -> T:
    """Run a producer call, retrying retriable errors until ``deadline_s`` from now.

    Each attempt is bounded (librdkafka can block past the timeout it was given); a fatal producer
    error is recoverable with a new producer, which init_transactions fences the old one with. Every
    error names the target cluster: the producer writes nowhere else, and an operator reading
    "commit_transaction timed out" should not have to know that.
    """
    what = f"{what} on the target cluster"

    def attempt() -> T:
        try:
            return call_bounded(what, fn, deadline_s + _HANG_GRACE_S)
        except KafkaException as exc:
            denied = refused(exc.args[0]) if refused is not None else None
            raise (denied or classify(what, exc.args[0])) from exc

    try:
        return retry_call(attempt, what, deadline_s=deadline_s)
    except Retriable as exc:  # retried until the deadline: new clients may fare better
        raise RecoverableTaskFailure(f"{what} still failing after {deadline_s:.0f} s: {exc}") from exc


class _CommitterBase:
    """The producer, its delivery tracker, the call timeout and whether a cycle is begun and open."""

    def __init__(self, producer: Producer, deliveries: DeliveryTracker, timeout_s: float) -> None:
        self.producer = producer
        self.deliveries = deliveries
        self.timeout_s = timeout_s
        self._begun = False
        self._open = False

    @property
    def open(self) -> bool:
        """True while the cycle has uncommitted work."""
        return self._open

    def enlist(self, partitions: Collection[TargetPartition] = ()) -> None:
        """The path is about to produce: the begun cycle is open (librdkafka adds the partitions)."""
        if not self._begun:
            raise TaskFailure("internal error: the data path wrote before the cycle began")
        self._open = True


class TransactionalCommitter(_CommitterBase):
    """Exactly-once: one target transaction per cycle holds the records and the source offsets.

    ``sync_topic``: where the transaction's offset syncs go (partition 0); the deliveries must
    track offsets then.
    """

    def __init__(
        self,
        producer: Producer,
        deliveries: DeliveryTracker,
        timeout_s: float,
        sync_topic: str | None = None,
        renew: Callable[[], Producer] | None = None,
    ) -> None:
        super().__init__(producer, deliveries, timeout_s)
        #: A new producer in place of this one (the path swaps it in everywhere it is used).
        self._renew = renew
        #: An open transaction was aborted: the next one starts on a new producer, with a new epoch.
        self._renew_before_next = False
        self._refused: Callable[[KafkaError], Exception | None] | None = self._refusal if deliveries.identity else None
        self._offset_topics: list[str] = []
        #: Every topic the cycle's transaction writes: its data topics, the offset syncs, the audit records.
        self._written: list[str] = []
        if sync_topic is not None and deliveries.sources is None:
            raise ValueError("offset syncs need a DeliveryTracker that tracks offsets")
        self.sync_topic = sync_topic

    def _refusal(self, err: KafkaError) -> Exception | None:
        """The denial behind a refused transaction call: transactional.id and group refusals as such.

        A TOPIC refusal is WRITE on a written topic when librdkafka could not add partitions to the
        transaction (it does not say which: the broker is asked), else READ on the offset commit's
        topics (offsets are stored under the target partitions).
        """
        identity = self.deliveries.identity
        assert identity is not None
        text = err.str()
        if "partition(s) to transaction" in text:
            denied = self._write_refusal(text)
            if denied is not None:
                return denied
        return identity.refused(err.code(), text, self._offset_topics, "READ")

    def _write_refusal(self, cause: str) -> AuthorizationFailure | None:
        """WRITE denied on a topic the cycle's transaction writes, asked of the broker: librdkafka
        says only that it could not add partitions to the transaction, or not even that."""
        identity = self.deliveries.identity
        if identity is None or not self._written:
            return None
        refused = lacking(clients.admin(identity.props, "mirror-sink-rights-check"), self._written, "WRITE")
        if not refused:
            return None
        return AuthorizationFailure("target", "WRITE", "TOPIC", refused, principal_of(identity.props), cause=cause)

    def start(self) -> None:
        """init_transactions: fences a previous instance of this task slot and aborts its open transaction."""
        _call(
            "init_transactions", lambda: self.producer.init_transactions(self.timeout_s), self.timeout_s, self._refused
        )

    def begin(self) -> None:
        """Begin the cycle's transaction if it is not begun yet (local to librdkafka: no request).

        After an aborted transaction it first takes a new producer and epoch, as transactions version
        2 (KIP-890) does on the broker for clients that speak it: librdkafka keeps the epoch through
        an abort, so a late write of the aborted transaction could otherwise join this one.
        """
        if not self._begun:
            if self._renew_before_next and self._renew is not None:
                self.producer = self._renew()
                self.start()  # init_transactions: a new epoch, the old producer fenced
                log.info("a new target producer epoch after the aborted transaction")
            self._renew_before_next = False
            _call("begin_transaction", self.producer.begin_transaction, self.timeout_s)
            self._begun = True

    def commit(
        self,
        offsets: list[TopicPartition],
        member: Consumer,
        metadata: GroupMetadata,
        spans: Sequence[SyncSpan] = (),
        audit: Sequence[AuditRecord] = (),
    ) -> None:
        """Send the offset syncs and the offsets with the owning generation's metadata (fencing) and
        commit, all or nothing (``audit`` with them)."""
        self.begin()
        self._open = True  # offsets (and syncs) go into the transaction: a failed commit must be aborted
        self._offset_topics = sorted({tp.topic for tp in offsets})
        extra = ([self.sync_topic] if self.sync_topic is not None and spans else []) + [a.where.topic for a in audit]
        self._written = sorted({*self._offset_topics, *extra})
        if self.sync_topic is not None and spans:
            self._produce_syncs(self.sync_topic, spans)
        for where, key, value in audit:
            self._produce(where.topic, where.partition, key, value)
        for start in range(0, len(offsets), OFFSETS_PER_REQUEST):  # each part one TxnOffsetCommit
            part = offsets[start : start + OFFSETS_PER_REQUEST]
            _call(
                "send_offsets_to_transaction",
                functools.partial(self.producer.send_offsets_to_transaction, part, metadata.opaque, self.timeout_s),
                self.timeout_s,
                self._refused,
            )
        try:
            _call("commit_transaction", lambda: self.producer.commit_transaction(self.timeout_s), self.timeout_s)
        except AbortCycle:
            self.deliveries.raise_if_fatal()
            raise
        self._begun = self._open = False
        self.deliveries.take()

    def _produce_syncs(self, topic: str, spans: Sequence[SyncSpan]) -> None:
        remaining = call_bounded("flush", lambda: self.producer.flush(self.timeout_s), self.timeout_s + _HANG_GRACE_S)
        self.deliveries.raise_if_fatal()
        errors = self.deliveries.take()
        if remaining or errors:
            raise AbortCycle(_unacknowledged(remaining, self.timeout_s, errors))
        try:
            syncs = offset_syncs(spans, self.deliveries.take_runs())
        except ValueError as exc:
            raise TaskFailure(f"internal error: offset syncs do not match the cycle: {exc}") from exc
        for sync in syncs:
            self._produce(topic, 0, sync.encode_key(), sync.encode_value())

    def _produce(self, topic: str, partition: int, key: bytes, value: bytes) -> None:
        while True:
            try:
                self.producer.produce(topic, value, key, partition=partition)
                return
            except BufferError:
                self.producer.poll(0.05)
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if is_fatal(err):
                    raise RecoverableTaskFailure(f"producing to {topic}-{partition}: {err.str()}") from exc
                if err.code() == KafkaError._STATE or err.txn_requires_abort():
                    # The transaction failed in the background, often because the broker would not
                    # add a partition to it: that refusal is the cause to report, not the state.
                    raise self._write_refusal(err.str()) or AbortCycle(
                        f"producing to {topic}-{partition}: {err.str()}"
                    ) from exc
                raise

    def abort(self) -> None:
        """Abort the open transaction: none of its records or offsets ever become visible."""
        # A refused write is the cause to report, even when the abort then fails too (librdkafka
        # cannot abort after some refusals; the broker aborts on timeout).
        try:
            self.deliveries.raise_if_fatal()
        except AuthorizationFailure:
            self._begun = self._open = False
            self.deliveries.forget_offsets()
            self.deliveries.take()
            raise
        except TaskFailure:
            pass  # reported after the abort, as before
        if self._open:  # (an empty begun transaction stays for the next cycle: nothing of it is on a broker)
            self.deliveries.aborting = True
            try:
                _call("abort_transaction", lambda: self.producer.abort_transaction(self.timeout_s), self.timeout_s)
            finally:
                self.deliveries.aborting = False
            self._begun = self._open = False
            self._renew_before_next = True
        self.deliveries.forget_offsets()
        self.deliveries.raise_if_fatal()
        self.deliveries.take()


class AtLeastOnceCommitter(_CommitterBase):
    """At-least-once: flush, check every delivery, then commit the offsets as the group member."""

    def start(self) -> None:
        """Nothing to fence without transactions."""

    def begin(self) -> None:
        """The cycle starts (nothing to begin without a transaction)."""
        self._begun = True

    def commit(
        self,
        offsets: list[TopicPartition],
        member: Consumer,
        metadata: GroupMetadata,
        spans: Sequence[SyncSpan] = (),
        audit: Sequence[AuditRecord] = (),
    ) -> None:
        """Commit ``offsets`` only once every record of the cycle is acknowledged (as the member now is).

        No offset syncs and no audit records: without a transaction they could not be made atomic
        with the records.
        """
        if audit:
            raise TaskFailure("internal error: audit records need a transaction")
        remaining = self.producer.flush(self.timeout_s)
        self.deliveries.raise_if_fatal()
        errors = self.deliveries.take()
        if remaining or errors:
            raise AbortCycle(_unacknowledged(remaining, self.timeout_s, errors))
        try:
            member.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if err.fatal():
                raise RecoverableTaskFailure(f"offset commit to the shadow group failed fatally: {err.str()}") from exc
            raise AbortCycle(f"offset commit to the shadow group failed: {err.str()}") from exc
        self._begun = self._open = False

    def abort(self) -> None:
        """Forget the cycle; records already written stay (at-least-once), the offsets are not advanced."""
        self.producer.flush(self.timeout_s)
        self.deliveries.raise_if_fatal()
        self.deliveries.take()
        self._begun = self._open = False
