"""The status page's first line of a failure: the exception's own message, not Python's frames."""

from __future__ import annotations

import traceback

from api.routes.status_page import failure_cause
from mirror_sink.core.base.errors import TaskFailure


def _trace_of(fn: object) -> str:
    try:
        fn()  # type: ignore[operator]
    except Exception:
        return traceback.format_exc()
    raise AssertionError("did not raise")


def test_the_cause_is_the_message_of_the_exception_raised_last_without_its_module() -> None:
    def fail() -> None:
        try:
            raise TimeoutError()
        except TimeoutError as exc:
            raise TaskFailure("record too large for the target: source.orders-0 at offset 7\nsecond line") from exc

    trace = _trace_of(fail)
    assert trace.startswith("Traceback (most recent call last):")
    assert failure_cause(trace) == "record too large for the target: source.orders-0 at offset 7\nsecond line"


def test_an_exception_without_a_message_is_named_by_its_class() -> None:
    def fail() -> None:
        raise TimeoutError()

    assert failure_cause(_trace_of(fail)) == "TimeoutError"


def test_a_trace_that_is_no_traceback_is_its_own_cause() -> None:
    line = "waiting: source cluster 'east' is unreachable: 127.0.0.1:1: connection refused (for 3 s)"
    assert failure_cause(line) == line
    assert failure_cause(None) is None
