"""The Spark driver starts a query again when only a Python worker's slow start failed it."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from mirror_sink.spark import driver
from mirror_sink.spark.driver import WORKER_START_TIMEOUT, Query, run_with_restarts


class FakeQuery:
    """A query that ends at once, failed with ``failure`` (raised from awaitTermination, as pyspark
    does) or well."""

    def __init__(self, failure: str | None) -> None:
        self.failure = failure
        self.stopped = False

    @property
    def isActive(self) -> bool:  # noqa: N802 - pyspark's name
        return not self.stopped

    def awaitTermination(self, timeout: int | None = None) -> bool | None:  # noqa: N802
        self.stopped = True
        if self.failure is not None:
            raise RuntimeError(self.failure)
        return True

    def stop(self) -> None:
        self.stopped = True

    def exception(self) -> object | None:
        return self.failure


@pytest.fixture(autouse=True)
def _no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "wait_fixed", lambda _s: lambda _state: 0.0)


def _starts(*failures: str | None) -> tuple[list[FakeQuery], Callable[[], Query]]:
    queries = [FakeQuery(f) for f in failures]
    pending = iter(queries)
    return queries, lambda: next(pending)


def test_a_worker_start_timeout_starts_the_query_again_and_a_clean_end_is_success() -> None:
    queries, start = _starts(f"[STREAM_FAILED] {WORKER_START_TIMEOUT}.", None)
    assert run_with_restarts(start, threading.Event(), "c") is None
    assert all(q.stopped for q in queries)


def test_any_other_failure_ends_the_run_at_once() -> None:
    queries, start = _starts("[STREAM_FAILED] SASL authentication failed", None)
    assert run_with_restarts(start, threading.Event(), "c") == "[STREAM_FAILED] SASL authentication failed"
    assert not queries[1].stopped, "never started again"


def test_the_worker_start_timeout_is_retried_only_up_to_the_limit() -> None:
    failure = f"[STREAM_FAILED] {WORKER_START_TIMEOUT}."
    queries, start = _starts(*([failure] * driver.QUERY_STARTS), None)
    assert run_with_restarts(start, threading.Event(), "c") == failure
    assert not queries[-1].stopped


def test_a_stop_requested_is_never_followed_by_a_new_start() -> None:
    stop = threading.Event()
    stop.set()
    queries, start = _starts(None, None)
    assert run_with_restarts(start, stop, "c") is None
    assert queries[0].stopped and not queries[1].stopped
