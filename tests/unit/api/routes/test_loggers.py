"""``api.routes.loggers``: Kafka Connect's ``LoggingResource`` over this process's loggers: levels read
and set by log4j's names in any case, a change answered with the loggers it reached, and Connect's
refusals (no level 400, an unknown level or logger 404)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from api.routes import loggers
from tests.unit.api.fakes import Rest, mount

pytestmark = pytest.mark.unit

#: The loggers these tests make and set: under a name of their own.
P = "tests.unit.api.loggers_route"


@pytest.fixture(scope="module")
def client() -> Rest:
    """The router, built once (it serves the process's loggers, not a Herder)."""
    return mount(loggers.router())


@pytest.fixture(autouse=True)
def levels() -> Iterator[None]:
    """The root's level as it was, and every logger under ``P`` without a level of its own, afterwards."""
    root = logging.getLogger().level
    try:
        yield
    finally:
        logging.getLogger().setLevel(root)
        for name, logger in list(logging.Logger.manager.loggerDict.items()):
            if name.startswith(P) and isinstance(logger, logging.Logger):
                logger.setLevel(logging.NOTSET)


def test_the_listing_is_the_root_and_each_logger_with_a_level_of_its_own_in_log4j_names(client: Rest) -> None:
    logging.getLogger(f"{P}.warn").setLevel(logging.WARNING)
    logging.getLogger(f"{P}.trace").setLevel(5)
    logging.getLogger(f"{P}.off").setLevel(logging.CRITICAL + 10)
    logging.getLogger(f"{P}.between").setLevel(25)  # above INFO: only what log4j calls WARN gets through
    logging.getLogger(f"{P}.inherits")
    answer = client.get("/admin/loggers")
    assert answer.status_code == 200
    mine = {name: body for name, body in answer.json().items() if name.startswith(P)}
    assert mine == {
        f"{P}.between": {"level": "WARN", "last_modified": None},
        f"{P}.off": {"level": "OFF", "last_modified": None},
        f"{P}.trace": {"level": "TRACE", "last_modified": None},
        f"{P}.warn": {"level": "WARN", "last_modified": None},
    }
    assert "root" in answer.json()


def test_a_logger_without_a_level_of_its_own_answers_the_one_it_inherits(client: Rest) -> None:
    logging.getLogger(P).setLevel(logging.DEBUG)
    logging.getLogger(f"{P}.child")
    logging.getLogger().setLevel(logging.ERROR)
    assert client.get(f"/admin/loggers/{P}.child").json() == {"level": "DEBUG", "last_modified": None}
    assert client.get("/admin/loggers/root").json() == {"level": "ERROR", "last_modified": None}


def test_an_unknown_logger_and_a_placeholder_nobody_asked_for_are_404(client: Rest) -> None:
    logging.getLogger(f"{P}.parentless.child")  # makes "{P}.parentless" a placeholder, not a logger
    for name in (f"{P}.nope", f"{P}.parentless"):
        answer = client.get(f"/admin/loggers/{name}")
        assert (answer.status_code, answer.json()) == (404, {"error_code": 404, "message": f"Logger {name} not found."})


def test_setting_a_level_in_any_case_answers_the_logger_and_its_descendants_only(client: Rest) -> None:
    for name in (f"{P}.a", f"{P}.a.b", f"{P}.a.b.c", f"{P}.ab"):
        logging.getLogger(name)
    answer = client.put(f"/admin/loggers/{P}.a", json={"level": "debug"})
    assert (answer.status_code, answer.json()) == (200, [f"{P}.a", f"{P}.a.b", f"{P}.a.b.c"])
    assert logging.getLogger(f"{P}.a").level == logging.DEBUG
    assert logging.getLogger(f"{P}.ab").level == logging.NOTSET, "a name that only starts alike is not a descendant"


@pytest.mark.parametrize(("level", "python"), [("OFF", logging.CRITICAL + 10), ("Fatal", 50), ("trace", 5), ("ALL", 1)])
def test_every_log4j_level_sets_its_python_level_and_reads_back_by_its_name(
    client: Rest, level: str, python: int
) -> None:
    assert client.put(f"/admin/loggers/{P}.levels", json={"level": level}).status_code == 200
    assert logging.getLogger(f"{P}.levels").level == python
    assert client.get(f"/admin/loggers/{P}.levels").json()["level"] == level.upper()


def test_a_cluster_wide_change_is_204_here_and_still_sets_the_level(client: Rest) -> None:
    answer = client.put(f"/admin/loggers/{P}.cluster?scope=Cluster", json={"level": "ERROR"})
    assert (answer.status_code, answer.content) == (204, b"")
    assert logging.getLogger(f"{P}.cluster").level == logging.ERROR


def test_setting_the_root_answers_root_first_and_then_every_logger(client: Rest) -> None:
    logging.getLogger(f"{P}.under.root")
    answer = client.put("/admin/loggers/root", json={"level": "WARN"})
    assert answer.status_code == 200 and logging.getLogger().level == logging.WARNING
    names = answer.json()
    assert names[0] == "root" and f"{P}.under.root" in names and names[1:] == sorted(names[1:])


@pytest.mark.parametrize("body", [{}, {"level": None}, {"level": ""}])
def test_a_change_without_a_level_is_400_in_connects_words(client: Rest, body: dict[str, object]) -> None:
    answer = client.put(f"/admin/loggers/{P}.unset", json=body)
    assert (answer.status_code, answer.json()) == (
        400,
        {"error_code": 400, "message": "Desired 'level' parameter was not specified in request."},
    )


def test_an_unknown_level_is_404_as_in_connect_and_changes_nothing(client: Rest) -> None:
    logging.getLogger(f"{P}.loud").setLevel(logging.INFO)
    answer = client.put(f"/admin/loggers/{P}.loud", json={"level": "LOUD"})
    assert (answer.status_code, answer.json()) == (404, {"error_code": 404, "message": "invalid log level 'LOUD'."})
    assert logging.getLogger(f"{P}.loud").level == logging.INFO
