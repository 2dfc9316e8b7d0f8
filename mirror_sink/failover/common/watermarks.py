"""A partition's watermarks as a read_committed consumer sees them: its start and last stable offset."""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaException, TopicPartition

from mirror_sink.core.base.errors import TaskFailure


def read_watermarks(consumer: Consumer, topic: str, partition: int, role: str) -> tuple[int, int]:
    """The partition's start and last stable offset (read_committed ``consumer``, on the cluster
    ``role`` names: "source", "target", "old primary"); TaskFailure names the partition."""
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30, cached=False)
    except KafkaException as exc:
        raise TaskFailure(f"cannot read the offsets of {topic}-{partition} on the {role}: {exc.args[0].str()}") from exc
    return int(low), int(high)
