"""``api.routes.connectors``: Kafka Connect's ``ConnectorsResource`` over the Herder: the listing and its
expansions, create and config writes with their status codes and ``Location``, state and task reads in
Connect's shapes, restarts, target states, deletes and topics, and the Herder's refusals as Connect's
error bodies."""

from __future__ import annotations

import logging

import pytest

from api.routes import connectors
from mirror_sink.core.base.states import ConnectorState, TargetState
from mirror_sink.worker.herder_types import AssignedState
from tests.unit.api.fakes import RUNNING_HERE, WORKER_ID, FakeHerder, Rest, as_herder, mount

pytestmark = pytest.mark.unit

CONFIG = {"connector.class": "MirrorSinkConnector", "tasks.max": "2", "topics": "orders"}
FAILED = AssignedState(ConnectorState.FAILED, "worker-2:8083", "Traceback ...\nTaskFailure: fenced")


@pytest.fixture(scope="module")
def served() -> tuple[FakeHerder, Rest]:
    """The router, built once, over a herder each test starts afresh."""
    herder = FakeHerder()
    return herder, mount(connectors.router(as_herder(herder)))


@pytest.fixture
def herder(served: tuple[FakeHerder, Rest]) -> FakeHerder:
    """Two connectors: orders-mirror running with a failed task, audit-mirror failed."""
    herder = served[0]
    herder.reset()
    herder.add("orders-mirror", CONFIG, tasks=[RUNNING_HERE, FAILED], topics=["orders", "payments"])
    herder.add("audit-mirror", {"tasks.max": "1"}, state=FAILED)
    return herder


@pytest.fixture
def client(served: tuple[FakeHerder, Rest], herder: FakeHerder) -> Rest:
    """The router's client, over ``herder``."""
    return served[1]


def _status(name: str = "orders-mirror") -> dict[str, object]:
    """Connect's ConnectorStateInfo of ``name`` in ``_herder``: no null trace, each task's id first."""
    if name == "audit-mirror":
        connector = {"state": "FAILED", "worker_id": "worker-2:8083", "trace": FAILED.trace}
        return {"name": name, "connector": connector, "tasks": [], "type": "sink"}
    tasks = [
        {"id": 0, "state": "RUNNING", "worker_id": WORKER_ID},
        {"id": 1, "state": "FAILED", "worker_id": "worker-2:8083", "trace": FAILED.trace},
    ]
    return {"name": name, "connector": {"state": "RUNNING", "worker_id": WORKER_ID}, "tasks": tasks, "type": "sink"}


def _info(name: str, config: dict[str, str], tasks: int) -> dict[str, object]:
    return {
        "name": name,
        "config": config,
        "tasks": [{"connector": name, "task": i} for i in range(tasks)],
        "type": "sink",
    }


def test_the_listing_is_the_sorted_names_without_expand(client: Rest) -> None:
    answer = client.get("/connectors")
    assert (answer.status_code, answer.json()) == (200, ["audit-mirror", "orders-mirror"])


def test_expand_gives_each_connector_its_status_and_info_as_asked(client: Rest) -> None:
    both = client.get("/connectors", params=[("expand", "status"), ("expand", "info")]).json()
    assert list(both) == ["audit-mirror", "orders-mirror"]
    assert both["orders-mirror"] == {"status": _status(), "info": _info("orders-mirror", CONFIG, 2)}
    assert list(both["orders-mirror"]["status"]["tasks"][1]) == ["id", "state", "worker_id", "trace"]
    status = client.get("/connectors?expand=status").json()
    assert status["audit-mirror"] == {"status": _status("audit-mirror")}


def test_an_unknown_expansion_is_ignored_and_logged_as_connect_does(
    caplog: pytest.LogCaptureFixture, client: Rest
) -> None:
    with caplog.at_level(logging.INFO, logger=connectors.__name__):
        answer = client.get("/connectors?expand=nonsense")
    assert (answer.status_code, answer.json()) == (200, {"audit-mirror": {}, "orders-mirror": {}})
    assert "Ignoring unknown expansion type nonsense" in caplog.messages


def test_a_created_connector_is_201_with_its_info_and_a_quoted_location(client: Rest, herder: FakeHerder) -> None:
    answer = client.post("/connectors", json={"name": "  eu mirror ", "config": {"tasks.max": 3}})
    assert answer.status_code == 201
    assert answer.headers["location"] == "/connectors/eu%20mirror"
    assert answer.json() == _info("eu mirror", {"tasks.max": "3"}, 3)
    assert herder.calls == [("create", "eu mirror", {"tasks.max": 3}, TargetState.RUNNING)]


def test_a_connector_may_be_created_in_any_initial_state_named_in_any_case(client: Rest, herder: FakeHerder) -> None:
    answer = client.post("/connectors", json={"name": "m", "config": {}, "initial_state": "stopped"})
    assert answer.status_code == 201
    assert herder.calls == [("create", "m", {}, TargetState.STOPPED)]


def test_creating_a_name_taken_is_409_in_connects_error_body(client: Rest) -> None:
    answer = client.post("/connectors", json={"name": "orders-mirror", "config": {}})
    assert answer.status_code == 409
    assert answer.json() == {"error_code": 409, "message": "Connector orders-mirror already exists"}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"config": {}}, "body.name: Field required"),
        ({"name": "   ", "config": {}}, "body.name: String should have at least 1 character"),
        ({"name": "m", "config": {}, "tasks": []}, "body.tasks: Extra inputs are not permitted"),
        ({"name": "m", "config": {}, "initial_state": "sleeping"}, "body.initial_state: Input should be"),
    ],
)
def test_a_malformed_create_request_is_400_naming_the_field(
    body: dict[str, object], problem: str, client: Rest, herder: FakeHerder
) -> None:
    answer = client.post("/connectors", json=body)
    assert answer.status_code == 400
    assert answer.json()["error_code"] == 400
    assert answer.json()["message"].startswith(f"Invalid request: {problem}")
    assert not herder.calls, "nothing reaches the Herder"


def test_a_connector_its_config_and_its_tasks_are_read_in_connects_shapes(client: Rest) -> None:
    assert client.get("/connectors/orders-mirror").json() == _info("orders-mirror", CONFIG, 2)
    assert client.get("/connectors/orders-mirror/config").json() == CONFIG
    assert client.get("/connectors/orders-mirror/tasks").json() == [
        {"id": {"connector": "orders-mirror", "task": i}, "config": {**CONFIG, "task.id": str(i)}} for i in (0, 1)
    ]


@pytest.mark.parametrize(
    "path", ["", "/config", "/status", "/tasks", "/tasks/0/status", "/topics"], ids=lambda p: p or "/"
)
def test_reading_an_unknown_connector_is_404_naming_it(path: str, client: Rest) -> None:
    answer = client.get(f"/connectors/nope{path}")
    assert (answer.status_code, answer.json()) == (404, {"error_code": 404, "message": "Connector nope not found"})


def test_a_status_leaves_out_a_null_trace_and_keeps_one_that_is_there(client: Rest) -> None:
    assert client.get("/connectors/orders-mirror/status").json() == _status()
    assert client.get("/connectors/audit-mirror/status").json() == _status("audit-mirror")


def test_a_tasks_status_has_its_id_and_an_unknown_task_is_404(client: Rest) -> None:
    assert client.get("/connectors/orders-mirror/tasks/0/status").json() == {
        "id": 0,
        "state": "RUNNING",
        "worker_id": WORKER_ID,
    }
    missing = client.get("/connectors/orders-mirror/tasks/2/status")
    assert (missing.status_code, missing.json()) == (
        404,
        {"error_code": 404, "message": "Task orders-mirror-2 not found"},
    )


def test_a_task_id_that_is_not_a_number_is_400(client: Rest) -> None:
    answer = client.get("/connectors/orders-mirror/tasks/first/status")
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("Invalid request: path.task: Input should be a valid integer")


def test_putting_a_config_is_201_with_a_location_when_it_creates_and_200_when_it_replaces(
    client: Rest, herder: FakeHerder
) -> None:
    created = client.put("/connectors/new%20one/config", json={"tasks.max": "1"})
    assert created.status_code == 201 and created.headers["location"] == "/connectors/new%20one"
    assert created.json() == _info("new one", {"tasks.max": "1"}, 1)
    replaced = client.put("/connectors/orders-mirror/config", json={**CONFIG, "tasks.max": "3"})
    assert replaced.status_code == 200 and "location" not in replaced.headers
    assert [t["task"] for t in replaced.json()["tasks"]] == [0, 1, 2]
    assert [call[:2] for call in herder.calls] == [("put_config", "new one"), ("put_config", "orders-mirror")]


def test_a_config_that_is_not_a_json_object_is_400(client: Rest, herder: FakeHerder) -> None:
    answer = client.put("/connectors/orders-mirror/config", json=["tasks.max", "1"])
    assert answer.status_code == 400 and answer.json()["message"].startswith("Invalid request: body:")
    assert not herder.calls


def test_a_patch_hands_the_herder_its_nulls_and_answers_the_merged_info(client: Rest, herder: FakeHerder) -> None:
    answer = client.patch("/connectors/orders-mirror/config", json={"topics": None, "tasks.max": 1})
    assert answer.status_code == 200
    assert answer.json() == _info("orders-mirror", {"connector.class": "MirrorSinkConnector", "tasks.max": "1"}, 1)
    assert herder.calls == [("patch_config", "orders-mirror", {"topics": None, "tasks.max": 1})]


def test_a_plain_restart_is_204_and_one_with_tasks_is_202_with_the_status(client: Rest, herder: FakeHerder) -> None:
    plain = client.post("/connectors/orders-mirror/restart")
    assert (plain.status_code, plain.content) == (204, b"")
    with_tasks = client.post("/connectors/orders-mirror/restart?includeTasks=true&onlyFailed=true")
    assert (with_tasks.status_code, with_tasks.json()) == (202, _status())
    only_failed = client.post("/connectors/orders-mirror/restart?onlyFailed=true")
    assert only_failed.status_code == 202
    assert herder.calls == [
        ("restart", "orders-mirror", False, False),
        ("restart", "orders-mirror", True, True),
        ("restart", "orders-mirror", False, True),
    ]


def test_a_task_restart_is_204_and_an_unknown_task_404(client: Rest, herder: FakeHerder) -> None:
    assert client.post("/connectors/orders-mirror/tasks/1/restart").status_code == 204
    assert client.post("/connectors/orders-mirror/tasks/7/restart").json() == {
        "error_code": 404,
        "message": "Task orders-mirror-7 not found",
    }
    assert herder.calls == [("restart_task", "orders-mirror", 1)]


@pytest.mark.parametrize(
    ("verb", "code", "target"),
    [("pause", 202, TargetState.PAUSED), ("resume", 202, TargetState.RUNNING), ("stop", 204, TargetState.STOPPED)],
)
def test_pause_resume_and_stop_set_the_target_state_with_connects_codes(
    verb: str, code: int, target: TargetState, client: Rest, herder: FakeHerder
) -> None:
    answer = client.put(f"/connectors/orders-mirror/{verb}")
    assert (answer.status_code, answer.content) == (code, b"")
    assert herder.calls == [("set_target_state", "orders-mirror", target)]
    assert client.put(f"/connectors/nope/{verb}").status_code == 404


def test_a_delete_is_204_and_the_connector_is_gone_after(client: Rest) -> None:
    assert client.delete("/connectors/audit-mirror").status_code == 204
    assert client.get("/connectors").json() == ["orders-mirror"]
    again = client.delete("/connectors/audit-mirror")
    assert (again.status_code, again.json()["message"]) == (404, "Connector audit-mirror not found")


def test_topics_are_keyed_by_the_connector_and_a_reset_is_202(client: Rest, herder: FakeHerder) -> None:
    assert client.get("/connectors/orders-mirror/topics").json() == {
        "orders-mirror": {"topics": ["orders", "payments"]}
    }
    reset = client.put("/connectors/orders-mirror/topics/reset")
    assert (reset.status_code, reset.content) == (202, b"")
    assert herder.calls == [("reset_topics", "orders-mirror")]
