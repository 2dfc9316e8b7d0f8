"""MirrorSinkTask end to end on the real clusters: what is copied, where, and what is refused."""

from __future__ import annotations

import os
import subprocess
import time
from functools import partial

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewPartitions

from devkafka.data import (
    ProduceSpec,
    Rec,
    committed_offsets,
    end_offsets,
    produce,
    produce_transactions,
    read_all,
)
from devkafka.endpoints import KafkaEndpoint
from devkafka.jars import KafkaJars
from mirror_sink.record.record_path import assign_validated
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import assert_exact_mirror, shadow_caught_up
from tests.integration.harness.processes import MirrorProcess
from tests.integration.harness.records import contents, tricky_records
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until


@pytest.mark.parametrize(
    ("policy", "mode"),
    [("DefaultReplicationPolicy", "raw"), ("IdentityReplicationPolicy", "raw"), ("DefaultReplicationPolicy", "record")],
)
def test_mirrors_keys_nulls_headers_timestamps_and_skips_aborted(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    policy: str,
    mode: str,
) -> None:
    name, topic = unique("basic"), new_topic("orders", 3)
    target_topic = f"source.{topic}" if policy.startswith("Default") else topic
    records = tricky_records(3)
    produce_transactions(
        source.bootstrap_servers,
        topic,
        [
            (records[:60], True),
            ([Rec(b"aborted", b"never", partition=p) for p in range(3)], False),
            (records[60:], True),
        ],
        ProduceSpec(transactional_id=unique("tx"), compression="zstd"),
    )
    overrides = {"replication.policy.class": policy, "mirror.mode": mode}
    proc = mirror(mirror_config(name, source, target, topic, **overrides)).start()
    try:
        group = f"connect-{name}"
        wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 60, "the mirror to catch up")
        assert_exact_mirror(source, topic, target, target_topic, group)
        mirrored = read_all(target.bootstrap_servers, target_topic)
        assert all(r.value != b"never" for recs in mirrored.values() for r in recs)
        assert sum(1 for recs in mirrored.values() for r in recs if r.value is None) == len(
            [r for r in records if r.value is None]
        ), "tombstones must stay tombstones"
    finally:
        assert proc.stop() == 0, proc.log_tail()


def test_new_topics_and_partitions_are_mirrored_on_the_fly(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    name, prefix = unique("grow"), unique("grow")
    first = new_topic(f"{prefix}-a", 2)
    produce(source.bootstrap_servers, first, tricky_records(2, 50))
    proc = mirror(mirror_config(name, source, target, rf"{prefix}-.*")).start()
    group = f"connect-{name}"
    try:
        wait_until(lambda: shadow_caught_up(source, first, target, f"source.{first}", group), 60, "first topic")
        admin = AdminClient({"bootstrap.servers": source.bootstrap_servers})
        admin.create_partitions([NewPartitions(first, 4)])[first].result(30)
        second = new_topic(f"{prefix}-b", 3)
        produce(source.bootstrap_servers, first, tricky_records(4, 80))
        produce(source.bootstrap_servers, second, tricky_records(3, 60))
        wait_until(lambda: shadow_caught_up(source, first, target, f"source.{first}", group), 90, "grown topic")
        wait_until(lambda: shadow_caught_up(source, second, target, f"source.{second}", group), 90, "new topic")
        assert_exact_mirror(source, first, target, f"source.{first}", group)
        assert_exact_mirror(source, second, target, f"source.{second}", group)
    finally:
        assert proc.stop() == 0, proc.log_tail()


def test_shadow_group_and_source_lag_are_visible_to_kafka_tooling(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    name, topic = unique("tooling"), new_topic("tooling", 2)
    produce(source.bootstrap_servers, topic, tricky_records(2, 40))
    proc = mirror(mirror_config(name, source, target, topic)).start()
    group = f"connect-{name}"
    try:
        wait_until(lambda: shadow_caught_up(source, topic, target, f"source.{topic}", group), 60, "catch up")
        ends = end_offsets(source.bootstrap_servers, topic)
        # KIP-656's informational commits: the source group shows the mirrored positions (lag 0).
        wait_until(
            lambda: (
                committed_offsets(source.bootstrap_servers, group, [(topic, p) for p in ends])
                == {(topic, p): e for p, e in ends.items()}
            ),
            30,
            "source-side lag commits",
        )
        jars = KafkaJars.ensure()
        out = subprocess.run(
            ["java", "-cp", jars.classpath, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
             "--bootstrap-server", target.bootstrap_servers, "--describe", "--group", group],
            capture_output=True, text=True, timeout=120, check=True,
        ).stdout  # fmt: skip
        rows = [line.split() for line in out.splitlines() if f"source.{topic}" in line]
        assert {(int(r[2]), int(r[3])) for r in rows} == set(ends.items()), out
    finally:
        assert proc.stop() == 0, proc.log_tail()


def test_offset_fallback_latest_and_copy_once_from_a_source_group(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    latest_topic, copied_topic = new_topic("fb-latest", 2), new_topic("fb-copy", 2)
    for topic in (latest_topic, copied_topic):
        produce(source.bootstrap_servers, topic, [Rec(b"old", b"old-%d" % i, partition=i % 2) for i in range(20)])
    legacy = unique("legacy-group")
    c = Consumer({"bootstrap.servers": source.bootstrap_servers, "group.id": legacy})
    c.commit(offsets=[TopicPartition(copied_topic, 0, 4), TopicPartition(copied_topic, 1, 6)], asynchronous=False)
    c.close()

    latest = mirror(
        mirror_config(unique("latest"), source, target, latest_topic, **{"offset.fallback": "latest"})
    ).start()
    copied = mirror(
        mirror_config(
            unique("copied"),
            source,
            target,
            copied_topic,
            **{"offset.fallback": "source-group", "offset.fallback.group.id": legacy},
        )
    ).start()
    try:
        latest_group = f"connect-{latest.config['name']}"
        # The resolved "latest" start is saved at once, so records written from now on are all mirrored.
        wait_until(
            lambda: (
                committed_offsets(target.bootstrap_servers, latest_group, [(f"source.{latest_topic}", 0)])
                == {(f"source.{latest_topic}", 0): 10}
            ),
            60,
            "the latest start offsets to be saved",
        )
        produce(
            source.bootstrap_servers,
            latest_topic,
            [Rec(b"new", b"new-%d" % i, partition=i % 2) for i in range(6)],
        )
        wait_until(
            lambda: shadow_caught_up(source, latest_topic, target, f"source.{latest_topic}", latest_group),
            60,
            "latest",
        )
        got = read_all(target.bootstrap_servers, f"source.{latest_topic}")
        assert sorted(r.value for rs in got.values() for r in rs if r.value) == sorted(b"new-%d" % i for i in range(6))

        copied_group = f"connect-{copied.config['name']}"
        wait_until(
            lambda: shadow_caught_up(source, copied_topic, target, f"source.{copied_topic}", copied_group),
            60,
            "copy",
        )
        src = read_all(source.bootstrap_servers, copied_topic)
        got = read_all(target.bootstrap_servers, f"source.{copied_topic}")
        assert contents(got[0]) == contents(src[0][4:]) and contents(got[1]) == contents(src[1][6:])
    finally:
        assert latest.stop() == 0, latest.log_tail()
        assert copied.stop() == 0, copied.log_tail()


def test_at_least_once_mode_commits_offsets_after_delivery(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    name, topic = unique("alo"), new_topic("alo", 3)
    produce(source.bootstrap_servers, topic, tricky_records(3, 300), ProduceSpec(compression="snappy"))
    proc = mirror(mirror_config(name, source, target, topic, **{"transaction.producer": "false"})).start()
    group = f"connect-{name}"
    try:
        wait_until(lambda: shadow_caught_up(source, topic, target, f"source.{topic}", group), 60, "catch up")
        assert_exact_mirror(source, topic, target, f"source.{topic}", group)  # a clean run has no duplicates
        assert "at-least-once (idempotent producer)" in proc.log_text()
    finally:
        assert proc.stop() == 0, proc.log_tail()


def test_bad_config_exits_naming_the_key(source: KafkaEndpoint, target: KafkaEndpoint, mirror: MirrorFactory) -> None:
    bad = {"tasks.max": "many", "source.cluster.sasl.password": "s3cr3t"}
    proc = mirror(mirror_config("badconf", source, target, "x", **bad)).start()
    assert proc.wait(60) == 2
    log = proc.log_text()
    assert "tasks.max" in log and "many" in log, log
    assert "s3cr3t" not in log


def test_unreachable_source_fails_with_the_address_once_its_give_up_time_passed(
    target: KafkaEndpoint, mirror: MirrorFactory
) -> None:
    class Nowhere:
        name = "source"
        bootstrap_servers = "127.0.0.1:1"

    config = mirror_config("nowhere", Nowhere(), target, "x", **{"source.unreachable.give.up.ms": "2000"})
    proc = mirror(config).start()
    assert proc.wait(120) == 1
    assert "source cluster 'source' is unreachable: 127.0.0.1:1: connection refused" in proc.log_text(), proc.log_tail()
    assert "giving up (source.unreachable.give.up.ms=2000)" in proc.log_text(), proc.log_tail()


def test_record_too_large_for_the_target_fails_the_task_and_commits_nothing(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    name, topic = unique("toolarge"), new_topic("toolarge", 1)
    new_topic("toolarge", 1, {"max.message.bytes": "2000"}, on=target)  # named as the identity policy names it
    # Random bytes: compression must not shrink the record under the limit.
    produce(source.bootstrap_servers, topic, [Rec(b"small", b"s" * 10), Rec(b"big", os.urandom(20_000))])
    identity = {"replication.policy.class": "IdentityReplicationPolicy"}
    proc = mirror(mirror_config(name, source, target, topic, **identity)).start()
    assert proc.wait(120) == 1, proc.log_tail()
    log = proc.log_text()
    assert "FAILED" in log and f"{topic}-0" in log and "too large" in log.lower(), log
    assert read_all(target.bootstrap_servers, topic) == {0: []}, "nothing of the failed transaction is visible"
    # At most the resolved start offset was saved (raw mode saves it in a cycle of its own); never past it.
    assert committed_offsets(target.bootstrap_servers, f"connect-{name}", [(topic, 0)])[(topic, 0)] in (-1001, 0)


def _reading(proc: MirrorProcess, partitions: int) -> bool:
    return f"reading {partitions} source partitions" in proc.log_text()


@pytest.mark.parametrize("mode", ["raw", "record"])
def test_a_transaction_ends_once_the_mirror_has_caught_up_not_at_the_interval(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
) -> None:
    """``transaction.boundary=caught-up`` (the default) commits as soon as nothing else waits;
    ``interval`` only at the interval: the same record, visible in seconds against not yet."""
    topics: dict[str, str] = {}
    procs = {}
    for boundary in ("caught-up", "interval"):
        topic = topics[boundary] = new_topic(f"boundary-{boundary}", 2)
        config = mirror_config(
            unique(f"boundary-{boundary}"),
            source,
            target,
            topic,
            **{"mirror.mode": mode, "transaction.boundary": boundary, "transaction.boundary.interval.ms": "60000"},
        )
        procs[boundary] = mirror(config).start()
    try:
        for proc in procs.values():
            wait_until(partial(_reading, proc, 2), 60, "the mirror to start reading")
        time.sleep(1)  # past the first commit, which saves the fallback start offsets

        def visible(boundary: str) -> int:
            return sum(end_offsets(target.bootstrap_servers, f"source.{topics[boundary]}").values())

        for topic in topics.values():
            produce(source.bootstrap_servers, topic, [Rec(b"k", b"v", partition=1)])
        started = time.monotonic()
        wait_until(lambda: visible("caught-up") >= 1, 15, "the record to be committed without waiting for the interval")
        print(f"{mode}: visible after {time.monotonic() - started:.2f} s with transaction.boundary=caught-up")
        time.sleep(2)
        assert visible("interval") == 0, "with transaction.boundary=interval the transaction waits for the interval"
        copied = read_all(target.bootstrap_servers, f"source.{topics['caught-up']}")
        assert [(r.key, r.value) for r in copied[1]] == [(b"k", b"v")] and not copied[0]
    finally:
        for proc in procs.values():
            assert proc.stop() == 0, proc.log_tail()


def test_records_flowing_steadily_share_transactions_for_the_linger(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    """``transaction.boundary.linger.ms``: a caught-up task commits no sooner than the linger after its
    previous commit, so a trickle shares transactions and their markers (one per partition a
    transaction wrote) instead of paying one transaction per record, and every record arrives once."""
    topic = new_topic("linger", 2)
    # (The interval, 200 ms in the tests' settings, would end each transaction before the linger.)
    linger = {"transaction.boundary.linger.ms": "2000", "transaction.boundary.interval.ms": "10000"}
    config = mirror_config(unique("linger"), source, target, topic, **linger)
    proc = mirror(config).start()
    try:
        wait_until(partial(_reading, proc, 2), 60, "the mirror to start reading")
        records = [Rec(b"k%d" % i, b"v%d" % i, partition=i % 2) for i in range(30)]
        started = time.monotonic()
        producer = Producer({"bootstrap.servers": source.bootstrap_servers})
        for record in records:  # about 10 a second: committed as each one is caught up, 30 transactions
            producer.produce(topic, record.value, record.key, partition=record.partition)
            producer.flush(10)
            time.sleep(0.1)
        spread_s = time.monotonic() - started
        target_topic = f"source.{topic}"
        group = f"connect-{config['name']}"
        wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 60, "caught up")
        markers = sum(end_offsets(target.bootstrap_servers, target_topic).values()) - len(records)
        # At most one transaction per linger over the spread, and one more at each end: 2 markers each.
        most = 2 * (int(spread_s / 2.0) + 2)
        print(f"30 records over {spread_s:.1f} s: {markers} markers (at most {most} allowed)")
        assert markers <= most, f"{markers} markers for 30 records over {spread_s:.1f} s with a 2 s linger"
        copied = read_all(target.bootstrap_servers, target_topic)
        assert sorted((r.key, r.value) for p in copied.values() for r in p) == sorted((r.key, r.value) for r in records)
    finally:
        assert proc.stop() == 0, proc.log_tail()


def test_a_partition_assigned_again_with_its_leader_epoch_reads_on_from_its_offset(
    source: KafkaEndpoint, new_topic: TopicFactory
) -> None:
    """Record mode re-assigns a partition at its committed offset with the stored leader epoch and
    seeks with that epoch (KIP-320 validation). Right after an unassign, librdkafka has not started
    the new fetcher yet and refuses a seek (``_STATE``, cc23: the record mirror died in a rewind):
    ``assign_validated`` waits for it, every time."""
    topic = new_topic("reassign", 1)
    produce(source.bootstrap_servers, topic, [Rec(None, f"v{i}".encode(), (), None, 0) for i in range(200)])
    consumer = Consumer(
        {
            "bootstrap.servers": source.bootstrap_servers,
            "group.id": f"{topic}-reader",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 10,
        }
    )
    try:
        consumer.get_watermark_offsets(TopicPartition(topic, 0))  # caches the partition's leader epoch
        for round_ in range(150):
            if round_:
                consumer.incremental_unassign([TopicPartition(topic, 0)])
            assign_validated(consumer, [TopicPartition(topic, 0, 10, leader_epoch=0)])
            # Several records, so that librdkafka is fetching (and prefetching) when it is unassigned.
            read = [m.offset() for m in consumer.consume(5, 10)]
            assert read[:1] == [10], f"round {round_}: read {read}"
    finally:
        consumer.close()
