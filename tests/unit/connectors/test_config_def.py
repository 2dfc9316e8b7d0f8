"""MirrorSinkConnector's config definition as the REST API shows it (Connect's ConfigKeyInfo): every
typed key once, in declaration order, with its Connect type, whether it is required, its default as
a string (booleans as Java writes them, enums by value, none when unset) and its documentation; and
every name the connector answers to."""

from __future__ import annotations

import pytest

from connectors.config_def import ConfigKey, config_keys, plugin_aliases
from mirror_sink.config.mirror_sink_config import KEY_DOCS, MirrorSinkConfig
from mirror_sink.core.settings import plugins

pytestmark = pytest.mark.unit


def _by_name() -> dict[str, ConfigKey]:
    return {k.name: k for k in config_keys()}


def test_every_typed_key_is_listed_once_in_declaration_order_without_the_client_settings() -> None:
    keys = config_keys()
    names = [k.name for k in keys]
    assert len(names) == len(set(names)) and set(names) == MirrorSinkConfig.known_keys()
    assert [k.order for k in keys] == sorted(k.order for k in keys)
    assert names[:2] == ["name", "connector.class"]
    assert "client_props" not in names


def test_only_the_name_and_the_two_clusters_are_required_and_they_have_no_default() -> None:
    required = [k for k in config_keys() if k.required]
    assert [k.name for k in required] == [
        "name",
        "source.cluster.bootstrap.servers",
        "target.cluster.bootstrap.servers",
    ]
    assert all(k.default_value is None for k in required)


def test_each_key_has_its_connect_type_and_its_default_as_connect_writes_it() -> None:
    keys = _by_name()
    assert (keys["transaction.producer"].type, keys["transaction.producer"].default_value) == ("BOOLEAN", "true")
    assert (keys["verify.enabled"].type, keys["verify.enabled"].default_value) == ("BOOLEAN", "false")
    assert (keys["tasks.max"].type, keys["tasks.max"].default_value) == ("INT", "1")
    assert (keys["offset.gap.policy"].type, keys["offset.gap.policy"].default_value) == ("STRING", "fail")
    assert keys["mirror.mode"].default_value == "auto", "an enum by its value"
    assert keys["source.unreachable.give.up.ms"].default_value == "-1"
    optional = keys["offset.fallback.group.id"]
    assert not optional.required and optional.default_value is None, "optional, with no default"


def test_each_key_carries_its_documentation() -> None:
    keys = config_keys()
    assert all(k.documentation == KEY_DOCS.get(k.name, "") for k in keys)
    assert keys[0].documentation.startswith("Connector name")


def test_the_connector_answers_to_every_name_the_plugin_registry_gives_it() -> None:
    aliases = plugin_aliases()
    assert aliases == plugins.aliases_of("MirrorSinkConnector")
    assert aliases == {"MirrorSinkConnector", "org.apache.kafka.connect.mirror.MirrorSinkConnector"}
