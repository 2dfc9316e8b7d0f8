"""A connector config as the Herder accepts it and as clients see it: validated, and masked.

Validation resolves config-provider references first, so a ``${file:...}`` that does not resolve is
reported on its key, then asks the plugin the config names (``ConnectorPluginClass.validate``, Connect's
``Connector.validate``); masking hides literal secrets but keeps references, which reveal nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.settings.config_providers import has_references, resolve
from mirror_sink.core.settings.secrets import MASK, is_secret
from mirror_sink.worker.connector_plugin import ConnectorPluginClass, plugin_class
from mirror_sink.worker.herder_types import InvalidRequest

__all__ = ["checked_config", "masked", "validate_config"]


def masked(config: Mapping[str, str]) -> dict[str, str]:
    """``config`` as shown to clients: literal secrets hidden, provider references kept."""
    return {k: (MASK if is_secret(k) and not has_references(v) else v) for k, v in config.items()}


def validate_config(config: Mapping[str, str], plugin: ConnectorPluginClass | None = None) -> dict[str, list[str]]:
    """Per-key problems of ``config`` after resolving provider references, as ``plugin`` (by default the
    class its ``connector.class`` names) sees them."""
    try:
        resolved = resolve(config)
    except ConfigError as exc:
        return {exc.key: [exc.message]}
    if plugin is not None:
        return plugin.validate(resolved)
    try:
        found = plugin_class(resolved)
    except ConfigError as exc:
        # No installed class answers to connector.class: the default class says what else is wrong too,
        # so that one answer names every problem.
        problems = plugin_class({}).validate(resolved)
        problems.setdefault(exc.key, [exc.message])
        return problems
    return found.validate(resolved)


def checked_config(name: str, config: Mapping[str, Any]) -> dict[str, str]:
    """``config`` as stored for connector ``name`` (values as strings, ``name`` set); InvalidRequest if wrong."""
    props = {k: str(v) for k, v in config.items() if v is not None}
    if props.setdefault("name", name) != name:
        raise InvalidRequest(
            f"Connector name configuration ({props['name']}) doesn't match connector name in the URL ({name})",
        )
    problems = validate_config(props)
    if problems:
        detail = "; ".join(f"{k}: {', '.join(v)}" for k, v in problems.items())
        raise InvalidRequest(
            f"Connector configuration is invalid and contains the following {len(problems)} error(s): {detail}",
        )
    return props
