"""Pure logic of the development clusters: ids, broker settings, state handling."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from devkafka.cluster import ClusterStartError, LocalKafkaCluster, free_port, new_cluster_id
from devkafka.jars import KafkaJars


def test_cluster_id_is_16_bytes_urlsafe_and_never_starts_with_dash() -> None:
    for _ in range(500):
        cid = new_cluster_id()
        assert not cid.startswith("-") and "=" not in cid
        assert len(base64.urlsafe_b64decode(cid + "==")) == 16


def test_free_port_is_bindable() -> None:
    assert 1024 < free_port() < 65536


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
