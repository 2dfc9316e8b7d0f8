"""exit_now: what leaving at once does, with ``os._exit`` replaced so the test process stays: it says
what it leaves behind, flushes the logs and both standard streams, and only then exits with the code
given, never returning to its caller."""

from __future__ import annotations

import io
import logging
import os
import sys

import pytest

from mirror_sink.core.runtime import process_exit
from mirror_sink.core.runtime.process_exit import exit_now

pytestmark = pytest.mark.unit


class _Exited(BaseException):
    """What the replaced ``os._exit`` raises, carrying its code."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class _Stream(io.StringIO):
    def __init__(self, name: str, journal: list[str]) -> None:
        super().__init__()
        self._name = name
        self._journal = journal

    def flush(self) -> None:
        self._journal.append(f"flush {self._name}")
        super().flush()


@pytest.fixture
def journal(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What exit_now did, in order; ``os._exit`` raises ``_Exited`` instead of ending the process."""
    events: list[str] = []

    def fake_exit(code: int) -> None:
        events.append(f"exit {code}")
        raise _Exited(code)

    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(logging, "shutdown", lambda: events.append("logging.shutdown"))
    return events


def _streams(monkeypatch: pytest.MonkeyPatch, journal: list[str]) -> None:
    """Standard streams that note their flushes (set in the test itself: pytest's capture replaces
    ``sys.stdout`` and ``sys.stderr`` between a fixture's setup and the test's call)."""
    monkeypatch.setattr(sys, "stdout", _Stream("stdout", journal))
    monkeypatch.setattr(sys, "stderr", _Stream("stderr", journal))


def test_it_exits_with_the_code_given_after_flushing_the_logs_and_both_streams(
    journal: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _streams(monkeypatch, journal)
    with pytest.raises(_Exited) as exited:
        exit_now(3, "tasks still waiting on a cluster")
    assert exited.value.code == 3
    assert journal == ["logging.shutdown", "flush stdout", "flush stderr", "exit 3"]


class _Journal(logging.Handler):
    def __init__(self, journal: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self._journal = journal

    def emit(self, record: logging.LogRecord) -> None:
        self._journal.append(f"{record.levelname}: {record.getMessage()}")


def test_it_warns_what_it_leaves_behind_before_the_logs_are_shut(journal: list[str]) -> None:
    logger = logging.getLogger(process_exit.__name__)
    handler = _Journal(journal)
    logger.addHandler(handler)
    try:
        with pytest.raises(_Exited):
            exit_now(0, "tasks still waiting on a cluster")
    finally:
        logger.removeHandler(handler)
    warning = "WARNING: exiting now, without waiting for tasks still waiting on a cluster"
    assert journal[:2] == [warning, "logging.shutdown"]
    assert journal[-1] == "exit 0"
