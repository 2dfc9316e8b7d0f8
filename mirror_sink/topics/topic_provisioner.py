"""Make every mirrored source topic exist on the target with enough partitions and the right configs.

Offsets are stored under the *target* topic-partition (the broker rejects a transactional offset
commit for a partition it does not have), and records go to the same partition number, so a target
topic needs at least the source's partition count before its partitions can be mirrored.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from confluent_kafka.cimpl import NewPartitions, NewTopic

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig, may_forward_batches
from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.clients.authorization import AuthorizationFailure, denial
from mirror_sink.core.formats.checkpoints import checkpoints_topic
from mirror_sink.raw.forwarder import TARGET_MAX_MESSAGE_BYTES
from mirror_sink.topics.leader_wait import LeaderWait
from mirror_sink.topics.source_discovery import SourceDiscovery, TopicMapping, list_topics

log = logging.getLogger(__name__)

#: Topic configs copied from source to target when set on the source topic (MM2 copies most
#: non-default configs; these are the ones that change what the target keeps or accepts).
COPIED_CONFIGS = (
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "max.message.bytes",
    "compression.type",
    "delete.retention.ms",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "min.cleanable.dirty.ratio",
    "segment.bytes",
    "segment.ms",
)
#: Mirrored records carry the source timestamps; LogAppendTime on the target would overwrite them.
FORCED_TARGET_CONFIGS = {"message.timestamp.type": "CreateTime"}
#: Unless the source topic sets a codec (then its batches all carry it), the target keeps whatever
#: codec each batch arrives with: raw mode's bytes are stored as they are, never recompressed.
DEFAULT_TARGET_CONFIGS = {"compression.type": "producer"}

_TOPIC_RESOURCE = ConfigResource.Type.TOPIC

#: Partitions per CreateTopics or CreatePartitions request: a KRaft controller refuses a request
#: that makes more than 10,000 metadata records (POLICY_VIOLATION, "excessively large batch
#: operation"), and a topic's partitions are a record each.
_PARTITIONS_PER_REQUEST = 5000

#: How long the connector waits for new target partitions' leaders when its tasks hold back, each
#: partition by partition, what is still not served after it.
_HANDOVER_S = 5.0

_T = TypeVar("_T")


def by_partitions(items: Iterable[_T], partitions: Callable[[_T], int]) -> Iterator[list[_T]]:
    """``items`` in consecutive batches of at most ``_PARTITIONS_PER_REQUEST`` partitions (an item
    larger than that alone)."""
    batch: list[_T] = []
    size = 0
    for item in items:
        n = partitions(item)
        if batch and size + n > _PARTITIONS_PER_REQUEST:
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += n
    if batch:
        yield batch


def _unknown_topic(exc: KafkaException) -> bool:
    err = exc.args[0] if exc.args else None
    return isinstance(err, KafkaError) and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


class TopicProvisioner:
    """Reconciles the target topics of the source topics ``SourceDiscovery`` finds: creates them, adds
    partitions, syncs their configs, and creates the connector's internal topics.

    New partitions' leaders are waited for (``LeaderWait``), up to the discovery timeout (30 s); with
    ``tasks_wait_for_leaders``, only up to ``_HANDOVER_S``: the worker's tasks hold back each
    partition still not served until its own leader serves it (``mirror_sink.task.target_leaders``).
    A short wait keeps the common case whole (1,000 new partitions were served within 4 s, and one
    transaction then copied them all), while 10,000 new partitions no longer hold every task back
    for the full 30 s. Internal topics are always waited for in full: tasks write to them from their
    first transaction."""

    def __init__(
        self,
        config: MirrorSinkConfig,
        source_admin: AdminClient,
        target_admin: AdminClient,
        *,
        tasks_wait_for_leaders: bool = False,
    ) -> None:
        self.config = config
        self.source_admin = source_admin
        self.target_admin = target_admin
        self.discovery = SourceDiscovery(config, source_admin)
        self.timeout_s = self.discovery.timeout_s
        self._leaders = LeaderWait(target_admin, self.timeout_s, log)
        self._target_leaders = (
            LeaderWait(target_admin, _HANDOVER_S, log, tasks_hold_back=True)
            if tasks_wait_for_leaders
            else self._leaders
        )
        self._checked: set[str] = set()
        #: Raw mode re-encodes a batch larger than its target topic's max.message.bytes: the mappings
        #: then carry it, read here with the admin client that provisions the topics.
        self._reads_limits = may_forward_batches(config)

    def _denied(
        self, exc: KafkaException, cluster: str, operation: str, names: Iterable[str], implied_by: str | None = None
    ) -> AuthorizationFailure | None:
        """An ``AuthorizationFailure`` when ``exc`` is the cluster refusing ``operation`` on ``names``."""
        err = exc.args[0] if exc.args else None
        code = err.code() if isinstance(err, KafkaError) else -1
        props = self.config.source_admin() if cluster == "source" else self.config.target_admin()
        return denial(code, cluster, props, operation, names, implied_by=implied_by)

    def _source_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        if not topics:
            return {}
        futures = self.source_admin.describe_configs([ConfigResource(_TOPIC_RESOURCE, t) for t in topics])
        out: dict[str, dict[str, str]] = {}
        for resource, future in futures.items():
            try:
                entries: dict[str, ConfigEntry] = future.result(self.timeout_s)
            except KafkaException as exc:
                raise self._denied(exc, "source", "DESCRIBE_CONFIGS", [resource.name]) or exc from exc
            out[resource.name] = {
                k: e.value
                for k, e in entries.items()
                if k in COPIED_CONFIGS
                and e.value is not None
                and ConfigSource(e.source) is ConfigSource.DYNAMIC_TOPIC_CONFIG  # an int at run time
            }
        return out

    def reconcile(self) -> dict[str, TopicMapping]:
        """Create missing target topics, add missing partitions, sync configs; return the mappings,
        with each target topic's max.message.bytes where raw mode may forward batches to it."""
        mappings = self.discovery.discover()
        existing = list_topics(self.target_admin, "target", self.config.target_bootstrap, self.timeout_s)
        sync = self.config.sync_topic_configs_enabled
        to_describe = [m.source_topic for m in mappings.values() if sync or m.target_topic not in existing]
        configs = self._source_configs(to_describe)
        missing = [m for m in mappings.values() if m.target_topic not in existing]
        if missing:
            self._create(missing, configs)
        short = [
            m
            for m in mappings.values()
            if m.target_topic in existing and existing[m.target_topic] < m.source_partitions
        ]
        if short:
            self._grow(short, existing)
        present = list(mappings.values())
        unchecked = [m for m in present if m.target_topic in existing and m.target_topic not in self._checked]
        if not (sync or self._reads_limits):
            self._warn_recompression(unchecked, self._target_configs(unchecked, frozenset(), required=False))
            return mappings
        # Topics just created count too: describing them at once proves the rights config sync and
        # raw mode need before any task starts, rather than failing the connector minutes into mirroring.
        current = self._target_configs(present, frozenset(m.target_topic for m in missing), required=True)
        if sync:
            current = self._sync_configs(present, configs, current)
        else:
            self._warn_recompression(unchecked, current)
        if not self._reads_limits:
            return mappings
        return {target: replace(m, target_max_message_bytes=_limit(current[target])) for target, m in mappings.items()}

    @staticmethod
    def _wanted(configs: dict[str, dict[str, str]], m: TopicMapping) -> dict[str, str]:
        return {**DEFAULT_TARGET_CONFIGS, **configs.get(m.source_topic, {}), **FORCED_TARGET_CONFIGS}

    def _target_configs(
        self, topics: list[TopicMapping], just_created: frozenset[str], *, required: bool
    ) -> dict[str, dict[str, str]]:
        """The configs of these target topics, by topic. ``required``: a refusal fails the connector,
        naming the ACL; otherwise (advice only) a topic that cannot be described is left out.

        A topic ``just_created`` that a broker does not know yet (several brokers, metadata on its
        way) is asked again for up to the provisioner's timeout."""
        out: dict[str, dict[str, str]] = {}
        todo = [m.target_topic for m in topics]
        deadline = Deadline(self.timeout_s)
        while todo:
            retry = []
            futures = self.target_admin.describe_configs([ConfigResource(_TOPIC_RESOURCE, t) for t in todo])
            for resource, future in futures.items():
                topic = resource.name
                try:
                    entries: dict[str, ConfigEntry] = future.result(self.timeout_s)
                except KafkaException as exc:
                    if topic in just_created and _unknown_topic(exc) and not deadline.passed:
                        retry.append(topic)
                    elif required:
                        raise self._denied(exc, "target", "DESCRIBE_CONFIGS", [topic], "ALTER_CONFIGS") or TaskFailure(
                            f"cannot read the configs of target topic {topic!r}: {exc.args[0]}"
                        ) from exc
                    else:
                        log.warning(
                            "cannot read the configs of target topic %s to check its compression: %s", topic, exc
                        )
                    continue
                out[topic] = {k: e.value for k, e in entries.items() if e.value is not None}
            todo = retry
            if todo:
                time.sleep(0.2)
        return out

    def _warn_recompression(self, unchecked: list[TopicMapping], current: dict[str, dict[str, str]]) -> None:
        """Say which existing target topics would recompress mirrored batches (once per topic; config
        sync off, so their configs are the operator's)."""
        if not unchecked:
            return
        source = self._source_configs([m.source_topic for m in unchecked])
        for m in unchecked:
            self._checked.add(m.target_topic)
            if m.target_topic not in current:
                continue  # could not be described: said so already
            have = current[m.target_topic].get("compression.type", "producer")
            want = self._wanted(source, m)["compression.type"]
            if have not in ("producer", want):
                log.warning(
                    "target topic %s has compression.type=%s: the target broker will recompress every mirrored "
                    "batch (raw mode's bytes are not kept); set it to %s",
                    m.target_topic,
                    have,
                    want,
                )

    def create_internal_topics(self) -> None:
        """The offset-syncs and checkpoints topics (one partition each, like MirrorMaker 2's), if enabled,
        and the compacted audit topic of skipped ranges with ``offset.gap.policy=skip``."""
        cfg = self.config
        new = []
        syncs = cfg.offset_syncs_partition
        if syncs is not None:
            retention = {"cleanup.policy": "delete", "retention.ms": str(cfg.offset_syncs_retention_ms)}
            new.append(NewTopic(syncs.topic, 1, cfg.offset_syncs_replication_factor, config=retention))
        if cfg.emit_checkpoints and syncs is not None:
            topic = checkpoints_topic(cfg.source_alias)
            new.append(NewTopic(topic, 1, cfg.checkpoints_replication_factor, config={"cleanup.policy": "compact"}))
        if cfg.gaps_partition is not None:
            # Compacted, one key per gap: every gap ever skipped stays on record.
            compact = {"cleanup.policy": "compact"}
            new.append(NewTopic(cfg.gaps_partition.topic, 1, cfg.offset_syncs_replication_factor, config=compact))
        if cfg.group_cuts_partition is not None:
            # Compacted, one key per group and partition: the newest position at a cut.
            compact = {"cleanup.policy": "compact"}
            topic = cfg.group_cuts_partition.topic
            new.append(NewTopic(topic, 1, cfg.offset_syncs_replication_factor, config=compact))
        if new:
            self._create_topics(new, "internal topic", self._leaders)

    def _create(self, missing: list[TopicMapping], configs: dict[str, dict[str, str]]) -> None:
        new = [
            NewTopic(
                m.target_topic,
                m.source_partitions,
                self.config.replication_factor,
                config=self._wanted(configs, m),
            )
            for m in missing
        ]
        self._create_topics(new, "target topic", self._target_leaders)

    def _create_topics(self, new: list[NewTopic], kind: str, leaders: LeaderWait) -> None:
        created: dict[str, range] = {}
        sizes = {t.topic: t.num_partitions for t in new}
        futures = {}
        for batch in by_partitions(new, lambda t: t.num_partitions):
            futures.update(self.target_admin.create_topics(batch, operation_timeout=self.timeout_s))
        for topic, future in futures.items():
            try:
                future.result(self.timeout_s)
                log.info("created %s %s", kind, topic)
                created[topic] = range(sizes[topic])
            except KafkaException as exc:
                if exc.args[0].code() != exc.args[0].TOPIC_ALREADY_EXISTS:  # else another worker made it
                    raise self._denied(exc, "target", "CREATE", [topic]) or TaskFailure(
                        f"cannot create {kind} {topic!r}: {exc.args[0].str()}"
                    ) from exc
        leaders.wait(created)

    def _grow(self, short: list[TopicMapping], existing: dict[str, int]) -> None:
        futures = {}
        for batch in by_partitions(short, lambda m: m.source_partitions - existing[m.target_topic]):
            parts = [NewPartitions(m.target_topic, m.source_partitions) for m in batch]
            futures.update(self.target_admin.create_partitions(parts, operation_timeout=self.timeout_s))
        for topic, future in futures.items():
            try:
                future.result(self.timeout_s)
                log.info("grew target topic %s from %d partitions", topic, existing[topic])
            except KafkaException as exc:
                if exc.args[0].code() != exc.args[0].INVALID_PARTITIONS:  # someone else grew it first
                    raise self._denied(exc, "target", "ALTER", [topic]) or TaskFailure(
                        f"cannot add partitions to target topic {topic!r}: {exc.args[0].str()}"
                    ) from exc
        self._target_leaders.wait({m.target_topic: range(existing[m.target_topic], m.source_partitions) for m in short})

    def _sync_configs(
        self, present: list[TopicMapping], configs: dict[str, dict[str, str]], current: dict[str, dict[str, str]]
    ) -> dict[str, dict[str, str]]:
        """Set what differs from the wanted configs on each target topic; the configs in effect after."""
        changes = []
        after = {}
        for m in present:  # every one described (``_target_configs`` asks a new topic until it is known)
            wanted = self._wanted(configs, m)
            have = current[m.target_topic]
            after[m.target_topic] = {**have, **wanted}
            ops = [
                ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                for k, v in wanted.items()
                if have.get(k) != v
            ]
            if ops:
                changes.append(ConfigResource(_TOPIC_RESOURCE, m.target_topic, incremental_configs=ops))
        if changes:
            for resource, future in self.target_admin.incremental_alter_configs(changes).items():
                try:
                    future.result(self.timeout_s)
                except KafkaException as exc:
                    raise self._denied(exc, "target", "ALTER_CONFIGS", [resource.name]) or exc from exc
                log.info("synced configs of target topic %s", resource.name)
        return after


def _limit(configs: dict[str, str]) -> int:
    """A target topic's max.message.bytes (every broker reports the value in effect, default or not)."""
    return int(configs.get("max.message.bytes") or TARGET_MAX_MESSAGE_BYTES)
