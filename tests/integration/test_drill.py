"""``mirror-sink drill`` on a live mirror: its RPO is what the test left unmirrored at the cut, its
drill groups start at exactly the right records, the real groups are untouched, nothing is left
behind, and the report is kept on the target. Bad input gets a clear message and exit code."""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from devkafka.data import Rec, committed_offsets, end_offsets, produce, read_all
from devkafka.endpoints import KafkaEndpoint
from mirror_sink.core.formats.drills import drills_topic
from mirror_sink.failover.rehearsal.drill import SCHEMA
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.clusters import commit_group_offsets
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import shadow_caught_up
from tests.integration.harness.processes import run_audit, run_drill
from tests.integration.harness.records import TransactionalLoad
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

PARTITIONS = 3
UNMIRRORED = 10  # per partition, written while the mirror is stalled


def _groups_on(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return {g.group_id for g in admin.list_consumer_groups(request_timeout=30).result(35).valid}


@pytest.mark.parametrize("mode", ["raw", "record"])
def test_a_drill_on_a_live_mirror_measures_the_rpo_and_places_drill_groups_exactly(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    tmp_path: Path,
    mode: str,
) -> None:
    name, alias = unique(f"drill-{mode}"), unique(f"drillsrc-{mode}")
    mid, ahead = unique("drillapp-mid"), unique("drillapp-ahead")
    topic = new_topic(f"drill-{mode}", PARTITIONS)
    target_topic = f"{alias}.{topic}"
    TransactionalLoad(
        source.bootstrap_servers, topic, PARTITIONS, 600, per_txn=40, abort_every=3, txn_id=name
    ).start().join(60)
    config = mirror_config(name, source, target, topic, **{"source.cluster.alias": alias, "mirror.mode": mode})
    proc = mirror(config).start()
    try:
        wait_until(partial(shadow_caught_up, source, topic, target, target_topic, f"connect-{name}"), 60, "mirrored")
    finally:
        assert proc.stop() == 0, proc.log_tail()
    # The mirror stopped, write what it has not copied at the cut.
    now = int(time.time() * 1000)
    late = [Rec(b"late", b"late-%d" % i, (), now + i, i % PARTITIONS) for i in range(UNMIRRORED * PARTITIONS)]
    produce(source.bootstrap_servers, topic, late)
    data = read_all(source.bootstrap_servers, topic)
    halves = {p: data[p][len(data[p]) // 3].offset for p in range(PARTITIONS)}
    commit_group_offsets(source.bootstrap_servers, mid, {(topic, p): o for p, o in halves.items()})
    ends = end_offsets(source.bootstrap_servers, topic)
    commit_group_offsets(source.bootstrap_servers, ahead, {(topic, p): e for p, e in ends.items()})
    time.sleep(1)  # the late records are a second old at the cut

    report_path, markdown = tmp_path / "drill.json", tmp_path / "drill.md"
    result = run_drill(
        config, tmp_path, "--groups", f"{mid}|{ahead}", "--canary", "5", "--report", str(report_path),
        "--markdown", str(markdown), "--keep",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(report_path.read_text())
    assert report["schema"] == SCHEMA and report["outcome"] == "passed", result.stdout
    assert markdown.read_text().startswith(f"# DR drill {report['drill_id']} of {name}: PASSED with 1 warning")
    # The mirror is stopped: the drill passes (its copy is exact) and says so, with the RPO growing.
    assert report["warnings"] == [
        f"the mirror is not running: its shadow group connect-{name} on the target has no member. The RPO grows "
        "with every record written to the source until it runs again."
    ]
    assert 0 <= report["rpo"]["total"]["last_commit_s"] < 60

    # RPO: exactly what was written while the mirror was stalled.
    rpo = report["rpo"]
    assert rpo["total"]["records"] == UNMIRRORED * PARTITIONS, result.stdout
    assert {r["partition"]: r["records"] for r in rpo["partitions"]} == dict.fromkeys(range(PARTITIONS), UNMIRRORED)
    assert rpo["total"]["bytes"] == sum(len(r.key or b"") + len(r.value or b"") for r in late)
    assert rpo["total"]["seconds"] >= 1.0
    assert report["cut_window_s"] < 10
    # Source transactions are not kept whole here (the option is off): the report says so, naming them.
    assert report["source_transactions"] == {
        "consistent": False,
        "kept_whole_option": False,
        "partitions": PARTITIONS,
        "not_at_a_cut": [f"{topic}-{p}" for p in range(PARTITIONS)],
    }
    assert set(report["time_to_ready_s"]) == {"translate", "commit", "first canary read"}
    assert report["time_to_ready_total_s"] == pytest.approx(sum(report["time_to_ready_s"].values()), abs=0.01)

    # Each drill copy of mid starts at exactly the record mid reads next on the source.
    landed = read_all(target.bootstrap_servers, target_topic)
    placed = {(g["group"], g["partition"]): g for g in report["groups"]}
    for p in range(PARTITIONS):
        g = placed[(mid, p)]
        assert g["outcome"] == "exact" and g["canary_records"] == 5, g
        first_on_target = next(r for r in landed[p] if r.offset >= g["target_offset"])
        first_on_source = next(r for r in data[p] if r.offset >= halves[p])
        assert first_on_target.content() == first_on_source.content(), f"partition {p}"
        behind = placed[(ahead, p)]
        assert (
            behind["outcome"] == "ahead of the mirror"
            and behind["detail"] == f"it has read {UNMIRRORED} records of the RPO"
        )
        # After the last mirrored record (before its transaction's marker): nothing mirrored is skipped.
        # (The mirror copied the late records after the drill, once resumed: they are not the cut's.)
        assert behind["target_offset"] == landed[p][-1].offset + 1
    assert report["verify"]["mismatches"] == 0 and report["verify"]["verified"] > 0

    # The real groups untouched, on both clusters; no drill group left behind.
    assert committed_offsets(source.bootstrap_servers, mid, [(topic, p) for p in range(PARTITIONS)]) == {
        (topic, p): o for p, o in halves.items()
    }
    on_target = _groups_on(target.bootstrap_servers)
    assert mid not in on_target and ahead not in on_target
    # Kept (--keep), with the command that deletes them.
    copies = sorted(g for g in on_target if g.startswith(f"mirror-sink-drill.{report['drill_id']}"))
    assert len(copies) == 2 and report["delete_kept_groups"].endswith(" ".join(f"--group {g}" for g in copies))
    AdminClient({"bootstrap.servers": target.bootstrap_servers}).delete_consumer_groups(copies)
    # The report is kept on the target, one key per drill, the first of the connector's audit trail.
    kept = read_all(target.bootstrap_servers, drills_topic(alias)).get(0, [])
    assert [json.loads(r.value or b"{}")["drill_id"] for r in kept] == [report["drill_id"]]
    assert report["previous_sha256"] is None
    trail = run_audit(config, tmp_path)
    assert trail.returncode == 0, trail.stdout + trail.stderr
    assert "1 drills kept; the last 1 below. Hash chain: **intact**." in trail.stdout
    assert f"| {report['drill_id']} |" in trail.stdout and "| first |" in trail.stdout


def test_a_drill_says_why_it_cannot_run(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = new_topic("drillbad", 1)
    config = mirror_config(unique("drillbad"), source, target, topic)
    unknown = run_drill(config, tmp_path, "--groups", "no-such-group-.*")
    assert unknown.returncode == 1 and "no consumer group on the source matches 'no-such-group-.*'" in unknown.stdout
    gone = run_drill({**config, "source.cluster.bootstrap.servers": "127.0.0.1:1"}, tmp_path)
    assert gone.returncode == 1 and "cannot measure the RPO" in gone.stdout, gone.stdout + gone.stderr
    assert f"source cluster source of connector {config['name']}" in gone.stdout
    never = run_drill({**config, "source.cluster.alias": unique("nosyncs")}, tmp_path)
    assert never.returncode == 1 and "has mirrored nothing yet" in never.stdout, never.stdout + never.stderr
    off = run_drill({**config, "emit.offset-syncs.enabled": "false"}, tmp_path)
    assert off.returncode == 2 and "emit.offset-syncs.enabled" in off.stdout, off.stdout + off.stderr
