"""Static membership of the shadow group (KIP-345): a task SIGKILLed and started again takes its own
partitions back at once, long before its 45 s session would have moved them, exactly once; and a
stopped task leaves the group at once, so a stopped connector's group is empty (KIP-875)."""

from __future__ import annotations

import time

from confluent_kafka import ConsumerGroupState
from confluent_kafka.admin import AdminClient

from devkafka.data import read_all
from devkafka.endpoints import KafkaEndpoint
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import assert_exact_mirror, shadow_caught_up
from tests.integration.harness.records import LiveReader, TransactionalLoad, contents
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

PARTITIONS = 4
RECORDS = 6_000
SESSION_S = 45  # Kafka's and a Connect sink task's default: the restart must not wait for it


def _members(target: KafkaEndpoint, group: str) -> tuple[ConsumerGroupState, list[str]]:
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    described = admin.describe_consumer_groups([group])[group].result(30)
    return described.state, sorted(m.group_instance_id or m.member_id for m in described.members)


def test_a_killed_task_restarted_takes_its_partitions_back_at_once_and_a_stop_leaves_the_group(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    name, topic = unique("static"), new_topic("static", PARTITIONS)
    group, target_topic = f"connect-{name}", f"source.{topic}"
    static = {"target.cluster.consumer.session.timeout.ms": "45000", "shadow.group.static.membership": "true"}
    config = mirror_config(name, source, target, topic, **static)
    load = TransactionalLoad(source.bootstrap_servers, topic, PARTITIONS, RECORDS, pause_s=0.05, txn_id=unique("s"))
    w1, w2 = mirror(config, "w1").start(), mirror(config, "w2").start()
    half = PARTITIONS // 2
    wait_until(lambda: f"assigned {half} target partitions" in w1.log_text(), 60, "w1 to own its half")
    wait_until(lambda: f"assigned {half} target partitions" in w2.log_text(), 60, "w2 to own its half")
    # Each task is a static member named by its slot.
    assert _members(target, group)[1] == [f"{name}-w1-0", f"{name}-w2-0"]
    live = LiveReader(target.bootstrap_servers, [(target_topic, p) for p in range(PARTITIONS)]).start()
    load.start()
    try:
        wait_until(lambda: live.count() >= 0.2 * RECORDS, 120, "20% mirrored")
        w1.kill()
        killed_at, seen_at_kill, w2_before = time.monotonic(), live.count(), len(w2.log_text())
        again = mirror(config, "w1").start()
        wait_until(
            lambda: f"assigned {half} target partitions" in again.log_text(), 60, "the restarted w1 to be assigned"
        )
        back_after = time.monotonic() - killed_at
        # Its own half, within seconds: no session ran out, no rebalance gave w2 every partition.
        assert back_after < SESSION_S / 2, f"the restarted task waited {back_after:.1f} s for its partitions"
        assert f"assigned {PARTITIONS} target partitions" not in w2.log_text()[w2_before:], w2.log_tail()
        wait_until(lambda: live.count() >= seen_at_kill + 1000, 60, "the restarted task to mirror on")
        load.join(300)
        wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 180, "mirrored to the end")
        live.wait_for(RECORDS, 60)
    finally:
        live.stop()
        codes = again.stop(), w2.stop()
    assert codes == (0, 0), again.log_tail() + w2.log_tail()
    # What an operator reads at INFO is the mirror's own story, not kafka-python's housekeeping.
    assert "registered a second response class" not in w2.log_text()
    # Stopped: both static members left at once (a session would have kept them for 45 s).
    state, members = _members(target, group)
    assert (state, members) == (ConsumerGroupState.EMPTY, []), f"{state}: {members}"

    expected = read_all(source.bootstrap_servers, topic)
    for p in range(PARTITIONS):
        seen = live.records.get((target_topic, p), [])
        assert contents(seen) == contents(expected[p]), f"{target_topic}-{p}: duplicates, loss or reordering"
    assert_exact_mirror(source, topic, target, target_topic, group)
