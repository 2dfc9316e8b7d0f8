"""Both clusters serve transactions, read_committed isolation and transactional offset commits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from devkafka.data import (
    ProduceSpec,
    Rec,
    committed_offsets,
    produce,
    produce_transactions,
    read_all,
)
from devkafka.endpoints import KafkaEndpoint
from tests.integration.harness.topics import TopicFactory


@pytest.mark.parametrize("side", ["source", "target"])
def test_commit_and_abort_are_isolated(
    side: str, request: pytest.FixtureRequest, unique: Callable[[str], str], new_topic: TopicFactory
) -> None:
    cluster: KafkaEndpoint = request.getfixturevalue(side)
    topic = new_topic(f"smoke-{side}", partitions=2, on=cluster)
    committed = [Rec(b"k%d" % i, b"committed-%d" % i, partition=i % 2) for i in range(10)]
    aborted = [Rec(b"k%d" % i, b"aborted-%d" % i, partition=i % 2) for i in range(10)]
    produce_transactions(
        cluster.bootstrap_servers,
        topic,
        [(committed[:5], True), (aborted, False), (committed[5:], True)],
        ProduceSpec(transactional_id=unique("smoke-txn")),
    )

    seen = read_all(cluster.bootstrap_servers, topic)
    assert sorted(r.value for recs in seen.values() for r in recs if r.value) == sorted(
        r.value for r in committed if r.value
    )
    everything = read_all(cluster.bootstrap_servers, topic, isolation="read_uncommitted")
    assert sum(len(v) for v in everything.values()) == 20, "aborted records must be in the log, just hidden"


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_compressed_produce_round_trips(
    source: KafkaEndpoint, unique: Callable[[str], str], new_topic: TopicFactory, codec: str
) -> None:
    topic = new_topic(f"smoke-{codec}", partitions=3)
    records = [
        Rec(
            b"key-%d" % i,
            (b'{"n": %d, "pad": "%s"}' % (i, b"x" * 200)),
            ((("h", b"v"),)),
            1_700_000_000_000 + i,
            i % 3,
        )
        for i in range(300)
    ]
    records.append(Rec(b"tombstone", None, partition=0, timestamp=1_700_000_001_000))
    produce(source.bootstrap_servers, topic, records, ProduceSpec(compression=codec))
    seen = read_all(source.bootstrap_servers, topic)
    for p in range(3):
        assert [r.content() for r in seen[p]] == [r.content() for r in records if r.partition == p]


@contextmanager
def _offsets_producer(
    target: KafkaEndpoint, unique: Callable[[str], str], new_topic: TopicFactory, label: str, partitions: int
) -> Iterator[tuple[str, str, Producer, object]]:
    """A fresh topic and group on the target, a transactional producer ready to begin, and the group's
    metadata to send offsets with (from a consumer that never joins)."""
    topic, group = new_topic(f"smoke-{label}", partitions=partitions, on=target), unique(f"smoke-{label}-group")
    consumer = Consumer({"bootstrap.servers": target.bootstrap_servers, "group.id": group})
    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "transactional.id": unique(f"{label}-tx")})
    try:
        producer.init_transactions(30)
        yield topic, group, producer, consumer.consumer_group_metadata()
    finally:
        consumer.close()


def test_send_offsets_to_transaction_is_readable_with_stable_fetch(
    target: KafkaEndpoint, unique: Callable[[str], str], new_topic: TopicFactory
) -> None:
    """The shadow-group mechanism: offsets committed inside a target transaction, read back stable."""
    with _offsets_producer(target, unique, new_topic, "offsets", 2) as (topic, group, producer, metadata):
        producer.begin_transaction()
        producer.produce(topic, b"v", partition=1)
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 42), TopicPartition(topic, 1, 7)], metadata, 30)
        producer.commit_transaction(30)

        # An aborted transaction's offsets must never become visible.
        producer.begin_transaction()
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 999)], metadata, 30)
        producer.abort_transaction(30)

    offsets = committed_offsets(target.bootstrap_servers, group, [(topic, 0), (topic, 1)])
    assert offsets == {(topic, 0): 42, (topic, 1): 7}


def test_offsets_sent_in_parts_commit_together_or_not_at_all(
    target: KafkaEndpoint, unique: Callable[[str], str], new_topic: TopicFactory
) -> None:
    """A committer sends a large offset set in parts (OFFSETS_PER_REQUEST): librdkafka takes several
    send_offsets_to_transaction calls in one transaction, and the commit or abort covers them all."""
    with _offsets_producer(target, unique, new_topic, "parts", 4) as (topic, group, producer, metadata):
        producer.begin_transaction()
        for part in ([TopicPartition(topic, 0, 10), TopicPartition(topic, 1, 11)], [TopicPartition(topic, 2, 12)]):
            producer.send_offsets_to_transaction(part, metadata, 30)
        producer.commit_transaction(30)

        producer.begin_transaction()
        for part in ([TopicPartition(topic, 0, 90)], [TopicPartition(topic, 3, 93)]):
            producer.send_offsets_to_transaction(part, metadata, 30)
        producer.abort_transaction(30)

    offsets = committed_offsets(target.bootstrap_servers, group, [(topic, p) for p in range(4)])
    assert offsets == {(topic, 0): 10, (topic, 1): 11, (topic, 2): 12, (topic, 3): -1001}, offsets
