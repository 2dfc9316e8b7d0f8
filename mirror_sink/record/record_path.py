"""Record mode: librdkafka reads records (read_committed) and re-produces each one to the target."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from functools import partial

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from mirror_sink.core.base.errors import Retriable, SourceOffsetOutOfRange, SourceTruncated, TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.authorization import ClientIdentity
from mirror_sink.core.interfaces.data_path import Committer, Copied, PathSettings, PathStatistics
from mirror_sink.core.runtime.logs import Log
from mirror_sink.core.runtime.retry import retry_call
from mirror_sink.core.telemetry.metrics import CycleStats
from mirror_sink.record.committers import (
    AtLeastOnceCommitter,
    DeliveryTracker,
    TransactionalCommitter,
)
from mirror_sink.record.record_copier import RecordCopier

_CONSUME_BATCH = 5000
_NO_STOP = 1 << 63
#: How long a validating seek waits for librdkafka to start fetching a just-assigned partition.
_FETCH_START_S = 30.0
#: Producers replaced while a call may still be blocked inside them (see ``close``).
_ABANDONED_PRODUCERS: list[Producer] = []


class RecordPath:
    """The source consumer's records, produced one by one through the (transactional) producer."""

    @classmethod
    def open(cls, settings: PathSettings, source: Consumer, log: Log) -> RecordPath:
        """The record path of a task slot, reading with ``source``: a librdkafka producer on the
        target, transactional under the slot's transactional.id when it has one."""
        syncs = settings.sync_partition
        identity = ClientIdentity("target", settings.target_props, settings.transactional_id, settings.group_id)
        deliveries = DeliveryTracker(track_offsets=syncs is not None, identity=identity)

        def new_producer() -> Producer:
            return clients.target_producer(
                {**settings.target_props, "on_delivery": deliveries},
                client_id=f"{settings.client_id}-producer",
                transactional_id=settings.transactional_id,
                transaction_timeout_ms=settings.transaction_timeout_ms,
            )

        return cls(
            source,
            producer=new_producer(),
            new_producer=new_producer,
            deliveries=deliveries,
            transactional=settings.transactional_id is not None,
            timeout_s=settings.transaction_timeout_ms / 1000,
            log=log,
            sync_topic=syncs.topic if syncs is not None else None,
            hold_bytes=settings.memory_bytes,
        )

    def __init__(
        self,
        source: Consumer,
        *,
        producer: Producer,
        deliveries: DeliveryTracker,
        transactional: bool,
        new_producer: Callable[[], Producer] | None = None,
        timeout_s: float,
        log: Log,
        sync_topic: str | None = None,
        hold_bytes: int = 64 << 20,
    ) -> None:
        self.source = source
        self.producer = producer
        self.transactional = transactional
        self._new_producer = new_producer
        self.committer: Committer = (
            TransactionalCommitter(
                producer,
                deliveries,
                timeout_s,
                sync_topic,
                renew=self._renew_producer if new_producer is not None else None,
            )
            if transactional
            else AtLeastOnceCommitter(producer, deliveries, timeout_s)
        )
        self.copier = RecordCopier(producer, deliveries.sources)
        self.log = log
        # Partitions rewound and not read since: their consumer position may predate the rewind.
        self._rewound: set[SourcePartition] = set()
        #: The last consume drained librdkafka's prefetched records (it returned fewer than it asked for).
        self._drained = False
        #: Planned range ends (``stop_at``): nothing at or past them is copied.
        self._stops: dict[SourcePartition, int] = {}
        #: Source topic -> target topic of the partitions assigned (records keep their partition number).
        self._target_topic: dict[str, str] = {}
        #: The current cut (``hold_at``), and the records consumed at or past it, kept in order;
        #: ``_released`` are those the cut has moved past, copied first. Past ``_hold_limit`` bytes
        #: held, the holding partitions are paused (a pause drops librdkafka's prefetch: it costs a
        #: fetch round trip, so it is kept for when memory needs it).
        self._holds: dict[SourcePartition, int] = {}
        self._held: dict[SourcePartition, deque[Message]] = {}
        self._released: list[Message] = []
        self._held_bytes = 0
        self._hold_limit = hold_bytes
        self._paused: set[SourcePartition] = set()

    def assign(
        self,
        starts: Mapping[SourcePartition, int],
        targets: Mapping[SourcePartition, TargetPartition],
        topic_ids: Mapping[str, str] | None = None,
        leader_epochs: Mapping[SourcePartition, int] | None = None,
    ) -> None:
        """incremental_assign at the given offsets, each partition written to its partition in
        ``targets`` (librdkafka asks by name: ``topic_ids`` is not used). With a leader epoch,
        librdkafka validates the offset against the source's log first (KIP-320) and reports a
        truncation instead of reading on."""
        for tp in starts:
            self._target_topic[tp.topic] = targets[tp].topic  # the same partition number (1:1)
        epochs = leader_epochs or {}
        assign_validated(
            self.source, [TopicPartition(*tp, o, leader_epoch=epochs.get(tp, -1)) for tp, o in starts.items()]
        )

    def unassign(self, partitions: Iterable[SourcePartition]) -> None:
        """incremental_unassign, and forget what was held or released of those partitions: assigned
        again, they are read from their committed offsets, and a record kept from before would be
        copied out of order or twice."""
        tps = list(partitions)
        self._drop_held(tps)
        self.source.incremental_unassign([TopicPartition(t, p) for t, p in tps])
        self._rewound.difference_update(tps)

    def _drop_held(self, partitions: Iterable[SourcePartition]) -> None:
        """Forget the records held or released (not copied yet) of ``partitions``, and resume those paused."""
        gone = set(partitions)
        for tp in gone:
            for m in self._held.pop(tp, ()):
                self._held_bytes -= _size(m)
        resumed = gone & self._paused
        if resumed:
            self._paused -= resumed
            self.source.resume([TopicPartition(*tp) for tp in resumed])
        self._released = [m for m in self._released if (m.topic(), m.partition()) not in gone]

    def limit_batches(self, max_message_bytes: Mapping[str, int]) -> None:
        """Nothing: the producer makes its own batches, and the target refuses a record too large."""

    def rewind(
        self, offsets: Mapping[SourcePartition, int], leader_epochs: Mapping[SourcePartition, int] | None = None
    ) -> None:
        """Re-assign at the committed offsets (librdkafka drops what it prefetched)."""
        if not offsets:
            return
        self._rewound.update(offsets)
        self._drop_held(offsets)
        self.copier.stats = {}
        self.source.incremental_unassign([TopicPartition(t, p) for t, p in offsets])
        epochs = leader_epochs or {}
        assign_validated(
            self.source, [TopicPartition(*tp, o, leader_epoch=epochs.get(tp, -1)) for tp, o in offsets.items()]
        )

    def copy(self, wait_s: float) -> Copied:
        """Consume up to a batch of records and produce them."""
        released, self._released = self._released, []
        messages = self.source.consume(_CONSUME_BATCH, 0 if released else wait_s)
        self._drained = len(messages) < _CONSUME_BATCH
        good = [m for m in messages if not self._is_error(m)]
        if self._stops:
            good = [m for m in good if (m.offset() or 0) < self._stop_of(m)]
        if released or self._holds or self._held:
            good = released + self._hold(good)
        if not good:
            return Copied()
        self.committer.enlist()
        produced = self.copier.copy(good, self._target_topic)
        if self._rewound:
            self._rewound.difference_update({(m.topic(), m.partition()) for m in good})
        return Copied(len(good), produced)

    def hold_at(self, limits: Mapping[SourcePartition, int]) -> None:
        """Copy no record at or past ``limits``: such records are kept in memory, in order, until the
        limits move past them (their partitions paused only past ``buffer.memory`` held)."""
        self._holds = dict(limits)
        for tp, held in list(self._held.items()):
            limit = self._holds.get(tp)
            while held and (limit is None or (held[0].offset() or 0) < limit):
                released = held.popleft()
                self._held_bytes -= _size(released)
                self._released.append(released)
            if not held:
                del self._held[tp]
        if self._paused and self._held_bytes <= self._hold_limit // 2:
            self.source.resume([TopicPartition(*tp) for tp in self._paused])
            self._paused.clear()

    def holding(self) -> bool:
        """Whether records wait at the limits."""
        return bool(self._held)

    def took_transactional(self) -> bool:
        """Always True: librdkafka does not say which records a transaction wrote."""
        return True

    def forget_transactional(self) -> None:
        """Nothing to forget."""

    def _hold(self, messages: list[Message]) -> list[Message]:
        """The records below their partition's limit; the others are kept in order (and, past the
        memory bound, their partitions paused)."""
        out = []
        holds, held_by = self._holds, self._held
        for m in messages:
            key = (m.topic(), m.partition())  # equal to its SourcePartition, without building one
            held = held_by.get(key)  # type: ignore[call-overload]
            if held is None:
                limit = holds.get(key)  # type: ignore[call-overload]
                if limit is None or (m.offset() or 0) < limit:
                    out.append(m)
                    continue
                held = held_by[SourcePartition(m.topic() or "", m.partition() or 0)] = deque()
            held.append(m)
            self._held_bytes += _size(m)
        if self._held_bytes > self._hold_limit:
            more = [tp for tp in self._held if tp not in self._paused]
            self.source.pause([TopicPartition(*tp) for tp in more])
            self._paused.update(more)
        return out

    def record_mode_advised(self) -> str | None:
        """Record mode already."""
        return None

    def caught_up(self) -> bool:
        """librdkafka fetches ahead on its own: a consume that drained its queue has caught up."""
        return self._drained

    def leader_epochs(self) -> dict[SourcePartition, int]:
        """The leader epoch of the last record returned, per partition, as librdkafka keeps it with
        the position (asked at commit only: nothing per record). None for a partition rewound and
        not read since: its position may predate the rewind."""
        out = {}
        for tp in self.source.position(self.source.assignment()):
            key = SourcePartition(tp.topic, tp.partition)
            if tp.leader_epoch is not None and tp.leader_epoch >= 0 and key not in self._rewound:
                out[key] = tp.leader_epoch
        return out

    def _stop_of(self, msg: Message) -> int:
        return self._stops.get(SourcePartition(msg.topic() or "", msg.partition() or 0), _NO_STOP)

    def stop_at(self, ends: Mapping[SourcePartition, int]) -> None:
        """Copy no record at or past ``ends`` (the consumer may read beyond; positions stop there)."""
        self._stops.update(ends)

    def positions(self, committed: Mapping[SourcePartition, int]) -> dict[SourcePartition, int]:
        """The consumer's positions: past every record returned, control records and aborted batches."""
        out = {}
        for tp in self.source.position([TopicPartition(t, p) for t, p in committed]):
            key = SourcePartition(tp.topic, tp.partition)
            # Until a partition returns a record after a rewind, its position may still be the one
            # from before the rewind (librdkafka resets it asynchronously): trust the rewind point.
            out[key] = tp.offset if tp.offset >= 0 and key not in self._rewound else committed[key]
            if key in self._stops:
                out[key] = min(out[key], self._stops[key])
            if key in self._holds:
                out[key] = min(out[key], self._holds[key])
        for m in self._released:  # released by a new cut, not copied yet: the position is before them
            key = SourcePartition(m.topic() or "", m.partition() or 0)
            if key in out:
                out[key] = min(out[key], m.offset() or 0)
        return out

    def _is_error(self, msg: Message) -> bool:
        err = msg.error()
        if err is None:
            return False
        where = f"{msg.topic()}-{msg.partition()}"
        if err.code() == KafkaError._AUTO_OFFSET_RESET and "truncation" in err.str():
            # librdkafka reports KIP-320's divergence as an offset reset it may not do, by its reason.
            raise SourceTruncated(
                f"source partition {where} diverged from what was mirrored (an unclean leader election truncated "
                f"its log?): {err.str()}. The target holds records the source no longer has; the mirror stops "
                "rather than mirror over them (docs/troubleshooting.md)"
            )
        if err.code() == KafkaError._AUTO_OFFSET_RESET:
            raise SourceOffsetOutOfRange(msg.topic() or "", msg.partition() or 0, None, err.str())
        if err.fatal() or err.code() in (
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.GROUP_AUTHORIZATION_FAILED,
        ):
            raise TaskFailure(f"reading source partition {where}: {err.str()}")
        self.log.warning("source consumer error on %s (retrying): %s", where, err.str(), extra={"partition": where})
        return True

    def take_stats(self) -> dict[TargetPartition, CycleStats]:
        """Per target partition: records, key + value bytes and timestamps since the last call."""
        stats = {TargetPartition(*key): s for key, s in self.copier.stats.items()}
        self.copier.stats = {}
        return stats

    #: librdkafka's position steps over transaction markers without returning a message.
    positions_move_unseen = True

    def transaction_version(self) -> int:
        """1 (librdkafka has no client side of KIP-890 part 2 yet); 0 without transactions."""
        return 1 if self.transactional else 0

    def statistics(self) -> PathStatistics:
        """Nothing of raw mode's: librdkafka retries AddPartitionsToTxn inside its produce path, keeps
        its own queues, and has no fetch sessions (it sends every partition in every Fetch)."""
        return PathStatistics()

    def describe(self) -> str:
        """For progress logs."""
        return "record mode"

    def _renew_producer(self) -> Producer:
        """A new target producer in place of the current one, for the committer to initialize (a new
        epoch): the old one, its transaction aborted, is flushed and dropped."""
        assert self._new_producer is not None
        old, self.producer = self.producer, self._new_producer()
        self.copier.producer = self.producer
        try:
            old.flush(0)
        except Exception as exc:  # only the new producer matters now
            self.log.debug("flushing the replaced target producer: %s", exc)
        return self.producer

    def close(self, *, abandon: bool = False) -> None:
        """Flush the producer, or keep it alive unused when a librdkafka call may still be blocked
        in it (destroying it under that call would crash the process)."""
        if abandon:
            _ABANDONED_PRODUCERS.append(self.producer)
            return
        try:
            self.producer.flush(5)
        except Exception as exc:  # a producer in librdkafka's fatal state can fail even its flush
            self.log.warning("flushing the target producer on close: %s", exc)


def _size(msg: Message) -> int:
    """A held record's bytes, roughly (key and value)."""
    return len(msg.value() or b"") + len(msg.key() or b"") + 64


class _FetchNotStarted(Retriable):
    """librdkafka has not started fetching a just-assigned partition: a seek is refused until it has."""


def assign_validated(consumer: Consumer, at: list[TopicPartition]) -> None:
    """``incremental_assign`` at ``at``, then a seek with each leader epoch given, so that librdkafka
    validates the offset against the source's log (KIP-320) before it reads from it.

    librdkafka validates an assigned offset only when the partition's leader epoch changes afterwards:
    not when its metadata was cached already (a watermark read before the assignment caches it). A
    seek with the epoch always validates. The assignment starts the partition's fetcher on
    librdkafka's own thread, later (after a re-assignment, once the previous fetcher has stopped);
    until then a seek fails with ``_STATE``, so it is tried again until the fetcher runs."""
    consumer.incremental_assign(at)
    for tp in at:
        if tp.leader_epoch is not None:
            retry_call(partial(_seek, consumer, tp), f"seek {tp.topic}-{tp.partition}", deadline_s=_FETCH_START_S)


def _seek(consumer: Consumer, tp: TopicPartition) -> None:
    try:
        consumer.seek(tp)
    except KafkaException as exc:
        if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].code() == KafkaError._STATE:
            raise _FetchNotStarted(str(exc.args[0])) from exc
        raise
