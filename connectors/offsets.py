"""MirrorSinkConnector's offsets (KIP-875): read, altered and reset in its shadow group on the target;
and what a consumer failover asks of them: the checkpoints on its topics and exact translation.

The shadow group commits target topic partitions, at the next *source* offset to mirror (the task
commits them in the same transaction as the records); clients see and send them keyed by the source
partition, so every operation maps between source and target topic names with the connector's
replication policy. The runtime serves the KIP-875 verbs (and refuses a change unless the connector
is STOPPED); this is what they do to this connector.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.clients import clients
from mirror_sink.core.formats.checkpoints import checkpoints_topic
from mirror_sink.core.settings.replication_policy import ReplicationPolicy
from mirror_sink.failover.checkpoints.offset_translator import (
    Direction,
    OffsetTranslator,
    TopicOffset,
    TranslatedOffset,
)
from mirror_sink.failover.common.readers import read_checkpoints
from mirror_sink.worker.connector_plugin import CheckpointState, Conflict, InvalidRequest, PartitionOffset

__all__ = ["ConnectorOffsets"]


class ConnectorOffsets:
    """The offsets of one connector, in its shadow group on the target (and its checkpoints and syncs)."""

    def __init__(self, config: MirrorSinkConfig) -> None:
        self._cfg = config

    def get(self) -> list[PartitionOffset]:
        """The shadow group's offsets, keyed by the *source* partition, sorted."""
        cfg = self._cfg
        policy = cfg.replication_policy()
        md = _admin(cfg).list_topics(timeout=30)
        partitions = []
        for target_topic, topic in md.topics.items():
            source_topic = _source_topic(target_topic, cfg, policy)
            if source_topic is not None:
                partitions += [TopicPartition(target_topic, p) for p in topic.partitions]
        if not partitions:
            return []
        reader = Consumer(
            {**cfg.target_consumer(), "group.id": cfg.shadow_group_id, "isolation.level": "read_committed"}
        )
        try:
            committed = reader.committed(partitions, timeout=30)
        finally:
            reader.close()
        out = []
        for tp in committed:
            source_topic = _source_topic(tp.topic, cfg, policy)
            if tp.offset >= 0 and source_topic is not None:
                out.append(PartitionOffset(source_topic, tp.partition, tp.offset))
        return sorted(out, key=lambda o: (o.topic, o.partition))

    def checkpoints(self) -> tuple[str, list[CheckpointState]]:
        """The checkpoints topic and the newest checkpoint of each group on this connector's target topics."""
        cfg, name = self._cfg, self._cfg.name
        topic = checkpoints_topic(cfg.source_alias)
        if not cfg.emit_checkpoints:
            return topic, []
        policy = cfg.replication_policy()
        try:
            stored = read_checkpoints(cfg.target_consumer(), topic, f"{cfg.name}-rest", timeout_s=20)
        except TaskFailure as exc:
            raise Conflict(f"cannot read the checkpoints of {name} from {topic}: {exc}") from exc
        out = [
            CheckpointState(
                group,
                target.topic,
                target.partition,
                s.checkpoint.upstream_offset,
                s.checkpoint.downstream_offset,
                s.timestamp_ms,
            )
            for (group, target), s in stored.items()
            if _source_topic(target.topic, cfg, policy) is not None
        ]
        return topic, sorted(out, key=lambda c: (c.group, c.topic, c.partition))

    def alter(self, offsets: Sequence[PartitionOffset]) -> None:
        """Set source partitions' next offsets (the connector is STOPPED); removing one is not supported."""
        cfg = self._cfg
        policy = cfg.replication_policy()
        commit = []
        for entry in offsets:
            target_topic = policy.format_remote_topic(cfg.source_alias, entry.topic)
            if entry.offset is None:
                raise InvalidRequest("removing one partition's offset is not supported; DELETE resets them all")
            if entry.offset < 0:
                raise InvalidRequest(
                    f'offset of {entry.topic}-{entry.partition} must be {{"kafka_offset": <non-negative int>}}'
                )
            commit.append(TopicPartition(target_topic, entry.partition, entry.offset))
        admin, group = _admin(cfg), cfg.shadow_group_id
        try:
            altered = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, commit)])[group].result()
        except KafkaException as exc:
            raise Conflict(f"cannot alter offsets of group {group}: {exc.args[0].str()}") from exc
        # The broker answers per partition (a group that still has members: UNKNOWN_MEMBER_ID), and
        # librdkafka leaves those answers in the result rather than raising them.
        refused = [f"{tp.topic}-{tp.partition}: {tp.error.str()}" for tp in altered.topic_partitions or [] if tp.error]
        if refused:
            raise Conflict(f"cannot alter offsets of group {group}: {', '.join(refused)}")

    def reset(self) -> None:
        """Forget every stored offset (the connector is STOPPED): the start-offset fallback applies at the
        next start."""
        cfg, name = self._cfg, self._cfg.name
        admin, group = _admin(cfg), cfg.shadow_group_id
        try:
            admin.delete_consumer_groups([group], request_timeout=30)[group].result()
        except KafkaException as exc:
            if exc.args[0].code() != exc.args[0].GROUP_ID_NOT_FOUND:
                raise Conflict(f"cannot reset the offsets of {name}: {exc.args[0].str()}") from exc

    def translate(self, offsets: Sequence[PartitionOffset], direction: str) -> list[TranslatedOffset]:
        """POST /connectors/{name}/offsets/translate: each offset translated exactly through the
        connector's offset syncs, or the reason it cannot be (in any state: a stopped mirror's
        syncs still translate)."""
        cfg, name = self._cfg, self._cfg.name
        asked = []
        for entry in offsets:
            if entry.offset is None or entry.offset < -2:
                raise InvalidRequest(
                    f'offset of {entry.topic}-{entry.partition} must be {{"kafka_offset": <int >= 0, or -2 or -1>}}'
                )
            asked.append(TopicOffset(entry.topic, entry.partition, entry.offset))
        try:
            translator = OffsetTranslator(cfg, f"{cfg.name}-rest-translate")
        except ConfigError as exc:
            raise InvalidRequest(f"connector {name} cannot translate offsets: {exc}") from exc
        try:
            return translator.translate(asked, Direction(direction))
        except TaskFailure as exc:
            raise Conflict(f"cannot read the offset syncs of {name}: {exc}") from exc
        finally:
            translator.close()


def _admin(cfg: MirrorSinkConfig) -> AdminClient:
    return clients.admin(cfg.target_admin(), client_id=f"{cfg.name}-offsets")


def _source_topic(target_topic: str, cfg: MirrorSinkConfig, policy: ReplicationPolicy) -> str | None:
    """The source topic a target topic mirrors under this connector's policy, if any."""
    if policy.topic_source(target_topic) == cfg.source_alias:
        return target_topic[len(cfg.source_alias) + len(cfg.replication_policy_separator) :]
    if (
        policy.topic_source(target_topic) is None
        and policy.format_remote_topic(cfg.source_alias, target_topic) == target_topic
    ):
        return target_topic if cfg.topic_filter().accepts(target_topic) else None
    return None
