"""What a runtime asks of a connector plugin, and the plugin loaded by its ``connector.class``.

Kafka Connect's Worker instantiates a connector by class name from its plugin path and knows it only
through connect-api; here the runtime loads the class from the plugin registry (``core.plugins``) and
speaks to it through the shapes below, which carry plain values only: the connector's props as a
string mapping, its tasks, what the runtime needs for its own duties (the clusters it waits for, the
target topics it claims, the refresh interval), KIP-875 offsets keyed by source partition, and the
plugin's background jobs as objects with a small lifecycle. The runtime never imports a plugin's
module, its config model or its engine (an import-linter contract keeps it so).

A plugin imports this module (and nothing else of the worker) for the shapes it implements, the
values it answers with and the refusals it raises.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.base.states import TaskState
from mirror_sink.core.settings import plugins
from mirror_sink.worker.herder_types import CheckpointState, Conflict, InvalidRequest, PartitionLag, PartitionOffset

__all__ = [
    "DEFAULT_CONNECTOR_CLASS",
    "CheckpointState",
    "Conflict",
    "ConnectorJob",
    "ConnectorPlugin",
    "ConnectorPluginClass",
    "ConnectorSettings",
    "ConnectorTask",
    "InvalidRequest",
    "JobPhase",
    "MetricFamily",
    "PartitionLag",
    "PartitionOffset",
    "WatchedCluster",
    "load_connector",
    "plugin_class",
]

#: The class a config without ``connector.class`` runs (the one plugin this project ships; a name
#: resolved through the registry, never an import).
DEFAULT_CONNECTOR_CLASS = "MirrorSinkConnector"


class JobPhase(enum.Enum):
    """When a plugin's background jobs run, as the runtime starts and stops them."""

    #: Started with the tasks, stopped with them (before the tasks are waited for).
    BESIDE_TASKS = "beside tasks"
    #: Started with the first tasks, kept while the connector is RUNNING or PAUSED, stopped when it is
    #: STOPPED or shut down.
    WHILE_ACTIVE = "while active"


@runtime_checkable
class ConnectorJob(Protocol):
    """One background job of a connector (a thread of its own), as the runtime runs it."""

    name: str

    def start(self) -> None:
        """Begin (the job runs on its own thread)."""

    def request_stop(self) -> None:
        """Ask the job to end; returns without waiting for it."""

    def stop(self, timeout_s: float) -> None:
        """``request_stop``, then wait up to ``timeout_s`` for the job to end."""

    def is_alive(self) -> bool:
        """True while the job's thread runs."""


@dataclass(frozen=True)
class WatchedCluster:
    """A cluster the connector needs, which the runtime waits for before starting it and names on the
    status while it cannot be reached."""

    role: str  # "source" or "target": its line and the give-up key say it
    alias: str
    bootstrap: str
    #: ``{role}.unreachable.give.up.ms``: past this the connector is FAILED (negative: never).
    give_up_ms: int
    #: Its listeners' ``security.protocol`` (a TLS handshake probes an SSL listener).
    security_protocol: str


@dataclass(frozen=True)
class ConnectorSettings:
    """What the runtime needs of a connector's config for its own duties, as plain values."""

    name: str
    tasks_max: int
    #: The target cluster's bootstrap servers: two connectors of one worker may not write one topic.
    target_bootstrap: str
    #: Client settings of the target cluster, resolved and with its security settings: a worker without
    #: Kafka settings of its own reports this cluster's id on ``GET /``.
    target_client: Mapping[str, str]
    #: The clusters the runtime waits for before a start, and watches while the connector runs.
    clusters: tuple[WatchedCluster, ...]
    #: Whether, and how often, the runtime asks the connector to ``refresh``.
    refresh_enabled: bool
    refresh_interval_s: float
    #: What ends a task's open transaction when it is left at shutdown (said in the log).
    transaction_timeout_ms: int


@dataclass(frozen=True)
class MetricFamily:
    """Gauges a plugin publishes beside the runtime's own at every scrape (KIP-877's plugin metrics)."""

    name: str
    documentation: str
    labels: tuple[str, ...]
    samples: tuple[tuple[tuple[str, ...], float], ...]


@runtime_checkable
class ConnectorTask(Protocol):
    """One task of a connector: a thread of its own with Connect's task states."""

    task_id: int
    state: TaskState
    trace: str | None

    @property
    def transaction_version(self) -> int | None:
        """The transaction protocol its producer speaks (None before it knows)."""

    def start(self) -> None:
        """Run in a background thread."""

    def stop(self, timeout: float | None = None) -> None:
        """Finish the cycle under way and leave; wait up to ``timeout``."""

    def is_alive(self) -> bool:
        """True while the task's thread runs."""


@runtime_checkable
class ConnectorPlugin(Protocol):
    """A connector: made from its props (``ConfigError`` when they are wrong), it provisions what its
    tasks need, makes them, and names its background jobs. New topics reach its tasks from it."""

    settings: ConnectorSettings

    def preflight(self) -> None:
        """Before every start or resume: refuse, in one line, what would make it fail (a refused
        certificate or password, a config for another runtime)."""

    def start(self) -> None:
        """Connect to the clusters and provision what the tasks need (the runtime tries again while a
        cluster answers late)."""

    def refresh(self) -> bool:
        """Re-discover and provision topics; True when they changed (the runtime then claims the new
        ``target_topics`` and, when no other connector of this worker writes them, calls
        ``reconfigure_tasks``)."""

    def reconfigure_tasks(self) -> None:
        """Hand the tasks it made what the last refresh found (each applies it between cycles)."""

    def active_topics(self) -> list[str]:
        """The source topics it mirrors now (Connect's active topics, KIP-558); empty before ``start``."""

    def reset_active_topics(self) -> None:
        """Forget them: the set is recomputed at the next refresh."""

    def target_topics(self) -> list[str]:
        """The target topics it writes now."""

    def maintenance_due(self) -> bool:
        """True when ``maintain`` has work to do now."""

    def maintain(self) -> None:
        """Work on its own interval, run by the runtime off its loop's thread; never raises."""

    def task(self, task_id: int, worker_id: str) -> ConnectorTask:
        """Task ``task_id`` of this connector on worker ``worker_id``, not started."""

    def jobs(self, phase: JobPhase) -> Sequence[ConnectorJob]:
        """New background jobs to run in ``phase``, not started: the runtime starts and stops them."""

    def metrics(self) -> Sequence[MetricFamily]:
        """Its gauges now, for this scrape; never raises."""

    def offsets(self) -> list[PartitionOffset]:
        """KIP-875: the next offset to mirror of each source partition, sorted."""

    def alter_offsets(self, offsets: Sequence[PartitionOffset]) -> None:
        """KIP-875: set source partitions' next offsets (the runtime has stopped the connector)."""

    def reset_offsets(self) -> None:
        """KIP-875: forget every stored offset (the runtime has stopped the connector)."""


class ConnectorPluginClass(Protocol):
    """A connector class: validates props without connecting anywhere, and makes a connector."""

    def __call__(self, props: Mapping[str, Any]) -> ConnectorPlugin:
        """The connector of ``props`` (``ConfigError`` when they are wrong)."""

    def validate(self, props: Mapping[str, str]) -> dict[str, list[str]]:
        """Every problem of ``props`` by key, empty when valid (Connect's ``Connector.validate``)."""


def plugin_class(props: Mapping[str, Any]) -> ConnectorPluginClass:
    """The class the ``props``' ``connector.class`` names (``ConfigError`` when no installed plugin
    answers to it, or it is not a connector class)."""
    name = str(props.get("connector.class") or DEFAULT_CONNECTOR_CLASS)
    made = plugins.load(name)
    if not callable(made) or not callable(getattr(made, "validate", None)):
        raise ConfigError("connector.class", f"{name!r} is registered as a connector plugin but is not a class")
    return cast(ConnectorPluginClass, made)  # checked just above, as far as Python can tell


def load_connector(props: Mapping[str, Any]) -> ConnectorPlugin:
    """The connector ``props``' ``connector.class`` names, made from ``props`` (``ConfigError`` on a bad
    config, or on a class no installed plugin answers to)."""
    name = str(props.get("connector.class") or DEFAULT_CONNECTOR_CLASS)
    connector = plugin_class(props)(props)
    if not isinstance(connector, ConnectorPlugin):
        raise ConfigError("connector.class", f"{name!r} does not implement a connector plugin (ConnectorPlugin)")
    return connector
