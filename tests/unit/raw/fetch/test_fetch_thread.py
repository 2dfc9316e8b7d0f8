"""The fetch thread and the task thread's wakeup: the thread fills and collects until stopped, hands
its failure to the task thread, wakes the task thread once per take when data arrived, and is
nudged only when the fetcher held a Fetch back and only once until it looks again.

The thread runs over a fake fetcher whose network poll returns at once; the tests wait for it on
events (a few milliseconds), never on sleeps."""

from __future__ import annotations

import threading
from typing import cast

import pytest

from mirror_sink.core.base.errors import SourceOffsetOutOfRange, TaskFailure
from mirror_sink.raw.fetch.fetch_thread import FetchThread, TaskWakeup
from mirror_sink.raw.fetch.fetcher import RawFetcher
from mirror_sink.raw.wire.wire import WireClient
from tests.unit.raw.fetch.fakes import FakeSourceWire

pytestmark = pytest.mark.unit

WAIT_S = 2.0  # an upper bound only: each wait ends as soon as the thread gets there


class _Fetcher:
    """``fill`` and ``collect`` as the thread drives them: ``collect`` says there was news while
    ``news`` is set, and raises ``failure`` once set; ``rounds`` is set after each round."""

    def __init__(self) -> None:
        self.wire = FakeSourceWire()
        self.held_back = False
        self.news = False
        self.failure: BaseException | None = None
        self.gone: BaseException | None = None
        self.fills = 0
        self.rounds = threading.Event()

    def fill(self) -> None:
        self.fills += 1

    def collect(self) -> bool:
        self.rounds.set()
        if self.failure is not None:
            raise self.failure
        return self.news

    def check_gone(self) -> None:
        if self.gone is not None:
            raise self.gone


def _thread(fetcher: _Fetcher, target: FakeSourceWire) -> FetchThread:
    wakeup = TaskWakeup(cast(WireClient, target))
    return FetchThread(cast(RawFetcher, fetcher), wakeup, "test-fetch")


def test_the_task_thread_is_woken_once_per_take() -> None:
    target = FakeSourceWire()
    wakeup = TaskWakeup(cast(WireClient, target))
    wakeup.data_arrived()
    wakeup.data_arrived()
    assert target.wakeups == 1, "a second wakeup before the take is redundant"
    wakeup.taking()
    wakeup.data_arrived()
    assert target.wakeups == 2


def test_the_thread_fetches_until_stopped_and_wakes_the_task_when_data_arrives() -> None:
    fetcher, target = _Fetcher(), FakeSourceWire()
    fetcher.news = True
    thread = _thread(fetcher, target)
    thread.start()
    try:
        assert fetcher.rounds.wait(WAIT_S)
        ran = thread.alive
    finally:
        thread.stop(WAIT_S)
    assert ran and not thread.alive and fetcher.fills >= 1
    assert target.wakeups == 1, "woken once: the task thread has not taken since"
    assert fetcher.wire.polls and fetcher.wire.polls[0] == pytest.approx(0.1)
    thread.check()  # stopped, not failed: nothing to raise


def test_a_failure_of_the_thread_is_raised_in_the_task_thread_and_wakes_it() -> None:
    fetcher, target = _Fetcher(), FakeSourceWire()
    fetcher.failure = TaskFailure("the source refused the Fetch")
    thread = _thread(fetcher, target)
    thread.start()
    thread._thread.join(WAIT_S)
    assert not thread.alive and target.wakeups == 1
    with pytest.raises(TaskFailure, match="refused"):
        thread.check()


def test_check_raises_a_partition_the_source_no_longer_has() -> None:
    fetcher = _Fetcher()
    fetcher.gone = SourceOffsetOutOfRange("orders", 0, 5, "retention")
    with pytest.raises(SourceOffsetOutOfRange):
        _thread(fetcher, FakeSourceWire()).check()


def test_a_nudge_wakes_the_fetcher_only_when_it_held_a_fetch_back_and_once_until_it_looks_again() -> None:
    fetcher = _Fetcher()
    thread = _thread(fetcher, FakeSourceWire())
    thread.nudge()
    assert fetcher.wire.wakeups == 0, "nothing waited for memory or room"
    fetcher.held_back = True
    thread.nudge()
    thread.nudge()
    assert fetcher.wire.wakeups == 1
    fetcher.news = False
    thread.start()
    try:
        assert fetcher.rounds.wait(WAIT_S)
    finally:
        thread.stop(WAIT_S)
    thread.nudge()
    assert fetcher.wire.wakeups == 3, "the thread looked again (and stop woke it): a nudge counts again"


def test_stopping_a_thread_never_started_returns_at_once() -> None:
    fetcher = _Fetcher()
    thread = _thread(fetcher, FakeSourceWire())
    thread.stop(WAIT_S)
    assert not thread.alive and fetcher.wire.wakeups == 0
