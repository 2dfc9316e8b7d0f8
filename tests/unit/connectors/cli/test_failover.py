"""``connectors.cli.failover``: ``mirror-sink failover CONFIG``: its options; a config refused or a groups
pattern that is not a regex exit 2 before any cluster is contacted; and what the verb asks of
``Failover`` and prints, in order (``Switch`` answers for the clusters here): a dry run commits nothing,
a refusal is exit 1 and says when the source stays fenced, ``--fence-source`` fences before the plan
and reports late records after, and ``--lift-source-fence`` does nothing else."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from connectors.cli import failover
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.failover.switch.failover import Failover
from mirror_sink.failover.switch.failover_plan import FailoverPlan, FailoverRefused
from tests.unit.connectors.cli.verbs import broken_file, config_file, invalid_file, parse, run

pytestmark = pytest.mark.unit

TOPICS = ["orders", "payments"]


class Switch:
    """``Failover``'s cluster-facing steps as the test says the clusters answer, each call recorded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[object, ...]] = []
        #: What ``plan`` (or ``mirrored_topics``) raises, and the topics the fence denied writes to before.
        self.refusal: Exception | None = None
        self.denied: tuple[str, ...] = ()
        self.late: list[str] = []
        switch = self

        def fence_source(failover: Failover, groups: str | None, *, dry_run: bool) -> None:
            switch.calls.append(("fence_source", groups, dry_run))
            failover.write_denied = switch.denied

        def plan(failover: Failover, groups: str | None, wait_caught_up_s: float) -> FailoverPlan:
            switch.calls.append(("plan", groups, wait_caught_up_s))
            if switch.refusal is not None:
                raise switch.refusal
            return FailoverPlan("planned", [])

        def commit(failover: Failover, plan: FailoverPlan) -> int:
            switch.calls.append(("commit", plan.mode))
            return 3

        def late_records(failover: Failover, plan: FailoverPlan) -> list[str]:
            switch.calls.append(("late_records",))
            return switch.late

        def mirrored_topics(failover: Failover) -> list[str]:
            switch.calls.append(("mirrored_topics",))
            if switch.refusal is not None:
                raise switch.refusal
            return TOPICS

        def lift(config: MirrorSinkConfig, topics: list[str], client_id: str) -> int:
            switch.calls.append(("lift", config.name, topics, client_id))
            return len(topics)

        for name, step in (
            ("fence_source", fence_source),
            ("plan", plan),
            ("commit", commit),
            ("late_records", late_records),
            ("mirrored_topics", mirrored_topics),
        ):
            monkeypatch.setattr(Failover, name, step)
        monkeypatch.setattr(failover, "lift", lift)


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> Switch:
    return Switch(monkeypatch)


def test_the_verb_moves_the_configs_groups_at_once_and_commits_by_default() -> None:
    args = parse(failover, "failover", "c.json")
    assert (args.config, args.groups, args.dry_run, args.wait_caught_up, args.func) == (
        Path("c.json"),
        None,
        False,
        0.0,
        failover.main,
    )
    assert (args.fence_source, args.lift_source_fence) == (False, False)
    assert parse(failover, "failover", "c.json", "--wait-caught-up", "2.5").wait_caught_up == 2.5
    with pytest.raises(SystemExit):
        parse(failover, "failover", "c.json", "--wait-caught-up", "soon")


@pytest.mark.parametrize(
    ("make", "argv", "logged"),
    [
        (lambda d: d / "missing.json", (), "invalid connector config: config file: cannot read"),
        (broken_file, (), "invalid connector config: config file: "),
        (invalid_file, (), "invalid connector config: target.cluster.bootstrap.servers: is required"),
        (config_file, ("--groups", "billing-("), "invalid --groups regex 'billing-(': missing ), unterminated"),
    ],
    ids=["missing", "not-json", "invalid", "bad-regex"],
)
def test_what_cannot_fail_over_exits_2_before_any_step(
    tmp_path: Path,
    switch: Switch,
    caplog: pytest.LogCaptureFixture,
    make: Callable[[Path], Path],
    argv: tuple[str, ...],
    logged: str,
) -> None:
    path = make(tmp_path)
    assert run(failover, "failover", str(path), *argv) == 2
    assert caplog.messages[0].startswith(logged), caplog.messages
    assert not switch.calls


def test_a_dry_run_prints_the_plan_and_commits_nothing(
    tmp_path: Path, switch: Switch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("--groups", "billing-.*", "--wait-caught-up", "30", "--dry-run")
    assert run(failover, "failover", str(config_file(tmp_path)), *argv) == 0
    assert switch.calls == [("plan", "billing-.*", 30.0)]
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "group",
        "topic",
        "partition",
        "source",
        "offset",
        "->",
        "target",
        "offset",
        "records",
        "behind",
    ]
    assert out[-1] == "dry run: nothing committed"


def test_a_failover_commits_the_plan_and_says_how_many_groups_moved(
    tmp_path: Path, switch: Switch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(failover, "failover", str(config_file(tmp_path))) == 0
    assert switch.calls == [("plan", None, 0.0), ("commit", "planned")]
    assert capsys.readouterr().out.splitlines()[-1] == "failover done: 3 groups moved (planned mode)"


@pytest.mark.parametrize(
    "refusal", [FailoverRefused("group billing is active on the target"), TaskFailure("no leader")]
)
def test_a_refused_failover_exits_1_saying_why_and_commits_nothing(
    tmp_path: Path, switch: Switch, capsys: pytest.CaptureFixture[str], refusal: Exception
) -> None:
    switch.refusal = refusal
    assert run(failover, "failover", str(config_file(tmp_path))) == 1
    assert capsys.readouterr().out == f"failover refused: {refusal}\n"
    assert ("commit", "planned") not in switch.calls


def test_a_failover_refused_after_fencing_says_the_source_stays_fenced_and_how_to_go_on(
    tmp_path: Path, switch: Switch, capsys: pytest.CaptureFixture[str]
) -> None:
    switch.denied, switch.refusal = ("orders", "payments"), FailoverRefused("the mirror did not catch up")
    assert run(failover, "failover", str(config_file(tmp_path)), "--fence-source") == 1
    assert switch.calls == [("fence_source", None, False), ("plan", None, 0.0)]
    assert capsys.readouterr().out.splitlines() == [
        "failover refused: the mirror did not catch up",
        "the source stays fenced (writes denied on orders, payments): run the failover again to finish it, "
        "or lift the fence with --lift-source-fence",
    ]


@pytest.mark.parametrize(
    ("late", "summary"),
    [
        ([], "records written on the source after the cut: none"),
        (["orders-0: offsets 120..121"], "records written on the source after the cut: on 1 partitions (not lost: "
         "the mirror copies them while it runs, a failback keeps them after)"),
    ],
    ids=["none-late", "late-on-one-partition"],
)  # fmt: skip
def test_fencing_comes_before_the_plan_and_late_records_are_reported_after_the_commit(
    tmp_path: Path, switch: Switch, capsys: pytest.CaptureFixture[str], late: list[str], summary: str
) -> None:
    switch.late = late
    assert run(failover, "failover", str(config_file(tmp_path)), "--fence-source", "--groups", "billing") == 0
    assert switch.calls == [
        ("fence_source", "billing", False),
        ("plan", "billing", 0.0),
        ("commit", "planned"),
        ("late_records",),
    ]
    out = capsys.readouterr().out.splitlines()
    assert out[-1 - len(late) - 1 :] == [
        "failover done: 3 groups moved (planned mode)",
        *(f"late: {line}" for line in late),
        summary,
    ]


def test_lifting_the_fence_does_only_that_and_a_dry_run_only_says_what_it_would_lift(
    tmp_path: Path, switch: Switch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(config_file(tmp_path))
    assert run(failover, "failover", config, "--lift-source-fence", "--dry-run") == 0
    assert capsys.readouterr().out == "dry run: would lift the write fence on orders, payments\n"
    assert run(failover, "failover", config, "--lift-source-fence") == 0
    assert capsys.readouterr().out == "lifted 2 DENY WRITE ACLs on orders, payments\n"
    assert switch.calls == [
        ("mirrored_topics",),
        ("mirrored_topics",),
        ("lift", "orders-mirror", TOPICS, "orders-mirror-failover"),
    ]


def test_a_fence_that_cannot_be_lifted_exits_1_saying_why(
    tmp_path: Path, switch: Switch, capsys: pytest.CaptureFixture[str]
) -> None:
    switch.refusal = TaskFailure("the source does not answer")
    assert run(failover, "failover", str(config_file(tmp_path)), "--lift-source-fence") == 1
    assert capsys.readouterr().out == "lifting the source fence refused: the source does not answer\n"
    assert switch.calls == [("mirrored_topics",)]
