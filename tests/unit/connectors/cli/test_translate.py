"""``connectors.cli.translate``: ``mirror-sink translate CONFIG``: what to translate checked before the
config is read, a config refused or without offset syncs exit 2 before the target is read, and then
(the translator and the checkpoint rewrite answering from the test here) exit 0 when every offset is
exact and 1 when one is not or the target cannot be read, printed as lines or as JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from connectors.cli import translate
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.failover.checkpoints.offset_translator import Direction, Outcome, TopicOffset, TranslatedOffset
from mirror_sink.failover.checkpoints.spark_checkpoint import CheckpointRefused
from tests.unit.connectors.cli.verbs import broken_file, config_file, invalid_file, parse, run

pytestmark = pytest.mark.unit

EXACT = TranslatedOffset(TopicOffset("orders", 0, 10), Outcome.EXACT, TopicOffset("east.orders", 0, 7), "synced")
MISSING = TranslatedOffset(TopicOffset("audit", 1, 5), Outcome.NOT_MIRRORED, None, "not a mirrored topic")


class Translators:
    """``OffsetTranslator`` as the test says the offset syncs answer: each one made, asked and closed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.answers: list[TranslatedOffset] = [EXACT]
        self.failure: Exception | None = None
        self.asked: list[tuple[list[TopicOffset], Direction]] = []
        self.closed = 0
        self.made: list[MirrorSinkConfig] = []
        translators = self

        class Translator:
            def __init__(self, config: MirrorSinkConfig) -> None:
                translators.made.append(config)

            def translate(self, asked: Sequence[TopicOffset], direction: Direction) -> list[TranslatedOffset]:
                translators.asked.append((list(asked), direction))
                if translators.failure is not None:
                    raise translators.failure
                return translators.answers

            def close(self) -> None:
                translators.closed += 1

        monkeypatch.setattr(translate, "OffsetTranslator", Translator)


@pytest.fixture
def translators(monkeypatch: pytest.MonkeyPatch) -> Translators:
    return Translators(monkeypatch)


def test_the_verb_translates_source_to_target_as_lines_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(translate, "translate", "c.json", "--offset", "orders:0:10")
    assert (args.config, args.offset, args.direction, args.json, args.func) == (
        Path("c.json"),
        [TopicOffset("orders", 0, 10)],
        "source-to-target",
        False,
        translate.main,
    )
    assert (args.spark_checkpoint, args.out, args.dry_run) == (None, None, False)
    with pytest.raises(SystemExit):
        parse(translate, "translate", "c.json", "--direction", "sideways")
    assert "argument --direction: invalid choice: 'sideways'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "refusal"),
    [
        ((), "--offset: name at least one TOPIC:PARTITION:OFFSET, or --spark-checkpoint DIR"),
        (("--spark-checkpoint", "cp"), "--spark-checkpoint: takes --out DIR (or --dry-run) and no --offset"),
        (("--spark-checkpoint", "cp", "--out", "o", "--offset", "orders:0:1"),
         "--spark-checkpoint: takes --out DIR (or --dry-run) and no --offset"),
    ],
    ids=["nothing-to-translate", "checkpoint-without-out", "checkpoint-and-offsets"],
)  # fmt: skip
def test_what_to_translate_is_checked_before_the_config_is_read(
    tmp_path: Path, translators: Translators, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], refusal: str
) -> None:
    assert run(translate, "translate", str(tmp_path / "missing.json"), *argv) == 2
    assert capsys.readouterr().out == f"translate refused: {refusal}\n"
    assert not translators.made


def test_a_config_refused_exits_2_naming_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path in (tmp_path / "missing.json", broken_file(tmp_path), invalid_file(tmp_path)):
        assert run(translate, "translate", str(path), "--offset", "orders:0:1") == 2
    assert [line.split(":")[1].strip() for line in capsys.readouterr().out.splitlines()] == [
        "config file",
        "config file",
        "target.cluster.bootstrap.servers",
    ]


def test_a_connector_without_offset_syncs_cannot_translate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = config_file(tmp_path, **{"emit.offset-syncs.enabled": "false"})
    assert run(translate, "translate", str(config), "--offset", "orders:0:1") == 2
    assert capsys.readouterr().out.startswith(
        "translate refused: emit.offset-syncs.enabled: offsets can only be translated with the offset syncs"
    )


def test_every_offset_exact_exits_0_and_each_answer_is_a_line(
    tmp_path: Path, translators: Translators, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("--offset", "orders:0:10", "--direction", "target-to-source")
    assert run(translate, "translate", str(config_file(tmp_path)), *argv) == 0
    assert translators.asked == [([TopicOffset("orders", 0, 10)], Direction.TARGET_TO_SOURCE)]
    assert [c.name for c in translators.made] == ["orders-mirror"] and translators.closed == 1
    assert capsys.readouterr().out == "orders-0@10 -> east.orders-0@7  exact  synced\n"


def test_an_offset_without_an_exact_answer_exits_1_and_json_says_so(
    tmp_path: Path, translators: Translators, capsys: pytest.CaptureFixture[str]
) -> None:
    translators.answers = [EXACT, MISSING]
    argv = ("--offset", "orders:0:10", "--offset", "audit:1:5", "--json")
    assert run(translate, "translate", str(config_file(tmp_path)), *argv) == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed == {"direction": "source-to-target", "offsets": [EXACT.to_dict(), MISSING.to_dict()]}
    assert printed["offsets"][1]["translated"] is None


@pytest.mark.parametrize(
    ("failure", "code"),
    [(TaskFailure("cannot read the offset syncs"), 1), (ConfigError("topic", "unknown"), 2)],
    ids=["target-unreadable", "config"],
)
def test_a_translation_that_fails_closes_the_translator_and_exits_by_its_kind(
    tmp_path: Path, translators: Translators, capsys: pytest.CaptureFixture[str], failure: Exception, code: int
) -> None:
    translators.failure = failure
    assert run(translate, "translate", str(config_file(tmp_path)), "--offset", "orders:0:1") == code
    assert capsys.readouterr().out == f"translate refused: {failure}\n"
    assert translators.closed == 1


class _Rewrite:
    def lines(self) -> list[str]:
        return ["batch 7: 2 offsets translated exactly"]

    def to_dict(self) -> dict[str, Any]:
        return {"batches": [7]}


def test_a_dry_run_of_a_spark_checkpoint_names_its_target_beside_it_and_writes_nothing(
    tmp_path: Path, translators: Translators, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rewrites: list[tuple[Path, Path, bool]] = []

    def rewrite_checkpoint(translate: object, checkpoint: Path, out: Path, *, dry_run: bool) -> _Rewrite:
        rewrites.append((checkpoint, out, dry_run))
        return _Rewrite()

    monkeypatch.setattr(translate, "rewrite_checkpoint", rewrite_checkpoint)
    checkpoint = tmp_path / "query-cp"
    assert (
        run(translate, "translate", str(config_file(tmp_path)), "--spark-checkpoint", str(checkpoint), "--dry-run") == 0
    )
    assert rewrites == [(checkpoint, tmp_path / "query-cp.target", True)]
    assert capsys.readouterr().out == "batch 7: 2 offsets translated exactly\n"
    assert translators.closed == 1


def test_a_spark_checkpoint_that_cannot_be_rewritten_exactly_exits_1(
    tmp_path: Path, translators: Translators, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def rewrite_checkpoint(*_: object, **__: object) -> _Rewrite:
        raise CheckpointRefused("batch 7: orders-0@10 is not-yet-mirrored")

    monkeypatch.setattr(translate, "rewrite_checkpoint", rewrite_checkpoint)
    argv = ("--spark-checkpoint", str(tmp_path / "cp"), "--out", str(tmp_path / "out"))
    assert run(translate, "translate", str(config_file(tmp_path)), *argv) == 1
    assert capsys.readouterr().out == "translate refused: batch 7: orders-0@10 is not-yet-mirrored\n"
