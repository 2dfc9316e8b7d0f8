"""``api.cli.standalone``: ``mirror-sink run CONFIG``: its options, and a config refused (unreadable, not
JSON, invalid, naming another connector class) exit 2 before the connector is made or any signal
handler, metrics port or cluster is touched."""

from __future__ import annotations

import argparse
import json
import signal
import socket
from pathlib import Path

import pytest

from api.cli import standalone

pytestmark = pytest.mark.unit

CONFIG = {
    "name": "orders-mirror",
    "source.cluster.bootstrap.servers": "east:9092",
    "target.cluster.bootstrap.servers": "west:9092",
}


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mirror-sink")
    standalone.add_parser(parser.add_subparsers(dest="verb", required=True))
    return parser.parse_args(list(argv))


def test_the_worker_id_is_the_host_name_unless_given_and_metrics_are_off_by_default() -> None:
    args = _parse("run", "c.json")
    assert (args.config, args.worker_id, args.metrics_port, args.func) == (
        Path("c.json"),
        socket.gethostname(),
        None,
        standalone.main,
    )
    given = _parse("run", "c.properties", "--worker-id", "mirror-0", "--metrics-port", "9404")
    assert (given.worker_id, given.metrics_port) == ("mirror-0", 9404)


def test_a_metrics_port_that_is_not_a_number_is_refused_by_argparse(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _parse("run", "c.json", "--metrics-port", "http")
    assert exited.value.code == 2
    assert "argument --metrics-port: invalid int value: 'http'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "logged"),
    [
        (None, "invalid connector config: config file: cannot read "),
        ("{not json", "invalid connector config: config file: "),
        (json.dumps(["a", "list"]), "invalid connector config: config file: "),
        (json.dumps({"name": "m", "config": {"source.cluster.bootstrap.servers": "east:9092"}}),
         "invalid connector config: target.cluster.bootstrap.servers: is required"),
        (json.dumps({**CONFIG, "connector.class": "FileStreamSinkConnector"}),
         "invalid connector config: connector.class: unknown connector class 'FileStreamSinkConnector'"),
    ],
    ids=["missing", "not-json", "not-an-object", "invalid", "another-class"],
)  # fmt: skip
def test_a_refused_config_exits_2_before_any_signal_handler_is_installed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: str | None, logged: str
) -> None:
    path = tmp_path / "connector.json"
    if content is not None:
        path.write_text(content)
    handlers = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    assert standalone.main(_parse("run", str(path))) == 2
    assert [m for m in caplog.messages if m.startswith(logged)], caplog.messages
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == handlers


def test_a_properties_file_is_read_as_properties(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "connector.properties"
    path.write_text("name=orders-mirror\nsource.cluster.bootstrap.servers=east:9092\n")
    assert standalone.main(_parse("run", str(path))) == 2
    assert caplog.messages[0].startswith("invalid connector config: target.cluster.bootstrap.servers: is required")
