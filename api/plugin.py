"""The MirrorSinkConnector plugin as the REST API describes it: config definitions and validation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from api.models import ConfigInfo, ConfigInfos, ConfigKeyInfo, ConfigValueInfo
from connectors import config_def

#: How ``GET /connector-plugins`` names the plugin: its full class name, as Connect does.
PLUGIN_CLASS = "org.apache.kafka.connect.mirror.MirrorSinkConnector"


def plugin_aliases() -> frozenset[str]:
    """Every name the plugin answers to under ``/connector-plugins/{plugin}`` (the plugin registry's)."""
    return config_def.plugin_aliases()


def config_definitions() -> list[ConfigKeyInfo]:
    """Every typed key with its type, default and documentation, in declaration order."""
    return [
        ConfigKeyInfo(
            name=key.name,
            type=key.type,
            required=key.required,
            default_value=key.default_value,
            importance="HIGH" if key.required else "MEDIUM",
            documentation=key.documentation,
            group="Mirror",
            order=key.order,
            display_name=key.name,
        )
        for key in config_def.config_keys()
    ]


def validate(
    plugin: str, config: Mapping[str, Any], problems_of: Callable[[Mapping[str, str]], dict[str, list[str]]]
) -> ConfigInfos:
    """Connect's validation result: each key's definition and value with its errors."""
    props = {k: str(v) for k, v in config.items() if v is not None}
    problems = problems_of(props)
    infos = []
    known = set()
    for definition in config_definitions():
        known.add(definition.name)
        value = props.get(definition.name, definition.default_value)
        errors = problems.get(definition.name, [])
        infos.append(
            ConfigInfo(definition=definition, value=ConfigValueInfo(name=definition.name, value=value, errors=errors))
        )
    for key, errors in problems.items():
        if key not in known:  # e.g. a provider reference that could not be resolved
            definition = ConfigKeyInfo(
                name=key, type="STRING", required=False, default_value=None, importance="LOW",
                documentation="", group="Clients", order=len(infos), display_name=key,
            )  # fmt: skip
            infos.append(ConfigInfo(definition=definition, value=ConfigValueInfo(name=key, value=None, errors=errors)))
    return ConfigInfos(
        name=plugin,
        error_count=sum(len(i.value.errors) for i in infos),
        groups=sorted({i.definition.group or "" for i in infos}),
        configs=infos,
    )
