"""Worker, the table of this process's connectors: a stored config makes a runtime in its target state,
a new config replaces the runtime after the old one stopped, a config that does not resolve or
validate is known but runs nothing, and an unknown name is NotFound.

Runtimes run the fake plugin of ``tests/unit/worker/fakes.py``.
"""

from __future__ import annotations

import pytest

from mirror_sink.core.base.states import ConnectorState, TargetState
from mirror_sink.worker.config_store import StoredConnector
from mirror_sink.worker.connector_runtime import StateInfo
from mirror_sink.worker.herder_types import Conflict, ConnectorNotFound
from mirror_sink.worker.worker import Worker
from tests.unit.worker.fakes import fake_of, install, props, settle

pytestmark = pytest.mark.unit

UNSET = "MIRROR_SINK_TEST_NEVER_SET"


def _applied(worker: Worker, name: str, stored: StoredConnector) -> None:
    worker.apply(name, stored)
    runtime = worker.runtimes.get(name)
    if runtime is not None:
        settle(runtime)


def test_a_stored_connector_gets_a_runtime_in_its_target_state(worker: Worker) -> None:
    stored = StoredConnector(props("orders", tasks_max="2"), TargetState.RUNNING)
    _applied(worker, "orders", stored)
    runtime = worker.running("orders")
    assert worker.require("orders") is stored and worker.all_runtimes() == [runtime]
    assert runtime.state == StateInfo(ConnectorState.RUNNING) and runtime.worker_id == "worker-1"
    assert [t.task_id for t in fake_of(runtime).live_tasks()] == [0, 1]


def test_a_new_target_state_moves_the_same_runtime(worker: Worker) -> None:
    _applied(worker, "orders", StoredConnector(props("orders")))
    runtime = worker.running("orders")
    _applied(worker, "orders", StoredConnector(props("orders"), TargetState.PAUSED))
    assert worker.running("orders") is runtime and runtime.state == StateInfo(ConnectorState.PAUSED)
    assert fake_of(runtime).events.count("start") == 1


def test_a_new_config_replaces_the_runtime_after_the_old_one_stopped_and_let_go_of_its_topics(
    worker: Worker,
) -> None:
    _applied(worker, "orders", StoredConnector(props("orders")))
    old = worker.running("orders")
    _applied(worker, "orders", StoredConnector(props("orders", tasks_max="2")))
    new = worker.running("orders")
    assert new is not old and new.state == StateInfo(ConnectorState.RUNNING)
    assert not fake_of(old).live_tasks() and not any(j.alive for j in fake_of(old).jobs_made.while_active)
    assert [t.task_id for t in fake_of(new).live_tasks()] == [0, 1], "its topics were free to claim again"


def test_the_runtime_gets_the_config_resolved_and_the_table_keeps_the_reference(
    worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MIRROR_SINK_TEST_TOPICS", "orders,payments")
    stored = StoredConnector(props("orders", topics="${env:MIRROR_SINK_TEST_TOPICS}"))
    _applied(worker, "orders", stored)
    assert fake_of(worker.running("orders")).active_topics() == ["orders", "payments"]
    assert worker.require("orders").config["topics"] == "${env:MIRROR_SINK_TEST_TOPICS}"


@pytest.mark.parametrize(
    "config",
    [props("orders", invalid="yes"), props("orders", topics=f"${{env:{UNSET}}}")],
    ids=["refused-by-the-plugin", "reference-unresolved"],
)
def test_a_stored_config_that_cannot_run_is_known_but_runs_nothing(
    worker: Worker, monkeypatch: pytest.MonkeyPatch, config: dict[str, str]
) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    _applied(worker, "orders", StoredConnector(props("orders")))
    old = worker.running("orders")
    _applied(worker, "orders", StoredConnector(config))
    assert worker.require("orders").config == config and "orders" not in worker.runtimes
    assert not fake_of(old).live_tasks(), "the runtime of the previous config stopped"
    with pytest.raises(Conflict) as refused:
        worker.running("orders")
    assert refused.value.message == "Connector orders has an invalid config and is not running"


def test_an_unknown_connector_is_not_found(worker: Worker) -> None:
    for ask in (worker.require, worker.running):
        with pytest.raises(ConnectorNotFound) as missing:
            ask("nope")
        assert missing.value.message == "Connector nope not found" and missing.value.name == "nope"


def test_two_connectors_of_one_worker_may_not_write_one_target_topic(worker: Worker) -> None:
    _applied(worker, "first", StoredConnector(props("first")))
    _applied(worker, "second", StoredConnector(props("second")))
    second = worker.running("second")
    assert worker.running("first").state == StateInfo(ConnectorState.RUNNING)
    assert second.state.state is ConnectorState.FAILED
    assert second.state.trace is not None and "written by connector first" in second.state.trace


def test_a_worker_of_a_group_runs_only_its_share_of_the_task_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch)
    worker = Worker("worker-2", task_ids=lambda tasks_max: [i for i in range(tasks_max) if i % 2])
    try:
        _applied(worker, "orders", StoredConnector(props("orders", tasks_max="4")))
        assert worker.running("orders").local_task_ids() == {1, 3}
    finally:
        worker.remove_runtime("orders")


def test_removing_a_runtime_stops_it_and_keeps_the_stored_config(worker: Worker) -> None:
    _applied(worker, "orders", StoredConnector(props("orders")))
    runtime = worker.running("orders")
    worker.remove_runtime("orders")
    worker.remove_runtime("orders")  # gone already: nothing to do
    assert "orders" not in worker.runtimes and worker.require("orders").config == props("orders")
    assert not fake_of(runtime).live_tasks() and runtime.services.watch is None
