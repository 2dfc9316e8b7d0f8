"""MirrorSinkTask, the task's shell: its lifecycle in Connect's states and its recovery policy. A
recoverable failure replaces the run's clients, backing off, up to five times in ten minutes, then the
task is FAILED with the trace; any other failure is FAILED at once; a switch to record mode reopens
the clients in record mode without counting as a failure; a clean stop closes the run and says STOPPED.

The engine is faked where the task module names it (``TaskRun``, ``Ownership``, ``Cycle``): each run's
cycle loop does what the test's script says next. The task's stop event records the backoff it asks
for instead of sleeping it, except in the threaded test.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from connectors import mirror_sink_task
from connectors.mirror_sink_task import MirrorSinkTask
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ClientWedged, RecoverableTaskFailure, SwitchToRecordMode, TaskFailure
from mirror_sink.core.base.states import TaskState
from mirror_sink.core.runtime.logs import Log
from mirror_sink.task.cycle import TaskCounters
from mirror_sink.topics.source_discovery import TopicMapping
from tests.unit.connectors.fakes import config

pytestmark = pytest.mark.unit

ORDERS = TopicMapping("orders", "east.orders", 3, None)
PAYMENTS = TopicMapping("payments", "east.payments", 1, None)

#: What one run's cycle loop does: raise this, return (None: a stop), or run this step first.
Step = Exception | Callable[[threading.Event], None] | None


class NoWait(threading.Event):
    """The task's stop event: set only when asked, its waits recorded and returned from at once."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return self.is_set()


@dataclass
class FakeCommitter:
    started: bool = False

    def start(self) -> None:
        self.started = True


@dataclass
class FakeRun:
    """One run's clients, as the task opens, aborts and closes them."""

    slot: str
    record_mode: bool
    committer: FakeCommitter = field(default_factory=FakeCommitter)
    closes: list[dict[str, bool]] = field(default_factory=list)
    aborted: bool = False

    def abort_quietly(self) -> None:
        self.aborted = True

    def close(self, *, abandon_producer: bool = False, rejoining: bool = False) -> None:
        self.closes.append({"abandon_producer": abandon_producer, "rejoining": rejoining})


class Engine:
    """The task engine the task module names, scripted run by run."""

    def __init__(self, *script: Step) -> None:
        self.script = list(script)
        self.open_errors: list[Exception] = []
        self.runs: list[FakeRun] = []
        self.subscribed: list[Mapping[str, TopicMapping]] = []
        #: The task's state while each run's loop ran.
        self.states: list[TaskState] = []
        self.task: MirrorSinkTask | None = None

    def task_run(self, config: MirrorSinkConfig, slot: str, log: Log, *, record_mode: bool = False) -> FakeRun:
        if self.open_errors:
            raise self.open_errors.pop(0)
        run = FakeRun(slot, record_mode)
        self.runs.append(run)
        return run

    def ownership(self, run: FakeRun, mappings: Mapping[str, TopicMapping]) -> SimpleNamespace:
        def subscribe() -> None:
            assert run.committer.started, "the previous holder of the slot is fenced before the group is joined"
            self.subscribed.append(dict(mappings))

        return SimpleNamespace(subscribe=subscribe)

    def cycle(self, run: FakeRun, ownership: object, counters: TaskCounters, task_id: int) -> SimpleNamespace:
        def loop(stop: threading.Event, new_mappings: Callable[[], Mapping[str, TopicMapping] | None]) -> None:
            assert self.task is not None and task_id == self.task.task_id
            self.states.append(self.task.state)
            counters.transaction_version = 2
            step = self.script.pop(0) if self.script else None
            if isinstance(step, Exception):
                raise step
            if step is not None:
                step(stop)

        return SimpleNamespace(loop=loop)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Engine:
    made = Engine()
    monkeypatch.setattr(mirror_sink_task, "TaskRun", made.task_run)
    monkeypatch.setattr(mirror_sink_task, "Ownership", made.ownership)
    monkeypatch.setattr(mirror_sink_task, "Cycle", made.cycle)
    return made


def _task(engine: Engine, *script: Step, mappings: Mapping[str, TopicMapping] | None = None) -> MirrorSinkTask:
    engine.script = list(script)
    task = MirrorSinkTask(config(), 2, "worker-1", mappings if mappings is not None else {"east.orders": ORDERS})
    task._stop = NoWait()
    engine.task = task
    return task


def _state(task: MirrorSinkTask) -> TaskState:
    return task.state


def _waits(task: MirrorSinkTask) -> list[float | None]:
    stop = task._stop
    assert isinstance(stop, NoWait)
    return stop.waits


def test_a_task_runs_in_its_slot_and_a_stop_closes_its_run_and_says_stopped(engine: Engine) -> None:
    task = _task(engine, None)
    assert _state(task) is TaskState.UNASSIGNED and task.transaction_version is None
    task.run()
    [run] = engine.runs
    assert task.slot == run.slot == "mirror-worker-1-2" and not run.record_mode
    assert engine.states == [TaskState.RUNNING], "RUNNING once it has fenced and joined"
    assert engine.subscribed == [{"east.orders": ORDERS}]
    assert run.closes == [{"abandon_producer": False, "rejoining": False}] and not run.aborted
    assert task.state is TaskState.STOPPED and task.trace is None and task.transaction_version == 2


def test_a_recoverable_failure_replaces_the_run_at_once_and_the_task_goes_on(engine: Engine) -> None:
    task = _task(engine, ClientWedged("producer did not answer in 30 s"), None)
    task.run()
    first, second = engine.runs
    assert first.closes == [{"abandon_producer": True, "rejoining": True}] and not first.aborted
    assert second.closes == [{"abandon_producer": False, "rejoining": False}]
    assert task.state is TaskState.STOPPED and _waits(task) == [0.5]


def test_repeated_recoverable_failures_back_off_and_the_sixth_in_ten_minutes_fails_the_task_with_its_trace(
    engine: Engine,
) -> None:
    failures = [RecoverableTaskFailure(f"producer fenced ({i})") for i in range(6)]
    task = _task(engine, *failures)
    task.run()
    assert len(engine.runs) == 6 and _waits(task) == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert task.state is TaskState.FAILED and task.trace is not None
    assert "RecoverableTaskFailure: producer fenced (5)" in task.trace and "Traceback" in task.trace
    last = engine.runs[-1]
    assert last.aborted and last.closes == [{"abandon_producer": False, "rejoining": False}]


def test_recoveries_older_than_the_window_no_longer_count(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(mirror_sink_task, "time", SimpleNamespace(monotonic=lambda: clock.now))

    def fail_later(stop: threading.Event) -> None:
        clock.now += 601.0  # each failure comes more than ten minutes after the last
        raise RecoverableTaskFailure("producer fenced")

    task = _task(engine, *[fail_later] * 8, None)
    task.run()
    assert task.state is TaskState.STOPPED and len(engine.runs) == 9
    assert _waits(task) == [0.5] * 8, "each is a first recovery again"


@pytest.mark.parametrize(
    "failure",
    [TaskFailure("not authorized to write east.orders"), KeyError("a bug"), RuntimeError("also a bug")],
    ids=["task-failure", "key-error", "runtime-error"],
)
def test_any_other_failure_fails_the_task_at_once_with_its_trace_and_aborts_the_run(
    engine: Engine, failure: Exception
) -> None:
    task = _task(engine, failure, None)
    task.run()
    [run] = engine.runs
    assert task.state is TaskState.FAILED and task.trace is not None
    assert f"{type(failure).__name__}: " in task.trace
    assert run.aborted and run.closes == [{"abandon_producer": False, "rejoining": False}]
    assert not _waits(task)


def test_a_recoverable_failure_while_the_task_is_asked_to_stop_fails_it_rather_than_trying_again(
    engine: Engine,
) -> None:
    def stopped_then_wedged(stop: threading.Event) -> None:
        stop.set()
        raise ClientWedged("commit did not answer")

    task = _task(engine, stopped_then_wedged, None)
    task.run()
    assert len(engine.runs) == 1 and task.state is TaskState.FAILED
    assert task.trace is not None and "ClientWedged: commit did not answer" in task.trace


def test_clients_that_cannot_be_opened_fail_the_task_with_nothing_to_close(engine: Engine) -> None:
    engine.open_errors = [TaskFailure("source cluster 'east' is unreachable")]
    task = _task(engine)
    task.run()
    assert task.state is TaskState.FAILED and not engine.runs
    assert task.trace is not None and "source cluster 'east' is unreachable" in task.trace


def test_a_switch_to_record_mode_reopens_the_clients_in_record_mode_and_is_no_failure(engine: Engine) -> None:
    failures: list[Step] = [RecoverableTaskFailure("fenced")] * 5
    task = _task(engine, SwitchToRecordMode("batches of 3 records"), *failures, None)
    task.run()
    raw, *recorded = engine.runs
    assert not raw.record_mode and all(run.record_mode for run in recorded)
    assert raw.closes == [{"abandon_producer": False, "rejoining": True}], "everything committed: the producer too"
    assert task.state is TaskState.STOPPED, "five recoveries after the switch are still within the limit"
    assert _waits(task) == [0.5, 1.0, 2.0, 4.0, 8.0]


def test_new_topics_reach_the_running_cycle_once_and_the_next_run_subscribes_to_them(engine: Engine) -> None:
    handed: list[Mapping[str, TopicMapping] | None] = []

    def updated_between_cycles(stop: threading.Event) -> None:
        assert engine.task is not None
        engine.task.update_topics({"east.orders": ORDERS, "east.payments": PAYMENTS})
        handed.extend([engine.task._new_mappings(), engine.task._new_mappings()])
        raise ClientWedged("wedged")

    task = _task(engine, updated_between_cycles, None)
    task.run()
    assert handed == [{"east.orders": ORDERS, "east.payments": PAYMENTS}, None]
    assert engine.subscribed == [{"east.orders": ORDERS}, {"east.orders": ORDERS, "east.payments": PAYMENTS}]


def test_a_task_started_on_its_thread_runs_until_stopped(engine: Engine) -> None:
    running = threading.Event()

    def cycle_until_stopped(stop: threading.Event) -> None:
        running.set()
        stop.wait(5.0)

    task = _task(engine, cycle_until_stopped)
    task._stop = threading.Event()
    assert not task.is_alive()
    task.start()
    assert running.wait(5.0) and task.is_alive() and _state(task) is TaskState.RUNNING
    task.stop(5.0)
    assert not task.is_alive() and task.state is TaskState.STOPPED
