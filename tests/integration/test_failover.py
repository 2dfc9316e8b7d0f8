"""Exact consumer failover on real clusters: offset syncs, checkpoints Kafka's tools read, group sync, the command."""

from __future__ import annotations

import json
import re
import time
from functools import partial
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions

from api.cli.main import build_parser
from devkafka.data import (
    ProduceSpec,
    Rec,
    committed_offsets,
    end_offsets,
    produce,
    read_all,
    rec_from_message,
)
from devkafka.endpoints import KafkaEndpoint
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.checkpoints import Checkpoint, checkpoints_topic
from mirror_sink.core.formats.offset_syncs import offset_syncs_topic
from mirror_sink.failover.common.failover_record import FailoverRecord, failovers_topic, latest, read_records
from mirror_sink.failover.failback.divergence import diverged_topic
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.clusters import assert_refused_alike, commit_group_offsets
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import assert_exact_mirror, committed_on_target, shadow_caught_up
from tests.integration.harness.processes import run_failback, run_failover
from tests.integration.harness.records import TransactionalLoad
from tests.integration.harness.topics import TopicFactory, Unique, compacted_with_gaps
from tests.integration.harness.waiting import wait_until
from tests.integration.java_tools import java_translate_offsets

CHECKPOINTS = {"emit.checkpoints.enabled": "true", "emit.checkpoints.interval.seconds": "1"}


def _resume(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, list[Rec]]:
    """What a consumer of ``group`` reads on ``topic`` from its committed offsets to the end."""
    ends = end_offsets(bootstrap, topic)
    committed = committed_offsets(bootstrap, group, [(topic, p) for p in range(partitions)])
    out: dict[int, list[Rec]] = {p: [] for p in range(partitions)}
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
            "enable.partition.eof": True,
        }
    )
    pending = {p for p in range(partitions) if committed[(topic, p)] < ends[p]}
    assert all(committed[(topic, p)] >= 0 for p in range(partitions)), f"{group} has no offset on {topic}"
    consumer.assign([TopicPartition(topic, p, committed[(topic, p)]) for p in pending])
    deadline = time.monotonic() + 60
    try:
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                err = msg.error()
                if err is not None:
                    assert err.code() == KafkaError._PARTITION_EOF, err.str()
                    pending.discard(msg.partition() or 0)
                    continue
                rec = rec_from_message(msg)
                p = rec.partition
                out[p].append(rec)
                if rec.offset + 1 >= ends[p]:
                    pending.discard(p)
    finally:
        consumer.close()
    assert not pending, f"{group} did not reach the end of {topic}"
    return out


def _recorded(target: KafkaEndpoint, config: dict[str, str]) -> FailoverRecord:
    """The newest failover record of the connector, as a failback would read it."""
    alias = config.get("source.cluster.alias", "source")
    stored = read_all(target.bootstrap_servers, failovers_topic(alias)).get(0, [])
    record = latest(read_records((r.key, r.value) for r in stored), config["name"])
    assert record is not None, f"no failover record of {config['name']} in {failovers_topic(alias)}"
    return record


def _make_sources(new_topic: TopicFactory, source: KafkaEndpoint, prefix: str) -> dict[str, int]:
    """Aborted transactions (lz4), a zstd topic of big batches, a compacted topic with offset gaps: each
    named ``{prefix}-...`` (and the test's suffix)."""
    txn = new_topic(f"{prefix}-txn", 3)
    load = TransactionalLoad(source.bootstrap_servers, txn, 3, 900, per_txn=60, abort_every=4, txn_id=f"{prefix}-l")
    load.start()
    big = new_topic(f"{prefix}-zstd", 2)
    now = int(time.time() * 1000)
    records = [Rec(b"k%d" % i, b"v%d-" % i * 20, (), now + i, i % 2) for i in range(800)]
    produce(source.bootstrap_servers, big, records, ProduceSpec(compression="zstd", batch_bytes=16384))
    compacted = compacted_with_gaps(new_topic, source, f"{prefix}-compacted", "gzip")
    load.join(120)
    return {txn: 3, big: 2, compacted: 1}


def _commit_groups(source: KafkaEndpoint, topics: dict[str, int], mid: str, end: str) -> dict[str, dict[int, int]]:
    """``mid`` stops inside batches (and, on the compacted topic, on an offset compaction removed);
    ``end`` has read everything. Returns mid's offsets per topic."""
    mids: dict[str, dict[int, int]] = {}
    for topic, partitions in topics.items():
        data = read_all(source.bootstrap_servers, topic)
        ends = end_offsets(source.bootstrap_servers, topic)
        offsets = {}
        for p in range(partitions):
            recs = data[p]
            offset = recs[len(recs) // 2].offset + 1  # the record after the middle one: inside a batch
            present = {r.offset for r in recs}
            gaps = [o for o in range(recs[0].offset, recs[-1].offset) if o not in present]
            if gaps:
                offset = gaps[len(gaps) // 2]  # an offset that holds no record any more
            offsets[p] = offset
        mids[topic] = offsets
        commit_group_offsets(source.bootstrap_servers, mid, {(topic, p): o for p, o in offsets.items()})
        commit_group_offsets(source.bootstrap_servers, end, {(topic, p): ends[p] for p in range(partitions)})
    return mids


@pytest.mark.parametrize("mode", ["raw", "record"])
def test_failover_resumes_every_group_exactly(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    tmp_path: Path,
    mode: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    prefix, name = unique(f"fo{mode}"), unique(f"fo{mode}")
    mid, end = unique("app-mid"), unique("app-end")
    topics = _make_sources(new_topic, source, prefix)
    mids = _commit_groups(source, topics, mid, end)
    config = mirror_config(name, source, target, rf"{prefix}-.*", **{"mirror.mode": mode}, **CHECKPOINTS)
    proc = mirror(config).start()
    wait_until(
        lambda: any(committed_on_target(target, f"source.{t}") for t in topics) or not proc.alive(),
        90,
        "a first commit",
        detail=proc.log_tail,
    )
    proc.kill()  # SIGKILL mid-run: its open transaction and offset syncs are never seen
    proc = mirror(config).start()
    try:
        for topic in topics:
            caught_up = partial(shadow_caught_up, source, topic, target, f"source.{topic}", f"connect-{name}")
            wait_until(caught_up, 90, f"{topic} mirrored")
            assert_exact_mirror(source, topic, target, f"source.{topic}", f"connect-{name}")

        # MirrorMaker 2's own reader of checkpoints (Kafka's RemoteClusterUtils) agrees with our translation.
        expected: dict[tuple[str, int], int] = {}

        def java_sees_all() -> bool:
            nonlocal expected
            expected = java_translate_offsets(target.bootstrap_servers, "source", mid)
            return len([k for k in expected if k[0].startswith(f"source.{prefix}-")]) == sum(topics.values())

        wait_until(java_sees_all, 60, "checkpoints of the mid group", interval=2)
    finally:
        assert proc.stop() == 0, proc.log_tail()

    # A consumer outside any group at mid's offsets translates exactly where RemoteClusterUtils puts the
    # group (the command line, in-process: its parser and output).
    path = tmp_path / "translate.json"
    path.write_text(json.dumps({"name": name, "config": config}))
    asked = [f"{t}:{p}:{mids[t][p]}" for t, n in topics.items() for p in range(n)]
    args = build_parser().parse_args(["translate", str(path), "--json", *(a for o in asked for a in ("--offset", o))])
    assert args.func(args) == 0
    answers = json.loads(capsys.readouterr().out)["offsets"]
    translated = {(a["translated"]["topic"], a["translated"]["partition"]): a["translated"]["offset"] for a in answers}
    assert translated == {k: v for k, v in expected.items() if k[0].startswith(f"source.{prefix}-")}

    result = run_failover(config, tmp_path, "--groups", f"{mid}|{end}", "--wait-caught-up", "60")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "source offset -> target offset" in result.stdout and "planned" in result.stdout

    table = {
        (cells[0], cells[1], int(cells[2])): (int(cells[3]), int(cells[5]), int(cells[6]))
        for cells in (line.split() for line in result.stdout.splitlines())
        if len(cells) == 7 and cells[0] in (mid, end)
    }
    assert len(table) == 2 * sum(topics.values()), result.stdout
    src_all = {topic: read_all(source.bootstrap_servers, topic) for topic in topics}
    for topic, partitions in topics.items():
        target_topic = f"source.{topic}"
        committed = committed_offsets(target.bootstrap_servers, mid, [(target_topic, p) for p in range(partitions)])
        for p in range(partitions):
            assert committed[(target_topic, p)] == expected[(target_topic, p)], "failover != RemoteClusterUtils"
        got = _resume(target.bootstrap_servers, mid, target_topic, partitions)
        for p in range(partitions):
            want = [r.content() for r in src_all[topic][p] if r.offset >= mids[topic][p]]
            assert [r.content() for r in got[p]] == want, f"{mid} on {target_topic}-{p}: re-read or skipped records"
            assert want, "the mid group must have records left to read"
            source_offset, target_offset, behind = table[(mid, target_topic, p)]
            assert (source_offset, target_offset, behind) == (mids[topic][p], expected[(target_topic, p)], len(want))
            assert table[(end, target_topic, p)][2] == 0
        rest = _resume(target.bootstrap_servers, end, target_topic, partitions)
        assert all(not recs for recs in rest.values()), f"{end} re-read records on {target_topic}"

    # The durable record of the switch: every mirrored partition's cut, and where each group went.
    assert "recorded failover" in result.stdout, result.stdout
    record = _recorded(target, config)
    assert record.mode == "planned" and record.source_cluster_id and record.target_cluster_id
    cuts = {c.target: c for c in record.cuts}
    assert set(cuts) == {TargetPartition(f"source.{t}", p) for t, n in topics.items() for p in range(n)}
    for tp, cut in cuts.items():
        topic = tp.topic.removeprefix("source.")
        source_end = end_offsets(source.bootstrap_servers, topic)[tp.partition]
        landed = read_all(target.bootstrap_servers, tp.topic).get(tp.partition, [])
        assert (cut.source_topic, cut.mirrored_to, cut.source_end, cut.unmirrored) == (topic, source_end, source_end, 0)
        assert cut.target_end == end_offsets(target.bootstrap_servers, tp.topic)[tp.partition], cut
        assert cut.target_offset == (landed[-1].offset + 1 if landed else None), cut
    moved = {g.group: g.offsets for g in record.groups}
    assert set(moved) == {mid, end}
    # A failback pointed at other clusters than the failover's is refused before it touches anything.
    elsewhere = {**config, "source.cluster.bootstrap.servers": target.bootstrap_servers}
    wrong = run_failback(elsewhere, tmp_path, "--dry-run")
    assert wrong.returncode == 1 and "not the clusters of that failover" in wrong.stdout, wrong.stdout + wrong.stderr
    for topic, partitions in topics.items():
        target_topic = f"source.{topic}"
        committed = committed_offsets(target.bootstrap_servers, mid, [(target_topic, p) for p in range(partitions)])
        assert {(tp.topic, tp.partition): o for tp, o in moved[mid].items() if tp.topic == target_topic} == committed


def test_disaster_failover_uses_checkpoints_and_refusals_commit_nothing(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    tmp_path: Path,
) -> None:
    name, alias = unique("dr"), unique("drsrc")  # its own syncs and checkpoints topics
    mid, busy, unknown, late = unique("dr-mid"), unique("dr-busy"), unique("dr-none"), unique("dr-late")
    orphan = unique("dr-orphan")
    topic = new_topic("dr", 2)
    now = int(time.time() * 1000)
    produce(source.bootstrap_servers, topic, [Rec(b"k", b"v%d" % i, (), now + i, i % 2) for i in range(400)])
    commit_group_offsets(source.bootstrap_servers, mid, {(topic, 0): 77, (topic, 1): 123})
    commit_group_offsets(source.bootstrap_servers, busy, {(topic, 0): 10, (topic, 1): 10})
    config = mirror_config(name, source, target, topic, **CHECKPOINTS, **{"source.cluster.alias": alias})
    proc = mirror(config).start()
    target_topic = f"{alias}.{topic}"
    try:
        wait_until(partial(shadow_caught_up, source, topic, target, target_topic, f"connect-{name}"), 60, "mirror")

        def checkpointed() -> bool:
            stored = read_all(target.bootstrap_servers, checkpoints_topic(alias)).get(0, [])
            cps = [Checkpoint.decode(r.key or b"", r.value or b"") for r in stored]
            return len({(c.group, c.target) for c in cps if c.group in (mid, busy)}) == 4

        wait_until(checkpointed, 30, "checkpoints")
        # A group that appears below what the emitter keeps in memory: it reads the syncs again.
        commit_group_offsets(source.bootstrap_servers, late, {(topic, 0): 5, (topic, 1): 3})

        def late_checkpointed() -> bool:
            stored = read_all(target.bootstrap_servers, checkpoints_topic(alias)).get(0, [])
            cps = [Checkpoint.decode(r.key or b"", r.value or b"") for r in stored]
            return {(c.target.partition, c.downstream_offset) for c in cps if c.group == late} == {(0, 5), (1, 3)}

        wait_until(late_checkpointed, 30, "the late group's checkpoints")
    finally:
        assert proc.stop() == 0, proc.log_tail()

    # A task of the mirror that died with the source mid-transaction: its transaction stays open on
    # the target (past every refusal below, which must not touch it) until the failover aborts it.
    zombie_slot = f"{name}-lost-worker-0"
    zombie = Producer(
        {
            "bootstrap.servers": target.bootstrap_servers,
            "transactional.id": zombie_slot,
            "transaction.timeout.ms": 300000,
        }
    )
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(target_topic, b"never committed", b"k", partition=0)
    zombie.flush(30)

    def open_transaction() -> bool:
        stable = end_offsets(target.bootstrap_servers, target_topic)
        return stable[0] < end_offsets(target.bootstrap_servers, target_topic, isolation="read_uncommitted")[0]

    assert open_transaction()

    # Every refusal commits nothing on either cluster, and its dry run refuses alike.
    refused = partial(assert_refused_alike, run_failover, clusters=(source, target), token=unique(""))
    # A group active on the target: refused, and nothing committed for any group.
    member = Consumer(
        {
            "bootstrap.servers": target.bootstrap_servers,
            "group.id": busy,
            "session.timeout.ms": 30000,
            "enable.auto.commit": False,
        }
    )
    member.subscribe([target_topic])
    wait_until(lambda: bool(member.poll(0.5) or member.assignment()), 30, "the busy member to join")
    try:
        refused(config, tmp_path, "--groups", f"{mid}|{busy}", says=f"consumer groups active on the target: {busy}")
        none = committed_offsets(target.bootstrap_servers, mid, [(target_topic, 0), (target_topic, 1)])
        assert set(none.values()) == {-1001}, "a refused failover committed something"
    finally:
        member.close()

    # An unknown group: refused by name.
    refused(config, tmp_path, "--groups", unknown, says=f"no consumer group on the source matches {unknown!r}")

    # The source gone: the latest checkpoints, with their age; the group resumes exactly.
    gone = {**config, "source.cluster.bootstrap.servers": "127.0.0.1:1"}
    result = run_failover(gone, tmp_path, "--groups", mid)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "unreachable" in result.stdout and "checkpoint age" in result.stdout
    assert "below the offset syncs kept in memory: reading them again" in proc.log_text()
    # The lost task's transaction is aborted by the failover, not 5 minutes later by the broker.
    assert f"aborted the transactions the mirror left open on the target: {zombie_slot}" in result.stdout
    assert not open_transaction()
    got = _resume(target.bootstrap_servers, mid, target_topic, 2)
    src = read_all(source.bootstrap_servers, topic)
    for p, start in ((0, 77), (1, 123)):
        assert [r.content() for r in got[p]] == [r.content() for r in src[p] if r.offset >= start]
    # Recorded as a disaster: the source's end unknown, each checkpoint's age kept with the group.
    record = _recorded(target, gone)
    assert record.mode == "disaster" and record.source_cluster_id is None and record.target_cluster_id
    assert {(c.target, c.mirrored_to, c.source_end) for c in record.cuts} == {
        (TargetPartition(target_topic, 0), 200, None),
        (TargetPartition(target_topic, 1), 200, None),
    }
    (group,) = record.groups
    assert group.group == mid and set(group.offsets) == set(group.checkpoint_age_s) == {
        TargetPartition(target_topic, 0),
        TargetPartition(target_topic, 1),
    }

    # The source gone and no checkpoint for the group: refused, nothing committed.
    refused(gone, tmp_path, "--groups", unknown, says="no consumer group")

    # The offset syncs expired (deleted here as retention would): a checkpoint written for the very
    # offset a group still has is as exact; a group with no such checkpoint is refused, nothing committed.
    syncs = TopicPartition(offset_syncs_topic(alias), 0)
    ends = end_offsets(target.bootstrap_servers, syncs.topic)
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    for future in admin.delete_records([TopicPartition(syncs.topic, 0, ends[0])]).values():
        future.result(30)
    commit_group_offsets(source.bootstrap_servers, orphan, {(topic, 0): 50})
    untranslatable = f"no exact target offset for: {orphan} on {topic}-0 at 50"
    refused(config, tmp_path, "--groups", f"{late}|{orphan}", "--wait-caught-up", "30", says=untranslatable)
    assert committed_offsets(target.bootstrap_servers, late, [(target_topic, 0)])[(target_topic, 0)] == -1001
    result = run_failover(config, tmp_path, "--groups", late, "--wait-caught-up", "30")
    assert result.returncode == 0, result.stdout + result.stderr
    moved = committed_offsets(target.bootstrap_servers, late, [(target_topic, 0), (target_topic, 1)])
    assert moved == {(target_topic, 0): 5, (target_topic, 1): 3}


def test_group_sync_moves_idle_groups_forward_only(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    name = unique("gsync")
    idle, ahead, active = unique("gs-idle"), unique("gs-ahead"), unique("gs-active")
    topic = new_topic("gsync", 1)
    now = int(time.time() * 1000)
    produce(source.bootstrap_servers, topic, [Rec(b"k", b"v%d" % i, (), now + i) for i in range(300)])
    for group in (idle, ahead, active):
        commit_group_offsets(source.bootstrap_servers, group, {(topic, 0): 100})
    target_topic = new_topic("source.gsync", 1, on=target)  # f"source.{topic}": one suffix per test
    commit_group_offsets(target.bootstrap_servers, ahead, {(target_topic, 0): 250})  # must never go back to 100
    member = Consumer({"bootstrap.servers": target.bootstrap_servers, "group.id": active, "session.timeout.ms": 30000})
    member.subscribe([target_topic])
    wait_until(lambda: bool(member.poll(0.5) or member.assignment()), 30, "the active member to join")
    settings = {**CHECKPOINTS, "sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1"}
    proc = mirror(mirror_config(name, source, target, topic, **settings)).start()
    try:
        wait_until(partial(shadow_caught_up, source, topic, target, target_topic, f"connect-{name}"), 60, "mirror")

        def synced() -> bool:
            return committed_offsets(target.bootstrap_servers, idle, [(target_topic, 0)])[(target_topic, 0)] == 100

        wait_until(synced, 30, "the idle group synced")  # one record per offset, nothing aborted: 100 -> 100
        for _ in range(6):
            member.poll(0.5)  # stays an active member through several sync rounds
        assert committed_offsets(target.bootstrap_servers, ahead, [(target_topic, 0)])[(target_topic, 0)] == 250
        assert committed_offsets(target.bootstrap_servers, active, [(target_topic, 0)])[(target_topic, 0)] == -1001
    finally:
        member.close()
        assert proc.stop() == 0, proc.log_tail()
    assert "synced group" in proc.log_text()


def test_a_group_that_keeps_up_with_the_source_still_gets_fresh_exact_checkpoints(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    """A consumer that commits at the source's head is always a little ahead of the mirror: its
    current offset is never yet translatable, but an offset it had a round or two earlier is."""
    topic, name, group = new_topic("head", 1), unique("head"), unique("head-app")
    # Transactions of 3 s: the head the group commits is always past what the mirror has committed.
    slow = {**CHECKPOINTS, "transaction.boundary.interval.ms": "3000"}
    proc = mirror(mirror_config(name, source, target, topic, **slow)).start()
    sent = 0
    try:
        wait_until(lambda: "mirrored" in proc.log_text(), 60, "the mirror running")

        def newest_checkpoint() -> int:
            stored = read_all(target.bootstrap_servers, checkpoints_topic("source")).get(0, [])
            mine = [c for r in stored if (c := Checkpoint.decode(r.key or b"", r.value or b"")).group == group]
            # Each transaction adds a marker on the target: downstream is upstream plus the markers before it.
            assert all(c.downstream_offset >= c.upstream_offset for c in mine), mine
            return max((c.upstream_offset for c in mine), default=-1)

        deadline, checked, fresh = time.monotonic() + 40, time.monotonic(), -1
        while time.monotonic() < deadline and fresh < 400:  # write and consume at the head, committing each time
            produce(source.bootstrap_servers, topic, [Rec(b"k", b"v%d" % (sent + i)) for i in range(20)])
            sent += 20
            commit_group_offsets(source.bootstrap_servers, group, {(topic, 0): sent})
            if time.monotonic() - checked > 2:
                fresh, checked = newest_checkpoint(), time.monotonic()
        assert fresh >= 400, f"the newest checkpoint is at {fresh} while the group moved on to {sent}"
    finally:
        assert proc.stop() == 0, proc.log_tail()


def test_records_the_old_primary_kept_past_a_disaster_cut_are_found_exactly_and_kept_byte_for_byte(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    tmp_path: Path,
) -> None:
    """Failback's first step (issue 29): the records past the failover's cut, from its durable record."""
    name, alias, group = unique("diverge"), unique("dvsrc"), unique("dv-app")
    topic = new_topic("diverge", 2)
    now = int(time.time() * 1000)
    produce(source.bootstrap_servers, topic, [Rec(b"k", b"v%d" % i, (), now + i, i % 2) for i in range(100)])
    commit_group_offsets(source.bootstrap_servers, group, {(topic, 0): 10, (topic, 1): 20})
    config = mirror_config(name, source, target, topic, **CHECKPOINTS, **{"source.cluster.alias": alias})
    proc = mirror(config).start()
    target_topic = f"{alias}.{topic}"
    try:
        wait_until(partial(shadow_caught_up, source, topic, target, target_topic, f"connect-{name}"), 60, "mirror")
        stored = partial(read_all, target.bootstrap_servers, checkpoints_topic(alias))
        wait_until(lambda: len(stored().get(0, [])) >= 2, 30, "checkpoints")
    finally:
        assert proc.stop() == 0, proc.log_tail()
    cut = end_offsets(source.bootstrap_servers, topic)
    # Written after the mirror's last commit, then the source is lost: 40 committed records, with
    # headers, between aborted transactions that no reader may count.
    load = TransactionalLoad(source.bootstrap_servers, topic, 2, 40, per_txn=10, abort_every=2, txn_id=name)
    load.start().join(60)
    gone = {**config, "source.cluster.bootstrap.servers": "127.0.0.1:1"}
    result = run_failover(gone, tmp_path, "--groups", group)
    assert result.returncode == 0, result.stdout + result.stderr
    record = _recorded(target, gone)
    assert {c.target.partition: c.mirrored_to for c in record.cuts} == cut

    # The old primary is back. A failback of a connector that never failed over is refused, and
    # (as every refusal) writes nothing, its dry run refusing alike.
    refused = partial(assert_refused_alike, run_failback, clusters=(source, target), token=unique(""))
    refused({**config, "name": unique("never")}, tmp_path, says="no failover of")
    # A dry run reports what diverged and keeps nothing.
    dry = run_failback(config, tmp_path, "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert f"{topic}  0" in dry.stdout and "dry run: nothing kept" in dry.stdout
    side = diverged_topic(topic, record.failover_id)
    assert side not in AdminClient({"bootstrap.servers": source.bootstrap_servers}).list_topics(timeout=10).topics

    # The failback: what the old primary holds past the cut is counted exactly and kept byte for byte.
    reverse_path, report_path = tmp_path / "reverse.json", tmp_path / "report.json"
    started = run_failback(config, tmp_path, "--reverse-config", str(reverse_path), "--report", str(report_path))
    assert started.returncode == 0, started.stdout + started.stderr
    assert "40 records diverged and are kept on the old primary" in started.stdout, started.stdout
    report = json.loads(report_path.read_text())
    now_there = read_all(source.bootstrap_servers, topic)
    kept = read_all(source.bootstrap_servers, side)
    assert report["records"] == 40
    for found in report["ranges"]:
        p = found["source"]["partition"]
        past = [r for r in now_there[p] if r.offset >= cut[p]]
        assert (found["records"], found["first_offset"], found["last_offset"]) == (
            len(past),
            past[0].offset,
            past[-1].offset,
        )
        assert (found["first_timestamp_ms"], found["last_timestamp_ms"]) == (past[0].timestamp, past[-1].timestamp)
        headers = sum(len(k) + len(v or b"") for r in past for k, v in r.headers)
        assert found["bytes"] == headers + sum(len(r.key or b"") + len(r.value or b"") for r in past)
        assert [r.content() for r in kept[p]] == [r.content() for r in past], f"partition {p} not kept byte for byte"

    # The new primary's records since the failover go home by name, exactly once; what it holds from
    # before the failover came from the old primary and stays where it is.
    produce(target.bootstrap_servers, target_topic, [Rec(b"n", b"new%d" % i, (), now + i, i % 2) for i in range(30)])
    reverse_props = json.loads(reverse_path.read_text())["config"]
    assert reverse_props["topics"] == re.escape(target_topic)
    reverse = MirrorSinkConfig.parse(reverse_props)
    before = end_offsets(source.bootstrap_servers, topic)
    back = mirror(reverse_props).start()
    try:
        home = partial(shadow_caught_up, target, target_topic, source, topic, reverse.shadow_group_id)
        wait_until(home, 60, "the reverse link caught up", detail=back.log_tail)
    finally:
        assert back.stop() == 0, back.log_tail()
    written = read_all(target.bootstrap_servers, target_topic)
    arrived = read_all(source.bootstrap_servers, topic)
    for c in record.cuts:
        p = c.target.partition
        new = [r.content() for r in written[p] if r.offset >= c.target_end]
        assert len(new) == 15 and [r.content() for r in arrived[p] if r.offset >= before[p]] == new, f"partition {p}"
    # The same failback again: refused before it keeps anything a second time (the side topic's end
    # stays where it is), and the dry run foresees the refusal.
    refused(config, tmp_path, says="holds offsets already")

    # Groups home, exactly: one in the records written since the failover, one still inside what came
    # from the old primary, one between the two (it read everything mirrored, nothing new yet: its
    # offset is the one after the last mirrored record, before the last commit's marker).
    ends = {c.target.partition: c.target_end for c in record.cuts}
    consumed = {c.target.partition: c.target_offset or 0 for c in record.cuts}
    assert all(0 < o < ends[p] for p, o in consumed.items()), record.cuts
    fresh, old, between = unique("fb-fresh"), unique("fb-old"), unique("fb-between")
    commit_group_offsets(target.bootstrap_servers, fresh, {(target_topic, p): ends[p] + 5 for p in ends})
    commit_group_offsets(target.bootstrap_servers, old, {(target_topic, 0): 10, (target_topic, 1): 20})
    commit_group_offsets(target.bootstrap_servers, between, {(target_topic, p): o for p, o in consumed.items()})
    groups = f"{fresh}|{old}|{between}"
    finished = run_failback(config, tmp_path, "--finish", "--groups", groups, "--wait-caught-up", "30")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    # Nothing is deleted: a group still inside what was mirrored reads the diverged records on its
    # way, and the finish says so, group by group; the others are placed after them.
    for p in range(2):
        assert f"{old} on {topic}-{p}: at " in finished.stdout, finished.stdout
        assert f"before the diverged offsets {cut[p]}..{before[p] - 1}" in finished.stdout, finished.stdout
    assert f"{fresh} on {topic}-" not in finished.stdout and f"{between} on {topic}-" not in finished.stdout

    def at_home(p: int, b_offset: int) -> int:
        """Where the record at ``b_offset`` of the new primary is on the old primary."""
        content = next(r.content() for r in written[p] if r.offset >= b_offset)
        return next(r.offset for r in arrived[p] if r.content() == content)

    for group, want in (
        (fresh, {p: at_home(p, ends[p] + 5) for p in ends}),
        (old, {0: at_home(0, 10), 1: at_home(1, 20)}),
        (between, {p: before[p] for p in ends}),
    ):
        got = committed_offsets(source.bootstrap_servers, group, [(topic, p) for p in ends])
        assert got == {(topic, p): o for p, o in want.items()}, f"{group} not moved home exactly"
    assert {p: before[p] for p in ends} == {p: at_home(p, ends[p]) for p in ends}, "placed after the diverged records"

    # The forward link goes on from the old primary's end: nothing that came back goes out again.
    resumed = committed_offsets(target.bootstrap_servers, f"connect-{name}", [(target_topic, p) for p in ends])
    assert resumed == {(target_topic, p): e for p, e in end_offsets(source.bootstrap_servers, topic).items()}
    b_before = end_offsets(target.bootstrap_servers, target_topic)
    forward_again = mirror(config).start()
    try:
        fresh_records = [Rec(b"f", b"after%d" % i, (), now + i, i % 2) for i in range(6)]
        produce(source.bootstrap_servers, topic, fresh_records)
        wait_until(partial(shadow_caught_up, source, topic, target, target_topic, f"connect-{name}"), 60, "forward")
    finally:
        assert forward_again.stop() == 0, forward_again.log_tail()
    landed = read_all(target.bootstrap_servers, target_topic)
    for p in ends:
        assert [r.value for r in landed[p] if r.offset >= b_before[p]] == [
            r.value for r in fresh_records if r.partition == p
        ], f"partition {p}: not exactly the new records of the old primary"


def test_a_planned_round_trip_in_record_mode_leaves_every_record_on_both_clusters_exactly_once(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    tmp_path: Path,
) -> None:
    """Fail over as planned, run on the new primary while its topics drift (a partition added, a config
    changed, a topic of its own), fail back: nothing diverges, drift is reported and reconciled, the
    groups come home exactly (an active one on the old primary refuses it first, committing nothing),
    and the forward link goes on without an echo. Both links in record mode."""
    name, alias, group = unique("trip"), unique("tripsrc"), unique("trip-app")
    topic = new_topic("trip", 2)
    target_topic = f"{alias}.{topic}"
    TransactionalLoad(source.bootstrap_servers, topic, 2, 60, per_txn=10, abort_every=3, txn_id=name).start().join(60)
    config = mirror_config(
        name, source, target, topic, **CHECKPOINTS, **{"source.cluster.alias": alias, "mirror.mode": "record"}
    )
    forward = mirror(config).start()
    try:
        wait_until(partial(shadow_caught_up, source, topic, target, target_topic, f"connect-{name}"), 60, "forward")
    finally:
        assert forward.stop() == 0, forward.log_tail()
    commit_group_offsets(source.bootstrap_servers, group, {(topic, 0): 3, (topic, 1): 4})
    planned = run_failover(config, tmp_path, "--groups", re.escape(group), "--wait-caught-up", "30")
    assert planned.returncode == 0 and "planned" in planned.stdout, planned.stdout + planned.stderr
    record = _recorded(target, config)
    assert all(c.unmirrored == 0 for c in record.cuts), record.cuts

    # The new primary runs alone: its topic grows a partition and changes a config; a topic of its own.
    b_admin, a_admin = (AdminClient({"bootstrap.servers": c.bootstrap_servers}) for c in (target, source))
    b_admin.create_partitions([NewPartitions(target_topic, 3)])[target_topic].result(30)
    retention = ConfigResource(
        ConfigResource.Type.TOPIC,
        target_topic,
        incremental_configs=[ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)],
    )
    b_admin.incremental_alter_configs([retention])[retention].result(30)
    own = new_topic("only-on-b", 1, on=target)
    now = int(time.time() * 1000)
    produce(target.bootstrap_servers, target_topic, [Rec(b"b", b"b%d" % i, (), now + i, i % 3) for i in range(30)])
    b_written = read_all(target.bootstrap_servers, target_topic)
    ends = {c.target.partition: c.target_end for c in record.cuts}
    # The group read on the new primary: into the new records on 0 and 2, not yet on 1.
    b_group = {(target_topic, 0): ends[0] + 4, (target_topic, 1): ends[1], (target_topic, 2): 6}
    commit_group_offsets(target.bootstrap_servers, group, b_group)

    reverse_path, report_path = tmp_path / "reverse.json", tmp_path / "report.json"
    started = run_failback(config, tmp_path, "--reverse-config", str(reverse_path), "--report", str(report_path))
    assert started.returncode == 0, started.stdout + started.stderr
    out = started.stdout
    assert "nothing diverged" in out and "0 records diverged" in out, out
    assert f"{target_topic}: 3 partitions on the new primary, 2 on {topic}: the reverse link adds 1" in out, out
    assert f"{target_topic}: retention.ms=7200000 on the new primary, (default) on {topic}" in out, out
    assert f"{own}: only on the new primary" in out, out
    drift = json.loads(report_path.read_text())["drift"]
    assert drift["partitions_added"] == [{"topic": target_topic, "home": topic, "new_primary": 3, "old_primary": 2}]
    assert [c["key"] for c in drift["configs_changed"]] == ["retention.ms"]
    # Other tests' topics share the clusters: this one's own topic is among those only on B, its copy is not.
    assert own in drift["only_on_new_primary"] and target_topic not in drift["only_on_new_primary"]

    a_before = read_all(source.bootstrap_servers, topic)
    reverse_props = json.loads(reverse_path.read_text())["config"]
    reverse = MirrorSinkConfig.parse(reverse_props)
    assert reverse.mirror_mode.value == "record"
    back = mirror(reverse_props).start()
    try:
        home = partial(shadow_caught_up, target, target_topic, source, topic, reverse.shadow_group_id)
        wait_until(home, 90, "the reverse link caught up", detail=back.log_tail)
        # Finishing while the reverse link runs is refused: a record it copied after the forward
        # link's new start would cross back.
        for dry in ((), ("--dry-run",)):
            running = run_failback(config, tmp_path, "--finish", "--groups", re.escape(group), *dry)
            assert running.returncode == 1 and "is still running" in running.stdout, running.stdout + running.stderr
    finally:
        assert back.stop() == 0, back.log_tail()

    # A consumer of the group still on the old primary: finishing is refused and commits nothing.
    refused = partial(assert_refused_alike, run_failback, clusters=(source, target), token=unique(""))
    member = Consumer({"bootstrap.servers": source.bootstrap_servers, "group.id": group, "enable.auto.commit": False})
    member.subscribe([topic])
    try:
        wait_until(lambda: bool(member.poll(0.2) or member.assignment()), 30, "the group active on the old primary")
        active = f"consumer groups active on the old primary: {group} (STABLE)"
        refused(config, tmp_path, "--finish", "--groups", re.escape(group), says=active)
        untouched = committed_offsets(source.bootstrap_servers, group, [(topic, p) for p in range(3)])
        assert untouched == {(topic, 0): 3, (topic, 1): 4, (topic, 2): -1001}, f"a refused finish committed {untouched}"
    finally:
        member.close()
    finished = run_failback(config, tmp_path, "--finish", "--groups", re.escape(group), "--wait-caught-up", "30")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "switch producers and consumers to the old primary now" in finished.stdout, finished.stdout

    # Every record on both clusters exactly once: the old primary holds its own, then the new
    # primary's (the added partition too); the new primary holds the old one's, then its own.
    a_after = read_all(source.bootstrap_servers, topic)
    for p in range(3):
        from_a = [r.content() for r in a_before.get(p, [])]
        new_on_b = [r.content() for r in b_written[p] if r.offset >= ends.get(p, 0)]
        assert len(new_on_b) == 10 and (p == 2 or len(from_a) > 0)
        assert [r.content() for r in a_after[p]] == from_a + new_on_b, f"old primary, partition {p}"
        assert [r.content() for r in b_written[p]] == from_a + new_on_b, f"new primary, partition {p}"
    synced = a_admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
    assert next(iter(synced.values())).result(30)["retention.ms"].value == "7200000"

    # The group is home where it was on the new primary: the same next record.
    def at_home(p: int, b_offset: int) -> int:
        content = next((r.content() for r in b_written[p] if r.offset >= b_offset), None)
        if content is None:
            return len(a_after[p]) and a_after[p][-1].offset + 1
        return next(r.offset for r in a_after[p] if r.content() == content)

    got = committed_offsets(source.bootstrap_servers, group, [(topic, p) for p in range(3)])
    assert got == {(topic, p): at_home(p, b_group[(target_topic, p)]) for p in range(3)}, "not moved home exactly"

    # The forward link goes on: only what is new on the old primary crosses, on every partition.
    b_before = end_offsets(target.bootstrap_servers, target_topic)
    again = mirror(config).start()
    fresh = [Rec(b"f", b"after%d" % i, (), now + i, i % 3) for i in range(9)]
    try:
        produce(source.bootstrap_servers, topic, fresh)
        wait_until(partial(shadow_caught_up, source, topic, target, target_topic, f"connect-{name}"), 60, "forward")
    finally:
        assert again.stop() == 0, again.log_tail()
    landed = read_all(target.bootstrap_servers, target_topic)
    for p in range(3):
        new = [r.value for r in landed[p] if r.offset >= b_before[p]]
        assert new == [r.value for r in fresh if r.partition == p], f"partition {p}: an echo or a loss"

    # The round trip is complete. Failing back again, or finishing again, is refused before it writes
    # anything (it once kept the records that came back as "diverged", then refused), and the dry
    # runs foresee both refusals.
    refused(config, tmp_path, says="mirrored more after the failover")
    refused(config, tmp_path, "--finish", says="this failback was finished already")
