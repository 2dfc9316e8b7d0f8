"""Config mistakes only the clusters reveal, caught at start with one line naming the key."""

from __future__ import annotations

import time

import httpx

from devkafka.data import Rec, produce
from devkafka.endpoints import KafkaEndpoint
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.processes import WorkerProcess
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until


def test_source_and_target_being_one_cluster_under_the_identity_policy_is_refused_at_start(
    source: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    topic = new_topic("self", 1)
    # Two spellings of one cluster's address, so that only its cluster id can tell.
    host, _, port = source.bootstrap_servers.partition(",")[0].rpartition(":")
    config = mirror_config(
        unique("self"),
        source,
        source,
        topic,
        **{
            "replication.policy.class": "IdentityReplicationPolicy",
            "target.cluster.bootstrap.servers": f"localhost:{port}" if host != "localhost" else f"127.0.0.1:{port}",
        },
    )
    proc = mirror(config).start()
    started = time.monotonic()
    assert proc.wait(60) == 1, proc.log_tail()
    took = time.monotonic() - started
    log = proc.log_text()
    assert "replication.policy.class: source.cluster.bootstrap.servers" in log, proc.log_tail()
    assert "reach the same cluster (id " in log and "every topic would be mirrored onto itself" in log, log
    assert took < 30, f"refused after {took:.0f} s"


def test_a_second_connector_writing_a_target_topic_of_another_fails_naming_both(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    worker: WorkerProcess,
) -> None:
    topic = new_topic("twice", 1)
    produce(source.bootstrap_servers, topic, [Rec(b"k", b"v")])
    client = httpx.Client(base_url=worker.url, timeout=30)
    first, second = unique("first"), unique("second")
    for name in (first, second):
        config = {k: v for k, v in mirror_config(name, source, target, topic).items() if k != "name"}
        assert client.put(f"/connectors/{name}/config", json=config).status_code == 201
        if name == first:
            wait_until(
                lambda: client.get(f"/connectors/{first}/status").json()["connector"]["state"] == "RUNNING",
                60,
                "the first connector running",
            )

    def second_failed() -> bool:
        return bool(client.get(f"/connectors/{second}/status").json()["connector"]["state"] == "FAILED")

    wait_until(second_failed, 60, "the second connector FAILED")
    trace = client.get(f"/connectors/{second}/status").json()["connector"]["trace"]
    assert (
        f"topics: connector {second} would write target topics another connector of this worker writes: "
        f"source.{topic} (written by connector {first})" in trace
    ), trace
    assert client.get(f"/connectors/{first}/status").json()["connector"]["state"] == "RUNNING"
