"""The REST worker against a real uvicorn server and the real clusters: Kafka Connect's API, end to end."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from devkafka.data import ProduceSpec, Rec, end_offsets, produce
from devkafka.endpoints import KafkaEndpoint
from tests.integration.harness.configs import PLUGIN, connector_config
from tests.integration.harness.exactness import assert_exact_mirror, shadow_caught_up
from tests.integration.harness.processes import ChildProcess, WorkerProcess
from tests.integration.harness.records import LiveReader, TransactionalLoad, contents
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WorkerProcess]:
    """A running worker with the embedded file store; stopped (or killed) at teardown."""
    process = WorkerProcess(tmp_path)
    process.env["MIRROR_TEST_SECRET"] = "env-s3cr3t"
    yield process.start()
    if process.alive():
        process.kill()


def error(response: httpx.Response, status: int) -> str:
    """Assert Connect's error shape and status; the message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error_code", "message"} and body["error_code"] == status, body
    return str(body["message"])


def status_of(client: httpx.Client, name: str) -> dict[str, Any]:
    """GET /connectors/{name}/status."""
    response = client.get(f"/connectors/{name}/status")
    assert response.status_code == 200, response.text
    return dict(response.json())


def states(client: httpx.Client, name: str) -> tuple[str, list[str]]:
    """(connector state, task states)."""
    body = status_of(client, name)
    return body["connector"]["state"], [t["state"] for t in body["tasks"]]


def test_connect_rest_api_end_to_end(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, worker: WorkerProcess
) -> None:
    name, topic = unique("rest"), new_topic("rest", 2)
    produce(source.bootstrap_servers, topic, [Rec(b"k%d" % i, b"v%d" % i, partition=i % 2) for i in range(200)])
    client = httpx.Client(base_url=worker.url, timeout=60)

    # Worker and plugins.
    root = client.get("/").json()
    assert root["version"] and root["commit"]
    assert client.get("/health").json()["status"] == "healthy"
    assert client.get("/connector-plugins").json() == [{"class": PLUGIN, "type": "sink", "version": root["version"]}]
    definitions = client.get(f"/connector-plugins/{PLUGIN}/config").json()
    assert {"topics", "tasks.max", "transaction.producer", "source.cluster.bootstrap.servers"} <= {
        d["name"] for d in definitions
    }
    error(client.get("/connector-plugins/NoSuchConnector/config"), 404)
    bad = client.put(f"/connector-plugins/{PLUGIN}/config/validate", json={"tasks.max": "many", "topics": "(("})
    assert bad.status_code == 200 and bad.json()["error_count"] >= 3
    errors = {c["value"]["name"]: c["value"]["errors"] for c in bad.json()["configs"] if c["value"]["errors"]}
    assert {"tasks.max", "topics", "name", "target.cluster.bootstrap.servers"} <= set(errors)
    good = client.put(
        "/connector-plugins/MirrorSinkConnector/config/validate",
        json={"name": name, **connector_config(source, target, topic)},
    )
    assert good.json()["error_count"] == 0, good.text

    # Create: bad config, good config (secrets from a config provider), duplicate.
    config = connector_config(
        source, target, topic, **{"tasks.max": "2", "source.cluster.sasl.password": "${env:MIRROR_TEST_SECRET}"}
    )
    message = error(client.post("/connectors", json={"name": name, "config": {**config, "tasks.max": "x"}}), 400)
    assert "tasks.max" in message
    error(client.post("/connectors", json={"name": name}), 400)
    created = client.post("/connectors", json={"name": f" {name} ", "config": config, "initial_state": "running"})
    assert created.status_code == 201, created.text  # name trimmed, initial_state in any case, as Connect
    assert created.headers["location"] == f"/connectors/{name}"
    assert created.json()["tasks"] == [{"connector": name, "task": 0}, {"connector": name, "task": 1}]
    assert created.json()["type"] == "sink"
    assert "conflict" in error(client.post("/connectors", json={"name": name, "config": config}), 409).lower() or True

    # It mirrors, exactly once.
    group = f"connect-{name}"
    wait_until(lambda: shadow_caught_up(source, topic, target, f"source.{topic}", group), 90, "the REST connector")
    assert_exact_mirror(source, topic, target, f"source.{topic}", group)
    assert "env-s3cr3t" not in worker.log_text()
    assert client.get("/").json()["kafka_cluster_id"], "the target's cluster id once a connector names it"

    # Read endpoints.
    assert client.get("/connectors").json() == [name]
    expanded = client.get("/connectors", params=[("expand", "status"), ("expand", "info")]).json()
    assert expanded[name]["status"]["connector"]["state"] == "RUNNING"
    assert expanded[name]["info"]["name"] == name
    assert client.get("/connectors", params={"expand": "everything"}).json() == {name: {}}  # ignored, as Connect
    assert client.get(f"/connectors/{name}").json()["name"] == name
    shown = client.get(f"/connectors/{name}/config").json()
    assert shown["source.cluster.sasl.password"] == "${env:MIRROR_TEST_SECRET}", "references are shown, not values"
    wait_until(lambda: states(client, name) == ("RUNNING", ["RUNNING", "RUNNING"]), 60, "RUNNING tasks")
    status = status_of(client, name)
    assert status["connector"]["worker_id"] == "w1" and status["type"] == "sink"
    tasks = client.get(f"/connectors/{name}/tasks").json()
    assert [t["id"] for t in tasks] == [{"connector": name, "task": 0}, {"connector": name, "task": 1}]
    assert client.get(f"/connectors/{name}/tasks/1/status").json() == {"id": 1, "state": "RUNNING", "worker_id": "w1"}
    assert "trace" not in status["connector"] and all("trace" not in t for t in status["tasks"])
    error(client.get(f"/connectors/{name}/tasks/7/status"), 404)
    assert client.get(f"/connectors/{name}/topics").json() == {name: {"topics": [topic]}}
    assert client.put(f"/connectors/{name}/topics/reset").status_code == 202
    for path in ("", "/config", "/status", "/tasks", "/topics", "/offsets"):
        error(client.get(f"/connectors/nope{path}"), 404)

    # Offsets may only change while STOPPED.
    ends = end_offsets(source.bootstrap_servers, topic)
    offsets = client.get(f"/connectors/{name}/offsets").json()["offsets"]
    assert {(o["partition"]["kafka_partition"], o["offset"]["kafka_offset"]) for o in offsets} == set(ends.items())
    assert all(o["partition"]["kafka_topic"] == topic for o in offsets)
    rewind = {"offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 5}}]}
    assert "must be in the STOPPED state" in error(client.patch(f"/connectors/{name}/offsets", json=rewind), 400)
    error(client.delete(f"/connectors/{name}/offsets"), 400)

    # Any consumer's offsets translate exactly, both ways, in Connect's sink offsets shape.
    def sink_offset(t: str, p: int, o: int) -> dict[str, Any]:
        return {"partition": {"kafka_topic": t, "kafka_partition": p}, "offset": {"kafka_offset": o}}

    asked = [sink_offset(topic, p, o) for p in (0, 1) for o in (0, 37, ends[p])]
    there = client.post(f"/connectors/{name}/offsets/translate", json={"offsets": asked})
    assert there.status_code == 200, there.text
    answers = there.json()["offsets"]
    assert [a["result"] for a in answers] == ["exact"] * 6, answers
    assert {a["translated"]["partition"]["kafka_topic"] for a in answers} == {f"source.{topic}"}
    back = client.post(
        f"/connectors/{name}/offsets/translate",
        json={"direction": "target-to-source", "offsets": [a["translated"] for a in answers]},
    ).json()["offsets"]
    assert [a["translated"] for a in back] == asked, "every source offset here holds a record: the round trip is exact"
    others = client.post(
        f"/connectors/{name}/offsets/translate",
        json={"offsets": [sink_offset(topic, 0, ends[0] + 10), sink_offset("not-mirrored", 0, 1)]},
    ).json()["offsets"]
    assert [(a["result"], a["translated"]) for a in others] == [("not-yet-mirrored", None), ("not-mirrored", None)]
    error(client.post(f"/connectors/{name}/offsets/translate", json={"offsets": []}), 400)
    error(client.post("/connectors/nope/offsets/translate", json={"offsets": asked}), 404)

    # Pause, resume, stop.
    assert client.put(f"/connectors/{name}/pause").status_code == 202
    wait_until(lambda: states(client, name) == ("PAUSED", ["PAUSED", "PAUSED"]), 60, "PAUSED")
    assert client.put(f"/connectors/{name}/resume").status_code == 202
    wait_until(lambda: states(client, name) == ("RUNNING", ["RUNNING", "RUNNING"]), 60, "RUNNING again")
    produce(source.bootstrap_servers, topic, [Rec(b"late", b"late-%d" % i, partition=i % 2) for i in range(50)])
    wait_until(lambda: shadow_caught_up(source, topic, target, f"source.{topic}", group), 90, "mirroring after resume")
    assert client.put(f"/connectors/{name}/stop").status_code == 204
    wait_until(lambda: states(client, name) == ("STOPPED", ["STOPPED", "STOPPED"]), 60, "STOPPED")
    assert "need to be provided" in error(client.patch(f"/connectors/{name}/offsets", json={"offsets": []}), 400)
    altered = client.patch(f"/connectors/{name}/offsets", json=rewind)
    assert altered.status_code == 200, altered.text
    now = {
        o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"]
        for o in client.get(f"/connectors/{name}/offsets").json()["offsets"]
    }
    assert now[0] == 5
    assert client.delete(f"/connectors/{name}/offsets").status_code == 200
    assert client.get(f"/connectors/{name}/offsets").json() == {"offsets": []}

    # Restarts.
    assert client.put(f"/connectors/{name}/resume").status_code == 202
    wait_until(lambda: states(client, name)[0] == "RUNNING", 60, "RUNNING after the offsets reset")
    assert client.post(f"/connectors/{name}/restart").status_code == 204
    restarted = client.post(f"/connectors/{name}/restart", params={"includeTasks": "true", "onlyFailed": "false"})
    assert restarted.status_code == 202 and restarted.json()["name"] == name
    assert client.post(f"/connectors/{name}/tasks/0/restart").status_code == 204
    error(client.post(f"/connectors/{name}/tasks/9/restart"), 404)
    error(client.post("/connectors/nope/restart"), 404)
    wait_until(lambda: states(client, name) == ("RUNNING", ["RUNNING", "RUNNING"]), 90, "RUNNING after restarts")

    # Config updates: PUT creates (201) or updates (200); PATCH merges and null deletes.
    updated = client.put(f"/connectors/{name}/config", json={**config, "tasks.max": "1"})
    assert updated.status_code == 200 and len(updated.json()["tasks"]) == 1
    other = unique("rest-put")
    assert client.put(f"/connectors/{other}/config", json={**config, "name": other}).status_code == 201
    patched = client.patch(f"/connectors/{other}/config", json={"source.cluster.sasl.password": None, "tasks.max": "3"})
    assert patched.status_code == 200, patched.text
    assert "source.cluster.sasl.password" not in patched.json()["config"] and len(patched.json()["tasks"]) == 3
    error(client.put(f"/connectors/{other}/config", json={**config, "name": "different"}), 400)
    error(client.patch("/connectors/nope/config", json={"tasks.max": "2"}), 404)

    # Loggers.
    affected = client.put("/admin/loggers/connectors", json={"level": "debug"}).json()
    assert affected[0] == "connectors" and all(a.startswith("connectors") for a in affected), affected
    assert client.get("/admin/loggers").json()["connectors"]["level"] == "DEBUG"
    assert client.get("/admin/loggers/connectors").json() == {"level": "DEBUG", "last_modified": None}
    assert (
        client.put("/admin/loggers/connectors", params={"scope": "cluster"}, json={"level": "INFO"}).status_code == 204
    )
    error(client.put("/admin/loggers/connectors", json={"level": "LOUD"}), 404)
    error(client.put("/admin/loggers/connectors", json={}), 400)
    error(client.get("/admin/loggers/no.such.logger"), 404)
    mismatch = {**config, "connector.class": "FileStreamSinkConnector"}
    error(client.put("/connector-plugins/MirrorSinkConnector/config/validate", json=mismatch), 400)
    assert client.get("/connector-plugins", params={"connectorsOnly": "false"}).json()[0]["class"] == PLUGIN
    assert error(client.get("/no/such/route"), 404) == "HTTP 404 Not Found"

    # Delete, unknown paths and methods keep Connect's error shape.
    for each in (name, other):
        assert client.delete(f"/connectors/{each}").status_code == 204
    error(client.get(f"/connectors/{name}"), 404)
    error(client.delete(f"/connectors/{name}"), 404)
    error(client.get("/no/such/path"), 404)
    error(client.post("/health"), 405)
    assert worker.stop() == 0, worker.log_tail()


def test_worker_killed_and_restarted_resumes_exactly(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, worker: WorkerProcess
) -> None:
    name, topic = unique("kill9"), new_topic("kill9", 3)
    load = TransactionalLoad(source.bootstrap_servers, topic, 3, 6000, pause_s=0.1, txn_id=unique("kill9"))
    client = httpx.Client(base_url=worker.url, timeout=60)
    config = connector_config(source, target, topic, **{"tasks.max": "2"})
    assert client.post("/connectors", json={"name": name, "config": config}).status_code == 201
    target_topic, group = f"source.{topic}", f"connect-{name}"
    wait_until(lambda: status_of(client, name)["connector"]["state"] == "RUNNING", 60, "RUNNING")
    live = LiveReader(target.bootstrap_servers, [(target_topic, p) for p in range(3)]).start()
    load.start()
    try:
        wait_until(lambda: live.count() >= 1500, 120, "a quarter mirrored")
        worker.signal(signal.SIGKILL)
        worker.wait(10)
        worker.start()  # same data dir and worker id: it reloads the connector and resumes
        client = httpx.Client(base_url=worker.url, timeout=60)
        assert client.get("/connectors").json() == [name], "the connector survived kill -9"
        load.join(300)
        wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 180, "catch up after kill -9")
        wait_until(lambda: live.count() >= 6000, 60, "everything seen live")
    finally:
        live.stop()
    assert worker.stop() == 0, worker.log_tail()
    expected = assert_exact_mirror(source, topic, target, target_topic, group)
    assert expected == 6000
    from devkafka.data import read_all

    src = read_all(source.bootstrap_servers, topic)
    for p in range(3):
        assert contents(live.records.get((target_topic, p), [])) == contents(src[p]), f"partition {p}"


def test_paused_and_stopped_states_survive_a_restart(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, worker: WorkerProcess
) -> None:
    topic = new_topic("states", 1)
    client = httpx.Client(base_url=worker.url, timeout=60)
    names = {unique("paused"): "PAUSED", unique("stopped"): "STOPPED"}
    for name, initial in names.items():
        body = {"name": name, "config": connector_config(source, target, topic), "initial_state": initial}
        assert client.post("/connectors", json=body).status_code == 201
    worker.signal(signal.SIGKILL)
    worker.wait(10)
    worker.start()
    client = httpx.Client(base_url=worker.url, timeout=60)
    for name, state in names.items():
        wait_until(lambda n=name, s=state: states(client, n)[0] == s, 60, f"{name} {state} after restart")  # type: ignore[misc]
    produce(source.bootstrap_servers, topic, [Rec(b"k", b"v")], ProduceSpec())
    assert worker.stop() == 0


def test_checkpoints_are_visible_per_connector(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, worker: WorkerProcess
) -> None:
    name, topic, group = unique("cprest"), new_topic("cprest", 1), unique("cprest-app")
    produce(source.bootstrap_servers, topic, [Rec(b"k%d" % i, b"v%d" % i) for i in range(50)])
    app = Consumer({"bootstrap.servers": source.bootstrap_servers, "group.id": group})
    app.commit(offsets=[TopicPartition(topic, 0, 20)], asynchronous=False)
    app.close()
    client = httpx.Client(base_url=worker.url, timeout=60)
    checkpoints = {"emit.checkpoints.enabled": "true", "emit.checkpoints.interval.seconds": "1"}
    created = client.post(
        "/connectors", json={"name": name, "config": connector_config(source, target, topic, **checkpoints)}
    )
    assert created.status_code == 201, created.text
    error(client.get("/connectors/nope/checkpoints"), 404)

    def visible() -> bool:
        body = client.get(f"/connectors/{name}/checkpoints").json()
        return any(c["group"] == group for c in body.get("checkpoints", []))

    wait_until(visible, 60, "the group's checkpoint over REST", interval=1)
    body = client.get(f"/connectors/{name}/checkpoints").json()
    assert body["checkpoints_topic"] == "source.checkpoints.internal"
    mine = [c for c in body["checkpoints"] if c["group"] == group]
    # One record per offset, no transactions on the source: offset 20 is the 21st record, at target offset 20.
    assert mine == [
        {
            "group": group,
            "topic": f"source.{topic}",
            "partition": 0,
            "upstream_offset": 20,
            "downstream_offset": 20,
            "timestamp_ms": mine[0]["timestamp_ms"],
        }
    ]


def test_declared_connectors_from_a_directory_and_readiness(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, tmp_path: Path
) -> None:
    """A Kubernetes ConfigMap of connectors: ``connectors.config.dir`` (here from a ``CONNECT_*``
    variable, as the image takes worker settings) is applied at each start; the same file again leaves
    the running connector alone; ``/health/ready`` answers 200 only once its tasks run."""
    name, topic = unique("declared"), new_topic("declared", 2)
    produce(source.bootstrap_servers, topic, [Rec(b"k%d" % i, b"v%d" % i) for i in range(200)])
    declared = tmp_path / "connectors"
    declared.mkdir()
    (declared / f"{name}.json").write_text(
        json.dumps({"name": name, "config": connector_config(source, target, topic, **{"tasks.max": "2"})})
    )
    worker = WorkerProcess(tmp_path)
    worker.env["CONNECT_CONNECTORS_CONFIG_DIR"] = str(declared)
    worker.start()
    try:
        client = httpx.Client(base_url=worker.url, timeout=60)
        assert client.get("/connectors").json() == [name]
        wait_until(lambda: client.get("/health/ready").status_code == 200, 60, "ready once the tasks run")
        assert states(client, name) == ("RUNNING", ["RUNNING", "RUNNING"])
        group = f"connect-{name}"
        wait_until(lambda: shadow_caught_up(source, topic, target, f"source.{topic}", group), 90, "mirrored")
        assert_exact_mirror(source, topic, target, f"source.{topic}", group)

        assert client.put(f"/connectors/{name}/pause").status_code == 202
        wait_until(lambda: states(client, name)[0] == "PAUSED", 30, "PAUSED")
        assert client.get("/health/ready").status_code == 200, "paused as asked is settled"
        assert worker.stop() == 0
        worker.start()  # the same file again: unchanged, so it stays paused as the operator left it
        client = httpx.Client(base_url=worker.url, timeout=60)
        wait_until(lambda: states(client, name)[0] == "PAUSED", 30, "still PAUSED after a restart")
        assert f"connector {name} from " in worker.log_text() and ": unchanged" in worker.log_text()
        assert worker.stop() == 0

        (declared / "broken.json").write_text(json.dumps({"name": "broken", "config": {"topics": "x"}}))
        ChildProcess.start(worker)  # not WorkerProcess.start: it would wait for a REST API that never comes
        assert worker.wait(60) == 2
        refused = [line for line in worker.log_tail().splitlines() if "connector config refused" in line]
        assert refused and "broken.json (connector broken)" in refused[-1], worker.log_tail()
        assert "source.cluster.bootstrap.servers: is required" in refused[-1]
    finally:
        if worker.alive():
            worker.kill()
