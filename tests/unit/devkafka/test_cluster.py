"""Pure logic of the development clusters: ids, broker settings, state handling."""

from __future__ import annotations

import base64
import json
from concurrent.futures import Future
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from devkafka.cluster import ClusterStartError, LocalKafkaCluster, _this_process_ports, free_port, new_cluster_id
from devkafka.data import _create_once
from devkafka.jars import KafkaJars


def test_cluster_id_is_16_bytes_urlsafe_and_never_starts_with_dash() -> None:
    for _ in range(500):
        cid = new_cluster_id()
        assert not cid.startswith("-") and "=" not in cid
        assert len(base64.urlsafe_b64decode(cid + "==")) == 16


def test_free_port_is_bindable() -> None:
    assert 1024 < free_port() < 65536


def test_free_port_never_hands_out_a_port_twice() -> None:
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)


def test_each_xdist_worker_draws_ports_from_its_own_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    candidates = range(20_000, 32_000)
    slices = []
    for k in range(3):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{k}")
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
        slices.append(set(_this_process_ports(candidates)))
    assert all(len(s) == 4000 for s in slices)
    assert not (slices[0] & slices[1] or slices[1] & slices[2] or slices[0] & slices[2])
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert _this_process_ports(candidates) == candidates


def test_state_survives_and_version_mismatch_is_refused(tmp_path: Path) -> None:
    jars = KafkaJars("4.3.1", tmp_path / "libs")
    cluster = LocalKafkaCluster("source", tmp_path / "source", jars)
    cluster._save_state()
    again = LocalKafkaCluster("source", tmp_path / "source", jars)
    assert again.state == cluster.state, "a restart must reuse the same ports and cluster id"
    with pytest.raises(ClusterStartError, match=r"formatted by Kafka 4\.3\.1"):
        LocalKafkaCluster("source", tmp_path / "source", KafkaJars("3.9.2", tmp_path / "libs"))


def test_stop_of_a_never_started_cluster_is_a_no_op(tmp_path: Path) -> None:
    cluster = LocalKafkaCluster("target", tmp_path / "t", KafkaJars("4.3.1", tmp_path / "libs"))
    assert not cluster.is_running()
    cluster.stop()
    assert cluster.state.pid is None


def test_major_version_selects_logging_backend(tmp_path: Path) -> None:
    assert KafkaJars("3.9.2", tmp_path).major == 3
    assert KafkaJars("4.3.1", tmp_path).major == 4


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_a_replicated_cluster_s_nodes_share_one_quorum_and_replicate_everything_three_times(tmp_path: Path) -> None:
    from devkafka.cluster import _server_properties
    from devkafka.replicated import ReplicatedKafkaCluster

    jars = KafkaJars("4.3.1", tmp_path / "libs")
    cluster = ReplicatedKafkaCluster("target", tmp_path / "target", jars)
    props = [_props(_server_properties(n.state, tmp_path / "data", {})) for n in cluster.nodes]
    assert [p["node.id"] for p in props] == ["1", "2", "3"]
    assert len({p["controller.quorum.voters"] for p in props}) == 1, "one quorum of three voters"
    assert props[0]["controller.quorum.voters"].count("@127.0.0.1:") == 3
    assert len({n.state.cluster_id for n in cluster.nodes}) == 1
    assert len({n.state.port for n in cluster.nodes}) == 3
    for p in props:
        assert p["offsets.topic.replication.factor"] == p["transaction.state.log.replication.factor"] == "3"
        assert p["default.replication.factor"] == "3"
        assert p["min.insync.replicas"] == p["transaction.state.log.min.isr"] == "2"
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "replicated.json").write_text(json.dumps(cluster._shape))  # what start() saves
    again = ReplicatedKafkaCluster("target", tmp_path / "target", jars)
    assert [n.state for n in again.nodes] == [n.state for n in cluster.nodes], "a restart reuses ports and ids"
    with pytest.raises(ValueError, match="at least three nodes"):
        ReplicatedKafkaCluster("t", tmp_path / "t2", jars, size=2)


def test_a_single_node_cluster_keeps_one_replica_and_no_min_isr_above_it(tmp_path: Path) -> None:
    from devkafka.cluster import _server_properties

    cluster = LocalKafkaCluster("source", tmp_path / "source", KafkaJars("4.3.1", tmp_path / "libs"))
    props = _props(_server_properties(cluster.state, tmp_path / "data", {}))
    assert props["node.id"] == "1"
    assert props["controller.quorum.voters"] == f"1@127.0.0.1:{cluster.state.controller_port}"
    assert props["offsets.topic.replication.factor"] == props["transaction.state.log.min.isr"] == "1"
    assert "default.replication.factor" not in props and "min.insync.replicas" not in props
    assert props["broker.session.timeout.ms"] == "30000"  # its own controller must not fence it in a stall


class _AdminAnswering:
    """An admin client stand-in whose CreateTopics answers are scripted (the retry's logic only)."""

    def __init__(self, *answers: BaseException | None) -> None:
        self.answers = list(answers)
        self.calls = 0

    def create_topics(self, new: list[NewTopic], operation_timeout: float) -> dict[str, Future[None]]:
        self.calls += 1
        future: Future[None] = Future()
        answer = self.answers.pop(0)
        if isinstance(answer, TimeoutError):
            future.set_running_or_notify_cancel()  # never completes: result(timeout) times out
        elif answer is None:
            future.set_result(None)
        else:
            future.set_exception(answer)
        return {new[0].topic: future}


def _exists() -> KafkaException:
    return KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS))


def test_a_creation_that_timed_out_is_asked_again_and_already_exists_then_counts_as_done() -> None:
    admin = _AdminAnswering(TimeoutError(), _exists())
    _create_once(admin, NewTopic("t", 1), timeout=0.05)  # type: ignore[arg-type]
    assert admin.calls == 2


def test_already_exists_on_the_first_attempt_stays_an_error() -> None:
    with pytest.raises(KafkaException):
        _create_once(_AdminAnswering(_exists()), NewTopic("t", 1), timeout=0.05)  # type: ignore[arg-type]


def test_creation_keeps_failing_with_a_timeout_after_its_budget() -> None:
    admin = _AdminAnswering(*[TimeoutError()] * 50)
    with pytest.raises(TimeoutError):
        _create_once(admin, NewTopic("t", 1), timeout=0.05)  # type: ignore[arg-type]
    assert admin.calls >= 1
