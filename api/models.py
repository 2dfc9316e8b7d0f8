"""Request and response bodies of the REST API, in Kafka Connect's JSON shapes.

The ``of`` constructors turn the Herder's domain values into these bodies.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mirror_sink.core.base.states import TargetState
from mirror_sink.failover.checkpoints.offset_translator import TranslatedOffset
from mirror_sink.failover.rehearsal.readiness import Readiness
from mirror_sink.worker import herder_types as domain

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
    initial_state: TargetState | None = None

    @field_validator("name", mode="before")
    @classmethod
    def _trimmed(cls, value: object) -> object:
        # Connect trims the name (CreateConnectorRequest).
        return value.strip() if isinstance(value, str) else value

    @field_validator("initial_state", mode="before")
    @classmethod
    def _any_case(cls, value: object) -> object:
        # Connect's InitialState.forValue upper-cases it.
        return value.upper() if isinstance(value, str) else value


class TaskId(BaseModel):
    """A task's identity."""

    connector: str
    task: int

    @classmethod
    def of(cls, task: domain.ConnectorTaskId) -> TaskId:
        """The body of a task's identity."""
        return cls(connector=task.connector, task=task.task)


class ConnectorInfo(BaseModel):
    """Connect's ConnectorInfo."""

    name: str
    config: dict[str, str]
    tasks: list[TaskId]
    type: Literal["sink"]

    @classmethod
    def of(cls, info: domain.ConnectorInfo) -> ConnectorInfo:
        """The body of the Herder's ConnectorInfo."""
        return cls(name=info.name, config=dict(info.config), tasks=[TaskId.of(t) for t in info.tasks], type=info.type)


class StateBody(BaseModel):
    """A connector's or task's state."""

    state: str
    worker_id: str
    trace: str | None = None

    @classmethod
    def of(cls, state: domain.AssignedState) -> StateBody:
        """The body of a connector's or task's state."""
        return cls(state=state.state.value, worker_id=state.worker_id, trace=state.trace)


class TaskStateBody(StateBody):
    """A task's state with its id (Connect's ConnectorStateInfo.TaskState)."""

    id: int

    @classmethod
    def of_task(cls, task: domain.TaskStatus) -> TaskStateBody:
        """The body of one task's state, with its id."""
        return cls(id=task.id, **StateBody.of(task.status).model_dump())


class ConnectorStatus(BaseModel):
    """Connect's ConnectorStateInfo."""

    name: str
    connector: StateBody
    tasks: list[TaskStateBody]
    type: Literal["sink"]

    @classmethod
    def of(cls, status: domain.ConnectorStatus) -> ConnectorStatus:
        """The body of the Herder's ConnectorStatus."""
        return cls(
            name=status.name,
            connector=StateBody.of(status.connector),
            tasks=[TaskStateBody.of_task(t) for t in status.tasks],
            type=status.type,
        )

    def document(self) -> dict[str, Any]:
        """The shape answered outside the response model (expanded listing, restart): no null
        trace, each task's id first."""
        doc = self.model_dump(exclude_none=True)
        doc["tasks"] = [{"id": t.id, **t.model_dump(exclude={"id"}, exclude_none=True)} for t in self.tasks]
        return doc


class TaskInfo(BaseModel):
    """GET /connectors/{name}/tasks entries."""

    id: TaskId
    config: dict[str, str]

    @classmethod
    def of(cls, task: domain.TaskConfig) -> TaskInfo:
        """The body of one task's config."""
        return cls(id=TaskId.of(task.id), config=dict(task.config))


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

    @classmethod
    def of(cls, offsets: list[domain.PartitionOffset]) -> ConnectorOffsets:
        """The body of the Herder's source partition offsets."""
        return cls(
            offsets=[
                ConnectorOffset(
                    partition=SinkPartition(kafka_topic=o.topic, kafka_partition=o.partition),
                    offset=None if o.offset is None else SinkOffset(kafka_offset=o.offset),
                )
                for o in offsets
            ]
        )

    def to_domain(self) -> list[domain.PartitionOffset]:
        """The requested offsets as the Herder takes them (a null offset asks to remove one)."""
        return [
            domain.PartitionOffset(
                o.partition.kafka_topic,
                o.partition.kafka_partition,
                None if o.offset is None else o.offset.kafka_offset,
            )
            for o in self.offsets
        ]


class TranslateOffsetsRequest(BaseModel):
    """POST /connectors/{name}/offsets/translate: offsets in Connect's sink offsets shape, one way."""

    direction: Literal["source-to-target", "target-to-source"] = "source-to-target"
    offsets: list[ConnectorOffset] = Field(min_length=1, max_length=100_000)

    def to_domain(self) -> list[domain.PartitionOffset]:
        """The asked offsets as the Herder takes them."""
        return ConnectorOffsets(offsets=self.offsets).to_domain()


class TranslatedOffsetBody(BaseModel):
    """One asked offset, what the translation found, and its exact answer (null when there is none)."""

    partition: SinkPartition
    offset: SinkOffset
    result: Literal["exact", "skipped-range", "before-syncs", "not-yet-mirrored", "not-mirrored"]
    translated: ConnectorOffset | None
    reason: str


class TranslatedOffsets(BaseModel):
    """The answer of POST /connectors/{name}/offsets/translate, in the order asked."""

    direction: str
    offsets: list[TranslatedOffsetBody]

    @classmethod
    def of(cls, direction: str, answers: list[TranslatedOffset]) -> TranslatedOffsets:
        """The body of the Herder's answers."""
        return cls(
            direction=direction,
            offsets=[
                TranslatedOffsetBody(
                    partition=SinkPartition(kafka_topic=a.asked.topic, kafka_partition=a.asked.partition),
                    offset=SinkOffset(kafka_offset=a.asked.offset),
                    result=a.outcome.value,
                    translated=None
                    if a.answer is None
                    else ConnectorOffset(
                        partition=SinkPartition(kafka_topic=a.answer.topic, kafka_partition=a.answer.partition),
                        offset=SinkOffset(kafka_offset=a.answer.offset),
                    ),
                    reason=a.reason,
                )
                for a in answers
            ],
        )


class ReadinessComponent(BaseModel):
    """One input's share of the DR readiness score."""

    name: str
    weight: int
    points: float
    reasons: list[str]


class ReadinessBody(BaseModel):
    """GET /connectors/{name}/readiness: the score (0-100), its components, and every reason a point was lost."""

    score: int
    components: list[ReadinessComponent]
    reasons: list[str]

    @classmethod
    def of(cls, readiness: Readiness) -> ReadinessBody:
        """The body of the Herder's readiness."""
        return cls.model_validate(readiness.to_dict())


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
    """PUT /admin/loggers/{logger}: a log4j level name, any case (checked by the route, as Connect does)."""

    level: str | None = None


class ConnectorCheckpoint(BaseModel):
    """A consumer group's newest checkpoint on one target partition (MirrorMaker 2's Checkpoint)."""

    group: str
    topic: str = Field(description="the target topic")
    partition: int
    upstream_offset: int = Field(description="the group's committed offset on the source")
    downstream_offset: int = Field(description="where the group resumes on the target, exactly")
    timestamp_ms: int = Field(description="when the checkpoint was written")


class DrillSummary(BaseModel):
    """One kept DR drill report (``mirror-sink drill``), in short; the whole one is in the topic."""

    drill_id: str
    started: str
    outcome: str
    failures: list[str]
    rpo_records: int
    rpo_bytes: int
    rpo_seconds: float
    cut_window_s: float
    time_to_ready_s: dict[str, float]

    @classmethod
    def of(cls, report: dict[str, Any]) -> DrillSummary:
        """The summary of a report as kept (schema mirror-sink.drill/1)."""
        total = report.get("rpo", {}).get("total", {})
        return cls(
            drill_id=str(report.get("drill_id", "")),
            started=str(report.get("started", "")),
            outcome=str(report.get("outcome", "")),
            failures=[str(f) for f in report.get("failures", [])],
            rpo_records=int(total.get("records", 0)),
            rpo_bytes=int(total.get("bytes", 0)),
            rpo_seconds=float(total.get("seconds", 0.0)),
            cut_window_s=float(report.get("cut_window_s", 0.0)),
            time_to_ready_s={str(k): float(v) for k, v in report.get("time_to_ready_s", {}).items()},
        )


class ConnectorDrills(BaseModel):
    """GET /connectors/{name}/drills: the connector's newest DR drills, newest first."""

    drills_topic: str
    drills: list[DrillSummary]


class ConnectorCheckpoints(BaseModel):
    """GET /connectors/{name}/checkpoints: the checkpoints a failover would use."""

    checkpoints_topic: str
    checkpoints: list[ConnectorCheckpoint]

    @classmethod
    def of(cls, topic: str, states: list[domain.CheckpointState]) -> ConnectorCheckpoints:
        """The body of the Herder's checkpoint states."""
        return cls(
            checkpoints_topic=topic,
            checkpoints=[
                ConnectorCheckpoint(
                    group=c.group,
                    topic=c.topic,
                    partition=c.partition,
                    upstream_offset=c.upstream_offset,
                    downstream_offset=c.downstream_offset,
                    timestamp_ms=c.timestamp_ms,
                )
                for c in states
            ],
        )
