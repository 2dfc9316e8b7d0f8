"""Exactly once across network partitions longer than the transaction timeout.

A raw and a record mirror run side by side under transactional source loads, each reaching both
clusters only through a link the test can cut (``network_cut``; the test's own clients connect
directly). First the mirrors' link to the target goes silent for longer than
``transaction.timeout.ms`` and the shadow group's session: every byte dropped, nothing refused, as
when a WAN link breaks. The target aborts the mirrors' open transactions and drops them from the
group; when the link comes back they must rejoin, rewind to what the target committed and go on.
Then the same for the source. At the end a read_committed reader sees every source record exactly
once, in order per partition, no task ever FAILED, and the output gives how long after each link
came back new records became visible again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devkafka.backends import reap_with_this_process
from devkafka.cluster import LocalKafkaCluster
from devkafka.data import create_topic, read_all
from devkafka.delay_link import add_linked_listener
from devkafka.jars import KafkaJars
from tests.integration.conftest import MirrorFactory
from tests.integration.harness import (
    LiveReader,
    MirrorProcess,
    TransactionalLoad,
    Unique,
    assert_exact_mirror,
    contents,
    mirror_config,
    shadow_caught_up,
    wait_until,
)
from tests.integration.network_cut import CuttableLink

pytestmark = pytest.mark.timeout(600)

MODES = ("raw", "record")
PARTITIONS = 3
#: The tests' transaction timeout (FAST_SETTINGS) is 20 s and their session 6 s: the cut outlasts both.
CUT_S = 30.0
PROGRESS = 300


@dataclass
class _Mirror:
    mode: str
    name: str
    topic: str
    process: MirrorProcess

    @property
    def partitions(self) -> list[tuple[str, int]]:
        return [(f"source.{self.topic}", p) for p in range(PARTITIONS)]


@dataclass
class _Linked:
    """A single-node cluster with a second listener advertised behind a cuttable link."""

    cluster: LocalKafkaCluster
    link: CuttableLink

    @property
    def name(self) -> str:
        """The cluster's name."""
        return self.cluster.name

    @property
    def bootstrap_servers(self) -> str:
        """Direct: the test's own clients."""
        return self.cluster.bootstrap_servers

    @property
    def linked(self) -> str:
        """Through the link: the mirror's."""
        return f"127.0.0.1:{self.link.listen_port}"


def _linked_cluster(name: str, home: Path) -> _Linked:
    cluster = LocalKafkaCluster(name, home / name, KafkaJars.ensure(), heap="384m", broker_config={})
    broker_port, link_port = add_linked_listener(cluster)
    reap_with_this_process(pattern=f"kafka.logs.dir={cluster.home}")
    cluster.start()
    return _Linked(cluster, CuttableLink(link_port, broker_port))


@pytest.fixture(scope="module")
def linked_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[_Linked, _Linked]]:
    """A source and a target of their own, so no other test's clients ever cross a cut link."""
    home = tmp_path_factory.mktemp("kafka-linked")
    made: list[_Linked] = []
    try:
        for name in ("source", "target"):
            made.append(_linked_cluster(name, home))
        yield made[0], made[1]
    finally:
        for linked in made:
            linked.link.close()
            linked.cluster.stop(hard=True)


def test_exactly_once_after_the_target_and_then_the_source_were_unreachable_past_the_transaction_timeout(
    linked_pair: tuple[_Linked, _Linked], unique: Unique, mirror: MirrorFactory
) -> None:
    source, target = linked_pair
    mirrors: list[_Mirror] = []
    loads: list[TransactionalLoad] = []
    for mode in MODES:
        name, topic = unique(f"netcut-{mode}"), unique(f"netcut-{mode}")
        create_topic(source.bootstrap_servers, topic, PARTITIONS)
        loads.append(
            TransactionalLoad(source.bootstrap_servers, topic, PARTITIONS, 10**9, pause_s=0.1, txn_id=unique(topic))
        )
        config = mirror_config(name, source, target, topic, **{"mirror.mode": mode})
        config["source.cluster.bootstrap.servers"] = source.linked
        config["target.cluster.bootstrap.servers"] = target.linked
        mirrors.append(_Mirror(mode, name, topic, mirror(config).start()))
    for m in mirrors:
        wait_until(lambda m=m: "assigned 3 target partitions" in m.process.log_text(), 90, f"the {m.mode} mirror")  # type: ignore[misc]
    live = LiveReader(target.bootstrap_servers, [tp for m in mirrors for tp in m.partitions]).start()
    for load in loads:
        load.start()
    recoveries: list[str] = []

    def moving(what: str) -> None:
        for m in mirrors:
            goal = sum(len(live.records.get(tp, [])) for tp in m.partitions) + PROGRESS
            wait_until(
                lambda m=m, goal=goal: sum(len(live.records.get(tp, [])) for tp in m.partitions) >= goal,  # type: ignore[misc]
                120,
                f"{PROGRESS} more records of the {m.mode} mirror {what}",
                detail=lambda m=m: m.process.log_tail(40),  # type: ignore[misc]
            )
            assert m.process.alive(), f"the {m.mode} mirror died {what}:\n{m.process.log_tail()}"

    def partition(cluster: str, link: CuttableLink) -> None:
        said_before = {m.mode: len(m.process.log_text()) for m in mirrors}
        with link.cut():
            time.sleep(CUT_S)
        restored = time.monotonic()
        moving(f"after the {cluster} came back")
        for m in mirrors:  # an operator reading the log learns which cluster was the trouble
            said = m.process.log_text()[said_before[m.mode] :].splitlines()
            assert any((" WARNING " in line or " ERROR " in line) and cluster in line for line in said), (
                f"the {m.mode} mirror's log says nothing of the {cluster} being unreachable"
            )
        per_mode = ", ".join(f"{m.mode} {live.stall(m.partitions, restored):.1f} s" for m in mirrors)
        recoveries.append(f"{cluster} unreachable for {CUT_S:.0f} s, visible again after: {per_mode}")

    try:
        moving("at the start")
        partition("target", target.link)
        partition("source", source.link)
        for load in loads:
            load.stop()
        for load in loads:
            load.join(120)
        for m in mirrors:
            wait_until(
                lambda m=m: shadow_caught_up(source, m.topic, target, f"source.{m.topic}", f"connect-{m.name}"),  # type: ignore[misc]
                120,
                f"{m.topic} mirrored to its end ({m.mode} mode)",
                detail=lambda m=m: m.process.log_tail(40),  # type: ignore[misc]
            )
        live.wait_for(sum(load.committed for load in loads), 60)
        time.sleep(1)  # anything extra (a duplicate) would arrive now
    finally:
        for load in loads:
            load.stop()
        live.stop()
        logs = {m.mode: m.process.log_text() for m in mirrors}
        codes = {m.mode: m.process.stop() for m in mirrors}
    print("recovery after each network partition:\n  " + "\n  ".join(recoveries))
    assert codes == dict.fromkeys(MODES, 0), {m.mode: m.process.log_tail() for m in mirrors}
    for m in mirrors:
        expected = read_all(source.bootstrap_servers, m.topic)
        for p in range(PARTITIONS):
            seen = live.records.get((f"source.{m.topic}", p), [])
            assert contents(seen) == contents(expected[p]), f"{m.mode}: {m.topic}-{p} differs from the source"
        assert_exact_mirror(source, m.topic, target, f"source.{m.topic}", f"connect-{m.name}")
        assert "task FAILED" not in logs[m.mode], logs[m.mode][-3000:]
