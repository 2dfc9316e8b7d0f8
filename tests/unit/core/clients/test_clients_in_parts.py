"""librdkafka's offsets calls in parts: its per-call cost is quadratic in the partitions named."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirror_sink.core.clients.clients import OFFSETS_CALL_PARTITIONS, in_parts

pytestmark = pytest.mark.unit


def test_a_large_list_is_asked_in_parts_within_one_timeout_and_answered_in_order() -> None:
    calls: list[tuple[int, float]] = []

    def committed(part: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        calls.append((len(part), timeout))
        return [TopicPartition(tp.topic, tp.partition, tp.partition * 10) for tp in part]

    partitions = [TopicPartition("t", p) for p in range(2 * OFFSETS_CALL_PARTITIONS + 7)]
    answers = in_parts(committed, partitions, 10.0)
    assert [n for n, _ in calls] == [OFFSETS_CALL_PARTITIONS, OFFSETS_CALL_PARTITIONS, 7]
    assert all(0 < timeout <= 10.0 for _, timeout in calls)
    assert [(tp.partition, tp.offset) for tp in answers] == [(p, p * 10) for p in range(len(partitions))]


def test_a_part_that_fails_fails_the_whole_call() -> None:
    def refused(part: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT))

    with pytest.raises(KafkaException):
        in_parts(refused, [TopicPartition("t", 0)], 1.0)
