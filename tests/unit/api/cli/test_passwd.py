"""``api.cli.passwd``: ``mirror-sink passwd FILE USER``: the password read from a pipe (one line, its line
ending only taken off) or asked twice at a terminal, and every refusal exit 2 with its reason logged.
(The file written is ``api.rest_credentials``'s, tested in ``tests/unit/api/test_rest_credentials.py``.)"""

from __future__ import annotations

import argparse
import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from api import rest_credentials
from api.cli import passwd

pytestmark = pytest.mark.unit


class _Terminal(io.StringIO):
    """A stdin that is a terminal (nothing is read from it: the password is asked for)."""

    def isatty(self) -> bool:
        return True


class _FastHasher:
    """argon2's hasher without its 50 ms: what is written does not matter where nothing can be."""

    def hash(self, password: str) -> str:
        return f"$argon2id$fake${password}"


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mirror-sink")
    passwd.add_parser(parser.add_subparsers(dest="verb", required=True))
    return parser.parse_args(list(argv))


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Path, str, str]]]:
    """Each ``set_password`` the verb makes (the user new the first time, known after), hashing nothing."""
    calls: list[tuple[Path, str, str]] = []

    def set_password(path: Path, user: str, password: str) -> bool:
        calls.append((path, user, password))
        return len(calls) == 1

    monkeypatch.setattr(rest_credentials, "set_password", set_password)
    yield calls


def test_the_verb_takes_a_file_and_a_user_and_refuses_without_the_user(capsys: pytest.CaptureFixture[str]) -> None:
    args = _parse("passwd", "users.txt", "alice")
    assert (args.file, args.user, args.func) == (Path("users.txt"), "alice", passwd.main)
    with pytest.raises(SystemExit) as exited:
        _parse("passwd", "users.txt")
    assert exited.value.code == 2
    assert "the following arguments are required: user" in capsys.readouterr().err


def test_a_piped_password_is_one_line_that_loses_only_its_line_ending(
    monkeypatch: pytest.MonkeyPatch, written: list[tuple[Path, str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("  spaced out \r\nsecond line\n"))
    with caplog.at_level(logging.INFO, logger=passwd.__name__):
        assert passwd.main(_parse("passwd", "users.txt", "alice")) == 0
        monkeypatch.setattr("sys.stdin", io.StringIO("again\n"))
        assert passwd.main(_parse("passwd", "users.txt", "alice")) == 0
    assert written == [(Path("users.txt"), "alice", "  spaced out "), (Path("users.txt"), "alice", "again")]
    assert caplog.messages == ["added user alice in users.txt", "updated user alice in users.txt"]


def test_at_a_terminal_the_password_is_asked_twice(
    monkeypatch: pytest.MonkeyPatch, written: list[tuple[Path, str, str]]
) -> None:
    prompts: list[str] = []

    def getpass(prompt: str) -> str:
        prompts.append(prompt)
        return "correct horse"

    monkeypatch.setattr("sys.stdin", _Terminal())
    monkeypatch.setattr("getpass.getpass", getpass)
    assert passwd.main(_parse("passwd", "users.txt", "bob")) == 0
    assert prompts == ["Password: ", "Password again: "]
    assert written == [(Path("users.txt"), "bob", "correct horse")]


def test_two_different_answers_at_a_terminal_write_nothing_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, written: list[tuple[Path, str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    answers = iter(["correct horse", "battery staple"])
    monkeypatch.setattr("sys.stdin", _Terminal())
    monkeypatch.setattr("getpass.getpass", lambda _: next(answers))
    assert passwd.main(_parse("passwd", "users.txt", "bob")) == 2
    assert not written
    assert caplog.messages == ["passwd: the passwords do not match"]


@pytest.mark.parametrize(
    ("user", "password", "reason"),
    [
        ("bad:user", "pw", "passwd: invalid username 'bad:user'"),
        ("alice", "", "passwd: the password is empty"),
    ],
)
def test_a_refused_user_or_password_exits_2_with_the_reason_and_writes_no_file(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    user: str,
    password: str,
    reason: str,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(password + "\n"))
    assert passwd.main(_parse("passwd", str(tmp_path / "users"), user)) == 2
    assert caplog.messages[0].startswith(reason)
    assert not (tmp_path / "users").exists()


def test_a_file_that_cannot_be_written_exits_2_naming_the_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("pw\n"))
    monkeypatch.setattr(rest_credentials, "hasher", _FastHasher)
    assert passwd.main(_parse("passwd", str(tmp_path / "no-such-dir" / "users"), "alice")) == 2
    assert caplog.messages[0].startswith("passwd: [Errno 2] No such file or directory")
