"""``connectors.cli.drill``: ``mirror-sink drill CONFIG``: its options; a config refused, one without
offset syncs or a groups pattern that is not a regex exit 2 before any cluster is contacted; and the
drill's outcome (``Drill.run`` answering from the test here) exit 0 when passed and 1 when failed or
refused, with the reports written where asked."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from connectors.cli import drill
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.failover.rehearsal.drill import Drill, DrillRefused, DrillReport
from tests.unit.connectors.cli.verbs import broken_file, config_file, invalid_file, parse, run

pytestmark = pytest.mark.unit


def test_the_verb_defaults_to_10_canary_records_the_last_1000_offsets_and_no_kept_groups() -> None:
    args = parse(drill, "drill", "c.json")
    assert (args.config, args.groups, args.canary, args.verify_last, args.keep, args.func) == (
        Path("c.json"),
        None,
        10,
        1000,
        False,
        drill.main,
    )
    given = parse(drill, "drill", "c.json", "--groups", "billing-.*", "--canary", "3", "--verify-last", "50", "--keep")
    assert (given.groups, given.canary, given.verify_last, given.keep) == ("billing-.*", 3, 50, True)


@pytest.mark.parametrize(
    ("make", "argv", "reason"),
    [
        (lambda d: d / "missing.json", (), "config file: cannot read"),
        (broken_file, (), "config file: "),
        (invalid_file, (), "target.cluster.bootstrap.servers: is required"),
        (lambda d: config_file(d, **{"emit.offset-syncs.enabled": "false"}), (),
         "emit.offset-syncs.enabled: connector orders-mirror writes no offset syncs"),
        (config_file, ("--groups", "billing-("), "missing ), unterminated subpattern"),
    ],
    ids=["missing", "not-json", "invalid", "no-offset-syncs", "bad-regex"],
)  # fmt: skip
def test_what_cannot_drill_exits_2_before_any_cluster_is_read(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    make: Callable[[Path], Path],
    argv: tuple[str, ...],
    reason: str,
) -> None:
    ran: list[Drill] = []

    def drilled(self: Drill) -> DrillReport:
        ran.append(self)
        return DrillReport("d1", "orders-mirror", "2026-01-01T00:00:00+00:00")

    monkeypatch.setattr(Drill, "run", drilled)
    path = make(tmp_path)
    assert run(drill, "drill", str(path), *argv) == 2
    assert capsys.readouterr().out.startswith(f"drill refused: {reason}")
    assert caplog.messages[0].startswith(f"cannot drill: {reason}")
    assert not ran


@pytest.mark.parametrize("refusal", [DrillRefused("the mirror is STOPPED"), TaskFailure("the target does not answer")])
def test_a_drill_refused_while_running_exits_1_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], refusal: Exception
) -> None:
    def refuse(self: Drill) -> DrillReport:
        raise refusal

    monkeypatch.setattr(Drill, "run", refuse)
    assert run(drill, "drill", str(config_file(tmp_path))) == 1
    assert capsys.readouterr().out == f"drill refused: {refusal}\n"


@pytest.mark.parametrize(("failures", "code"), [([], 0), (["canary of billing differs at offset 12"], 1)])
def test_the_drills_outcome_is_the_exit_code_and_its_reports_go_where_asked(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    failures: list[str],
    code: int,
) -> None:
    drills: list[Drill] = []

    def drilled(self: Drill) -> DrillReport:
        drills.append(self)
        return DrillReport("d1", self.config.name, "2026-01-01T00:00:00+00:00", failures=list(failures))

    monkeypatch.setattr(Drill, "run", drilled)
    report, markdown = tmp_path / "drill.json", tmp_path / "drill.md"
    argv = ("--groups", "billing-.*", "--canary", "3", "--report", str(report), "--markdown", str(markdown))
    assert run(drill, "drill", str(config_file(tmp_path)), *argv) == code
    (made,) = drills
    assert (made.pattern.pattern if made.pattern else None, made.canary, made.verify_last, made.keep) == (
        "billing-.*",
        3,
        1000,
        False,
    )
    printed = capsys.readouterr().out
    assert printed.startswith(f"# DR drill d1 of orders-mirror: {'PASSED' if code == 0 else 'FAILED'}")
    assert markdown.read_text() == printed
    assert json.loads(report.read_text())["outcome"] == ("passed" if code == 0 else "failed")
