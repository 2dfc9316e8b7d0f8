"""The Herder's refusals and values: each refusal's message is what the client reads (Connect's words),
its class what the REST API maps to a status code, and a connector's values say it is a sink."""

from __future__ import annotations

import pytest

from mirror_sink.core.base.states import ConnectorState
from mirror_sink.worker.herder_types import (
    AssignedState,
    Conflict,
    ConnectorInfo,
    ConnectorNotFound,
    ConnectorStatus,
    HerderError,
    InvalidRequest,
    NotFound,
    TaskNotFound,
)

pytestmark = pytest.mark.unit


def test_a_refusal_says_its_message_and_nothing_else() -> None:
    refusal = Conflict("Connector orders already exists")
    assert str(refusal) == refusal.message == "Connector orders already exists"
    assert refusal.args == ("Connector orders already exists",)


def test_a_missing_connector_or_task_is_named_as_connect_names_it() -> None:
    connector, task = ConnectorNotFound("orders"), TaskNotFound("orders", 3)
    assert str(connector) == "Connector orders not found" and connector.name == "orders"
    assert str(task) == "Task orders-3 not found" and (task.name, task.task_id) == ("orders", 3)


def test_every_refusal_is_a_herder_error_and_only_the_missing_ones_are_not_found() -> None:
    refusals = [ConnectorNotFound("a"), TaskNotFound("a", 0), Conflict("c"), InvalidRequest("i")]
    assert all(isinstance(r, HerderError) for r in refusals)
    assert [isinstance(r, NotFound) for r in refusals] == [True, True, False, False]


def test_a_connector_s_info_and_status_say_it_is_a_sink_and_a_state_has_no_trace_unless_given() -> None:
    running = AssignedState(ConnectorState.RUNNING, "worker-1")
    assert running.trace is None
    assert ConnectorInfo("orders", {}, ()).type == "sink"
    assert ConnectorStatus("orders", running, ()).type == "sink"
