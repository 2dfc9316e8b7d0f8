"""``connectors.cli.verify``: ``mirror-sink verify CONFIG``: its options; a config refused, one without
offset syncs or a topics pattern that is not a regex exit 2 before any client is made; and then (the
verifier and the source transactions' check answering from the test here) exit 0 without a mismatch
and 1 on a mismatch, a partial source transaction or a cluster that cannot be read, the verifier
closed every time and the report written where asked."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connectors.cli import verify
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from tests.unit.connectors.cli.verbs import broken_file, config_file, invalid_file, parse, run

pytestmark = pytest.mark.unit


class _Report:
    def __init__(self, mismatches: int) -> None:
        self.mismatches = mismatches

    def table(self) -> str:
        return f"compared 10 records, {self.mismatches} mismatches"

    def to_json(self) -> str:
        return json.dumps({"mismatches": self.mismatches})


class _Check:
    def __init__(self, partial: bool) -> None:
        self.partial = partial

    def lines(self) -> list[str]:
        return ["source transaction 42 is on the target in part" if self.partial else "no partial transaction"]

    def to_dict(self) -> dict[str, Any]:
        return {"partial": self.partial}


class Verifiers:
    """``Verifier`` and ``check_copy`` as the test says the clusters answer: each verifier made, run and closed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.mismatches = 0
        self.partial = False
        self.failure: Exception | None = None
        self.made: list[tuple[str, float | None, str | None]] = []
        self.closed = 0
        self.checks: list[tuple[str, int, str]] = []
        verifiers = self

        class Verifier:
            def __init__(
                self, config: MirrorSinkConfig, *, max_bytes_per_s: float | None, topics: re.Pattern[str] | None
            ) -> None:
                verifiers.made.append((config.name, max_bytes_per_s, topics.pattern if topics else None))

            def run(self) -> _Report:
                if verifiers.failure is not None:
                    raise verifiers.failure
                return _Report(verifiers.mismatches)

            def close(self) -> None:
                verifiers.closed += 1

        def check_copy(config: MirrorSinkConfig, *, window: int, client_id: str) -> _Check:
            verifiers.checks.append((config.name, window, client_id))
            return _Check(verifiers.partial)

        monkeypatch.setattr(verify, "Verifier", Verifier)
        monkeypatch.setattr(verify, "check_copy", check_copy)


@pytest.fixture
def verifiers(monkeypatch: pytest.MonkeyPatch) -> Verifiers:
    return Verifiers(monkeypatch)


def test_the_verb_compares_every_synced_topic_uncapped_without_transactions_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = parse(verify, "verify", "c.json")
    assert (args.config, args.topics, args.max_bytes_per_second, args.report, args.func) == (
        Path("c.json"),
        None,
        None,
        None,
        verify.main,
    )
    assert (args.source_transactions, args.transactions_window) == (False, 10_000)
    with pytest.raises(SystemExit):
        parse(verify, "verify", "c.json", "--max-bytes-per-second", "fast")
    assert "argument --max-bytes-per-second: invalid float value: 'fast'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "argv", "reason"),
    [
        (lambda d: d / "missing.json", (), "config file: cannot read"),
        (broken_file, (), "config file: "),
        (invalid_file, (), "target.cluster.bootstrap.servers: is required"),
        (lambda d: config_file(d, **{"emit.offset-syncs.enabled": "false"}), (),
         "emit.offset-syncs.enabled: connector orders-mirror writes no offset syncs"),
        (config_file, ("--topics", "east.("), "missing ), unterminated subpattern"),
    ],
    ids=["missing", "not-json", "invalid", "no-offset-syncs", "bad-regex"],
)  # fmt: skip
def test_what_cannot_be_verified_exits_2_before_any_client_is_made(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    make: Callable[[Path], Path],
    argv: tuple[str, ...],
    reason: str,
) -> None:
    assert run(verify, "verify", str(make(tmp_path)), *argv) == 2
    assert capsys.readouterr().out.startswith(f"verify refused: {reason}")
    assert caplog.messages[0].startswith(f"cannot verify: {reason}")


def test_no_mismatch_exits_0_with_the_table_and_the_verifier_closed(
    tmp_path: Path, verifiers: Verifiers, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("--topics", "east\\.orders", "--max-bytes-per-second", "1e6")
    assert run(verify, "verify", str(config_file(tmp_path)), *argv) == 0
    assert verifiers.made == [("orders-mirror", 1e6, "east\\.orders")]
    assert (verifiers.closed, verifiers.checks) == (1, [])
    assert capsys.readouterr().out == "compared 10 records, 0 mismatches\n"


def test_a_mismatch_exits_1_and_the_report_is_written(
    tmp_path: Path, verifiers: Verifiers, capsys: pytest.CaptureFixture[str]
) -> None:
    verifiers.mismatches = 2
    report = tmp_path / "verify.json"
    assert run(verify, "verify", str(config_file(tmp_path)), "--report", str(report)) == 1
    assert json.loads(report.read_text()) == {"mismatches": 2}
    assert verifiers.closed == 1


def test_a_cluster_that_cannot_be_read_exits_1_and_still_closes_the_verifier(
    tmp_path: Path, verifiers: Verifiers, capsys: pytest.CaptureFixture[str]
) -> None:
    verifiers.failure = TaskFailure("the source does not answer")
    report = tmp_path / "verify.json"
    assert run(verify, "verify", str(config_file(tmp_path)), "--report", str(report), "--source-transactions") == 1
    assert capsys.readouterr().out == "verify failed: the source does not answer\n"
    assert verifiers.closed == 1 and not verifiers.checks and not report.exists()


@pytest.mark.parametrize(("partial", "code"), [(False, 0), (True, 1)])
def test_source_transactions_are_checked_when_asked_and_one_held_in_part_exits_1(
    tmp_path: Path, verifiers: Verifiers, capsys: pytest.CaptureFixture[str], partial: bool, code: int
) -> None:
    verifiers.partial = partial
    report = tmp_path / "verify.json"
    argv = ("--source-transactions", "--transactions-window", "500", "--report", str(report))
    assert run(verify, "verify", str(config_file(tmp_path)), *argv) == code
    assert verifiers.checks == [("orders-mirror", 500, "orders-mirror-verify")]
    assert capsys.readouterr().out.splitlines() == [
        "compared 10 records, 0 mismatches",
        *_Check(partial).lines(),
    ]
    assert json.loads(report.read_text()) == {"mismatches": 0, "source_transactions": {"partial": partial}}
