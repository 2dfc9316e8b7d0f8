"""The source coordinator's view of every transaction, read from ``__transaction_state`` on a real broker.

Ground truth comes from the writers themselves: librdkafka (transactions version 1: one producer
epoch for all its transactions) and Kafka's own Java producer (version 2, KIP-890: an epoch per
transaction), each writing transactions over several partitions of two topics, some aborted, some
with consumer offsets sent in them. The reader must give every one, in order, with exactly the
partitions it touched.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from devkafka.endpoints import KafkaEndpoint
from mirror_sink.core.clients.source_transactions import SourceTransaction, SourceTransactions
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.java_tools import java_transactions

Written = list[tuple[bool | None, list[tuple[str, int, int]]]]


def _librdkafka_transactions(
    bootstrap: str, txn_id: str, count: int, topics: dict[str, int], *, abort_every: int, offsets_group: str
) -> Written:
    """As TransactionalWriter.java writes them (2-4 partitions each, round robin), with librdkafka;
    every second transaction also sends offsets for ``offsets_group``, as a read-process-write app."""
    slots = [(t, p) for t, n in topics.items() for p in range(n)]
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 0})
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": offsets_group})
    producer.init_transactions(30)
    out: Written = []
    turn = 0
    try:
        for i in range(count):
            producer.begin_transaction()
            placed: list[tuple[str, int, int]] = []

            def delivered(err: object, msg: object, into: list[tuple[str, int, int]] = placed) -> None:
                assert err is None, err
                into.append((msg.topic(), msg.partition(), msg.offset()))  # type: ignore[attr-defined]

            for _ in range(2 + i % 3):
                topic, partition = slots[turn % len(slots)]
                turn += 1
                producer.produce(topic, b"%s-%d" % (txn_id.encode(), i), partition=partition, on_delivery=delivered)
            producer.flush(30)
            if i % 2:
                offsets = [TopicPartition(next(iter(topics)), 0, i)]
                producer.send_offsets_to_transaction(offsets, member.consumer_group_metadata(), 30)
            commit = not (abort_every and (i + 1) % abort_every == 0)
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
            out.append((commit, placed))
    finally:
        member.close()
    return out


def _read(source: KafkaEndpoint, txn_id: str, count: int) -> list[SourceTransaction]:
    """``count`` transactions of ``txn_id`` as the coordinator prepared them, in order."""
    reader = SourceTransactions({"bootstrap.servers": source.bootstrap_servers}, f"test-{txn_id}")
    try:
        assert reader.start().readable, reader.availability.reason
        found: list[SourceTransaction] = []
        deadline = time.monotonic() + 60
        while len(found) < count and time.monotonic() < deadline:
            found += [t for t in reader.poll(0.5) if t.transactional_id == txn_id]
        assert reader.skipped_records == 0, "a record of a real broker could not be decoded"
        return found
    finally:
        reader.close()


def _check(found: list[SourceTransaction], written: Written) -> None:
    assert len(found) == len(written), f"{len(found)} transactions read, {len(written)} written"
    for i, (txn, (committed, placed)) in enumerate(zip(found, written, strict=True)):
        assert txn.committed == committed, f"transaction {i}: committed={txn.committed}, written {committed}"
        assert txn.partitions == {(t, p) for t, p, _ in placed}, f"transaction {i}: {txn.partitions} vs {placed}"
        assert txn.spans_partitions


def test_librdkafka_transactions_speak_version_1_and_each_is_read_with_its_partitions(
    source: KafkaEndpoint, unique: Unique, new_topic: TopicFactory
) -> None:
    orders, payments, txn_id = new_topic("txs-orders", 3), new_topic("txs-payments", 2), unique("txs-rdk")
    topics = {orders: 3, payments: 2}
    written = _librdkafka_transactions(
        source.bootstrap_servers, txn_id, 9, topics, abort_every=4, offsets_group=unique("txs-app")
    )
    found = _read(source, txn_id, len(written))
    _check(found, written)
    # Version 1: one producer epoch for every transaction, told apart only by their order.
    assert len({(t.producer_id, t.producer_epoch) for t in found}) == 1, found
    assert all(t.transaction_version < 2 for t in found), found
    # A transaction that sent offsets says so; its __consumer_offsets partition is not a data partition.
    assert [t.sent_offsets for t in found] == [bool(i % 2) for i in range(len(found))]


def test_java_transactions_speak_version_2_with_an_epoch_each(
    source: KafkaEndpoint, unique: Unique, new_topic: TopicFactory
) -> None:
    orders, payments, txn_id = new_topic("txj-orders", 3), new_topic("txj-payments", 2), unique("txj-java")
    topics = {orders: 3, payments: 2}
    written = java_transactions(source.bootstrap_servers, txn_id, 8, topics, abort_every=3)
    assert all(ok is not None for ok, _ in written), "the broker refused a transaction: nothing to compare"
    found = _read(source, txn_id, len(written))
    _check(found, written)
    # Version 2 (KIP-890): the epoch is bumped at every commit or abort, so it names the transaction.
    assert all(t.transaction_version == 2 for t in found), found
    epochs = [t.producer_epoch for t in found]
    assert len({t.producer_id for t in found}) == 1 and epochs == sorted(set(epochs)), epochs
