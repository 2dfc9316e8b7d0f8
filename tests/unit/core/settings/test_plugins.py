"""The connector plugin registry: names resolved through the installed package's entry points."""

from __future__ import annotations

import pytest

from connectors.mirror_sink_connector import MirrorSinkConnector
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.settings import plugins
from mirror_sink.worker.connector_plugin import ConnectorPlugin, load_connector

MM2_NAME = "org.apache.kafka.connect.mirror.MirrorSinkConnector"
PROPS = {
    "name": "registry",
    "source.cluster.alias": "east",
    "source.cluster.bootstrap.servers": "east:9092",
    "target.cluster.bootstrap.servers": "west:9092",
}


def test_the_connector_is_found_by_its_class_name_and_by_mirrormaker_2_s_java_name() -> None:
    for name in ("MirrorSinkConnector", MM2_NAME):
        plugin = plugins.find(name)
        assert plugin is not None and plugin.name == "MirrorSinkConnector"
        assert plugin.load() is MirrorSinkConnector
    assert plugins.aliases_of(MM2_NAME) == {"MirrorSinkConnector", MM2_NAME}


def test_an_unknown_class_is_a_config_error_naming_what_the_worker_runs() -> None:
    assert plugins.find("FileStreamSinkConnector") is None
    with pytest.raises(ConfigError) as caught:
        plugins.load("FileStreamSinkConnector")
    assert caught.value.key == "connector.class"
    assert caught.value.message == (
        "unknown connector class 'FileStreamSinkConnector'; this worker runs MirrorSinkConnector"
    )


def test_a_runtime_loads_the_connector_its_config_names_without_importing_it() -> None:
    for name in (None, MM2_NAME):
        props = PROPS if name is None else {**PROPS, "connector.class": name}
        connector = load_connector(props)
        assert isinstance(connector, MirrorSinkConnector) and isinstance(connector, ConnectorPlugin)
        assert connector.config.name == "registry"


def test_the_config_accepts_every_name_of_the_connector_and_no_other() -> None:
    assert MirrorSinkConfig.parse({**PROPS, "connector.class": MM2_NAME}).connector_class == MM2_NAME
    with pytest.raises(ConfigError, match="unknown connector class 'Other'; this worker runs MirrorSinkConnector"):
        MirrorSinkConfig.parse({**PROPS, "connector.class": "Other"})
