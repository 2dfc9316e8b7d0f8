"""read_watermarks: a partition's start and last stable offset, or a TaskFailure that names the
partition and the cluster it was asked of."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.failover.common.watermarks import read_watermarks
from tests.unit.failover.fakes import kafka_exception

pytestmark = pytest.mark.unit


class _Consumer:
    """Answers ``get_watermark_offsets`` from a table, or fails; records what was asked."""

    def __init__(self, marks: dict[tuple[str, int], tuple[int, int]], error: KafkaException | None = None) -> None:
        self.marks = marks
        self.error = error
        self.asked: list[tuple[str, int, bool]] = []

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float, cached: bool) -> tuple[int, int]:
        self.asked.append((tp.topic, tp.partition, cached))
        if self.error is not None:
            raise self.error
        return self.marks[(tp.topic, tp.partition)]


def test_the_start_and_last_stable_offset_of_the_partition_asked_are_read_from_the_broker_not_a_cache() -> None:
    consumer = _Consumer({("orders", 0): (4, 90), ("orders", 1): (7, 12)})
    assert read_watermarks(consumer, "orders", 1, "old primary") == (7, 12)  # type: ignore[arg-type]
    assert consumer.asked == [("orders", 1, False)], "a cached end would be stale after the producers moved"


def test_a_failed_query_is_a_task_failure_naming_the_partition_the_cluster_and_the_cause() -> None:
    consumer = _Consumer({}, kafka_exception(KafkaError.NOT_LEADER_FOR_PARTITION, "leader moved"))
    with pytest.raises(TaskFailure, match=r"offsets of orders-3 on the old primary: leader moved"):
        read_watermarks(consumer, "orders", 3, "old primary")  # type: ignore[arg-type]
