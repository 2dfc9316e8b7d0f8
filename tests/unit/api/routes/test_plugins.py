"""``api.routes.plugins``: Kafka Connect's ``ConnectorPluginsResource`` for the worker's one plugin: the
listing, the config definitions under every name the plugin answers to, validation by the plugin the
path names, and Connect's 404 for any other plugin and 400 for a body naming another."""

from __future__ import annotations

from typing import Any

import pytest

from api.plugin import PLUGIN_CLASS, config_definitions
from api.routes import plugins
from mirror_sink import __version__
from tests.unit.api.fakes import Rest, mount

pytestmark = pytest.mark.unit

VALID = {
    "name": "orders-mirror",
    "source.cluster.bootstrap.servers": "east:9092",
    "target.cluster.bootstrap.servers": "west:9092",
}
ALIASES = ["MirrorSinkConnector", PLUGIN_CLASS]


@pytest.fixture(scope="module")
def client() -> Rest:
    """The router, built once (the worker's plugin does not depend on a Herder)."""
    return mount(plugins.router())


def _by_key(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["definition"]["name"]: entry["value"] for entry in result["configs"]}


def test_the_listing_is_the_one_sink_plugin_by_its_full_class_name(client: Rest) -> None:
    expected = [{"class": PLUGIN_CLASS, "type": "sink", "version": __version__}]
    assert client.get("/connector-plugins").json() == expected
    assert client.get("/connector-plugins?connectorsOnly=false").json() == expected


@pytest.mark.parametrize("alias", ALIASES)
def test_the_config_definitions_answer_under_every_name_of_the_plugin(client: Rest, alias: str) -> None:
    answer = client.get(f"/connector-plugins/{alias}/config")
    assert answer.status_code == 200
    assert answer.json() == [d.model_dump() for d in config_definitions()]
    assert answer.json()[0] | {"documentation": ""} == {
        "name": "name",
        "type": "STRING",
        "required": True,
        "default_value": None,
        "importance": "HIGH",
        "documentation": "",
        "group": "Mirror",
        "order": 0,
        "width": "NONE",
        "display_name": "name",
        "dependents": [],
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/connector-plugins/FileStreamSinkConnector/config"),
     ("PUT", "/connector-plugins/FileStreamSinkConnector/config/validate")],
)  # fmt: skip
def test_any_other_plugin_is_404_naming_the_one_this_worker_has(client: Rest, method: str, path: str) -> None:
    answer = client.request(method, path, json=VALID)
    assert (answer.status_code, answer.json()) == (
        404,
        {
            "error_code": 404,
            "message": f"Unknown connector plugin FileStreamSinkConnector; this worker has {PLUGIN_CLASS}",
        },
    )


@pytest.mark.parametrize("alias", ALIASES)
def test_a_valid_config_validates_with_no_error_under_the_name_the_path_gave(client: Rest, alias: str) -> None:
    answer = client.put(f"/connector-plugins/{alias}/config/validate", json={**VALID, "tasks.max": 3})
    assert answer.status_code == 200
    result = answer.json()
    assert (result["name"], result["error_count"], result["groups"]) == (alias, 0, ["Mirror"])
    values = _by_key(result)
    assert values["tasks.max"]["value"] == "3", "values are validated as the strings Connect stores"
    assert values["source.cluster.bootstrap.servers"] == {
        "name": "source.cluster.bootstrap.servers",
        "value": "east:9092",
        "recommended_values": [],
        "errors": [],
        "visible": True,
    }


def test_each_problem_is_counted_and_put_on_its_key(client: Rest) -> None:
    config = {"name": "m", "source.cluster.bootstrap.servers": "east:9092", "tasks.max": "zero"}
    result = client.put("/connector-plugins/MirrorSinkConnector/config/validate", json=config).json()
    values = _by_key(result)
    assert result["error_count"] == 2
    assert values["target.cluster.bootstrap.servers"]["errors"] == ["is required"]
    assert values["tasks.max"]["errors"][0].startswith("invalid value 'zero'")


def test_a_body_that_names_another_connector_class_is_400(client: Rest) -> None:
    config = {**VALID, "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector"}
    answer = client.put("/connector-plugins/MirrorSinkConnector/config/validate", json=config)
    assert (answer.status_code, answer.json()) == (
        400,
        {
            "error_code": 400,
            "message": "Included connector type org.apache.kafka.connect.file.FileStreamSinkConnector "
            "does not match request type MirrorSinkConnector",
        },
    )


def test_a_body_naming_the_plugin_by_another_of_its_names_is_no_mismatch(client: Rest) -> None:
    answer = client.put(
        "/connector-plugins/MirrorSinkConnector/config/validate", json={**VALID, "connector.class": PLUGIN_CLASS}
    )
    assert (answer.status_code, answer.json()["error_count"]) == (200, 0)


def test_a_body_that_is_not_a_json_object_is_400(client: Rest) -> None:
    answer = client.put("/connector-plugins/MirrorSinkConnector/config/validate", json=[VALID])
    assert answer.status_code == 400 and answer.json()["message"].startswith("Invalid request: body:")
