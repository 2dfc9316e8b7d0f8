"""Exactly once across network partitions longer than the transaction timeout.

A raw and a record mirror run side by side under transactional source loads, each reaching both
clusters only through a link the test can cut (``devkafka.link``; the test's own clients connect
directly). First the mirrors' link to the target goes silent for longer than
``transaction.timeout.ms`` and the shadow group's session: every byte dropped, nothing refused, as
when a WAN link breaks. The target aborts the mirrors' open transactions and drops them from the
group; when the link comes back they must rejoin, rewind to what the target committed and go on.
Then the same for the source. At the end a read_committed reader sees every source record exactly
once, in order per partition, no task ever FAILED, and the output gives how long after each link
came back new records became visible again.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devkafka.cluster import LocalKafkaCluster
from devkafka.jars import KafkaJars
from devkafka.link import Link, add_linked_listener
from devkafka.processes import reap_with_this_process
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.records import TransactionalLoad, committed_data_batches
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until
from tests.integration.side_by_side import LoadedMirror, SideBySide

pytestmark = pytest.mark.timeout(600)

MODES = ("raw", "record")
PARTITIONS = 3
#: The tests' transaction timeout (FAST_SETTINGS) is 20 s and their session 6 s: the cut outlasts both.
CUT_S = 30.0
PROGRESS = 300


@dataclass
class _Linked:
    """A single-node cluster with a second listener advertised behind a cuttable link."""

    cluster: LocalKafkaCluster
    link: Link

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
    try:
        cluster.start()
    except BaseException:
        cluster.stop(hard=True)
        raise
    return _Linked(cluster, Link(link_port, broker_port))


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


def _side_by_side(
    source: _Linked, target: _Linked, tag: str, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> SideBySide:
    """A raw and a record mirror, each reaching both clusters only through their links, under
    transactional source loads; started once each has its partitions."""
    mirrors: list[LoadedMirror] = []
    loads: list[TransactionalLoad] = []
    for mode in MODES:
        name, topic = unique(f"{tag}-{mode}"), new_topic(f"{tag}-{mode}", PARTITIONS, on=source)
        loads.append(
            TransactionalLoad(source.bootstrap_servers, topic, PARTITIONS, 10**9, pause_s=0.1, txn_id=unique(topic))
        )
        config = mirror_config(name, source, target, topic, **{"mirror.mode": mode})
        config["source.cluster.bootstrap.servers"] = source.linked
        config["target.cluster.bootstrap.servers"] = target.linked
        mirrors.append(LoadedMirror(mode, name, {topic: PARTITIONS}, mirror(config).start()))
    for m in mirrors:
        wait_until(lambda m=m: "assigned 3 target partitions" in m.process.log_text(), 90, f"the {m.mode} mirror")  # type: ignore[misc]
    return SideBySide(source, target, mirrors, loads).start()


def test_exactly_once_after_the_target_and_then_the_source_were_unreachable_past_the_transaction_timeout(
    linked_pair: tuple[_Linked, _Linked], unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    source, target = linked_pair
    run = _side_by_side(source, target, "netcut", unique, new_topic, mirror)
    mirrors = run.mirrors
    recoveries: list[str] = []

    def partition(cluster: str, link: Link) -> None:
        said_before = {m.mode: len(m.process.log_text()) for m in mirrors}
        with link.cut():
            time.sleep(CUT_S)
        restored = time.monotonic()
        run.moving(f"after the {cluster} came back", PROGRESS, 120, each=True)
        for m in mirrors:  # an operator reading the log learns which cluster was the trouble
            said = m.process.log_text()[said_before[m.mode] :].splitlines()
            assert any((" WARNING " in line or " ERROR " in line) and cluster in line for line in said), (
                f"the {m.mode} mirror's log says nothing of the {cluster} being unreachable"
            )
        recoveries.append(f"{cluster} unreachable for {CUT_S:.0f} s, visible again after: {run.stalls(restored)}")

    try:
        run.moving("at the start", PROGRESS, 120, each=True)
        partition("target", target.link)
        partition("source", source.link)
        run.drain(120)
    finally:
        logs = {m.mode: m.process.log_text() for m in mirrors}
        codes = run.stop()
    print("recovery after each network partition:\n  " + "\n  ".join(recoveries))
    run.check(codes)
    for m in mirrors:
        assert "task FAILED" not in logs[m.mode], logs[m.mode][-3000:]
        _assert_a_new_epoch_after_the_cut(target, m)


def _assert_a_new_epoch_after_the_cut(target: _Linked, mirror: LoadedMirror) -> None:
    """The transaction the target cut left open was aborted, and what came after it was written with
    a newer epoch (record mode too, where librdkafka speaks transactions version 1): a late write of
    the aborted transaction cannot have joined a later one."""
    for topic, partition in mirror.partitions:
        stamps = [
            (int.from_bytes(b[43:51], "big"), int.from_bytes(b[51:53], "big"))  # producer id, producer epoch
            for b in committed_data_batches(target.bootstrap_servers, topic, partition)
        ]
        assert stamps == sorted(stamps), f"{mirror.mode} {topic}-{partition}: epochs went back: {stamps}"
        assert stamps[-1] > stamps[0], f"{mirror.mode} {topic}-{partition}: one epoch through the cut: {stamps[0]}"


def test_sigterm_is_honoured_within_seconds_while_the_target_does_not_answer_and_nothing_is_lost(
    linked_pair: tuple[_Linked, _Linked], unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    """A hung target: the cycles cannot flush, commit or abort. SIGTERM must still end each mirror at
    once, leaving its open transaction to the broker; restarted, they go on exactly once."""
    source, target = linked_pair
    run = _side_by_side(source, target, "hungstop", unique, new_topic, mirror)
    mirrors = run.mirrors
    took: dict[str, float] = {}
    try:
        run.moving("at the start", PROGRESS, 120, each=True)
        with target.link.cut():
            time.sleep(3)  # every cycle is now waiting on the target
            for m in mirrors:
                m.process.signal(signal.SIGTERM)
            asked = time.monotonic()
            for m in mirrors:
                code = m.process.wait(60)
                took[m.mode] = time.monotonic() - asked
                assert code == 0, m.process.log_tail()
        print("SIGTERM with the target hung, exit after: " + ", ".join(f"{k} {v:.1f} s" for k, v in took.items()))
        assert max(took.values()) < 15, f"SIGTERM honoured after {took} (asked: within 10 s)"
        for m in mirrors:
            m.process.start()  # the same worker id: it fences whatever its predecessor left open
        run.moving("after the restart", PROGRESS, 120, each=True)
        run.drain(120)
    finally:
        codes = run.stop()
    run.check(codes)
