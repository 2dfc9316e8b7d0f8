"""``api.cli.spark``: ``mirror-sink spark CONFIG``: its options and their defaults, a negative cap refused by
argparse, a config that cannot be read exit 2, and what the verb hands the Spark driver (``run_query``,
replaced here: it is where Spark and the clusters start) and how it turns the driver's refusals into
exit codes."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from api.cli import spark
from mirror_sink.core.base.errors import ConfigError, TaskFailure

pytestmark = pytest.mark.unit

CONFIG = {
    "name": "orders-mirror",
    "runtime": "spark",
    "source.cluster.bootstrap.servers": "east:9092",
    "target.cluster.bootstrap.servers": "west:9092",
}


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mirror-sink")
    spark.add_parser(parser.add_subparsers(dest="verb", required=True))
    return parser.parse_args(list(argv))


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "orders.json"
    path.write_text(json.dumps({"name": "orders-mirror", "config": CONFIG}))
    return path


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Each query the verb would run: its props and keyword arguments (exit code 0)."""
    calls: list[dict[str, Any]] = []

    def run_query(props: dict[str, str], **kwargs: Any) -> int:
        calls.append({"props": props, **kwargs})
        return 0

    monkeypatch.setattr(spark, "run_query", run_query)
    return calls


def test_the_defaults_are_embedded_spark_available_now_without_caps() -> None:
    args = _parse("spark", "c.json")
    assert (args.config, args.master, args.checkpoint, args.trigger) == (
        Path("c.json"),
        "local[*]",
        None,
        "available-now",
    )
    assert (args.max_records_per_trigger, args.max_bytes_per_trigger, args.func) == (0, 0, spark.main)


@pytest.mark.parametrize("option", ["--max-records-per-trigger", "--max-bytes-per-trigger"])
def test_a_negative_or_non_numeric_cap_is_refused_by_argparse(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("-1", "lots"):
        with pytest.raises(SystemExit) as exited:
            _parse("spark", "c.json", option, bad)
        assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: -1 is negative (0 means no cap)" in err
    assert "'lots'" in err


def test_a_config_that_cannot_be_read_exits_2_and_runs_no_query(
    tmp_path: Path, queries: list[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "broken.json").write_text("{not json")
    for name, reason in (("missing.json", "cannot read"), ("broken.json", "is not valid JSON")):
        caplog.clear()
        assert spark.main(_parse("spark", str(tmp_path / name))) == 2
        assert caplog.messages[0].startswith("invalid connector config: config file: ")
        assert reason in caplog.messages[0]
    assert not queries


def test_the_query_gets_the_config_the_options_and_a_checkpoint_under_the_data_dir_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, queries: list[dict[str, Any]]
) -> None:
    monkeypatch.setenv("MIRROR_SINK_DATA_DIR", str(tmp_path / "data"))
    config = _config(tmp_path)
    assert (
        spark.main(_parse("spark", str(config), "--trigger", "processing-time:10s", "--max-bytes-per-trigger", "5"))
        == 0
    )
    assert spark.main(_parse("spark", str(config), "--master", "submit", "--checkpoint", str(tmp_path / "cp"))) == 0
    first, second = queries
    assert first == {
        "props": {**CONFIG, "name": "orders-mirror"},
        "master": "local[*]",
        "checkpoint": tmp_path / "data" / "spark-checkpoints" / "orders-mirror",
        "trigger": "processing-time:10s",
        "max_records": 0,
        "max_bytes": 5,
    }
    assert (second["master"], second["checkpoint"]) == (None, tmp_path / "cp"), (
        "submit leaves the master to spark-submit"
    )


@pytest.mark.parametrize(
    ("refusal", "code", "logged"),
    [
        (ConfigError("runtime", "is worker"), 2, "invalid connector config: runtime: is worker"),
        (TaskFailure("a worker runs this connector"), 1, "cannot run on Spark: a worker runs this connector"),
    ],
)
def test_the_drivers_refusals_are_exit_2_for_the_config_and_1_for_the_rest(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    refusal: Exception,
    code: int,
    logged: str,
) -> None:
    def run_query(props: dict[str, str], **kwargs: Any) -> int:
        raise refusal

    monkeypatch.setattr(spark, "run_query", run_query)
    with caplog.at_level(logging.ERROR, logger=spark.__name__):
        assert spark.main(_parse("spark", str(_config(tmp_path)))) == code
    assert caplog.messages == [logged]
