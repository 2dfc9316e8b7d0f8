"""TaskSet, a connector's tasks in this worker: which it starts, in which order it stops them and the
jobs beside them, what it leaves at a deadline, and what a replace or a move changes.

Over the fake plugin of ``tests/unit/worker/fakes.py`` (tasks and jobs without threads) and a real
``ConnectorServices``.
"""

from __future__ import annotations

import logging
import threading

import pytest

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.worker.connector_services import ConnectorServices
from mirror_sink.worker.task_set import TaskSet
from tests.unit.worker.fakes import FakeConnector, props

pytestmark = pytest.mark.unit

LOG = logging.getLogger("test.task_set")


class Tasks:
    """A TaskSet over a fake connector, with the worker's share of task ids and the target state in reach."""

    def __init__(self, tasks_max: int = 2) -> None:
        self.connector = FakeConnector(props(tasks_max=str(tasks_max)))
        self.owned = list(range(tasks_max))
        self.running = True
        lock = threading.RLock()
        self.services = ConnectorServices("fake", self.connector, lock, LOG)
        self.set = TaskSet(
            self.connector,
            "worker-1",
            lambda tasks_max: list(self.owned),
            services=self.services,
            lock=lock,
            log=LOG,
            running=lambda: self.running,
        )

    def ids(self) -> list[int]:
        return [t.task_id for t in self.set]


def test_a_start_starts_the_assigned_tasks_then_the_jobs_beside_them_and_the_active_ones() -> None:
    tasks = Tasks()
    assert tasks.set.start()
    assert tasks.ids() == [0, 1] and len(tasks.set) == 2
    assert tasks.connector.events == ["task 0 start", "task 1 start", "checkpoints start", "verify start", "lag start"]
    assert all(t.worker_id == "worker-1" for t in tasks.connector.tasks)


def test_a_start_while_the_same_tasks_run_starts_nothing() -> None:
    tasks = Tasks()
    tasks.set.start()
    assert not tasks.set.start()
    assert len(tasks.connector.tasks) == 2 and len(tasks.connector.jobs_made.beside_tasks) == 2


def test_a_start_after_a_task_ended_starts_them_all_afresh() -> None:
    tasks = Tasks()
    tasks.set.start()
    tasks.connector.tasks[0].fail("boom")
    assert tasks.set.start()
    assert [t.task_id for t in tasks.connector.live_tasks()] == [0, 1] and len(tasks.connector.tasks) == 4
    assert not tasks.connector.tasks[1].is_alive(), "the one still running was stopped first"
    assert len(tasks.connector.jobs_made.while_active) == 1, "the active jobs run on"


def test_a_closed_set_starts_no_task() -> None:
    tasks = Tasks()
    tasks.set.closed = True
    assert not tasks.set.start()
    assert not tasks.connector.tasks and not tasks.connector.events


def test_a_stop_asks_every_job_and_task_at_once_then_waits_for_the_tasks_then_the_jobs() -> None:
    tasks = Tasks()
    tasks.set.start()
    del tasks.connector.events[:]
    tasks.set.stop()
    assert tasks.connector.events == [
        "checkpoints request_stop",
        "verify request_stop",
        "task 0 stop(0)",
        "task 1 stop(0)",
        "task 0 stop(90)",
        "task 1 stop(90)",
        "checkpoints stop",
        "verify stop",
    ]
    assert not len(tasks.set) and not tasks.set.left
    assert [j.stop_timeouts for j in tasks.connector.jobs_made.beside_tasks] == [[5.0], [5.0]]
    assert tasks.connector.jobs_made.while_active[0].alive, "the active jobs are not the tasks' to stop"


def test_a_stop_with_a_deadline_leaves_a_task_still_in_its_cycle_and_says_what_ends_its_transaction(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = Tasks()
    tasks.set.start()
    stuck = tasks.connector.tasks[1]
    stuck.stuck = True
    with caplog.at_level(logging.WARNING, LOG.name):
        tasks.set.stop(until=Deadline(0.0))
    assert tasks.set.left == [stuck] and stuck.stops == [0, 0.0]
    assert [j.stop_timeouts for j in tasks.connector.jobs_made.beside_tasks] == [[0.0], [0.0]]
    assert "tasks [1] did not finish their cycle in time" in caplog.text
    assert "transaction.timeout.ms=60000" in caplog.text


def test_a_replace_puts_a_fresh_task_in_the_slot_after_the_old_one_stopped() -> None:
    tasks = Tasks()
    tasks.set.start()
    old = tasks.connector.tasks[1]
    tasks.set.replace(1)
    assert tasks.ids() == [0, 1] and list(tasks.set)[1] is tasks.connector.tasks[2]
    assert not old.is_alive() and tasks.connector.tasks[2].is_alive()
    assert tasks.connector.events[-2:] == ["task 1 stop(90)", "task 1 start"]


def test_a_replace_does_nothing_for_a_task_not_here_or_a_connector_not_running() -> None:
    tasks = Tasks()
    tasks.set.start()
    tasks.set.replace(7)
    tasks.running = False
    tasks.set.replace(0)
    assert len(tasks.connector.tasks) == 2 and len(tasks.connector.live_tasks()) == 2


def test_a_replace_made_while_the_set_closed_starts_no_task() -> None:
    tasks = Tasks()
    tasks.set.start()
    old = tasks.connector.tasks[0]
    real_stop = old.stop

    def stop_and_close(timeout: float | None = None) -> None:
        real_stop(timeout)
        tasks.set.closed = True  # a shutdown came while the old task finished its cycle

    old.stop = stop_and_close  # type: ignore[method-assign]
    tasks.set.replace(0)
    assert not tasks.connector.tasks[2].is_alive() and next(iter(tasks.set)) is old


def test_a_move_stops_the_tasks_given_away_and_starts_the_ones_given_here_in_id_order() -> None:
    tasks = Tasks(tasks_max=3)
    tasks.owned = [0, 2]
    tasks.set.start()
    kept = tasks.connector.tasks[1]
    tasks.owned = [1, 2]
    tasks.set.move()
    assert tasks.ids() == [1, 2] and list(tasks.set)[1] is kept
    assert not tasks.connector.tasks[0].is_alive() and tasks.connector.tasks[0].stops == [0, 90.0]
    assert tasks.set.assigned() == [1, 2]


def test_a_move_while_the_connector_is_not_running_only_stops_the_tasks_given_away() -> None:
    tasks = Tasks(tasks_max=3)
    tasks.owned = [0, 1]
    tasks.set.start()
    tasks.owned = [1, 2]
    tasks.running = False
    tasks.set.move()
    assert tasks.ids() == [1] and [t.task_id for t in tasks.connector.live_tasks()] == [1]
    assert len(tasks.connector.tasks) == 2, "task 2 is not made"
