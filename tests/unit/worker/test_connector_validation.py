"""A connector config as the Herder accepts and shows it: masked for clients (literal secrets only),
validated after provider references resolve, by the plugin its ``connector.class`` names (every
problem in one answer, an unknown class too), and refused with the name in the URL.

The fake plugin of ``tests/unit/worker/fakes.py`` answers ``connector.class=FakeConnector``; a
config without one is validated by the installed MirrorSinkConnector, which connects nowhere to do it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from mirror_sink.core.settings import plugins
from mirror_sink.worker.connector_plugin import DEFAULT_CONNECTOR_CLASS, ConnectorPlugin
from mirror_sink.worker.connector_validation import checked_config, masked, validate_config
from mirror_sink.worker.herder_types import InvalidRequest
from tests.unit.worker.fakes import FAKE_CLASS, props

pytestmark = pytest.mark.unit

UNSET = "MIRROR_SINK_TEST_NEVER_SET"
MIRROR = {
    "name": "mirror",
    "source.cluster.bootstrap.servers": "east:9092",
    "target.cluster.bootstrap.servers": "west:9092",
}


class Refuses:
    """A plugin class that refuses every config, and says what it was shown."""

    def __init__(self) -> None:
        self.seen: list[Mapping[str, str]] = []

    def __call__(self, props: Mapping[str, Any]) -> ConnectorPlugin:
        raise AssertionError("validation never makes a connector")

    def validate(self, props: Mapping[str, str]) -> dict[str, list[str]]:
        self.seen.append(props)
        return {"topics": ["refused"]}


def test_literal_secrets_are_masked_and_references_and_other_values_kept() -> None:
    shown = masked(
        {
            "source.cluster.sasl.jaas.config": 'org.apache...ScramLoginModule required password="p";',
            "target.cluster.ssl.key.password": "${file:/etc/secrets/target.properties:key.password}",
            "target.cluster.ssl.truststore.location": "/etc/truststore.jks",
            "topics": "orders",
        }
    )
    assert shown == {
        "source.cluster.sasl.jaas.config": "[hidden]",
        "target.cluster.ssl.key.password": "${file:/etc/secrets/target.properties:key.password}",
        "target.cluster.ssl.truststore.location": "/etc/truststore.jks",
        "topics": "orders",
    }


def test_the_plugin_given_validates_the_config_with_its_references_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIRROR_SINK_TEST_TOPICS", "orders")
    plugin = Refuses()
    assert validate_config({"topics": "${env:MIRROR_SINK_TEST_TOPICS}"}, plugin) == {"topics": ["refused"]}
    assert plugin.seen == [{"topics": "orders"}]


def test_a_reference_that_does_not_resolve_is_the_one_problem_reported_on_its_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    plugin = Refuses()
    problems = validate_config({"topics": "orders", "target.cluster.sasl.password": f"${{env:{UNSET}}}"}, plugin)
    assert list(problems) == ["target.cluster.sasl.password"] and UNSET in problems["target.cluster.sasl.password"][0]
    assert not plugin.seen, "the plugin never sees an unresolved config"


def test_the_class_the_config_names_validates_it(registry: None) -> None:
    assert validate_config(props()) == {}
    assert validate_config(props(invalid="yes")) == {"invalid": ["the fake connector refuses this config"]}
    assert validate_config(MIRROR) == {}, "no connector.class: the default plugin"


def test_an_unknown_class_is_reported_beside_what_the_default_plugin_finds_wrong() -> None:
    problems = validate_config({"name": "mirror", "connector.class": "FileStreamSinkConnector"})
    [said] = problems["connector.class"]
    assert said.endswith("unknown connector class 'FileStreamSinkConnector'; this worker runs MirrorSinkConnector")
    assert problems["source.cluster.bootstrap.servers"] == ["is required"]


def test_an_unknown_class_is_named_even_when_the_default_plugin_does_not_check_the_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    default = Refuses()
    real = plugins.load
    monkeypatch.setattr(plugins, "load", lambda name: default if name == DEFAULT_CONNECTOR_CLASS else real(name))
    problems = validate_config({"connector.class": "FileStreamSinkConnector", "topics": "orders"})
    assert problems == {
        "topics": ["refused"],
        "connector.class": ["unknown connector class 'FileStreamSinkConnector'; this worker runs MirrorSinkConnector"],
    }


def test_a_checked_config_is_stored_as_strings_with_its_name_and_without_null_values(registry: None) -> None:
    stored = checked_config("fake", {"connector.class": FAKE_CLASS, "tasks.max": 2, "topics": None})
    assert stored == {"connector.class": FAKE_CLASS, "tasks.max": "2", "name": "fake"}


def test_a_config_naming_another_connector_than_the_url_is_refused(registry: None) -> None:
    with pytest.raises(InvalidRequest) as refused:
        checked_config("fake", props("other"))
    assert refused.value.message == (
        "Connector name configuration (other) doesn't match connector name in the URL (fake)"
    )


def test_an_invalid_config_is_refused_with_every_problem_counted_and_named(registry: None) -> None:
    with pytest.raises(InvalidRequest) as refused:
        checked_config("mirror", {"name": "mirror", "tasks.max": "zero"})
    message = refused.value.message
    assert message.startswith("Connector configuration is invalid and contains the following 3 error(s): ")
    for key in ("tasks.max: invalid value 'zero'", "source.cluster.bootstrap.servers: is required"):
        assert key in message
