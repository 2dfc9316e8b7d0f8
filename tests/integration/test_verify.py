"""``mirror-sink verify`` on real clusters: every committed record compared through the offset map,
a forged target record found and named, and source compaction after mirroring counted as
unverifiable, never as a mismatch."""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from devkafka.data import Rec, end_offsets, produce, read_all
from devkafka.endpoints import KafkaEndpoint
from mirror_sink.failover.rehearsal.verify import SOURCE_GONE
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.clusters import commit_group_offsets
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import committed_on_target, shadow_caught_up
from tests.integration.harness.processes import run_verify
from tests.integration.harness.records import TransactionalLoad
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until
from tests.integration.java_tools import java_transactions


def _verified(result_path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(result_path.read_text())
    return report


@pytest.mark.parametrize("mode", ["raw", "record"])
def test_verify_covers_every_committed_record_of_a_live_mirror_and_names_a_forged_one(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    tmp_path: Path,
    mode: str,
) -> None:
    topic, name = new_topic(f"verify-{mode}", 3), unique(f"verify-{mode}")
    target_topic = f"source.{topic}"
    load = TransactionalLoad(source.bootstrap_servers, topic, 3, 3000, per_txn=50, abort_every=4, txn_id=name)
    load.start()
    config = mirror_config(name, source, target, topic, **{"mirror.mode": mode})
    proc = mirror(config).start()
    try:
        wait_until(lambda: bool(committed_on_target(target, target_topic)), 60, "a first commit", detail=proc.log_tail)
        # Live: the mirror and the load both run while verify reads.
        live_report = tmp_path / "live.json"
        live = run_verify(config, tmp_path, "--report", str(live_report))
        assert live.returncode == 0, live.stdout + live.stderr
        seen = _verified(live_report)
        # Transactions committed while it read are the next round's, never "gone".
        assert seen["mismatches"] == 0 and seen["verified"] and seen["unverifiable"] == {}, live.stdout
        load.join(120)
        caught_up = partial(shadow_caught_up, source, topic, target, target_topic, f"connect-{name}")
        wait_until(caught_up, 90, "the mirror caught up", detail=proc.log_tail)
    finally:
        load.stop()
        assert proc.stop() == 0, proc.log_tail()
    committed = sum(len(rs) for rs in read_all(source.bootstrap_servers, topic).values())
    assert committed == load.committed
    report_path = tmp_path / "all.json"
    full = run_verify(config, tmp_path, "--report", str(report_path))
    assert full.returncode == 0, full.stdout + full.stderr
    report = _verified(report_path)
    assert (report["verified"], report["mismatches"], report["unverifiable"]) == (committed, 0, {}), full.stdout
    assert f"verified {committed} records" in full.stdout

    # A record appended on the target by hand is no copy of a source record: found and named.
    forged_at = end_offsets(target.bootstrap_servers, target_topic)[1]
    produce(target.bootstrap_servers, target_topic, [Rec(b"k", b"forged", (), None, 1)])
    forged = run_verify(config, tmp_path, "--topics", target_topic.replace(".", r"\."))
    assert forged.returncode == 1, forged.stdout + forged.stderr
    assert (
        f"first mismatch: {target_topic}-1@{forged_at} vs no source offset: maps to no source offset" in forged.stdout
    )


def test_source_compaction_after_mirroring_is_unverifiable_not_a_mismatch(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    tmp_path: Path,
) -> None:
    name = unique("verify-compact")
    # Compacted, but nothing old enough to clean until the mirror has copied it all.
    frozen = {
        "cleanup.policy": "compact",
        "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.001",
        "min.compaction.lag.ms": "86400000",
        "delete.retention.ms": "100",
    }
    topic = new_topic("verify-compact", 1, frozen)
    target_topic = f"source.{topic}"
    for round_ in range(10):
        produce(source.bootstrap_servers, topic, [Rec(b"key-%d" % k, b"v%d" % round_) for k in range(20)])
        time.sleep(0.2)  # segments roll (segment.ms), so the cleaner has closed segments to clean
    mirrored = sum(len(rs) for rs in read_all(source.bootstrap_servers, topic).values())
    config = mirror_config(name, source, target, topic)
    proc = mirror(config).start()
    try:
        caught_up = partial(shadow_caught_up, source, topic, target, target_topic, f"connect-{name}")
        wait_until(caught_up, 60, "the mirror caught up", detail=proc.log_tail)
    finally:
        assert proc.stop() == 0, proc.log_tail()
    admin = AdminClient({"bootstrap.servers": source.bootstrap_servers})
    lag = ConfigEntry("min.compaction.lag.ms", "0", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[lag])
    admin.incremental_alter_configs([resource])[resource].result(30)
    produce(source.bootstrap_servers, topic, [Rec(b"key-0", b"last")])  # a new segment: the old ones are cleanable
    held = partial(read_all, source.bootstrap_servers, topic)
    wait_until(lambda: sum(len(rs) for rs in held().values()) < mirrored, 120, "the log cleaner to compact", interval=2)

    report_path = tmp_path / "compacted.json"
    result = run_verify(config, tmp_path, "--report", str(report_path))
    assert result.returncode == 0, result.stdout + result.stderr
    report = _verified(report_path)
    gone = report["unverifiable"]
    assert isinstance(gone, dict) and gone.get(SOURCE_GONE, 0) > 0, result.stdout
    assert report["mismatches"] == 0 and report["verified"] + gone[SOURCE_GONE] == mirrored, result.stdout


def test_verify_refuses_a_connector_without_offset_syncs(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, tmp_path: Path
) -> None:
    config = mirror_config(unique("nosyncs"), source, target, "x", **{"emit.offset-syncs.enabled": "false"})
    result = run_verify(config, tmp_path)
    assert result.returncode == 2 and "emit.offset-syncs.enabled" in result.stdout, result.stdout + result.stderr


def test_verify_names_a_source_transaction_the_copy_holds_only_in_part(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    tmp_path: Path,
) -> None:
    # Transactions of Kafka's Java producer (transactions version 2: an epoch per transaction), each over
    # 2-3 partitions, mirrored to the end: the copy holds every one whole.
    topic, name, txn_id = new_topic("vtx", 3), unique("vtx"), unique("vtx-writer")
    written = java_transactions(source.bootstrap_servers, txn_id, 12, {topic: 3})
    assert all(ok for ok, _ in written), written
    config = mirror_config(name, source, target, topic)
    proc = mirror(config).start()
    target_topic, group = f"source.{topic}", f"connect-{name}"
    try:
        wait_until(partial(shadow_caught_up, source, topic, target, target_topic, group), 60, "mirrored")
    finally:
        assert proc.stop() == 0, proc.log_tail()
    spanning = [placed for _, placed in written if len({p for _, p, _ in placed}) > 1]
    report_path = tmp_path / "whole.json"
    whole = run_verify(config, tmp_path, "--source-transactions", "--report", str(report_path))
    assert whole.returncode == 0, whole.stdout + whole.stderr
    found = json.loads(report_path.read_text())["source_transactions"]
    assert found["partial"] == [] and found["not_checkable"] == {}, found
    assert found["checked"] == len(spanning), (found, len(spanning))

    # The copy cut inside the last transaction: its part on one partition not in it (as a mirror that
    # commits per partition can leave it), its parts on the others in it.
    last = spanning[-1]
    cut_at = min(offset for _, p, offset in last if p == last[0][1])
    commit_group_offsets(target.bootstrap_servers, group, {(target_topic, last[0][1]): cut_at})
    report_path = tmp_path / "partial.json"
    cut = run_verify(config, tmp_path, "--source-transactions", "--report", str(report_path))
    assert cut.returncode == 1, cut.stdout + cut.stderr
    (partial_txn,) = json.loads(report_path.read_text())["source_transactions"]["partial"]
    others = sorted({f"{topic}-{p}" for _, p, _ in last} - {f"{topic}-{last[0][1]}"})
    assert partial_txn["transactional_id"] == txn_id, partial_txn
    assert (partial_txn["missing"], partial_txn["in_copy"]) == ([f"{topic}-{last[0][1]}"], others), partial_txn
    assert f"partial: {txn_id} (producer" in cut.stdout, cut.stdout
