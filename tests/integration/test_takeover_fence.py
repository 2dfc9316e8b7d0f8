"""Takeover fencing: a transaction another slot left open on the target is aborted when a task takes
the partitions over, so readers wait seconds, not ``transaction.timeout.ms``.

The zombie test freezes a real task, but whether it is caught holding a transaction open depends on
timing (its EndTxn may already be on the wire). Here the leftover transaction is made on purpose and
for certain: a producer under another slot's transactional id of the same connector writes a record
to each target partition and never ends its transaction, with a 5-minute transaction timeout. Until
that transaction ends, no read_committed reader sees anything past it; so if the mirrored records
become visible well inside those 5 minutes, the new owner fenced it.
"""

from __future__ import annotations

import time
from functools import partial

import pytest
from confluent_kafka import KafkaException, Producer

from devkafka.data import Rec, end_offsets, produce
from devkafka.endpoints import KafkaEndpoint
from mirror_sink.task.task_run import task_slot
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import assert_exact_mirror, committed_on_target, shadow_caught_up
from tests.integration.harness.records import LiveReader
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

PARTITIONS = 2
RECORDS = 200
#: The leftover transaction's timeout: far longer than the test may wait, so only a fence ends it in time.
HOLDER_TXN_TIMEOUT_MS = 300_000
#: How long the mirrored records may take to become visible (the holder's timeout is 300 s).
VISIBLE_WITHIN_S = 90


def hold_transaction_open(bootstrap: str, transactional_id: str, topic: str) -> Producer:
    """A producer that wrote one record to each partition of ``topic`` in a transaction it never ends."""
    holder = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": HOLDER_TXN_TIMEOUT_MS,
        }
    )
    holder.init_transactions(30)
    holder.begin_transaction()
    for p in range(PARTITIONS):
        holder.produce(topic, b"left open by a dead slot", partition=p)
    assert holder.flush(30) == 0, "the holder's records did not reach the target"
    return holder


@pytest.mark.parametrize("mode", ["raw", "record"])
def test_a_transaction_left_open_by_another_slot_is_aborted_at_takeover(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
) -> None:
    name, topic = unique("fence"), new_topic("fence", PARTITIONS)
    target_topic = new_topic("source.fence", PARTITIONS, on=target)  # f"source.{topic}": one suffix per test
    produce(
        source.bootstrap_servers,
        topic,
        (Rec(f"k{i}".encode(), f"v{i}".encode(), partition=i % PARTITIONS) for i in range(RECORDS)),
    )
    # Task 0's slot of this connector on a worker that is gone ("w0").
    dead_slot = task_slot(name, "w0", 0)
    holder = hold_transaction_open(target.bootstrap_servers, dead_slot, target_topic)
    stable = end_offsets(target.bootstrap_servers, target_topic)
    assert stable == dict.fromkeys(range(PARTITIONS), 0), f"the open transaction must pin the LSO at 0: {stable}"

    live = LiveReader(target.bootstrap_servers, [(target_topic, p) for p in range(PARTITIONS)]).start()
    task = mirror(mirror_config(name, source, target, topic, **{"mirror.mode": mode}), "w1")
    started = time.monotonic()
    task.start()
    try:
        wait_until(
            lambda: live.count() >= RECORDS,
            VISIBLE_WITHIN_S,
            f"the mirrored records to become visible past {dead_slot}'s open transaction",
            detail=task.log_tail,
        )
        visible_after = time.monotonic() - started
    finally:
        live.stop()
        code = task.stop()
    print(f"\n[{mode}] mirrored records visible {visible_after:.1f} s after the mirror started "
          f"(the leftover transaction's own timeout: {HOLDER_TXN_TIMEOUT_MS / 1000:.0f} s)")  # fmt: skip

    assert code == 0, task.log_tail()
    assert f"fenced {dead_slot}" in task.log_text(), "the task must say which slot it fenced"
    # The fence bumped the dead slot's epoch: its transaction can never commit now.
    with pytest.raises(KafkaException):
        holder.commit_transaction(30)
    assert_exact_mirror(source, topic, target, target_topic, f"connect-{name}")


@pytest.mark.parametrize("mode", ["raw", "record"])
def test_a_live_task_fenced_by_a_takeover_replaces_its_producer_and_goes_on(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
) -> None:
    """A task whose session lapses in a broker outage loses its partitions to another task, which
    fences its transactional id; the rebalance that follows may hand them back. Its producer is then
    dead for good (librdkafka's fatal state): the task must replace it and go on, not fail. The
    replicated chaos test once saw a record-mode task fail so."""
    name, topic = unique("refence"), new_topic("refence", PARTITIONS)
    target_topic = f"source.{topic}"
    sent = [0]

    def send(n: int) -> None:
        first = sent[0]
        recs = (Rec(f"k{i}".encode(), f"v{i}".encode(), partition=i % PARTITIONS) for i in range(first, first + n))
        produce(source.bootstrap_servers, topic, recs)
        sent[0] += n

    task = mirror(mirror_config(name, source, target, topic, **{"mirror.mode": mode}), "w1").start()
    try:
        send(100)
        wait_until(lambda: committed_on_target(target, target_topic) > 0, 90, "a first commit", detail=task.log_tail)
        # What another task's takeover fence does to this task's slot while this task still runs.
        fencer = Producer({"bootstrap.servers": target.bootstrap_servers, "transactional.id": task_slot(name, "w1", 0)})
        fencer.init_transactions(30)
        for _ in range(20):  # records keep coming: the fenced producer is used, and must be replaced
            send(50)
            time.sleep(0.1)
        caught_up = partial(shadow_caught_up, source, topic, target, target_topic, f"connect-{name}")
        wait_until(caught_up, 90, "the mirror to catch up after the fence", detail=task.log_tail)
        assert task.alive(), task.log_tail()
    finally:
        code = task.stop()
    assert code == 0, task.log_tail()
    assert "recreating the task's clients" in task.log_text(), "the fence must have been noticed and survived"
    assert "task FAILED" not in task.log_text()
    assert_exact_mirror(source, topic, target, target_topic, f"connect-{name}")
