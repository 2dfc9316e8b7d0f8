"""Active-active: two clusters mirroring into each other at once, each way exactly once.

Cluster A (``east``) writes ``orders``, cluster B (``west``) writes ``pay``. One mirror copies A to B
in raw mode, the other B to A in record mode, with MirrorMaker 2's Default names, both while
transactional loads write and while each mirror is SIGKILLed once and restarted. Each mirror's topic
filter accepts the other's remote topic (``west.pay`` on A, ``east.orders`` on B): only the cycle
rule keeps it from going back, and it says so once in the log. At the end:

- every committed record is on the other cluster exactly once, in order per partition, with exact
  offset syncs; no ``west.east.orders`` or ``east.west.pay`` exists and the local topics hold only
  what their producers wrote (nothing came back to its origin);
- each direction checkpoints its source groups exactly and syncs them to the other cluster;
- a failover of one direction, run while the other keeps mirroring, places its group exactly, and
  the other direction goes on.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from confluent_kafka.admin import AdminClient

from devkafka.data import committed_offsets, end_offsets, read_all
from devkafka.endpoints import KafkaEndpoint
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.checkpoints import Checkpoint, checkpoints_topic
from mirror_sink.core.formats.offset_syncs import OffsetIndex
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.clusters import commit_group_offsets
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import (
    assert_exact_mirror,
    assert_offset_syncs_exact,
    committed_on_target,
    offset_syncs_of,
    shadow_caught_up,
)
from tests.integration.harness.processes import MirrorProcess, run_failover
from tests.integration.harness.records import TransactionalLoad
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

PARTITIONS = 2
#: Checkpoints and group sync every second, for the groups named in each mirror's ``groups``.
SYNC = {
    "emit.checkpoints.enabled": "true",
    "emit.checkpoints.interval.seconds": "1",
    "sync.group.offsets.enabled": "true",
    "sync.group.offsets.interval.seconds": "1",
}


class _Direction:
    """One mirror of the pair: from ``source`` (alias ``alias``) to ``target``, for ``topic``."""

    def __init__(
        self, name: str, source: KafkaEndpoint, target: KafkaEndpoint, aliases: tuple[str, str], topic: str
    ) -> None:
        self.name, self.source, self.target, self.topic = name, source, target, topic
        self.alias, self.other = aliases
        self.remote = f"{self.alias}.{topic}"
        self.group = f"connect-{name}"

    def config(self, mode: str, tag: str, groups: str) -> dict[str, str]:
        settings = {
            "mirror.mode": mode,
            "source.cluster.alias": self.alias,
            "target.cluster.alias": self.other,
            "groups": groups,
            **SYNC,
        }
        # The filter takes the other direction's remote topic too: only the cycle rule may leave it out.
        return mirror_config(self.name, self.source, self.target, rf".*-{tag}", **settings)

    def caught_up(self) -> bool:
        return shadow_caught_up(self.source, self.topic, self.target, self.remote, self.group)

    def exact(self) -> None:
        assert_exact_mirror(self.source, self.topic, self.target, self.remote, self.group, offset_syncs=False)
        assert offset_syncs_of(self.target, self.remote, self.alias), f"no offset syncs for {self.remote}"
        assert_offset_syncs_exact(self.source, self.topic, self.target, self.remote, self.alias)

    def checkpoints(self, group: str) -> dict[int, Checkpoint]:
        stored = read_all(self.target.bootstrap_servers, checkpoints_topic(self.alias)).get(0, [])
        cps = [Checkpoint.decode(r.key or b"", r.value or b"") for r in stored]
        return {c.target.partition: c for c in cps if c.group == group and c.target.topic == self.remote}

    def checkpointed(self, group: str, want: dict[int, tuple[int, int | None]]) -> bool:
        """The newest checkpoint of ``group`` per partition is (upstream, downstream) = ``want``."""
        return {p: (c.upstream_offset, c.downstream_offset) for p, c in self.checkpoints(group).items()} == want

    def synced(self, group: str, want: dict[int, int]) -> bool:
        """``group`` on the target holds ``want`` (group offset sync)."""
        got = committed_offsets(self.target.bootstrap_servers, group, [(self.remote, p) for p in want])
        return got == {(self.remote, p): o for p, o in want.items()}

    def translate(self, offsets: dict[int, int]) -> dict[int, int | None]:
        index = OffsetIndex()
        for sync in offset_syncs_of(self.target, self.remote, self.alias):
            index.add(sync)
        return {p: index.translate(TargetPartition(self.remote, p), o) for p, o in offsets.items()}


def _restart_after_sigkill(proc: MirrorProcess, target: KafkaEndpoint, remote: str) -> None:
    """SIGKILL mid-copy (its open transaction and syncs are never seen) once it has committed, restart."""
    before = committed_on_target(target, remote)
    wait_until(lambda: committed_on_target(target, remote) > before or not proc.alive(), 60, f"commits to {remote}")
    proc.kill()
    proc.start()


def test_two_clusters_mirror_into_each_other_exactly_once_with_no_cycle_and_no_echo(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    tmp_path: Path,
) -> None:
    tag = unique("aa").rsplit("-", 1)[1]
    east, west = f"east{tag}", f"west{tag}"
    reader_a, reader_b, mover = f"app-a-{tag}", f"app-b-{tag}", f"moved-{tag}"
    orders, pay = new_topic("orders", PARTITIONS), new_topic("pay", PARTITIONS, on=target)  # orders-{tag}, pay-{tag}
    ab = _Direction(f"ab-{tag}", source, target, (east, west), orders)
    ba = _Direction(f"ba-{tag}", target, source, (west, east), pay)
    loads = [
        TransactionalLoad(
            d.source.bootstrap_servers, d.topic, PARTITIONS, 10**9, per_txn=40, pause_s=0.05, txn_id=d.name
        )
        for d in (ab, ba)
    ]
    for load in loads:
        load.start()
    ab_config, ba_config = ab.config("raw", tag, reader_a), ba.config("record", tag, reader_b)
    procs = {ab.name: mirror(ab_config).start(), ba.name: mirror(ba_config).start()}
    try:
        for d in (ab, ba):
            _restart_after_sigkill(procs[d.name], d.target, d.remote)
        # Source groups on each side, for each direction's checkpoints and group sync.
        for d, group in ((ab, reader_a), (ba, reader_b)):
            ends = end_offsets(d.source.bootstrap_servers, d.topic)
            commit_group_offsets(d.source.bootstrap_servers, group, {(d.topic, p): e // 2 for p, e in ends.items()})
    finally:
        for load in loads:
            load.stop()
    for load in loads:
        load.join(60)
    for d in (ab, ba):
        wait_until(d.caught_up, 90, f"{d.name} caught up", detail=procs[d.name].log_tail)

    # Each way exactly once, nothing back at its origin, no cycle topic.
    for d, load in zip((ab, ba), loads, strict=True):
        d.exact()
        held = sum(len(rs) for rs in read_all(d.source.bootstrap_servers, d.topic).values())
        assert held == load.committed, f"{d.topic} holds {held} records, its producer committed {load.committed}"
    for d, back in ((ab, ba.remote), (ba, ab.remote)):
        # ``back`` is the other direction's copy on this direction's source: the way home.
        admin = AdminClient({"bootstrap.servers": d.target.bootstrap_servers})
        assert f"{d.alias}.{back}" not in admin.list_topics(timeout=10).topics, f"{d.name} mirrored {back} back"
        log = procs[d.name].log_text()
        assert f"not mirroring {back}: it came from the target cluster {d.other!r}" in log, procs[d.name].log_tail()
        # Once per topic and process (this one was restarted once), not at every refresh (every second).
        assert log.count(f"not mirroring {back}:") <= 2

    # Each direction checkpoints its own source groups exactly, and syncs them to the other side.
    for d, group in ((ab, reader_a), (ba, reader_b)):
        upstream = {
            p: o
            for (_, p), o in committed_offsets(
                d.source.bootstrap_servers, group, [(d.topic, p) for p in range(PARTITIONS)]
            ).items()
        }
        exact = d.translate(upstream)
        assert None not in exact.values(), exact

        want = {p: (upstream[p], exact[p]) for p in upstream}
        checkpointed = partial(d.checkpointed, group, want)
        wait_until(checkpointed, 30, f"{d.name}'s checkpoints of {group}", detail=procs[d.name].log_tail)
        synced = partial(d.synced, group, {p: o for p, o in exact.items() if o is not None})
        wait_until(synced, 30, f"{group} synced to the other cluster by {d.name}", detail=procs[d.name].log_tail)

    # A failover of one direction while the other goes on.
    ends = end_offsets(source.bootstrap_servers, orders)
    commit_group_offsets(source.bootstrap_servers, mover, {(orders, p): e - 5 for p, e in ends.items()})
    result = run_failover(ab_config, tmp_path, "--groups", mover, "--wait-caught-up", "60")
    assert result.returncode == 0, result.stdout + result.stderr
    landed = read_all(target.bootstrap_servers, ab.remote)
    committed = committed_offsets(target.bootstrap_servers, mover, [(ab.remote, p) for p in range(PARTITIONS)])
    for p in range(PARTITIONS):
        at = committed[(ab.remote, p)]
        next_records = [r.content() for r in landed[p] if r.offset >= at]
        source_records = read_all(source.bootstrap_servers, orders)[p]
        assert next_records == [r.content() for r in source_records if r.offset >= ends[p] - 5], f"{mover} on {p}"
    more = TransactionalLoad(target.bootstrap_servers, pay, PARTITIONS, 200, per_txn=50, txn_id=f"{ba.name}-more")
    more.start().join(60)
    wait_until(ba.caught_up, 60, f"{ba.name} going on after the failover", detail=procs[ba.name].log_tail)
    ba.exact()
    for proc in procs.values():
        assert proc.stop() == 0, proc.log_tail()
