"""The MirrorSinkConnector plugin as the REST API describes it: config definitions and validation."""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from pydantic_core import PydanticUndefined

from api.models import ConfigInfo, ConfigInfos, ConfigKeyInfo, ConfigValueInfo
from mirror_sink.config.mirror_sink_config import KEY_DOCS, MirrorSinkConfig, connector_class_aliases

#: How ``GET /connector-plugins`` names the plugin: its full class name, as Connect does.
PLUGIN_CLASS = "org.apache.kafka.connect.mirror.MirrorSinkConnector"


def plugin_aliases() -> frozenset[str]:
    """Every name the plugin answers to under ``/connector-plugins/{plugin}`` (the plugin registry's)."""
    return connector_class_aliases()


def _type_name(annotation: Any) -> str:
    args = set(typing.get_args(annotation)) if isinstance(annotation, types.UnionType) else {annotation}
    if bool in args:
        return "BOOLEAN"
    if int in args:
        return "INT"
    return "STRING"


def config_definitions() -> list[ConfigKeyInfo]:
    """Every typed key with its type, default and documentation, in declaration order."""
    out = []
    for order, (field_name, field) in enumerate(MirrorSinkConfig.model_fields.items()):
        if field_name == "client_props":
            continue
        key = field.alias or field_name
        default = field.default
        required = default is PydanticUndefined and field.default_factory is None
        shown = None if required or default is None else str(default.value if hasattr(default, "value") else default)
        if isinstance(default, bool):
            shown = str(default).lower()
        out.append(
            ConfigKeyInfo(
                name=key,
                type=_type_name(field.annotation),
                required=required,
                default_value=shown,
                importance="HIGH" if required else "MEDIUM",
                documentation=KEY_DOCS.get(key, ""),
                group="Mirror",
                order=order,
                display_name=key,
            )
        )
    return out


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
