"""Prometheus metrics of a live mirror: MirrorMaker 2's and Connect's series with true values, and the lag."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import yaml
from confluent_kafka import Consumer, TopicPartition

from devkafka.cluster import free_port
from devkafka.data import Rec, end_offsets, produce
from devkafka.endpoints import KafkaEndpoint
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import assert_exact_mirror, shadow_caught_up
from tests.integration.harness.metrics import scrape, total
from tests.integration.harness.processes import MirrorProcess, WorkerProcess, run_drill
from tests.integration.harness.records import TransactionalLoad
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

MM2 = "kafka_connect_mirror_mirrorsourceconnector_"
#: KIP-1280's names of the same series (metric.names.formats=new): MM2's attribute after this prefix.
MM2_NEW = "kafka_connect_plugins_"
DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
Samples = dict[str, list[tuple[dict[str, str], float]]]


def used_series(metric_names: str) -> set[str]:
    """Every series the Grafana dashboard and the alert rules query, with the dashboard's choice of
    MM2 metric names (``legacy`` or ``new``: its ``metric_names`` variable) set to ``metric_names``."""
    dashboard = json.loads((DEPLOY / "grafana" / "mirror-sink-dashboard.json").read_text())
    (choice,) = [v for v in dashboard["templating"]["list"] if v["name"] == "metric_names"]
    (prefix,) = [o["value"] for o in choice["options"] if o["text"] == metric_names]
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    rules = yaml.safe_load((DEPLOY / "prometheus" / "mirror-sink-alerts.yml").read_text())
    exprs += [r["expr"] for g in rules["groups"] for r in g["rules"]]
    names = set()
    for template in exprs:
        expr = template.replace("${metric_names}", prefix)
        assert "$" not in re.sub(r"\$(?:__\w+|source|topic|connector)\b", "", expr), f"unknown variable in {expr}"
        names |= set(re.findall(r"\b((?:kafka_connect|mirror_sink)_[a-z0-9_]+)", expr))
    return names


def assert_new_twins(m: Samples, connector: str, task: str, **labels: str) -> int:
    """Every legacy MM2 sample with ``labels`` has its KIP-1280 twin, under the new name with ``connector``
    and ``task`` beside the same labels, with the same value, and the connector has no other new-name
    sample with ``labels``; how many twins there are."""
    twins = 0
    for name, samples in m.items():
        if not name.startswith(MM2):
            continue
        new_name = MM2_NEW + name.removeprefix(MM2)
        new = {tuple(sorted(lab.items())): v for lab, v in m.get(new_name, [])}
        for lab, value in samples:
            if all(lab.get(k) == v for k, v in labels.items()):
                key = tuple(sorted({**lab, "connector": connector, "task": task}.items()))
                assert key in new, f"{name}{lab} has no twin {new_name}{dict(key)}"
                assert new[key] == value, (name, lab, value, new[key])
                twins += 1
    wanted = {"connector": connector, **labels}
    new_samples = [
        lab
        for n, s in m.items()
        if n.startswith(MM2_NEW)
        for lab, _ in s
        if all(lab.get(k) == v for k, v in wanted.items())
    ]
    assert len(new_samples) == twins, f"new-name samples without a legacy twin: {len(new_samples)} for {twins} twins"
    return twins


def test_worker_metrics_count_what_was_mirrored_and_the_lag(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    worker: WorkerProcess,
    tmp_path: Path,
) -> None:
    name, topic = unique("metrics"), new_topic("metrics", 2)
    target_topic = f"source.{topic}"
    load = TransactionalLoad(source.bootstrap_servers, topic, 2, 600, per_txn=50, abort_every=4, txn_id=f"{name}-l")
    load.start().join(120)
    app = Consumer({"bootstrap.servers": source.bootstrap_servers, "group.id": f"{name}-app"})
    app.commit(offsets=[TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 5)], asynchronous=False)
    app.close()  # a source group for the checkpoint series
    client = httpx.Client(base_url=worker.url, timeout=60)
    checkpoints = {
        "emit.checkpoints.enabled": "true",
        "emit.checkpoints.interval.seconds": "1",
        "verify.enabled": "true",
        "verify.interval.seconds": "1",
        # KIP-1280: MirrorMaker 2's series under both names, as while migrating dashboards.
        "metric.names.formats": "legacy,new",
    }
    config = {k: v for k, v in mirror_config(name, source, target, topic, **checkpoints).items() if k != "name"}
    assert client.post("/connectors", json={"name": name, "config": config}).status_code == 201
    # Beside it, a connector with the new names only.
    new_name, new_names_topic = unique("metricsnew"), new_topic("metricsnew", 1)
    produce(source.bootstrap_servers, new_names_topic, [Rec(b"k", b"v%d" % i) for i in range(40)])
    new_config = mirror_config(new_name, source, target, new_names_topic, **{"metric.names.formats": "new"})
    new_config.pop("name")
    assert client.post("/connectors", json={"name": new_name, "config": new_config}).status_code == 201
    group = f"connect-{name}"
    wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 90, "the mirror")
    new_target = f"source.{new_names_topic}"
    wait_until(
        lambda: shadow_caught_up(source, new_names_topic, target, new_target, f"connect-{new_name}"),
        90,
        "the new-names mirror",
    )

    url = f"{worker.url}/metrics"

    def lag_is(expected: int) -> bool:
        lag = [
            v for lab, v in scrape(url).get("mirror_sink_replication_lag_records", []) if lab["topic"] == target_topic
        ]
        return len(lag) == 2 and sum(lag) == expected

    wait_until(lambda: lag_is(0), 30, "the lag gauges at 0", interval=1)
    wait_until(
        lambda: total(scrape(url), "mirror_sink_checkpoints_written_total", connector=name) > 0, 30, "a checkpoint"
    )
    # Background verification reaches the end of every partition, with every record equal.
    ends = end_offsets(target.bootstrap_servers, target_topic)

    def verified_to_the_end() -> bool:
        return total(scrape(url), "mirror_sink_verified_offset", connector=name, topic=target_topic) == sum(
            ends.values()
        )

    wait_until(verified_to_the_end, 30, "verification at the target's end", interval=1)
    # A DR drill of the running connector: its report served by the worker, its result a gauge.
    drilled = run_drill({**config, "name": name}, tmp_path, "--groups", f"{name}-app", "--canary", "3")
    assert drilled.returncode == 0, drilled.stdout + drilled.stderr
    drills = client.get(f"/connectors/{name}/drills").json()
    assert drills["drills_topic"] == "mirror-sink-drills.source.internal"
    assert [(d["outcome"], d["rpo_records"]) for d in drills["drills"]] == [("passed", 0)], drills
    m = scrape(url)
    assert total(m, "mirror_sink_last_drill_passed", connector=name) == 1
    assert total(m, "mirror_sink_last_passed_drill_timestamp_seconds", connector=name) > time.time() - 600
    assert total(m, "mirror_sink_verified_bytes_total", connector=name, topic=target_topic) > 0
    assert total(m, "mirror_sink_verify_mismatches_total", connector=name) == 0
    assert total(m, "mirror_sink_verify_unverifiable_records_total", connector=name) == 0
    # Every series the dashboard and the alert rules use exists on a live worker, with either MM2 names.
    for metric_names in ("legacy", "new"):
        missing = used_series(metric_names) - set(m)
        assert not missing, f"the dashboard ({metric_names}) or alert rules use series not exported: {sorted(missing)}"
    assert total(m, "kafka_connect_worker_connector_running_task_count", connector=name) == 1
    assert total(m, "kafka_connect_connector_status", connector=name, status="running") == 1
    assert total(m, "kafka_connect_connector_task_status", connector=name, task="0", status="running") == 1
    # MirrorMaker 2's series, per target partition, with its labels: the committed records exactly.
    assert total(m, MM2 + "record_count", source="source", target="target", topic=target_topic) == load.committed
    assert {lab["partition"] for lab, _ in m[MM2 + "record_count"] if lab["topic"] == target_topic} == {"0", "1"}
    assert total(m, MM2 + "byte_count", topic=target_topic) > 0
    assert total(m, MM2 + "record_rate", topic=target_topic) > 0
    for stat in ("", "_min", "_max", "_avg"):
        assert MM2 + "replication_latency_ms" + stat in m
        assert total(m, MM2 + "replication_latency_ms" + stat, topic=target_topic) >= 0
    assert MM2 + "record_age_ms" in m and total(m, MM2 + "record_age_ms_avg", topic=target_topic) >= 0
    # legacy,new: every legacy series has its KIP-1280 twin with the same value (the same scrape).
    # (The counts and rates at least, per partition; the latencies too while a commit is in their 30 s.)
    assert assert_new_twins(m, name, "0", topic=target_topic) >= 2 * 4
    # new: KIP-1280's names only, with the connector and task, counting the records exactly.
    assert not [lab for n, s in m.items() if n.startswith(MM2) for lab, _ in s if lab["topic"] == new_target]
    assert total(m, MM2_NEW + "record_count", connector=new_name, task="0", topic=new_target, partition="0") == 40
    assert [lab["task"] for lab, _ in m[MM2_NEW + "byte_count"] if lab["connector"] == new_name] == ["0"]
    # Connect's sink-task series and the mirror's own.
    assert total(m, "kafka_connect_sink_task_metrics_sink_record_send_total", connector=name) == load.committed
    assert total(m, "kafka_connect_sink_task_metrics_sink_record_read_total", connector=name) >= load.committed
    assert total(m, "kafka_connect_sink_task_metrics_partition_count", connector=name) == 2
    assert total(m, "mirror_sink_transactions_total", connector=name, outcome="committed") >= 1
    assert total(m, "mirror_sink_transaction_duration_seconds_count", connector=name) >= 1
    assert total(m, "mirror_sink_rebalances_total", connector=name) >= 1
    assert total(m, "mirror_sink_raw_batches_total", connector=name, outcome="forwarded") >= 1
    assert total(m, "mirror_sink_memory_budget_bytes", connector=name, kind="limit") == 64 * 1024 * 1024
    # Raw mode fetches in an incremental session (KIP-227): after the first full Fetch, Fetches name
    # only what changed; the session holds both source partitions.
    assert total(m, "mirror_sink_fetch_requests_total", connector=name, kind="incremental") > total(
        m, "mirror_sink_fetch_requests_total", connector=name, kind="full"
    )
    assert total(m, "mirror_sink_fetch_session_partitions", connector=name) == 2

    # Paused, the lag shows what waits; resumed, it falls back to 0.
    assert client.put(f"/connectors/{name}/pause").status_code == 202
    time.sleep(2)
    produce(source.bootstrap_servers, topic, [Rec(b"k", b"late-%d" % i, partition=i % 2) for i in range(100)])
    wait_until(lambda: lag_is(100), 30, "the lag at 100", interval=1)
    time.sleep(1)
    waited = scrape(url)["mirror_sink_replication_lag_seconds"]
    assert all(v > 0 for lab, v in waited if lab["topic"] == target_topic), waited  # the first late record's age
    assert client.put(f"/connectors/{name}/resume").status_code == 202
    wait_until(lambda: lag_is(0), 60, "the lag back at 0", interval=1)
    caught_up = scrape(url)["mirror_sink_replication_lag_seconds"]
    assert [v for lab, v in caught_up if lab["topic"] == target_topic] == [0.0, 0.0]

    # A record appended on the target by hand: the next verification round counts it, per partition.
    produce(target.bootstrap_servers, target_topic, [Rec(b"k", b"forged", partition=1)])

    def forged_found() -> bool:
        return total(scrape(url), "mirror_sink_verify_mismatches_total", connector=name, partition="1") == 1

    wait_until(forged_found, 30, "the forged record counted as a mismatch", interval=1)
    assert total(scrape(url), "mirror_sink_verify_mismatches_total", connector=name, partition="0") == 0


def test_a_quiet_source_leader_is_watched_and_what_comes_after_the_silence_mirrors_exactly(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, worker: WorkerProcess
) -> None:
    """A leader quiet for a second gets read_uncommitted watches (fetch.idle.wait.max.ms) instead of
    read_committed Fetches ten times a second; a watch's records are never forwarded, so what its
    answer saw (open, committed and aborted transactions alike) reaches the target exactly once."""
    name, topic = unique("watch"), new_topic("watch", 2)
    target_topic, group = f"source.{topic}", f"connect-{name}"
    client = httpx.Client(base_url=worker.url, timeout=60)
    config = mirror_config(name, source, target, topic, **{"mirror.mode": "raw"})
    assert client.post("/connectors", json={"name": config.pop("name"), "config": config}).status_code == 201
    url = f"{worker.url}/metrics"

    def watches() -> float:
        return total(scrape(url), "mirror_sink_fetch_requests_total", connector=name, kind="watch")

    wait_until(lambda: watches() >= 1, 60, "a watch of the quiet source leader", interval=0.5)
    seen = watches()
    # After the silence: transactions, one in three aborted, written while the leader is watched.
    load = TransactionalLoad(source.bootstrap_servers, topic, 2, 300, per_txn=30, abort_every=3, txn_id=f"{name}-l")
    load.start().join(120)
    wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 60, "the mirror")
    assert assert_exact_mirror(source, topic, target, target_topic, group) == load.committed
    time.sleep(1.5)  # quiet again: watched again
    produce(source.bootstrap_servers, topic, [Rec(b"k", b"after-%d" % i, partition=i % 2) for i in range(10)])
    wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 60, "the lone records")
    assert assert_exact_mirror(source, topic, target, target_topic, group) == load.committed + 10
    wait_until(lambda: watches() > seen, 30, "watches again once the source is quiet", interval=0.5)


def test_run_serves_metrics_on_its_own_port(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, tmp_path: Path
) -> None:
    name, topic = unique("runmetrics"), new_topic("runmetrics", 1)
    produce(source.bootstrap_servers, topic, [Rec(b"k", b"v%d" % i) for i in range(120)])
    port = free_port()
    config = mirror_config(name, source, target, topic, **{"mirror.mode": "record", "metrics.aggregate": "topic"})
    proc = MirrorProcess(config, "w1", tmp_path, "--metrics-port", str(port)).start()
    try:
        target_topic = f"source.{topic}"
        wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, f"connect-{name}"), 60, "mirror")
        url = f"http://127.0.0.1:{port}/metrics"

        def counted() -> bool:
            m = scrape(url)
            return total(m, MM2 + "record_count", topic=target_topic, partition="all") == 120

        wait_until(counted, 30, "record_count per topic", interval=1)
        m = scrape(url)
        assert "process_cpu_seconds_total" in m
        # Kafka's default metric.names.formats: the legacy names only.
        assert not [n for n in m if n.startswith(MM2_NEW)], sorted(m)
    finally:
        assert proc.stop() == 0, proc.log_tail()
