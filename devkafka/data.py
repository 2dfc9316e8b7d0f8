"""Create topics, produce test data (plain, compressed, transactional, aborted) and read it back.

Used by the tests, the benchmarks and the demo job; the mirror itself never imports this.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import Message, NewTopic
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_fixed

from mirror_sink.core.formats.commit_metadata import kafka_uuid

log = logging.getLogger(__name__)
# librdkafka logs of these helper clients go through logging instead of raw stderr.
_client_log = logging.getLogger("devkafka.clients")


#: Where a cluster is: its bootstrap address, or client settings that include ``bootstrap.servers``
#: (a secured cluster's SASL/TLS settings).
Address = str | Mapping[str, Any]


def client_settings(address: Address) -> dict[str, Any]:
    """The librdkafka settings that reach ``address``."""
    return {"bootstrap.servers": address} if isinstance(address, str) else dict(address)


def _conf(bootstrap: Address, **settings: Any) -> dict[str, Any]:
    """Client settings for ``bootstrap`` with librdkafka's log routed to logging."""
    return {**client_settings(bootstrap), "logger": _client_log, **settings}


Header = tuple[str, bytes | None]


@dataclass(frozen=True)
class Rec:
    """A record as written or read: enough to compare source and target exactly."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp: int | None = None
    partition: int = 0
    offset: int = -1

    def content(self) -> tuple[bytes | None, bytes | None, tuple[Header, ...], int | None]:
        """What mirroring must preserve (offsets differ between clusters)."""
        return (self.key, self.value, self.headers, self.timestamp)


def rec_from_message(msg: Message) -> Rec:
    """The comparable form of a consumed message."""
    ts_type, ts = msg.timestamp()
    raw = msg.headers() or []
    pairs = raw.items() if isinstance(raw, dict) else raw
    return Rec(
        msg.key(),
        msg.value(),
        tuple((k, v.encode() if isinstance(v, str) else v) for k, v in pairs),
        ts if ts_type else None,
        msg.partition() or 0,
        msg.offset() or 0,
    )


def create_topic(
    bootstrap: Address,
    topic: str,
    partitions: int = 1,
    config: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> None:
    """Create ``topic`` and wait until every partition's leader serves it (not just names it).

    Its replicas are the cluster's default.replication.factor (1 on a single node, the node count on
    a replicated cluster)."""
    admin = AdminClient(_conf(bootstrap))
    _create_once(admin, NewTopic(topic, partitions, -1, config=config or {}), timeout)
    deadline = time.monotonic() + timeout
    wait_for_partitions(admin, topic, partitions, timeout)
    wait_until_served(bootstrap, topic, partitions, max(deadline - time.monotonic(), 1.0))


def _create_once(admin: AdminClient, new: NewTopic, timeout: float) -> None:
    """CreateTopics, asked again while the answer is a passing error or does not come in ``timeout``
    (seen in CI on the secured pair under load: a bare TimeoutError from the future).

    An attempt that timed out may still have created the topic, so TOPIC_ALREADY_EXISTS after one
    counts as done; on a first attempt it stays an error (``recreate_topic`` waits on it)."""
    timed_out = False

    def passing(e: BaseException) -> bool:
        if isinstance(e, TimeoutError):
            return True
        return isinstance(e, KafkaException) and e.args[0].code() in _PASSING

    for attempt in Retrying(
        retry=retry_if_exception(passing), stop=stop_after_delay(3 * timeout), wait=wait_fixed(0.5), reraise=True
    ):
        with attempt:
            try:
                admin.create_topics([new], operation_timeout=timeout)[new.topic].result(timeout)
            except TimeoutError:
                timed_out = True
                log.warning("creating topic %s got no answer in %.0f s, asking again", new.topic, timeout)
                raise
            except KafkaException as e:
                if timed_out and e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    return
                if e.args[0].code() in _PASSING:
                    timed_out = True  # a transport error may also hide a creation that went through
                raise


def delete_records(bootstrap: Address, topic: str, before: Mapping[int, int], timeout: float = 30.0) -> None:
    """Delete the records of ``topic`` below ``before[partition]`` (DeleteRecords, as retention would)."""
    admin = AdminClient(_conf(bootstrap))
    futures = admin.delete_records([TopicPartition(topic, p, offset) for p, offset in before.items()])
    for future in futures.values():
        future.result(timeout)


def topic_id(bootstrap: Address, topic: str, timeout: float = 30.0) -> str:
    """The topic's id, in Kafka's base64 form."""
    admin = AdminClient(_conf(bootstrap))
    return kafka_uuid(admin.describe_topics(TopicCollection([topic]))[topic].result(timeout).topic_id)


def recreate_topic(bootstrap: Address, topic: str, partitions: int, timeout: float = 60.0) -> str:
    """Delete ``topic`` and create it again under the same name (a new topic id, offsets from 0);
    returns the new id. Creation is retried while the broker still finishes the deletion."""
    old = topic_id(bootstrap, topic)
    admin = AdminClient(_conf(bootstrap))
    admin.delete_topics([topic], operation_timeout=timeout)[topic].result(timeout)
    for attempt in Retrying(
        retry=retry_if_exception(
            lambda e: isinstance(e, KafkaException) and e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
        ),
        stop=stop_after_delay(timeout),
        wait=wait_fixed(0.5),
        reraise=True,
    ):
        with attempt:
            create_topic(bootstrap, topic, partitions)
    new = topic_id(bootstrap, topic)
    if new == old:
        raise AssertionError(f"topic {topic!r} kept its id {old} through deletion")
    return new


def wait_for_partitions(admin: AdminClient, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Block until ``topic`` has ``partitions`` partitions, each with a leader."""
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(topic, timeout=timeout).topics.get(topic)
        led = md is not None and md.error is None and all(p.leader >= 0 for p in md.partitions.values())
        if led and md is not None and len(md.partitions) >= partitions:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic!r} did not get {partitions} led partitions in {timeout} s")
        time.sleep(0.1)


def wait_until_served(bootstrap: Address, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Block until every partition's leader answers ListOffsets for it.

    Metadata names a new partition's leader before that broker has opened the partition's log, and a
    Produce in between is refused with NOT_LEADER_OR_FOLLOWER; ListOffsets is refused the same way,
    so once it answers, Produce and Fetch are served too.
    """
    deadline = time.monotonic() + timeout
    consumer = Consumer(_conf(bootstrap, **{"group.id": "mirror-sink-devkafka-probe"}))
    try:
        for p in range(partitions):
            while True:
                try:
                    consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5.0)
                    break
                except KafkaException as e:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{topic}-{p} not served by its leader in {timeout} s: {e}") from e
                    time.sleep(0.1)
    finally:
        consumer.close()


@dataclass
class ProduceSpec:
    """How to write: codec, batching, transactions. Defaults give a plain idempotent producer."""

    compression: str = "none"
    linger_ms: int = 5
    batch_bytes: int = 1_000_000
    transactional_id: str | None = None
    extra: dict[str, str | int] = field(default_factory=dict)

    def producer_config(self, bootstrap: Address) -> dict[str, Any]:
        """librdkafka settings for this spec."""
        conf: dict[str, Any] = {
            **client_settings(bootstrap),
            "logger": _client_log,
            "compression.type": self.compression,
            "linger.ms": self.linger_ms,
            "batch.size": self.batch_bytes,
            "enable.idempotence": True,
            **self.extra,
        }
        if self.transactional_id:
            conf["transactional.id"] = self.transactional_id
        return conf


def _send(producer: Producer, topic: str, records: Iterable[Rec]) -> int:
    n = 0
    for r in records:
        while True:
            try:
                producer.produce(
                    topic,
                    key=r.key,
                    value=r.value,
                    headers=list(r.headers) or None,
                    partition=r.partition,
                    timestamp=r.timestamp or 0,
                )
                break
            except BufferError:
                producer.poll(0.05)
        n += 1
        if n % 1000 == 0:
            producer.poll(0)
    return n


def _flush(producer: Producer, timeout: float = 60.0) -> None:
    if producer.flush(timeout) != 0:
        raise KafkaException(f"{len(producer)} messages still undelivered after {timeout} s")


def produce(bootstrap: Address, topic: str, records: Iterable[Rec], spec: ProduceSpec | None = None) -> int:
    """Write ``records`` (each to its own partition) without a transaction; returns the count."""
    spec = spec or ProduceSpec()
    errors: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer({**spec.producer_config(bootstrap), "on_delivery": on_delivery})
    n = _send(producer, topic, records)
    _flush(producer)
    if errors:
        raise KafkaException(f"{len(errors)} deliveries failed, first: {errors[0]}")
    return n


def produce_transactions(
    bootstrap: Address,
    topic: str,
    transactions: Iterable[tuple[Sequence[Rec], bool]],
    spec: ProduceSpec,
) -> None:
    """Write each ``(records, commit)`` pair as one transaction, committed or aborted (lazily)."""
    if not spec.transactional_id:
        raise ValueError("produce_transactions needs spec.transactional_id")
    producer = Producer(spec.producer_config(bootstrap))
    producer.init_transactions(30)
    for records, commit in transactions:
        producer.begin_transaction()
        _send(producer, topic, records)
        if commit:
            producer.commit_transaction(60)
        else:
            _flush(producer)  # the aborted records really reach the log, as a real failure would leave them
            producer.abort_transaction(60)


#: What a loaded machine's brokers answer for a while (a leader not yet known to the client, a
#: connection that failed its handshake), not what a test looks for.
_PASSING = {
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
    KafkaError.LEADER_NOT_AVAILABLE,
}


def retrying_passing_errors(seconds: float = 30.0) -> Retrying:
    """A tenacity ``Retrying`` that asks again for ``seconds`` while a call fails with a passing error
    (a partition or leader not known yet, a transport hiccup, a timeout on a loaded machine)."""
    return Retrying(
        retry=retry_if_exception(lambda e: isinstance(e, KafkaException) and e.args[0].code() in _PASSING),
        stop=stop_after_delay(seconds),
        wait=wait_fixed(0.5),
        reraise=True,
    )


def end_offsets(bootstrap: Address, topic: str, *, isolation: str = "read_committed") -> dict[int, int]:
    """High watermark (read_uncommitted) or last stable offset (read_committed) of each partition; asked
    again for 30 s while the answer is a passing error (seen in CI: "Unknown partition" under load)."""
    consumer = Consumer(_conf(bootstrap, **{"group.id": "mirror-sink-inspect", "isolation.level": isolation}))
    try:
        for attempt in retrying_passing_errors():
            with attempt:
                md = consumer.list_topics(topic, timeout=30).topics[topic]
                return {
                    p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in md.partitions
                }
        raise AssertionError("unreachable: Retrying returns or raises")
    finally:
        consumer.close()


def drain(
    consumer: Consumer, pending: set[int], on_message: Callable[[Message], None], timeout_s: float, what: str
) -> None:
    """Consume until every partition of ``pending`` has reported EOF or been discarded by ``on_message``
    (``pending`` is emptied); ``TimeoutError`` naming ``what`` and the partitions left after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: partitions {sorted(pending)} not at their end after {timeout_s:.0f} s")
        for msg in consumer.consume(10_000, 0.5):
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition() or 0)
                    continue
                raise KafkaException(err)
            on_message(msg)


def read_all(
    bootstrap: Address,
    topic: str,
    *,
    isolation: str = "read_committed",
    timeout: float = 60.0,
) -> dict[int, list[Rec]]:
    """Every record of ``topic`` up to its current end, per partition, in offset order."""
    ends = end_offsets(bootstrap, topic, isolation=isolation)
    consumer = reader(bootstrap, "mirror-sink-inspect", isolation=isolation)
    out: dict[int, list[Rec]] = {p: [] for p in ends}
    pending = {p for p, end in ends.items() if end > 0}
    consumer.assign([TopicPartition(topic, p, 0) for p in pending])

    def keep(msg: Message) -> None:
        rec = rec_from_message(msg)
        out[rec.partition].append(rec)
        if rec.offset + 1 >= ends[rec.partition]:
            pending.discard(rec.partition)

    try:
        drain(consumer, pending, keep, timeout, f"reading {topic!r}")
    finally:
        consumer.close()
    return out


def reader(address: Address, group: str, *, isolation: str = "read_committed", **settings: Any) -> Consumer:
    """A consumer that reads without committing and says where each partition ends
    (``enable.partition.eof``): the one every helper here and in bench/ drains with. ``group`` only
    names it unless it subscribes; ``settings`` add to or override these."""
    return Consumer(
        _conf(
            address,
            **{
                "group.id": group,
                "isolation.level": isolation,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                **settings,
            },
        )
    )


def committed_offsets(
    bootstrap: Address, group: str, partitions: Sequence[tuple[str, int]], timeout: float = 30.0
) -> dict[tuple[str, int], int]:
    """The group's committed offsets (-1001 where none), read stable (pending transactions waited out)."""
    consumer = Consumer(
        {
            **client_settings(bootstrap),
            "group.id": group,
            "isolation.level": "read_committed",
            "logger": _client_log,
        }
    )
    try:
        got = consumer.committed([TopicPartition(t, p) for t, p in partitions], timeout=timeout)
    finally:
        consumer.close()
    return {(tp.topic, tp.partition): tp.offset for tp in got}
