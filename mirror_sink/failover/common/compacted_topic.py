"""The failover verbs' own record topics on the target: one partition, compacted, made when missing."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_sink.core.base.errors import TaskFailure


def create_compacted(admin: AdminClient, topic: str, replication_factor: int) -> None:
    """Create ``topic`` on the target (one partition, compacted) unless it exists."""
    future = admin.create_topics([NewTopic(topic, 1, replication_factor, config={"cleanup.policy": "compact"})])[topic]
    try:
        future.result(30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise TaskFailure(f"cannot create {topic!r} on the target: {exc.args[0].str()}") from exc
