"""Request and response bodies of the REST API, in Kafka Connect's JSON shapes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ConfigMap = dict[str, Any]


class ErrorResponse(BaseModel):
    """Every error: Connect's ErrorMessage."""

    error_code: int
    message: str


class ServerInfo(BaseModel):
    """GET /."""

    version: str
    commit: str
    kafka_cluster_id: str | None


class HealthResponse(BaseModel):
    """GET /health (KIP-1017)."""

    status: str
    message: str


class CreateConnectorRequest(BaseModel):
    """POST /connectors."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    config: ConfigMap
    initial_state: Literal["RUNNING", "PAUSED", "STOPPED"] | None = None


class TaskId(BaseModel):
    """A task's identity."""

    connector: str
    task: int


class ConnectorInfo(BaseModel):
    """Connect's ConnectorInfo."""

    name: str
    config: dict[str, str]
    tasks: list[TaskId]
    type: Literal["sink"]


class StateBody(BaseModel):
    """A connector's or task's state."""

    state: str
    worker_id: str
    trace: str | None = None


class TaskState(StateBody):
    """A task's state with its id."""

    id: int


class ConnectorStatus(BaseModel):
    """Connect's ConnectorStateInfo."""

    name: str
    connector: StateBody
    tasks: list[TaskState]
    type: Literal["sink"]


class TaskInfo(BaseModel):
    """GET /connectors/{name}/tasks entries."""

    id: TaskId
    config: dict[str, str]


class SinkPartition(BaseModel):
    """A source partition, in Connect's sink offsets format."""

    kafka_topic: str
    kafka_partition: int


class SinkOffset(BaseModel):
    """A next offset to mirror."""

    kafka_offset: int


class ConnectorOffset(BaseModel):
    """One partition's offset."""

    partition: SinkPartition
    offset: SinkOffset | None


class ConnectorOffsets(BaseModel):
    """GET/PATCH /connectors/{name}/offsets (KIP-875)."""

    offsets: list[ConnectorOffset]


class Message(BaseModel):
    """A plain acknowledgement."""

    message: str


class ActiveTopics(BaseModel):
    """One connector's topics."""

    topics: list[str]


class PluginInfo(BaseModel):
    """GET /connector-plugins entries."""

    model_config = ConfigDict(populate_by_name=True)
    class_: str = Field(alias="class")
    type: Literal["sink"]
    version: str


class ConfigKeyInfo(BaseModel):
    """A config key's definition (Connect's ConfigKeyInfo, trimmed to what applies)."""

    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str | None = None
    order: int
    width: str = "NONE"
    display_name: str
    dependents: list[str] = []


class ConfigValueInfo(BaseModel):
    """A config key's validated value."""

    name: str
    value: str | None
    recommended_values: list[str] = []
    errors: list[str]
    visible: bool = True


class ConfigInfo(BaseModel):
    """One entry of a validation result."""

    definition: ConfigKeyInfo
    value: ConfigValueInfo


class ConfigInfos(BaseModel):
    """PUT /connector-plugins/{plugin}/config/validate."""

    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]


class LoggerLevel(BaseModel):
    """A logger's level."""

    level: str
    last_modified: int | None = None


class LevelRequest(BaseModel):
    """PUT /admin/loggers/{logger}."""

    level: Literal["TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "OFF"]
