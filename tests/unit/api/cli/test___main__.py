"""``api.cli.__main__``: ``python -m api.cli`` is the ``mirror-sink`` command, run in-process here with
its argv: the verb's exit code is the process's, and argparse's own exits (``--version``, a verb it
does not know) pass through. glibc's allocator is left alone (``tune_malloc`` replaced)."""

from __future__ import annotations

import io
import runpy
import sys
from pathlib import Path

import pytest

from api.cli import main as cli_main
from mirror_sink import __version__

pytestmark = pytest.mark.unit


def _python_m_api_cli(monkeypatch: pytest.MonkeyPatch, *argv: str) -> int | str | None:
    """What ``python -m api.cli ARGV`` exits with."""
    tuned: list[bool] = []

    def tune_malloc() -> bool:
        tuned.append(True)
        return True

    monkeypatch.setattr(cli_main, "tune_malloc", tune_malloc)
    monkeypatch.setattr(sys, "argv", ["mirror-sink", *argv])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("api.cli", run_name="__main__", alter_sys=True)
    assert tuned == [True], "the allocator is tuned once, before anything else runs"
    return exited.value.code


def test_version_prints_the_command_and_its_version_and_exits_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _python_m_api_cli(monkeypatch, "--version") == 0
    assert capsys.readouterr().out == f"mirror-sink {__version__}\n"


def test_a_verb_it_does_not_know_exits_2_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _python_m_api_cli(monkeypatch, "frobnicate") == 2
    assert "argument verb: invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_no_verb_exits_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert _python_m_api_cli(monkeypatch) == 2
    assert "the following arguments are required: verb" in capsys.readouterr().err


def test_the_verbs_exit_code_is_the_processs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("secret\n"))
    assert _python_m_api_cli(monkeypatch, "passwd", str(tmp_path), "bad:user") == 2
    assert any("passwd: invalid username 'bad:user'" in m for m in caplog.messages)
