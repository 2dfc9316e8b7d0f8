"""MirrorSinkConnector's configuration: MirrorMaker 2 key names, validated with messages that name the key.

Connect configs are flat string maps. Keys this connector knows are typed fields; client settings pass
through by prefix, in MM2's naming (librdkafka property names, which match the Java clients' for the
common ones):

- ``source.cluster.<prop>`` every source client; ``source.cluster.consumer.<prop>`` /
  ``source.cluster.admin.<prop>`` one of them; ``consumer.<prop>`` the source consumer too;
- ``target.cluster.<prop>`` every target client; ``target.cluster.producer.<prop>`` /
  ``target.cluster.consumer.<prop>`` / ``target.cluster.admin.<prop>`` one of them; ``producer.<prop>``
  the target producer too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from mirror_sink.config.client_settings import ClientProps, client_settings
from mirror_sink.config.connect_keys import did_you_mean, split_keys
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.group_cuts import group_cuts_topic
from mirror_sink.core.formats.offset_syncs import offset_syncs_topic
from mirror_sink.core.formats.skipped_ranges import gaps_topic
from mirror_sink.core.interfaces.data_path import PathSettings
from mirror_sink.core.settings import plugins
from mirror_sink.core.settings.replication_policy import ReplicationPolicy, replication_policy
from mirror_sink.core.settings.secrets import mask
from mirror_sink.core.settings.topic_filter import (
    DEFAULT_GROUPS,
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS,
    DEFAULT_TOPICS_EXCLUDE,
    GroupFilter,
    TopicFilter,
    compile_patterns,
)
from mirror_sink.core.telemetry.metric_names import (
    DEFAULT_METRIC_NAMES_FORMATS,
    MetricNamesFormat,
    parse_metric_names_formats,
)
from mirror_sink.raw.wire.capabilities import unsupported

log = logging.getLogger(__name__)

#: The connector this config describes, as ``connector.class`` names it by default; its other names
#: (MM2's Java class name) come from the plugin registry.
CONNECTOR_CLASS = "MirrorSinkConnector"


def connector_class_aliases() -> frozenset[str]:
    """Every ``connector.class`` value that names the MirrorSinkConnector (``core.plugins``)."""
    return plugins.aliases_of(CONNECTOR_CLASS) or frozenset({CONNECTOR_CLASS})


def _known_class(value: str) -> str:
    if value not in connector_class_aliases():
        raise ValueError(f"unknown connector class {value!r}; this worker runs {CONNECTOR_CLASS}")
    return value


def _known_formats(value: str) -> str:
    return ",".join(parse_metric_names_formats(value))  # normalised: to_props gives Kafka's list form


# Two keys whose values are checked beyond their type: pydantic runs these after the str check.
_ConnectorClass = Annotated[str, AfterValidator(_known_class)]
_MetricNamesFormats = Annotated[str, AfterValidator(_known_formats)]


class OffsetFallback(StrEnum):
    """Where a partition starts when the shadow group has no offset for it."""

    EARLIEST = "earliest"
    LATEST = "latest"
    SOURCE_GROUP = "source-group"  # KIP-656: copy the source group's offset once, then own it


class OffsetGapPolicy(StrEnum):
    """What a task does where source records were deleted before they were mirrored."""

    FAIL = "fail"  # stop, naming every partition and range (MirrorMaker 2 resets silently instead)
    SKIP = "skip"  # step over the range and record it, in the same transaction (an operator's choice)


class TopicRecreationPolicy(StrEnum):
    """What a task does when a source topic was deleted and created again under its name."""

    FAIL = "fail"  # stop, naming both topic ids (MirrorMaker 2 reads on at the old offsets instead)
    CONTINUE = "continue"  # mirror the new topic from its start into the same target topic, on record


class MirrorMode(StrEnum):
    """How a task moves data: whole record batches (KIP-712) or record by record."""

    AUTO = "auto"  # raw wherever the clusters and client settings allow it, else record
    RAW = "raw"
    RECORD = "record"


class TransactionBoundary(StrEnum):
    """When a task's transaction ends (KIP-618's key; its ``poll`` ends one per poll batch)."""

    #: As soon as the task has written everything the source had at its last look; the interval
    #: and ``transaction.max.bytes`` stay upper bounds (a backlog is copied in transactions that large).
    CAUGHT_UP = "caught-up"
    #: Only when ``transaction.boundary.interval.ms`` or ``transaction.max.bytes`` is reached.
    INTERVAL = "interval"


class MirrorSinkConfig(BaseModel):
    """A validated MirrorSinkConnector configuration (immutable)."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=False)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._\-]+$")
    connector_class: _ConnectorClass = Field(CONNECTOR_CLASS, alias="connector.class")
    connector_type: Literal["sink"] = Field("sink", alias="connector.type")
    source_alias: str = Field("source", alias="source.cluster.alias", min_length=1)
    target_alias: str = Field("target", alias="target.cluster.alias", min_length=1)
    source_bootstrap: str = Field(alias="source.cluster.bootstrap.servers", min_length=1)
    target_bootstrap: str = Field(alias="target.cluster.bootstrap.servers", min_length=1)
    topics: str = Field(DEFAULT_TOPICS)
    topics_exclude: str = Field(DEFAULT_TOPICS_EXCLUDE, alias="topics.exclude")
    replication_policy_class: str = Field("DefaultReplicationPolicy", alias="replication.policy.class")
    replication_policy_separator: str = Field(".", alias="replication.policy.separator")
    tasks_max: int = Field(1, alias="tasks.max", ge=1, le=1000)
    transaction_producer: bool = Field(True, alias="transaction.producer")
    shadow_group: str | None = Field(None, alias="shadow.group.id")
    source_group: str | None = Field(None, alias="source.group.id")
    source_group_commit_interval_ms: int = Field(10_000, alias="source.group.commit.interval.ms", ge=0)
    offset_fallback: OffsetFallback = Field(OffsetFallback.EARLIEST, alias="offset.fallback")
    offset_fallback_group: str | None = Field(None, alias="offset.fallback.group.id")
    offset_gap_policy: OffsetGapPolicy = Field(OffsetGapPolicy.FAIL, alias="offset.gap.policy")
    topic_recreation_policy: TopicRecreationPolicy = Field(TopicRecreationPolicy.FAIL, alias="topic.recreation.policy")
    transaction_boundary: TransactionBoundary = Field(TransactionBoundary.CAUGHT_UP, alias="transaction.boundary")
    transaction_interval_ms: int = Field(1000, alias="transaction.boundary.interval.ms", ge=10)
    #: A caught-up task commits no sooner than this after its last commit: at 2,000 records/s, 100 ms
    #: wrote 26 markers per 1,000 records instead of 84-156, p99 unchanged (docs/benchmarks-notes.md).
    transaction_linger_ms: int = Field(100, alias="transaction.boundary.linger.ms", ge=0)
    transaction_max_bytes: int = Field(64 * 1024 * 1024, alias="transaction.max.bytes", ge=1024)
    #: Raw mode: a source leader quiet for a second is watched by one Fetch parked this long instead
    #: of polled every fetch.wait.max.ms (docs/configuration.md).
    fetch_idle_wait_ms: int = Field(500, alias="fetch.idle.wait.max.ms", ge=0, le=60_000)
    transaction_timeout_ms: int = Field(60_000, alias="transaction.timeout.ms", ge=1000)
    #: Keep source transactions whole (issue 43): copy only up to cuts where every source transaction
    #: over several of the task's partitions is on the same side everywhere. Off by default until
    #: its cost is measured (docs/configuration.md).
    source_transactions_whole: bool = Field(False, alias="source.transactions.whole")
    #: Tasks join the shadow group as static members (KIP-345): a restarted task takes its partitions
    #: back without a rebalance (docs/configuration.md).
    shadow_group_static_membership: bool = Field(True, alias="shadow.group.static.membership")
    refresh_topics_enabled: bool = Field(True, alias="refresh.topics.enabled")
    refresh_topics_interval_ms: int = Field(600_000, alias="refresh.topics.interval.ms", ge=100)
    sync_topic_configs_enabled: bool = Field(True, alias="sync.topic.configs.enabled")
    # MM2's MirrorSourceConfig defaults: on, every 10 minutes.
    sync_topic_acls_enabled: bool = Field(True, alias="sync.topic.acls.enabled")
    sync_topic_acls_interval_s: float = Field(600.0, alias="sync.topic.acls.interval.seconds", gt=0)
    replication_factor: int = Field(-1, alias="replication.factor", ge=-1)
    runtime: Literal["worker", "spark"] = Field("worker", alias="runtime")
    mirror_mode: MirrorMode = Field(MirrorMode.AUTO, alias="mirror.mode")
    buffer_memory: int = Field(64 * 1024 * 1024, alias="buffer.memory", ge=1024 * 1024)
    # -- consumer failover (MM2's keys) ---------------------------------------------------------
    emit_offset_syncs: bool = Field(True, alias="emit.offset-syncs.enabled")
    offset_syncs_retention_ms: int = Field(7 * 24 * 3600 * 1000, alias="offset-syncs.topic.retention.ms", ge=60_000)
    offset_syncs_replication_factor: int = Field(-1, alias="offset-syncs.topic.replication.factor", ge=-1)
    emit_checkpoints: bool = Field(True, alias="emit.checkpoints.enabled")
    emit_checkpoints_interval_s: float = Field(5.0, alias="emit.checkpoints.interval.seconds", gt=0)
    checkpoints_replication_factor: int = Field(-1, alias="checkpoints.topic.replication.factor", ge=-1)
    # -- continuous verification (mirror-sink verify, in the background) ------------------------
    verify_enabled: bool = Field(False, alias="verify.enabled")
    verify_interval_s: float = Field(60.0, alias="verify.interval.seconds", gt=0)
    verify_max_bytes_per_second: int = Field(4 * 1024 * 1024, alias="verify.max.bytes.per.second", ge=1024)
    groups: str = Field(DEFAULT_GROUPS, alias="groups")
    groups_exclude: str = Field(DEFAULT_GROUPS_EXCLUDE, alias="groups.exclude")
    sync_group_offsets: bool = Field(False, alias="sync.group.offsets.enabled")
    sync_group_offsets_interval_s: float = Field(5.0, alias="sync.group.offsets.interval.seconds", gt=0)
    metrics_aggregate: Literal["partition", "topic"] = Field("partition", alias="metrics.aggregate")
    # KIP-1280 (Kafka 4.3): MirrorMaker 2's metric names, legacy (Kafka's default), new or both. A list
    # in Kafka's form ("legacy,new"), kept as text so that to_props gives it back as it came, normalised.
    metric_names_formats: _MetricNamesFormats = Field(
        ",".join(DEFAULT_METRIC_NAMES_FORMATS), alias="metric.names.formats"
    )
    source_unreachable_give_up_ms: int = Field(-1, alias="source.unreachable.give.up.ms", ge=-1)
    target_unreachable_give_up_ms: int = Field(180_000, alias="target.unreachable.give.up.ms", ge=-1)
    client_props: dict[str, str] = Field(default_factory=dict, exclude=True)

    # -- parsing -------------------------------------------------------------------------------
    @classmethod
    def known_keys(cls) -> set[str]:
        """The keys with a typed field (their Connect names)."""
        return {f.alias or n for n, f in cls.model_fields.items() if n != "client_props"}

    @classmethod
    def errors(cls, props: Mapping[str, Any]) -> dict[str, list[str]]:
        """Every problem in ``props`` by key (empty when valid): the shape Connect's validate shows."""
        known, client, _ = split_keys(props, cls.known_keys())
        problems: dict[str, list[str]] = {}
        try:
            parsed = cls.model_validate({**known, "client_props": client})
            if parsed.offset_gap_policy is OffsetGapPolicy.SKIP and not parsed.transaction_producer:
                problems["offset.gap.policy"] = [
                    "skip needs transaction.producer=true: a skipped range is recorded in the same "
                    "transaction that moves the offset past it"
                ]
            elif parsed.offset_gap_policy is OffsetGapPolicy.SKIP and parsed.runtime == "spark":
                problems["offset.gap.policy"] = [
                    "skip is honoured by the worker runtime only; the Spark runtime stops at a gap (run the "
                    "connector once with runtime=worker to step over it)"
                ]
            if parsed.topic_recreation_policy is TopicRecreationPolicy.CONTINUE and not parsed.transaction_producer:
                problems["topic.recreation.policy"] = [
                    "continue needs transaction.producer=true: the recreation is recorded in the same "
                    "transaction that moves the offset to the new topic"
                ]
            elif parsed.topic_recreation_policy is TopicRecreationPolicy.CONTINUE and parsed.runtime == "spark":
                problems["topic.recreation.policy"] = [
                    "continue is honoured by the worker runtime only; the Spark runtime stops at a recreated "
                    "topic (run the connector once with runtime=worker to continue it)"
                ]
            if parsed.source_transactions_whole and not parsed.transaction_producer:
                problems["source.transactions.whole"] = [
                    "true needs transaction.producer=true: a source transaction lands whole in one target transaction"
                ]
            elif parsed.source_transactions_whole and parsed.runtime == "spark":
                problems["source.transactions.whole"] = [
                    "true is honoured by the worker runtime only: the Spark runtime copies each source partition's "
                    "range in a target transaction of its own, so a source transaction over several partitions "
                    "may be visible in part there between two ranges' commits"
                ]
            if parsed.verify_enabled and parsed.offset_syncs_partition is None:
                problems["verify.enabled"] = [
                    "verification reads the offset map from the offset syncs: it needs emit.offset-syncs.enabled=true "
                    "and transaction.producer=true (the defaults)"
                ]
            if parsed.mirror_mode is MirrorMode.RAW:
                blockers = raw_mode_blockers(parsed)
                if blockers:
                    problems["mirror.mode"] = [
                        f"raw mode cannot honour the client settings {', '.join(blockers)}; use record or auto"
                    ]
        except ValidationError as exc:
            for err in exc.errors():
                key = ".".join(str(p) for p in err["loc"]) or "config"
                value = known.get(key)
                shown = "" if value is None else f" {mask({key: value})[key]!r}"
                msg = "is required" if err["type"] == "missing" else f"invalid value{shown}: {err['msg']}"
                problems.setdefault(key, []).append(msg)
        # Checks of values that parse as strings whatever else is wrong, so all problems show at once.
        raw = {k: str(v) for k, v in known.items()}
        checks: list[Callable[[], object]] = [
            lambda: compile_patterns("topics", raw.get("topics", DEFAULT_TOPICS), required=True),
            lambda: compile_patterns("topics.exclude", raw.get("topics.exclude", DEFAULT_TOPICS_EXCLUDE)),
            lambda: compile_patterns("groups", raw.get("groups", DEFAULT_GROUPS)),
            lambda: compile_patterns("groups.exclude", raw.get("groups.exclude", DEFAULT_GROUPS_EXCLUDE)),
            lambda: replication_policy(
                raw.get("replication.policy.class", "DefaultReplicationPolicy"),
                raw.get("replication.policy.separator", "."),
            ),
        ]
        for check in checks:
            try:
                check()
            except ConfigError as exc:
                problems.setdefault(exc.key, []).append(exc.message)
        return problems

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> MirrorSinkConfig:
        """Validate ``props``; raise ConfigError naming the first bad key (and listing all of them)."""
        problems = cls.errors(props)
        if problems:
            first = next(iter(problems))
            detail = "; ".join(f"{k}: {', '.join(v)}" for k, v in problems.items())
            raise ConfigError(first, f"{', '.join(problems[first])} (all problems: {detail})")
        known, client, unknown = split_keys(props, cls.known_keys())
        for key in sorted(unknown):
            log.warning(
                "connector %s: ignoring unknown config key %r%s",
                props.get("name"),
                key,
                did_you_mean(key, cls.known_keys()),
            )
        return cls.model_validate({**known, "client_props": client})

    # -- derived -------------------------------------------------------------------------------
    def topic_filter(self) -> TopicFilter:
        """The ``topics`` / ``topics.exclude`` filter."""
        return TopicFilter.from_config(self.topics, self.topics_exclude)

    def group_filter(self) -> GroupFilter:
        """The ``groups`` / ``groups.exclude`` filter of checkpoints and group sync."""
        return GroupFilter.from_config(self.groups, self.groups_exclude)

    @property
    def group_cuts_partition(self) -> TargetPartition | None:
        """Where the tasks write source groups' positions at cuts (``source.transactions.whole``
        with exactly-once only): ``mirror_sink.core.formats.group_cuts``."""
        if not (self.source_transactions_whole and self.transaction_producer):
            return None
        return TargetPartition(group_cuts_topic(self.source_alias), 0)

    @property
    def gaps_partition(self) -> TargetPartition | None:
        """Where the tasks record skipped ranges and continued recreations (``offset.gap.policy=skip``
        or ``topic.recreation.policy=continue`` only)."""
        if (
            self.offset_gap_policy is not OffsetGapPolicy.SKIP
            and self.topic_recreation_policy is not TopicRecreationPolicy.CONTINUE
        ):
            return None
        return TargetPartition(gaps_topic(self.source_alias), 0)

    @property
    def offset_syncs_partition(self) -> TargetPartition | None:
        """Where the tasks write offset syncs: only with transactions (they must be atomic with the data)."""
        if not (self.emit_offset_syncs and self.transaction_producer):
            return None
        return TargetPartition(offset_syncs_topic(self.source_alias), 0)

    @property
    def metric_names(self) -> tuple[MetricNamesFormat, ...]:
        """``metric.names.formats``: the names MirrorMaker 2's series of this connector are exported under."""
        return parse_metric_names_formats(self.metric_names_formats)

    def replication_policy(self) -> ReplicationPolicy:
        """The configured ``replication.policy.class``."""
        return replication_policy(self.replication_policy_class, self.replication_policy_separator, self.target_alias)

    @property
    def shadow_group_id(self) -> str:
        """The target-side group holding the source offsets (KIP-656: ``connect-{name}``)."""
        return self.shadow_group or f"connect-{self.name}"

    @property
    def source_group_id(self) -> str:
        """The source-side group that gets informational position commits (for lag tooling)."""
        return self.source_group or f"connect-{self.name}"

    @property
    def offset_fallback_group_id(self) -> str:
        """The source group copied once with ``offset.fallback=source-group``."""
        return self.offset_fallback_group or self.source_group_id

    def source_consumer(self) -> ClientProps:
        """User settings of the source consumer (bootstrap, security, overrides)."""
        return client_settings(self.client_props, "source", "consumer", self.source_bootstrap, "consumer.")

    def source_admin(self) -> ClientProps:
        """User settings of the source admin client."""
        return client_settings(self.client_props, "source", "admin", self.source_bootstrap)

    def source_producer(self) -> ClientProps:
        """User settings of a producer on the source: only a failback writes there (the records it
        keeps aside), with the source's settings and ``source.cluster.producer.*`` overrides."""
        return client_settings(self.client_props, "source", "producer", self.source_bootstrap)

    def target_producer(self) -> ClientProps:
        """User settings of the target producer."""
        return client_settings(self.client_props, "target", "producer", self.target_bootstrap, "producer.")

    def target_consumer(self) -> ClientProps:
        """User settings of the target coordination consumer (the shadow-group member)."""
        return client_settings(self.client_props, "target", "consumer", self.target_bootstrap)

    def target_admin(self) -> ClientProps:
        """User settings of the target admin client."""
        return client_settings(self.client_props, "target", "admin", self.target_bootstrap)

    def path_settings(self, client_id: str, transactional_id: str | None) -> PathSettings:
        """What a data path for the task slot ``client_id`` (``transactional_id``: its producer's,
        None for at least once) is built from."""
        return PathSettings(
            source_props=self.source_consumer(),
            target_props=self.target_producer(),
            client_id=client_id,
            transactional_id=transactional_id,
            transaction_timeout_ms=self.transaction_timeout_ms,
            group_id=self.shadow_group_id,
            memory_bytes=self.buffer_memory,
            chunk_bytes=max(self.transaction_max_bytes // 4, 1),
            sync_partition=self.offset_syncs_partition,
            idle_wait_ms=self.fetch_idle_wait_ms,
        )

    def to_props(self) -> dict[str, str]:
        """The flat Connect form (every key, defaults included), e.g. for task configs."""
        out = {k: _as_str(v) for k, v in self.model_dump(by_alias=True, exclude_none=True).items()}
        return {**out, **self.client_props}


def _as_str(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


#: Documentation of each typed key (REST: GET /connector-plugins/{plugin}/config).
KEY_DOCS: dict[str, str] = {
    "name": "Connector name; also names the shadow group (connect-{name}) and the task transactional.ids.",
    "connector.class": "MirrorSinkConnector (or org.apache.kafka.connect.mirror.MirrorSinkConnector).",
    "connector.type": "Must be sink: KIP-656's exactly-once sink connector.",
    "source.cluster.alias": "Name of the source cluster; the Default policy prefixes target topics with it.",
    "target.cluster.alias": "Name of the target cluster.",
    "source.cluster.bootstrap.servers": "Bootstrap servers of the source cluster.",
    "target.cluster.bootstrap.servers": "Bootstrap servers of the target cluster.",
    "topics": "Comma-separated topic names or regexes to mirror.",
    "topics.exclude": "Comma-separated topic names or regexes never mirrored (internal topics never are).",
    "replication.policy.class": "DefaultReplicationPolicy ({alias}{separator}{topic}) or IdentityReplicationPolicy; "
    "FailbackReplicationPolicy on a failback's reverse link brings {target alias}{separator}{topic} home as {topic}.",
    "replication.policy.separator": "Separator of the Default policy.",
    "tasks.max": "Tasks of this connector in each worker; they share partitions through the shadow group.",
    "transaction.producer": "true: exactly once (target transactions); false: at least once.",
    "shadow.group.id": "Group on the target holding the source offsets (default connect-{name}).",
    "source.group.id": "Group on the source receiving mirrored positions for lag tooling (default connect-{name}).",
    "source.group.commit.interval.ms": "How often positions are committed to the source group; 0 disables.",
    "offset.fallback": "Start of a partition with no stored offset: earliest, latest or source-group.",
    "offset.fallback.group.id": "Source group whose offsets source-group copies once (default source.group.id).",
    "offset.gap.policy": "Where source records were deleted before they were mirrored (retention, DeleteRecords): "
    "fail (default) stops the task naming every partition and range; skip steps over the range and records it, "
    "in the same transaction, in mirror-sink-gaps.{source alias}.internal on the target, in the offset syncs "
    "and in mirror_sink_skipped_records_total (exactly-once only). A recreated topic is never skipped over.",
    "topic.recreation.policy": "Where a source topic was deleted and created again under its name (a new topic id): "
    "fail (default) stops the task naming both ids; continue mirrors the new topic from its start into the same "
    "target topic, after the old one's records, and records the event in the same transaction, in "
    "mirror-sink-gaps.{source alias}.internal on the target, in the offset syncs and in "
    "mirror_sink_topic_recreations_total (exactly-once only).",
    "transaction.boundary": (
        "caught-up: a transaction ends as soon as the task has written everything the source had "
        "(bounded by the interval and transaction.max.bytes); interval: only at those bounds."
    ),
    "transaction.boundary.interval.ms": "A transaction ends after this long at the latest; with "
    "transaction.boundary=caught-up, while a backlog is copied, up to 4 times the wait for the previous commit's "
    "markers (which grows with the partitions a transaction touches), at most 30 s or a third of "
    "transaction.timeout.ms.",
    "transaction.boundary.linger.ms": "With transaction.boundary=caught-up, a caught-up task commits no sooner "
    "than this after its previous commit ended, so that records flowing steadily share a transaction and its "
    "markers; a record after a quiet spell is committed at once. 0: commit the moment it has caught up.",
    "transaction.max.bytes": "A transaction ends after this many record bytes.",
    "fetch.idle.wait.max.ms": "Raw mode: a source leader whose Fetches brought nothing for a second is watched "
    "by one read_uncommitted Fetch parked this long (its records are never forwarded), which the broker answers "
    "at the next record appended; data then flows with read_committed Fetches of fetch.wait.max.ms again. "
    "At or below fetch.wait.max.ms: no watches, quiet leaders are asked every fetch.wait.max.ms.",
    "shadow.group.static.membership": "true (default): each task is a static member of the shadow group "
    "(group.instance.id = its slot, 45 s session): a task restarted within the session takes its partitions back "
    "without a rebalance; a stop removes the member. false: dynamic members with a 10 s session.",
    "transaction.timeout.ms": "Timeout of the target transactions.",
    "source.transactions.whole": "true: what the source committed in one transaction becomes visible on the target "
    "in one target transaction, on every partition of this task it touched (reads the source's "
    "__transaction_state: READ and DESCRIBE on it); exactly-once only. Without those ACLs the task says so once "
    "and goes on per partition.",
    "refresh.topics.enabled": "Look for new topics and partitions periodically.",
    "refresh.topics.interval.ms": "How often to look for new topics and partitions.",
    "sync.topic.configs.enabled": "Keep copied topic configs in step with the source.",
    "sync.topic.acls.enabled": "Copy the ACLs of the mirrored source topics to their target topics, as MM2 "
    "does: literal topic ACLs only, ALLOW WRITE left out, ALLOW ALL downgraded to READ; never deletes any. "
    "Off by itself (one INFO line) where a cluster has no authorizer.",
    "sync.topic.acls.interval.seconds": "How often topic ACLs are synced (default 600, MM2's).",
    "replication.factor": "Replication factor of created target topics (-1: the broker default).",
    "mirror.mode": "raw: forward source record batches byte for byte (KIP-712); record: re-produce each record; "
    "auto (default): raw unless the clusters or client settings do not allow it.",
    "buffer.memory": "One byte budget for data fetched from the source and not yet acknowledged by the target.",
    "runtime": "worker (mirror-sink run / the REST worker) or spark (mirror-sink spark); never both at once.",
    "emit.offset-syncs.enabled": "Write, in each transaction, the exact source->target offset map of what it "
    "mirrored to mirror-sink-offset-syncs.{source alias}.internal on the target (exactly-once only).",
    "offset-syncs.topic.retention.ms": "Retention of the offset-syncs topic: how far back offsets stay translatable.",
    "offset-syncs.topic.replication.factor": "Replication factor of the offset-syncs topic (-1: the broker default).",
    "emit.checkpoints.enabled": "Write MirrorMaker 2 checkpoints of the source groups to "
    "{source alias}.checkpoints.internal on the target.",
    "emit.checkpoints.interval.seconds": "How often checkpoints are written (default 5; MM2's is 60).",
    "verify.enabled": "Compare the target with the source in the background, record by record through the offset "
    "syncs, as mirror-sink verify does (default false); results in the mirror_sink_verif* metrics.",
    "verify.interval.seconds": "How often a verification round starts; each goes on from where the last ended.",
    "verify.max.bytes.per.second": "Cap on the bytes verification reads (both clusters), so it never competes "
    "with mirroring (default 4 MiB/s).",
    "checkpoints.topic.replication.factor": "Replication factor of the checkpoints topic (-1: the broker default).",
    "groups": "Comma-separated source consumer group names or regexes to checkpoint and sync.",
    "groups.exclude": "Comma-separated group names or regexes never checkpointed (MM2's default).",
    "sync.group.offsets.enabled": "Commit translated offsets into the same-named groups on the target while "
    "they have no active members; never backwards.",
    "sync.group.offsets.interval.seconds": "How often group offsets are synced (default 5; MM2's is 60).",
    "source.unreachable.give.up.ms": "How long the connector waits for an unreachable source cluster before it is "
    "FAILED (-1, the default: for ever, as a DR source that is down is expected to come back).",
    "target.unreachable.give.up.ms": "How long the connector waits for an unreachable target cluster before it is "
    "FAILED (-1: for ever).",
    "metrics.aggregate": "partition (default): per-partition metric series; topic: one series per topic "
    '(partition="all"), for many thousands of partitions.',
    "metric.names.formats": "MirrorMaker 2's metric names (KIP-1280, Kafka 4.3), a list: legacy (default): "
    "kafka_connect_mirror_mirrorsourceconnector_*{source,target,topic,partition}; new: "
    "kafka_connect_plugins_*{connector,task,source,target,topic,partition}; legacy,new: both, with the same "
    "values (for a migration; twice the series). Kafka 5.0 removes the legacy names.",
}


def raw_mode_blockers(config: MirrorSinkConfig) -> list[str]:
    """The client settings of ``config`` that raw mode's own client cannot honour (empty: none)."""
    return unsupported(config.source_consumer()) + unsupported(config.target_producer())


def may_forward_batches(config: MirrorSinkConfig) -> bool:
    """Whether a task of ``config`` may run in raw mode: ``mirror.mode`` allows it and no client
    setting stands in its way (``mirror.mode=auto`` may still measure record mode faster)."""
    return config.mirror_mode is not MirrorMode.RECORD and not raw_mode_blockers(config)
