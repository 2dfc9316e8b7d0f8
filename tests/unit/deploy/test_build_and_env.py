"""Worker settings from ``CONNECT_*`` variables (Confluent's image convention) and the build's commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mirror_sink.core.runtime import build_info
from mirror_sink.worker.worker_config import WorkerConfig, settings_from_env


def test_connect_variables_decode_as_confluents_images_do() -> None:
    env = {
        "CONNECT_CONFIG_STORAGE": "kafka",
        "CONNECT_BOOTSTRAP_SERVERS": "kafka:9092",
        "CONNECT_LISTENERS": "http://0.0.0.0:8083",
        "CONNECT_SOME__DASHED_KEY": "a",
        "CONNECT_UNDER___SCORE": "b",
        "CONNECT_": "ignored",
        "MIRROR_SINK_DATA_DIR": "/var/lib/mirror-sink",  # the CLI's own set, never a worker setting
        "PATH": "/usr/bin",
    }
    assert settings_from_env(env) == {
        "config.storage": "kafka",
        "bootstrap.servers": "kafka:9092",
        "listeners": "http://0.0.0.0:8083",
        "some-dashed.key": "a",
        "under_score": "b",
    }


def test_the_decoded_settings_are_the_workers_own_keys() -> None:
    settings = settings_from_env(
        {"CONNECT_CONFIG_STORAGE": "kafka", "CONNECT_CONNECTORS_CONFIG_DIR": "/etc/mirror-sink/connectors"}
    )
    config = WorkerConfig.model_validate(settings)
    assert config.config_storage == "kafka"
    assert config.connectors_config_dir == Path("/etc/mirror-sink/connectors")


def test_commit_comes_from_the_image_when_it_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(build_info.COMMIT_ENV, "0123456789abcdef")
    assert build_info.commit() == "0123456"


def test_commit_is_read_from_the_checkout_without_running_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(build_info.COMMIT_ENV, raising=False)
    repo = Path(__file__).resolve().parents[3]
    if (repo / ".git").exists():  # a clone, as CI runs: the same answer git gives
        expected = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
        assert build_info._checkout_head(repo / ".git") == expected.stdout.strip()
        # and commit() finds that checkout from the module's own place in the tree
        assert expected.stdout.strip().startswith(build_info.commit())
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text("# pack-refs with: peeled\nfeedfacecafe0000 refs/heads/main\n")
    assert build_info._checkout_head(git) == "feedfacecafe0000"  # only in packed-refs
    (git / "refs" / "heads" / "main").write_text("abcdef1234567890\n")
    assert build_info._checkout_head(git) == "abcdef1234567890"
    assert build_info._checkout_head(tmp_path / "nothing") is None
