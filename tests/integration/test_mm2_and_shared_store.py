"""MirrorMaker 2 dedicated mode (connector.type=sink) and several workers sharing a config topic."""

from __future__ import annotations

from pathlib import Path

import httpx

from devkafka.data import produce
from devkafka.endpoints import KafkaEndpoint
from tests.integration.harness.configs import FAST_SETTINGS
from tests.integration.harness.exactness import assert_exact_mirror, shadow_caught_up
from tests.integration.harness.processes import ChildProcess, WorkerProcess
from tests.integration.harness.records import TransactionalLoad, tricky_records
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until


def mm2_file(path: Path, source: KafkaEndpoint, target: KafkaEndpoint, topics: str, connector_type: str) -> Path:
    """An MM2 properties file with one enabled flow primary->backup."""
    lines = [
        "# MirrorMaker 2 dedicated mode, KIP-656 flavour",
        "clusters = primary, backup",
        f"primary.bootstrap.servers = {source.bootstrap_servers}",
        f"backup.bootstrap.servers = {target.bootstrap_servers}",
        "primary->backup.enabled = true",
        f"primary->backup.topics = {topics}",
        "backup->primary.enabled = false",
        f"connector.type = {connector_type}",
        "transaction.producer = true",
        "tasks.max = 2",
        "emit.heartbeats.enabled = false",
        *(f"{k} = {v}" for k, v in FAST_SETTINGS.items() if not k.startswith("target.cluster.")),
        "backup.consumer.session.timeout.ms = 6000",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_mm2_file_mirrors_end_to_end(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = new_topic("mm2", 3)
    load = TransactionalLoad(source.bootstrap_servers, topic, 3, 3000, txn_id=unique("mm2"))
    load.start()
    config = mm2_file(tmp_path / "mm2.properties", source, target, topic, "sink")
    worker = WorkerProcess(tmp_path, worker_id=unique("mm2w"), mm2_file=config).start()
    try:
        client = httpx.Client(base_url=worker.url, timeout=30)
        assert client.get("/connectors").json() == ["primary-to-backup"]
        load.join(300)
        group, target_topic = "connect-primary-to-backup", f"primary.{topic}"
        wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 120, "the MM2 flow")
        assert_exact_mirror(source, topic, target, target_topic, group)
        status = client.get("/connectors/primary-to-backup/status").json()
        assert status["connector"]["state"] == "RUNNING"
    finally:
        assert worker.stop() == 0, worker.log_tail()


def test_mm2_source_connectors_are_refused_with_what_to_set(
    source: KafkaEndpoint, target: KafkaEndpoint, tmp_path: Path
) -> None:
    config = mm2_file(tmp_path / "mm2.properties", source, target, "x", "source")
    worker = WorkerProcess(tmp_path, mm2_file=config)
    ChildProcess.start(worker)  # not WorkerProcess.start: it must exit instead of serving
    assert worker.wait(60) == 2
    log = worker.log_text()
    assert "connector.type" in log and "connector.type=sink" in log, log


def test_workers_sharing_a_config_topic_share_the_work(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, tmp_path: Path
) -> None:
    topic, name, config_topic = new_topic("shared", 4), unique("shared"), unique("mirror-sink-configs")
    properties = tmp_path / "worker.properties"
    settings = {
        "config.storage": "kafka",
        "config.storage.topic": config_topic,
        "status.storage.topic": f"{config_topic}-status",
        "bootstrap.servers": target.bootstrap_servers,
    }
    properties.write_text("".join(f"{k} = {v}\n" for k, v in settings.items()))
    first = WorkerProcess(tmp_path, str(properties), worker_id="a").start()
    second = WorkerProcess(tmp_path, str(properties), worker_id="b").start()
    try:
        one, two = (httpx.Client(base_url=w.url, timeout=30) for w in (first, second))
        config = {
            "connector.class": "MirrorSinkConnector",
            "source.cluster.bootstrap.servers": source.bootstrap_servers,
            "target.cluster.bootstrap.servers": target.bootstrap_servers,
            "topics": topic,
            # One task per worker: a worker group spreads a connector's task ids over its workers.
            "tasks.max": "2",
            **FAST_SETTINGS,
        }
        assert one.post("/connectors", json={"name": name, "config": config}).status_code == 201
        # The other worker learns of it from the config topic and runs one of the two tasks; either
        # worker's status shows both, each with the worker running it.
        wait_until(lambda: two.get("/connectors").json() == [name], 30, "the second worker to see the connector")
        wait_until(
            lambda: (
                [(t["state"], t["worker_id"]) for t in two.get(f"/connectors/{name}/status").json()["tasks"]]
                == [("RUNNING", "a"), ("RUNNING", "b")]
            ),
            60,
            "one task on each worker",
        )
        produce(source.bootstrap_servers, topic, tricky_records(4, 400))
        group = f"connect-{name}"
        wait_until(lambda: shadow_caught_up(source, topic, target, f"source.{topic}", group), 120, "mirroring")
        assert_exact_mirror(source, topic, target, f"source.{topic}", group)
        assert (
            "assigned 2 target partitions" in first.log_text() and "assigned 2 target partitions" in second.log_text()
        )
        # Pausing through one worker pauses it everywhere.
        assert two.put(f"/connectors/{name}/pause").status_code == 202
        wait_until(lambda: one.get(f"/connectors/{name}/status").json()["connector"]["state"] == "PAUSED", 30, "pause")
        assert two.delete(f"/connectors/{name}").status_code == 204
        wait_until(lambda: one.get("/connectors").json() == [], 30, "the delete to reach the first worker")
    finally:
        assert first.stop() == 0, first.log_tail()
        assert second.stop() == 0, second.log_tail()
