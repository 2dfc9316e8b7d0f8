"""The informational commits into the source group: only what moved, everything every ten minutes."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.task import source_group
from mirror_sink.task.source_group import SourceGroupCommits

A, B = SourcePartition("t", 0), SourcePartition("t", 1)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_only_moved_positions_are_committed_and_all_of_them_every_ten_minutes() -> None:
    sent: list[list[TopicPartition]] = []
    clock = _Clock()
    commits = SourceGroupCommits(sent.append, logging.getLogger("test"), clock)
    assert commits.commit([A, B], {A: 5, B: 7}) == 2
    clock.now += 10
    assert commits.commit([A, B], {A: 5, B: 7}) == 0 and len(sent) == 1, "idle: nothing sent"
    clock.now += 10
    assert commits.commit([A, B], {A: 5, B: 9}) == 1
    assert [(tp.topic, tp.partition, tp.offset) for tp in sent[-1]] == [("t", 1, 9)]
    clock.now += source_group._REFRESH_S
    assert commits.commit([A, B], {A: 5, B: 9}) == 2, "a group only committed to must not expire"


def test_a_failed_commit_is_sent_again() -> None:
    clock = _Clock()
    failing = True

    def commit(offsets: list[TopicPartition]) -> None:
        if failing:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    commits = SourceGroupCommits(commit, logging.getLogger("test"), clock)
    assert commits.commit([A], {A: 5}) == 0
    failing = False
    clock.now += 10
    assert commits.commit([A], {A: 5}) == 1


@pytest.mark.parametrize("partitions", [[], [A]])
def test_nothing_to_commit_sends_nothing(partitions: list[SourcePartition]) -> None:
    sent: list[list[TopicPartition]] = []
    commits = SourceGroupCommits(sent.append, logging.getLogger("test"), _Clock())
    commits.commit(partitions, {A: 3})
    commits.commit(partitions, {A: 3})
    assert len(sent) == (1 if partitions else 0)
