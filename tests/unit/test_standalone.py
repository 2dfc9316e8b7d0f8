"""StandaloneRunner (``mirror-sink run``): one connector in this process until asked to stop (exit 0),
or until the connector, a task or its periodic work fails (exit 1, the trace in the log); either way
everything is shut down and its metrics leave the scrape.

The runner runs the fake plugin of ``tests/unit/worker/fakes.py``; its waits (the main loop's sleep,
the ticker's interval) are cut to milliseconds, and the test joins the ticker thread it started.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from mirror_sink import standalone
from mirror_sink.core.base.states import ConnectorState
from mirror_sink.standalone import StandaloneRunner
from mirror_sink.worker.worker_metrics import WORKER_METRICS
from tests.unit.worker.fakes import SETTLE_S, FakeConnector, fake_of, install, props

pytestmark = pytest.mark.unit


class ShortEvent(threading.Event):
    """An event whose timed waits last a few milliseconds at most."""

    def wait(self, timeout: float | None = None) -> bool:
        return super().wait(None if timeout is None else min(timeout, 0.002))


class Loop:
    """The runner's ``time`` and ``threading``: each sleep of its main loop is a few milliseconds, then
    ``each_round`` runs; the threads it starts are kept for the test to join."""

    def __init__(self) -> None:
        self.each_round: Callable[[], None] = lambda: None
        self.rounds = 0
        self.threads: list[threading.Thread] = []

    def sleep(self, seconds: float) -> None:
        time.sleep(0.002)
        self.rounds += 1
        assert self.rounds < 1000, "the runner never ended"
        self.each_round()

    def thread(self, *args: Any, **kwargs: Any) -> threading.Thread:
        made = threading.Thread(*args, **kwargs)
        self.threads.append(made)
        return made


@pytest.fixture
def loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[Loop]:
    install(monkeypatch)
    made = Loop()
    monkeypatch.setattr(standalone, "time", SimpleNamespace(sleep=made.sleep))
    monkeypatch.setattr(standalone, "threading", SimpleNamespace(Event=ShortEvent, Thread=made.thread))
    yield made
    for thread in made.threads:
        thread.join(SETTLE_S)
        assert not thread.is_alive()


def _reported(name: str) -> bool:
    """Whether the process's worker metrics report connector ``name``."""
    return any(s.labels.get("connector") == name for family in WORKER_METRICS.collect() for s in family.samples)


def _once_running(runner: StandaloneRunner, then: Callable[[FakeConnector], None]) -> Callable[[], None]:
    """A round that, once the connector and its tasks run, does ``then`` once."""
    done: list[bool] = []

    def each_round() -> None:
        fake = fake_of(runner.runtime)
        if not done and runner.runtime.state.state is ConnectorState.RUNNING and fake.live_tasks():
            done.append(True)
            then(fake)

    return each_round


def test_a_stop_request_shuts_everything_down_and_exits_0(loop: Loop) -> None:
    runner = StandaloneRunner(props("standalone-stop", tasks_max="2"), "worker-1")
    seen_reported: list[bool] = []

    def stop(fake: FakeConnector) -> None:
        seen_reported.append(_reported("standalone-stop"))
        runner.request_stop()

    loop.each_round = _once_running(runner, stop)
    assert runner.run() == 0 and runner.clean
    fake = fake_of(runner.runtime)
    assert seen_reported == [True] and not _reported("standalone-stop")
    assert [t.task_id for t in fake.tasks] == [0, 1] and not fake.live_tasks()
    assert not any(j.alive for j in [*fake.jobs_made.beside_tasks, *fake.jobs_made.while_active])


def test_a_failed_task_ends_the_run_with_1_its_trace_in_the_log_and_everything_shut_down(
    loop: Loop, caplog: pytest.LogCaptureFixture
) -> None:
    runner = StandaloneRunner(props("standalone-task", tasks_max="2"), "worker-1")
    loop.each_round = _once_running(runner, lambda fake: fake.tasks[1].fail("TaskFailure: fenced by a newer task"))
    with caplog.at_level(logging.ERROR, standalone.log.name):
        assert runner.run() == 1 and runner.clean
    assert "connector standalone-task task 1 FAILED:\nTaskFailure: fenced by a newer task" in caplog.text
    fake = fake_of(runner.runtime)
    assert not fake.live_tasks() and fake.tasks[0].stops, "the task still running was stopped"
    assert not _reported("standalone-task")


def test_a_connector_that_fails_to_start_ends_the_run_with_1_and_its_trace_in_the_log(
    loop: Loop, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = StandaloneRunner(props("standalone-start"), "worker-1")
    fake_of(runner.runtime).start_errors = [RuntimeError("the target refuses topic creation")]
    with caplog.at_level(logging.ERROR, standalone.log.name):
        assert runner.run() == 1
    assert "connector standalone-start FAILED:\nTraceback" in caplog.text
    assert "RuntimeError: the target refuses topic creation" in caplog.text
    assert not fake_of(runner.runtime).tasks


def test_periodic_work_that_fails_ends_the_run_with_1(loop: Loop, caplog: pytest.LogCaptureFixture) -> None:
    runner = StandaloneRunner(props("standalone-tick"), "worker-1")

    def broken_maintenance() -> bool:
        raise RuntimeError("maintenance check broke")

    def break_ticks(fake: FakeConnector) -> None:
        fake.maintenance_due = broken_maintenance  # type: ignore[method-assign]

    loop.each_round = _once_running(runner, break_ticks)
    with caplog.at_level(logging.ERROR, standalone.log.name):
        assert runner.run() == 1
    assert "connector standalone-tick: periodic work failed" in caplog.text
    assert runner.runtime.state.state is ConnectorState.RUNNING, "the connector itself did not fail"
    assert not fake_of(runner.runtime).live_tasks()


def test_a_stop_request_takes_no_lock_and_is_seen_at_the_next_round(loop: Loop) -> None:
    runner = StandaloneRunner(props("standalone-early"), "worker-1")
    runner.request_stop()  # as a signal handler would, before the loop's first round
    assert runner.run() == 0 and loop.rounds == 1
