"""Exactly once under failure: a port of Kafka's transactions system test to mirror-sink.

Source data is written in transactions, one in five aborted, with two codecs, while the mirror runs.
During the run the mirror is killed three times (SIGTERM once, SIGKILL twice). A read_committed
consumer on the target during the run and another after it must see exactly the source's committed
records: none lost, none twice, each partition in order; and the shadow group must end at the
source's end offsets.

Broker faults live in test_replicated_chaos.py, on replicated clusters where leadership and
coordinators move, with the mirror never frozen. On a single node they cannot be tested without a
shelter: a single-replica partition has no leader while its broker stops, and Kafka's transaction
coordinator then drops markers whichever client wrote them (docs/architecture.md, "Give target topics more
than one replica").
"""

from __future__ import annotations

import signal
import time

import pytest

from devkafka.data import read_all
from devkafka.endpoints import KafkaEndpoint
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import assert_exact_mirror, assert_offset_syncs_exact, shadow_caught_up
from tests.integration.harness.processes import MirrorProcess
from tests.integration.harness.records import LiveReader, TransactionalLoad, contents
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

# (topic suffix, partitions, codec, committed records)
SOURCES = [("lz4", 4, "lz4", 14_000), ("zstd", 2, "zstd", 7_000)]
TOTAL = sum(n for *_, n in SOURCES)


@pytest.mark.parametrize("mode", ["raw", "record"])
def test_every_record_exactly_once_through_mirror_kills_and_restarts(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
) -> None:
    name, prefix = unique("chaos"), unique("chaos")
    topics = {new_topic(f"{prefix}-{suffix}", parts): (parts, codec, n) for suffix, parts, codec, n in SOURCES}
    loads = [
        TransactionalLoad(
            source.bootstrap_servers, topic, parts, n, compression=codec, pause_s=0.15, txn_id=unique(topic)
        )
        for topic, (parts, codec, n) in topics.items()
    ]
    config = mirror_config(name, source, target, rf"{prefix}-.*", **{"tasks.max": "2", "mirror.mode": mode})
    proc = mirror(config).start()
    group = f"connect-{name}"
    target_partitions = [(f"source.{t}", p) for t, (parts, _, _) in topics.items() for p in range(parts)]
    wait_until(lambda: _topics_exist(target, [t for t, _ in target_partitions]), 60, "target topics")
    live = LiveReader(target.bootstrap_servers, target_partitions).start()
    for load in loads:
        load.start()

    def progress_at_least(fraction: float) -> None:
        # Each event also waits for the mirror to have moved on since the previous one, so no event
        # lands while the previous one is still being recovered from.
        goal = min(TOTAL, max(fraction * TOTAL, live.count() + 1000))
        wait_until(lambda: live.count() >= goal, 240, f"{fraction:.0%} of the records mirrored")

    def restarted(current: MirrorProcess, how: signal.Signals) -> MirrorProcess:
        current.signal(how)
        code = current.wait(90)
        if how is signal.SIGTERM:
            assert code == 0, f"graceful stop failed ({code}):\n{current.log_tail()}"
        return current.start()

    try:
        progress_at_least(0.20)
        proc = restarted(proc, signal.SIGTERM)
        progress_at_least(0.35)
        proc = restarted(proc, signal.SIGKILL)
        progress_at_least(0.60)
        proc = restarted(proc, signal.SIGKILL)

        for load in loads:
            load.join(300)
        for topic in topics:
            wait_until(
                lambda t=topic: shadow_caught_up(source, t, target, f"source.{t}", group),  # type: ignore[misc]
                240,
                f"{topic} mirrored to its end",
            )
        assert proc.alive(), f"the mirror died:\n{proc.log_tail()}"
        live.wait_for(TOTAL, 60)
        time.sleep(1)  # anything extra (a duplicate) would arrive now
    finally:
        live.stop()
        exit_code = proc.stop()

    assert exit_code == 0, proc.log_tail()
    for topic, (parts, _, committed) in topics.items():
        expected = read_all(source.bootstrap_servers, topic)
        assert sum(len(v) for v in expected.values()) == committed
        for p in range(parts):
            seen = live.records.get((f"source.{topic}", p), [])
            assert len(seen) == len(expected[p]), f"live reader: {topic}-{p} has {len(seen)} of {len(expected[p])}"
            assert contents(seen) == contents(expected[p]), f"live reader: {topic}-{p} differs (order or content)"
        assert_exact_mirror(source, topic, target, f"source.{topic}", group)
        assert_offset_syncs_exact(source, topic, target, f"source.{topic}")  # none from an aborted transaction
    log = proc.log_text()
    assert log.count("===== start") == 4, "three restarts expected"


def _topics_exist(cluster: KafkaEndpoint, topics: list[str]) -> bool:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(timeout=10)
    return all(t in md.topics for t in topics)
