"""Connector plugins found by name, as Kafka Connect finds them on its plugin path.

A plugin is a Python entry point in the ``mirror_sink.connectors`` group: its name is a
``connector.class`` value and its object the connector class. Several names may point at one class:
MirrorMaker 2's files name ``org.apache.kafka.connect.mirror.MirrorSinkConnector``, Connect users the
short class name. The runtimes load a connector through this registry, never by importing it, so the
framework does not depend on any plugin; an installed package (a wheel, an editable install, the
venv Spark ships to its executors) carries its entry points in its metadata.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points

from mirror_sink.core.base.errors import ConfigError

#: The entry-point group connector plugins register under (see pyproject.toml).
GROUP = "mirror_sink.connectors"


@dataclass(frozen=True)
class Plugin:
    """One installed connector class and every name ``connector.class`` may give it."""

    name: str  # the class's own name: the entry point named after it
    aliases: frozenset[str]
    target: str  # "module:attribute"

    def load(self) -> object:
        """The connector class (its module imported now)."""
        module, _, attribute = self.target.partition(":")
        found: object = importlib.import_module(module)
        for part in attribute.split("."):
            found = getattr(found, part)
        return found


@functools.cache
def installed() -> tuple[Plugin, ...]:
    """Every installed connector plugin, by class name (read once from the packages' metadata)."""
    names_by_target: dict[str, set[str]] = {}
    for point in entry_points(group=GROUP):  # one class may be listed twice: by two installs of one package
        names_by_target.setdefault(point.value, set()).add(point.name)
    plugins = []
    for target, names in names_by_target.items():
        own = target.rpartition(":")[2].rpartition(".")[2]
        plugins.append(Plugin(own if own in names else min(names), frozenset(names), target))
    return tuple(sorted(plugins, key=lambda p: p.name))


def find(name: str) -> Plugin | None:
    """The plugin ``name`` (any of its aliases) designates, or None."""
    return next((p for p in installed() if name in p.aliases), None)


def aliases_of(name: str) -> frozenset[str]:
    """Every name of the plugin ``name`` designates (empty when none does)."""
    plugin = find(name)
    return plugin.aliases if plugin is not None else frozenset()


def load(name: str) -> object:
    """The connector class ``name`` designates; a ``ConfigError`` on ``connector.class`` naming what
    this worker runs when no installed plugin answers to it."""
    plugin = find(name)
    if plugin is None:
        runs = ", ".join(p.name for p in installed()) or (
            f"no connector at all: no package registers the {GROUP!r} entry points (is mirror-sink installed?)"
        )
        raise ConfigError("connector.class", f"unknown connector class {name!r}; this worker runs {runs}")
    return plugin.load()
