"""What the Herder answers with and refuses with: domain values and exceptions, no HTTP.

The REST API (``api/``) turns these values into Kafka Connect's JSON shapes and these exceptions
into status codes; the Herder itself knows neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from mirror_sink.core.base.states import ConnectorState

ConnectorType = Literal["sink"]


# -- exceptions ---------------------------------------------------------------------------------
class HerderError(Exception):
    """An operation the Herder refuses; ``message`` says why, for the client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class NotFound(HerderError):
    """The connector or task named does not exist."""


class ConnectorNotFound(NotFound):
    """No connector of this name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Connector {name} not found")
        self.name = name


class TaskNotFound(NotFound):
    """The connector has no task of this id."""

    def __init__(self, name: str, task_id: int) -> None:
        super().__init__(f"Task {name}-{task_id} not found")
        self.name = name
        self.task_id = task_id


class Conflict(HerderError):
    """The operation clashes with the connector's current state (exists already, not stopped,
    not running because its stored config is invalid, its offsets group in use, ...)."""


class InvalidRequest(HerderError):
    """The input itself is wrong: an invalid config, a name mismatch, a malformed offset."""


# -- values -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConnectorTaskId:
    """A task's identity: its connector and its number."""

    connector: str
    task: int


@dataclass(frozen=True)
class ConnectorInfo:
    """A connector's (masked) config and its tasks (Connect's ConnectorInfo)."""

    name: str
    config: Mapping[str, str]
    tasks: tuple[ConnectorTaskId, ...]
    type: ConnectorType = "sink"


@dataclass(frozen=True)
class TaskConfig:
    """One task's identity and (masked) config."""

    id: ConnectorTaskId
    config: Mapping[str, str]


@dataclass(frozen=True)
class AssignedState:
    """A connector's or task's state on the worker running it; ``trace`` only when there is one."""

    state: ConnectorState
    worker_id: str
    trace: str | None = None


@dataclass(frozen=True)
class TaskStatus:
    """One task's state, with its id."""

    id: int
    status: AssignedState


@dataclass(frozen=True)
class ConnectorStatus:
    """A connector's state and its tasks' (Connect's ConnectorStateInfo)."""

    name: str
    connector: AssignedState
    tasks: tuple[TaskStatus, ...]
    type: ConnectorType = "sink"


@dataclass(frozen=True)
class PartitionOffset:
    """The next offset to mirror of a *source* partition; ``offset`` None asks to remove it."""

    topic: str
    partition: int
    offset: int | None


@dataclass(frozen=True)
class CheckpointState:
    """A group's newest checkpoint on one target partition, as stored on the target."""

    group: str
    topic: str  # the target topic
    partition: int
    upstream_offset: int
    downstream_offset: int
    timestamp_ms: int


@dataclass(frozen=True)
class PartitionLag:
    """How far one target partition is behind its source partition."""

    topic: str  # the target topic
    partition: int
    records: int
    seconds: float
