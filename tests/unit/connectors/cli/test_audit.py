"""``connectors.cli.audit``: ``mirror-sink audit CONFIG``: a config refused exit 2; the kept drills read
from the connector's drills topic on the target (``read_drills`` answering from the test here), exit 0
when their hash chain holds and 1 when a link is broken or the target cannot be read, with the
reports written where asked."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from connectors.cli import audit
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.failover.rehearsal.audit import report_sha256
from tests.unit.connectors.cli.verbs import broken_file, config_file, invalid_file, parse, run

pytestmark = pytest.mark.unit


def _chain() -> list[dict[str, Any]]:
    first = {"drill_id": "d1", "started": "2026-01-01T00:00:00+00:00", "outcome": "passed", "previous_sha256": None}
    second = {"drill_id": "d2", "started": "2026-01-02T00:00:00+00:00", "outcome": "passed"}
    return [first, {**second, "previous_sha256": report_sha256(first)}]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    """Each read of the kept drills (topic, connector, client id), answering ``_chain`` unless a test says."""
    calls: list[tuple[str, str, str]] = []

    def read_drills(props: Mapping[str, str], topic: str, connector: str, client_id: str) -> list[dict[str, Any]]:
        calls.append((topic, connector, client_id))
        return _chain()

    monkeypatch.setattr(audit, "read_drills", read_drills)
    return calls


def test_the_verb_shows_the_last_20_by_default_and_takes_only_a_number(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(audit, "audit", "c.json")
    assert (args.config, args.last, args.report, args.markdown, args.func) == (
        Path("c.json"),
        20,
        None,
        None,
        audit.main,
    )
    with pytest.raises(SystemExit) as exited:
        parse(audit, "audit", "c.json", "--last", "all")
    assert exited.value.code == 2 and "argument --last: invalid int value: 'all'" in capsys.readouterr().err


def test_a_config_refused_exits_2_and_reads_nothing(
    tmp_path: Path, reads: list[tuple[str, str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    for path in (tmp_path / "missing.json", broken_file(tmp_path), invalid_file(tmp_path)):
        assert run(audit, "audit", str(path)) == 2
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0:2] for line in out] == [
        ["audit refused", " config file"],
        ["audit refused", " config file"],
        ["audit refused", " target.cluster.bootstrap.servers"],
    ]
    assert not reads


def test_an_intact_chain_exits_0_and_writes_both_reports_where_asked(
    tmp_path: Path, reads: list[tuple[str, str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    report, markdown = tmp_path / "audit.json", tmp_path / "audit.md"
    code = run(
        audit, "audit", str(config_file(tmp_path)), "--last", "1", "--report", str(report), "--markdown", str(markdown)
    )
    assert code == 0
    assert reads == [("mirror-sink-drills.east.internal", "orders-mirror", "orders-mirror-audit")]
    printed = capsys.readouterr().out
    assert "2 drills kept; the last 1 below. Hash chain: **intact**." in printed
    assert markdown.read_text() == printed
    written = json.loads(report.read_text())
    assert (written["chain_intact"], written["drills_kept"], [e["drill_id"] for e in written["entries"]]) == (
        True,
        2,
        ["d2"],
    )


def test_a_broken_link_exits_1_naming_the_drill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _chain()
    monkeypatch.setattr(audit, "read_drills", lambda *_: [{**first, "outcome": "edited"}, second])
    assert run(audit, "audit", str(config_file(tmp_path))) == 1
    printed = capsys.readouterr().out
    assert "Hash chain: **BROKEN (1)**" in printed
    assert "- d2 (2026-01-02T00:00:00+00:00): the report before it was deleted or edited" in printed


def test_a_target_that_cannot_be_read_exits_1_and_writes_no_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def read_drills(*_: object) -> list[dict[str, Any]]:
        raise TaskFailure("the target does not answer")

    monkeypatch.setattr(audit, "read_drills", read_drills)
    report = tmp_path / "audit.json"
    assert run(audit, "audit", str(config_file(tmp_path)), "--report", str(report)) == 1
    assert capsys.readouterr().out == "audit failed: the target does not answer\n"
    assert not report.exists()
