"""``api.cli.worker``: ``mirror-sink worker`` and ``mirror-sink mm2``: their options; the worker's settings
taken from its properties file, then ``CONNECT_*`` variables, then the flags, each over the one before;
a refused worker or MM2 config exit 2 before any listener is bound or store opened; and the connector
files of ``connectors.config.dir`` declared in name order, each refusal naming its file."""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from api.cli import worker
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.worker.herder import Herder
from mirror_sink.worker.herder_types import InvalidRequest

pytestmark = pytest.mark.unit


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mirror-sink")
    worker.add_parsers(parser.add_subparsers(dest="verb", required=True))
    return parser.parse_args(list(argv))


@pytest.fixture(autouse=True)
def no_connect_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``CONNECT_*`` variable from the environment the tests run in."""
    for name in [n for n in os.environ if n.startswith("CONNECT_")]:
        monkeypatch.delenv(name)


def _properties(tmp_path: Path, text: str) -> str:
    path = tmp_path / "worker.properties"
    path.write_text(text)
    return str(path)


class Declared:
    """The Herder as ``connectors.config.dir`` uses it: each declaration, refused for names in ``refuse``."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.refuse = refuse
        self.declared: list[tuple[str, Mapping[str, Any]]] = []

    def declare(self, name: str, config: Mapping[str, Any]) -> str:
        if name in self.refuse:
            raise InvalidRequest("Connector configuration is invalid")
        self.declared.append((name, config))
        return "created"


def test_worker_takes_an_optional_properties_file_and_mm2_requires_its_file() -> None:
    alone = _parse("worker")
    assert (alone.worker_config, alone.listeners, alone.worker_id, alone.data_dir, alone.func) == (
        None,
        None,
        None,
        None,
        worker.run_worker,
    )
    mm2 = _parse("mm2", "mm2.properties", "--worker-config", "w.properties", "--listeners", "http://:9000")
    assert (mm2.mm2_config, mm2.worker_config, mm2.listeners, mm2.func) == (
        "mm2.properties",
        "w.properties",
        "http://:9000",
        worker.run_mm2,
    )
    with pytest.raises(SystemExit):
        _parse("mm2")


def test_the_flags_win_over_connect_variables_which_win_over_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = _properties(tmp_path, "listeners=http://:1001\nworker.id=from-file\nconfig.storage.topic=file-topic\n")
    monkeypatch.setenv("CONNECT_LISTENERS", "http://:1002")
    monkeypatch.setenv("CONNECT_WORKER_ID", "from-env")
    config = worker._load(_parse("worker", file, "--worker-id", "from-flag", "--data-dir", str(tmp_path / "d")))
    assert (config.listeners, config.worker_id, config.config_storage_topic, config.data_dir) == (
        "http://:1002",
        "from-flag",
        "file-topic",
        tmp_path / "d",
    )


def test_provider_references_in_worker_settings_are_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNIT_TEST_WORKER_ID", "w-from-a-secret")
    config = worker._load(_parse("worker", _properties(tmp_path, "worker.id=${env:UNIT_TEST_WORKER_ID}\n")))
    assert config.worker_id == "w-from-a-secret"


@pytest.mark.parametrize(
    ("properties", "logged"),
    [
        ("frobnicate=1\n", "invalid worker config: frobnicate: Extra inputs are not permitted"),
        ("config.storage=kafka\n", "invalid worker config: bootstrap.servers: is required with config.storage=kafka"),
        ("config.storage=zookeeper\n", "invalid worker config: config.storage: String should match pattern"),
        ("listeners=ftp://:21\n", "invalid worker config: listeners: 'ftp://:21': unsupported protocol ftp"),
    ],
    ids=["unknown-key", "kafka-without-bootstrap", "unknown-storage", "bad-listener"],
)
def test_a_refused_worker_config_exits_2_naming_its_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, properties: str, logged: str
) -> None:
    assert worker.run_worker(_parse("worker", _properties(tmp_path, properties))) == 2
    assert caplog.messages[-1].startswith(logged), caplog.messages


def test_a_connect_variable_is_refused_like_the_key_it_spells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CONNECT_CONFIG_STORAGE", "kafka")
    with caplog.at_level(logging.INFO, logger=worker.__name__):
        assert worker.run_worker(_parse("worker")) == 2
    assert caplog.messages == [
        "worker settings from CONNECT_* variables: config.storage",
        "invalid worker config: bootstrap.servers: is required with config.storage=kafka",
    ]


@pytest.mark.parametrize(
    ("mm2", "logged"),
    [
        (None, "invalid MirrorMaker 2 config: mm2 file: cannot read "),
        ("a.bootstrap.servers=a:9092\n", "invalid MirrorMaker 2 config: clusters: is required"),
        ("clusters=a,b\na.bootstrap.servers=a:1\nb.bootstrap.servers=b:1\na->b.enabled=true\n",
         "invalid MirrorMaker 2 config: connector.type: flow a->b does not set it"),
    ],
    ids=["missing", "no-clusters", "no-connector-type"],
)  # fmt: skip
def test_a_refused_mm2_file_exits_2_before_the_worker_config_is_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, mm2: str | None, logged: str
) -> None:
    path = tmp_path / "mm2.properties"
    if mm2 is not None:
        path.write_text(mm2)
    args = _parse("mm2", str(path), "--worker-config", str(tmp_path / "not-read.properties"))
    assert worker.run_mm2(args) == 2
    assert caplog.messages[-1].startswith(logged), caplog.messages


def test_mm2_keeps_its_store_under_the_data_dir_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MIRROR_SINK_DATA_DIR", str(tmp_path / "data"))
    path = tmp_path / "mm2.properties"
    path.write_text(
        "clusters=a,b\na.bootstrap.servers=a:1\nb.bootstrap.servers=b:1\na->b.enabled=true\nconnector.type=sink\n"
    )
    args = _parse("mm2", str(path), "--listeners", "gopher://:70")  # refused after the flows are read
    assert worker.run_mm2(args) == 2
    assert args.data_dir == str(tmp_path / "data" / "mm2")
    assert caplog.messages[-1].startswith("invalid MirrorMaker 2 config: listeners: 'gopher://:70'")


def test_connector_files_are_declared_in_name_order_and_only_json_ones(tmp_path: Path) -> None:
    for name in ("b", "a"):
        (tmp_path / f"{name}.json").write_text(json.dumps({"name": f"mirror-{name}", "config": {"tasks.max": "1"}}))
    (tmp_path / "notes.txt").write_text("not a connector")
    herder = Declared()
    worker._apply_connector_files(cast(Herder, herder), tmp_path)
    assert herder.declared == [("mirror-a", {"tasks.max": "1"}), ("mirror-b", {"tasks.max": "1"})]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not a connector config (JSONDecodeError("),
        (json.dumps({"name": "m"}), "not a connector config (KeyError('config'))"),
        (json.dumps(["m"]), "not a connector config (TypeError("),
        (json.dumps({"name": "refused", "config": {}}), "(connector refused): Connector configuration is invalid"),
    ],
    ids=["not-json", "no-config", "not-an-object", "refused"],
)
def test_a_connector_file_refused_names_the_file_and_why(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "c.json").write_text(content)
    with pytest.raises(ConfigError) as refused:
        worker._apply_connector_files(cast(Herder, Declared(frozenset({"refused"}))), tmp_path)
    assert refused.value.key == "connectors.config.dir"
    assert refused.value.message.startswith(f"{tmp_path / 'c.json'}")
    assert message in refused.value.message


def test_a_connectors_config_dir_that_is_not_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"connectors.config.dir: .*/missing is not a directory"):
        worker._apply_connector_files(cast(Herder, Declared()), tmp_path / "missing")
