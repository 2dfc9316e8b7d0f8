"""MirrorSinkConnector's config definition (Connect's ``Connector.config()``): every typed key with its
type, default and documentation, in declaration order, as plain values for the REST API."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticUndefined

from mirror_sink.config.mirror_sink_config import KEY_DOCS, MirrorSinkConfig, connector_class_aliases

__all__ = ["ConfigKey", "config_keys", "plugin_aliases"]


@dataclass(frozen=True)
class ConfigKey:
    """One key of the connector's config, as Connect's ConfigKeyInfo describes it."""

    name: str
    type: str  # "BOOLEAN", "INT" or "STRING"
    required: bool
    default_value: str | None
    documentation: str
    order: int


def plugin_aliases() -> frozenset[str]:
    """Every name the connector answers to as a ``connector.class`` (the plugin registry's)."""
    return connector_class_aliases()


def _type_name(annotation: Any) -> str:
    args = set(typing.get_args(annotation)) if isinstance(annotation, types.UnionType) else {annotation}
    if bool in args:
        return "BOOLEAN"
    if int in args:
        return "INT"
    return "STRING"


def config_keys() -> list[ConfigKey]:
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
        out.append(ConfigKey(key, _type_name(field.annotation), required, shown, KEY_DOCS.get(key, ""), order))
    return out
