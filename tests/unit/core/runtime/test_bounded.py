"""call_bounded: a call's value or its own exception comes back in the caller's thread; a call still
running at the limit is reported as a wedged client (recoverable: the task replaces its clients) and
left behind on a daemon thread that cannot hold the process open."""

from __future__ import annotations

import threading
import time

import pytest

from mirror_sink.core.base.errors import ClientWedged, RecoverableTaskFailure
from mirror_sink.core.runtime.bounded import call_bounded

pytestmark = pytest.mark.unit


def test_a_call_that_returns_in_time_gives_its_value() -> None:
    assert call_bounded("answer", lambda: 42, 1.0) == 42
    assert call_bounded("nothing", lambda: None, 1.0) is None, "a None result is a result, not a hang"


def test_a_calls_own_exception_is_raised_as_it_is_in_the_callers_thread() -> None:
    error = ValueError("broker said no")

    def fail() -> int:
        raise error

    with pytest.raises(ValueError) as raised:
        call_bounded("failing", fail, 1.0)
    assert raised.value is error


def test_a_call_still_running_at_the_limit_is_a_wedged_client_and_is_not_waited_for() -> None:
    release = threading.Event()
    try:
        started = time.monotonic()
        with pytest.raises(ClientWedged, match="send_offsets did not return") as raised:
            call_bounded("send_offsets", lambda: release.wait(5), 0.02)
        assert time.monotonic() - started < 1.0
        assert isinstance(raised.value, RecoverableTaskFailure), "the task replaces its clients and goes on"
    finally:
        release.set()


def test_the_call_runs_on_a_named_daemon_thread() -> None:
    def where() -> tuple[str, bool, bool]:
        me = threading.current_thread()
        return me.name, me.daemon, me is threading.main_thread()

    name, daemon, main = call_bounded("flush", where, 1.0)
    assert name == "bounded-flush" and daemon and not main
