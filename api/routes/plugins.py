"""``/connector-plugins``: the worker's one plugin, its config definitions and validation: Kafka Connect's
``ConnectorPluginsResource``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.models import ConfigInfos, ConfigKeyInfo, ConfigMap, PluginInfo
from api.plugin import PLUGIN_CLASS, config_definitions, plugin_aliases, validate
from mirror_sink import __version__
from mirror_sink.worker import connector_validation
from mirror_sink.worker.connector_plugin import plugin_class
from mirror_sink.worker.herder_types import InvalidRequest


def _plugin_name(cls: str) -> str:
    """Connect's comparison: the simple class name without its Connector suffix."""
    return cls.rsplit(".", maxsplit=1)[-1].removesuffix("Connector")


def _plugin(plugin: str) -> None:
    """Connect's 404 for a plugin this worker does not have."""
    if plugin not in plugin_aliases():
        raise StarletteHTTPException(404, f"Unknown connector plugin {plugin}; this worker has {PLUGIN_CLASS}")


def router() -> APIRouter:
    """The connector plugins resource (the worker's plugin does not depend on its Herder)."""
    routes = APIRouter(prefix="/connector-plugins")

    @routes.get("", response_model=list[PluginInfo], response_model_by_alias=True)
    def plugins(connectors_only: Annotated[bool, Query(alias="connectorsOnly")] = True) -> list[PluginInfo]:
        # This worker has one plugin and no transformations, predicates or converters to list besides.
        return [PluginInfo.model_validate({"class": PLUGIN_CLASS, "type": "sink", "version": __version__})]

    @routes.get("/{plugin}/config", response_model=list[ConfigKeyInfo])
    def plugin_config(plugin: str) -> list[ConfigKeyInfo]:
        _plugin(plugin)
        return config_definitions()

    @routes.put("/{plugin}/config/validate", response_model=ConfigInfos)
    def validate_config(plugin: str, config: Annotated[ConfigMap, Body()]) -> ConfigInfos:
        _plugin(plugin)
        named = str(config.get("connector.class", ""))
        if named and _plugin_name(named) != _plugin_name(plugin):
            raise InvalidRequest(f"Included connector type {named} does not match request type {plugin}")
        # Module-qualified: this route's own name (its OpenAPI operationId) is validate_config.
        # The plugin the path names validates (Connect's Connector.validate), whatever the body names.
        named_plugin = plugin_class({"connector.class": plugin})
        return validate(plugin, config, lambda props: connector_validation.validate_config(props, named_plugin))

    return routes
