"""Zombie fencing: a task that stalls while its partitions move on must never commit afterwards.

Two mirror processes share the partitions through the shadow group. One is frozen with SIGSTOP past
the group's session timeout, in the middle of its transactions; the other takes its partitions over
and keeps mirroring; then the frozen one is woken with SIGCONT. Its late commits carry a generation
the group coordinator no longer accepts (KIP-447), so its transaction aborts: the target must hold
every source record exactly once.
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
from tests.integration.harness.records import LiveReader, TransactionalLoad, contents
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

PARTITIONS = 6
RECORDS = 12_000
SESSION_TIMEOUT_MS = 6000


@pytest.mark.parametrize("mode", ["raw", "record"])
def test_a_stalled_task_never_commits_after_its_partitions_moved(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
) -> None:
    name, topic = unique("zombie"), new_topic("zombie", PARTITIONS)
    load = TransactionalLoad(
        source.bootstrap_servers,
        topic,
        PARTITIONS,
        RECORDS,
        pause_s=0.1,
        compression="gzip",
        txn_id=unique("z"),
    )
    # Long cycles: the zombie is frozen inside an open transaction with records in it, the case
    # that duplicates without fencing.
    config = mirror_config(
        name,
        source,
        target,
        topic,
        **{
            "transaction.boundary.interval.ms": "1000",
            "target.cluster.consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "mirror.mode": mode,
        },
    )
    zombie, survivor = mirror(config, "zombie").start(), mirror(config, "survivor").start()
    target_topic = f"source.{topic}"
    group = f"connect-{name}"
    wait_until(lambda: "assigned 3 target partitions" in zombie.log_text(), 60, "the zombie to own 3 partitions")
    wait_until(lambda: "assigned 3 target partitions" in survivor.log_text(), 60, "the survivor to own 3 partitions")
    live = LiveReader(target.bootstrap_servers, [(target_topic, p) for p in range(PARTITIONS)]).start()
    load.start()
    try:
        wait_until(lambda: live.count() >= 0.2 * RECORDS, 120, "20% mirrored")
        zombie.signal(signal.SIGSTOP)
        frozen_at = live.count()
        # Past the session timeout the coordinator drops the zombie and the survivor gets everything.
        wait_until(
            lambda: f"assigned {PARTITIONS} target partitions" in survivor.log_text(),
            SESSION_TIMEOUT_MS / 1000 + 60,
            "the survivor to take over every partition",
        )
        wait_until(lambda: live.count() >= frozen_at + 2000, 120, "the survivor to mirror on")
        zombie.signal(signal.SIGCONT)

        load.join(300)
        wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 240, "mirrored to the end")
        live.wait_for(RECORDS, 60)
        time.sleep(2)  # a late zombie commit would show up now
    finally:
        live.stop()
        zombie_code, survivor_code = zombie.stop(), survivor.stop()

    assert survivor_code == 0, survivor.log_tail()
    # The zombie either failed or rejoined cleanly; either way it exited on its own terms.
    assert zombie_code in (0, 1), zombie.log_tail()
    expected = read_all(source.bootstrap_servers, topic)
    assert sum(len(v) for v in expected.values()) == RECORDS
    for p in range(PARTITIONS):
        seen = live.records.get((target_topic, p), [])
        assert len(seen) == len(expected[p]), f"{target_topic}-{p}: {len(seen)} records, source has {len(expected[p])}"
        assert contents(seen) == contents(expected[p]), f"{target_topic}-{p}: duplicates, loss or reordering"
    assert_exact_mirror(source, topic, target, target_topic, group)
    # The zombie's (and every aborted) transaction's offset sync is invisible: no sync overlaps another.
    assert_offset_syncs_exact(source, topic, target, target_topic)
    woke = zombie.log_text()
    assert "lost" in woke or "aborted" in woke or "FAILED" in woke, "the zombie must have noticed it was fenced"
