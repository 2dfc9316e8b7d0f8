"""What a runtime asks of a connector plugin, and the plugin loaded by its ``connector.class``.

Kafka Connect's Worker instantiates a connector by class name from its plugin path and asks it for
task configs; here the runtime loads the class from the plugin registry (``core.plugins``) and asks
the connector for its tasks. The runtime depends on these two shapes only, never on a plugin's module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from mirror_sink.config.mirror_sink_config import CONNECTOR_CLASS, MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.base.states import TaskState
from mirror_sink.core.settings import plugins
from mirror_sink.task.cycle import TaskCounters
from mirror_sink.topics.source_discovery import TopicMapping


@runtime_checkable
class ConnectorTask(Protocol):
    """One task of a connector: a thread of its own with Connect's task states."""

    task_id: int
    state: TaskState
    trace: str | None
    counters: TaskCounters

    def start(self) -> None:
        """Run in a background thread."""

    def stop(self, timeout: float | None = None) -> None:
        """Finish the cycle under way and leave; wait up to ``timeout``."""

    def is_alive(self) -> bool:
        """True while the task's thread runs."""

    def update_topics(self, mappings: Mapping[str, TopicMapping]) -> None:
        """New topic mappings, applied between cycles."""


@runtime_checkable
class ConnectorPlugin(Protocol):
    """A connector: validates its config, provisions the target, and makes its tasks."""

    config: MirrorSinkConfig
    mappings: dict[str, TopicMapping]

    def check_clusters(self) -> None:
        """A refused certificate or password, said in one line, before anything touches a cluster."""

    def start(self) -> dict[str, TopicMapping]:
        """Connect to both clusters and provision the target topics; returns the mappings."""

    def refresh(self) -> bool:
        """Re-discover and provision topics; True when the mappings changed."""

    def topic_acls_due(self) -> bool:
        """True when ``sync_topic_acls`` would sync now."""

    def sync_topic_acls(self) -> None:
        """Copy the mirrored topics' ACLs to the target when due; never raises."""

    def topic_acl_problem(self) -> str | None:
        """Why the target's topic ACLs may differ from the source's now (None: in step, or not synced)."""

    def task(self, task_id: int, worker_id: str) -> ConnectorTask:
        """Task ``task_id`` of this connector on worker ``worker_id``, not started."""


def load_connector(props: Mapping[str, Any]) -> ConnectorPlugin:
    """The connector ``props``' ``connector.class`` names, made from ``props`` (``ConfigError`` on a bad
    config, or on a class no installed plugin answers to)."""
    name = str(props.get("connector.class") or CONNECTOR_CLASS)
    made = plugins.load(name)
    if not callable(made):
        raise ConfigError("connector.class", f"{name!r} is registered as a connector plugin but is not a class")
    connector = made(props)
    if not isinstance(connector, ConnectorPlugin):
        raise ConfigError("connector.class", f"{name!r} does not implement a connector plugin (ConnectorPlugin)")
    return connector
