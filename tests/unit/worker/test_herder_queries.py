"""HerderQueries, what GET requests about connectors answer: configs always masked, tasks from
``tasks.max``, the status of a connector whose config cannot run, and, in a worker group, a task
run elsewhere as its worker reported it or where it is due to run.

Over a real Worker running the fake plugin of ``tests/unit/worker/fakes.py``; the group's shared
status is a small fake of the status store's two reads.
"""

from __future__ import annotations

from typing import cast

import pytest

from mirror_sink.core.base.states import ConnectorState, TargetState
from mirror_sink.core.telemetry.metrics import MIRROR
from mirror_sink.worker.config_store import StoredConnector
from mirror_sink.worker.herder_queries import HerderQueries
from mirror_sink.worker.herder_types import (
    AssignedState,
    ConnectorInfo,
    ConnectorNotFound,
    ConnectorTaskId,
    TaskConfig,
    TaskNotFound,
    TaskStatus,
)
from mirror_sink.worker.status_store import KafkaStatusBackingStore
from mirror_sink.worker.worker import Worker
from tests.unit.worker.fakes import fake_of, install, props, settle

pytestmark = pytest.mark.unit

SECRET = {"target.cluster.sasl.password": "s3cret"}
HIDDEN = {"target.cluster.sasl.password": "[hidden]"}


class GroupStatus:
    """The worker group's shared status, as far as the queries read it."""

    def __init__(self, live: list[str], reported: dict[int, tuple[str, str | None, str]]) -> None:
        self.live = live
        self.reported = reported

    def live_workers(self) -> list[str]:
        return list(self.live)

    def task_state(self, connector: str, task_id: int) -> tuple[str, str | None, str] | None:
        return self.reported.get(task_id)


def _queries(worker: Worker, group: GroupStatus | None = None) -> HerderQueries:
    return HerderQueries(worker, cast(KafkaStatusBackingStore, group))


def _apply(worker: Worker, name: str, config: dict[str, str], target: TargetState = TargetState.RUNNING) -> None:
    worker.apply(name, StoredConnector(config, target))
    runtime = worker.runtimes.get(name)
    if runtime is not None:
        settle(runtime)


def test_names_are_sorted_and_the_first_target_is_that_of_the_first_connector_running(worker: Worker) -> None:
    queries = _queries(worker)
    assert queries.names() == [] and queries.first_target() is None
    _apply(worker, "b", props("b", target="west:9092", topics="b"))
    _apply(worker, "a", props("a", target="east:9092", topics="a"))
    _apply(worker, "0-broken", props("0-broken", invalid="yes"))
    assert queries.names() == ["0-broken", "a", "b"]
    assert queries.first_target() == {"bootstrap.servers": "east:9092", "security.protocol": "PLAINTEXT"}


def test_configs_info_and_task_configs_leave_masked_with_a_task_per_tasks_max(worker: Worker) -> None:
    config = {**props("orders", tasks_max="2"), **SECRET}
    _apply(worker, "orders", config, TargetState.STOPPED)
    queries = _queries(worker)
    shown = {**props("orders", tasks_max="2"), **HIDDEN}
    assert queries.config("orders") == shown
    assert queries.info("orders") == ConnectorInfo(
        "orders", shown, (ConnectorTaskId("orders", 0), ConnectorTaskId("orders", 1))
    )
    assert queries.task_configs("orders") == [
        TaskConfig(ConnectorTaskId("orders", i), {**shown, "task.id": str(i)}) for i in (0, 1)
    ]
    assert worker.require("orders").config == config, "the stored config keeps its secret"


def test_the_status_of_a_connector_whose_config_cannot_run_is_failed_without_tasks(worker: Worker) -> None:
    _apply(worker, "broken", props("broken", invalid="yes"))
    status = _queries(worker).status("broken")
    assert status.connector == AssignedState(ConnectorState.FAILED, "worker-1", "the stored config is invalid")
    assert status.tasks == ()
    assert _queries(worker).config("broken") == props("broken", invalid="yes"), "its config is still shown"


def test_the_status_says_each_task_s_state_here_with_its_trace(worker: Worker) -> None:
    _apply(worker, "orders", props("orders", tasks_max="2"))
    fake_of(worker.running("orders")).tasks[1].fail("TaskFailure: fenced")
    queries = _queries(worker)
    status = queries.status("orders")
    assert status.connector == AssignedState(ConnectorState.RUNNING, "worker-1")
    assert status.tasks == (
        TaskStatus(0, AssignedState(ConnectorState.RUNNING, "worker-1")),
        TaskStatus(1, AssignedState(ConnectorState.FAILED, "worker-1", "TaskFailure: fenced")),
    )
    assert queries.task_status("orders", 1) == status.tasks[1]
    for missing in (-1, 2):
        with pytest.raises(TaskNotFound):
            queries.task_status("orders", missing)


def test_in_a_group_a_task_run_elsewhere_shows_as_its_worker_reported_it_or_where_it_is_due(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install(monkeypatch)
    worker = Worker("worker-1", task_ids=lambda tasks_max: [0])
    group = GroupStatus(["worker-1", "worker-2"], {1: ("FAILED", "TaskFailure: fenced", "worker-2")})
    try:
        _apply(worker, "orders", props("orders", tasks_max="4"))
        tasks = _queries(worker, group).status("orders").tasks
    finally:
        worker.remove_runtime("orders")
    assert [t.status for t in tasks] == [
        AssignedState(ConnectorState.RUNNING, "worker-1"),  # here: this worker's own view
        AssignedState(ConnectorState.FAILED, "worker-2", "TaskFailure: fenced"),
        AssignedState(ConnectorState.UNASSIGNED, "worker-1"),  # not reported yet: due on worker-1 (2 % 2)
        AssignedState(ConnectorState.UNASSIGNED, "worker-2"),
    ]


def test_in_a_group_a_paused_connector_s_tasks_show_paused_whatever_was_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install(monkeypatch)
    worker = Worker("worker-1", task_ids=lambda tasks_max: [0])
    group = GroupStatus(["worker-1", "worker-2"], {1: ("RUNNING", None, "worker-2")})
    try:
        _apply(worker, "orders", props("orders", tasks_max="2"), TargetState.PAUSED)
        tasks = _queries(worker, group).status("orders").tasks
    finally:
        worker.remove_runtime("orders")
    assert [t.status.state for t in tasks] == [ConnectorState.PAUSED, ConnectorState.PAUSED]


def test_topics_are_the_plugin_s_active_topics_sorted_and_versions_those_of_the_tasks_here(worker: Worker) -> None:
    _apply(worker, "orders", props("orders", topics="payments,orders", tasks_max="2"))
    fake_of(worker.running("orders")).tasks[0].version = 2
    queries = _queries(worker)
    assert queries.topics("orders") == ["orders", "payments"]
    assert queries.transaction_versions("orders") == {0: 2}
    assert queries.connector("orders") is worker.running("orders").connector


def test_the_records_mirrored_are_counted_per_connector_and_an_unknown_one_is_not_found(worker: Worker) -> None:
    _apply(worker, "never-committed", props("never-committed"))
    queries = _queries(worker)
    assert queries.mirrored_records("never-committed") == MIRROR.records("never-committed") == 0
    for ask in (queries.mirrored_records, queries.config, queries.status, queries.topics):
        with pytest.raises(ConnectorNotFound):
            ask("nope")
