"""The leader wait's pure decisions: which new partitions a Metadata answer shows led (worth a
ListOffsets) and which to ask about again; and the coordinators not asked through a client that
cannot honour the settings."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from mirror_sink.topics.coordinators import ask_coordinators
from mirror_sink.topics.leader_wait import leader_ids, split_by_leader

pytestmark = pytest.mark.unit


def _described(leaders: list[int | None]) -> Any:
    """A TopicDescription's shape: partitions with an id and a leader Node (None: no leader)."""
    return SimpleNamespace(
        partitions=[
            SimpleNamespace(id=i, leader=None if leader is None else SimpleNamespace(id=leader))
            for i, leader in enumerate(leaders)
        ]
    )


def _names(tps: list[TopicPartition]) -> list[tuple[str, int]]:
    return [(tp.topic, tp.partition) for tp in tps]


def test_leader_ids_gives_minus_one_for_a_partition_without_a_leader() -> None:
    assert leader_ids(_described([1, None, 0])) == {0: 1, 1: -1, 2: 0}


def test_only_partitions_with_a_leader_go_to_list_offsets() -> None:
    waiting = [TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)]
    led, again = split_by_leader(waiting, {"a": {0: 1, 1: -1}, "b": {0: 0}})
    assert _names(led) == [("a", 0), ("b", 0)]
    assert _names(again) == [("a", 1)]


def test_a_topic_or_partition_missing_from_the_answer_is_asked_again() -> None:
    # A topic the answering broker does not know yet (its describe failed), and a partition the
    # answer does not list (a grown topic's metadata not yet caught up): neither counts as led.
    waiting = [TopicPartition("new", 0), TopicPartition("grown", 3), TopicPartition("grown", 4)]
    led, again = split_by_leader(waiting, {"grown": {0: 1, 1: 1, 2: 1, 3: 1}})
    assert _names(led) == [("grown", 3)]
    assert _names(again) == [("new", 0), ("grown", 4)]


def test_nothing_led_sends_no_list_offsets() -> None:
    # librdkafka fails a whole ListOffsets with "No leaders found" when none of its partitions has a
    # leader in its cache: such a request is never made.
    led, again = split_by_leader([TopicPartition("t", p) for p in range(3)], {"t": dict.fromkeys(range(3), -1)})
    assert led == []
    assert len(again) == 3


def test_topics_are_created_in_requests_a_kraft_controller_accepts() -> None:
    """A controller refuses a request of more than 10,000 metadata records ("excessively large batch
    operation"), as 100 topics of 100 partitions in one CreateTopics were."""
    from mirror_sink.topics.topic_provisioner import by_partitions

    sizes = [100] * 100
    batches = list(by_partitions(sizes, lambda n: n))
    assert [sum(b) for b in batches] == [5000, 5000]
    assert list(by_partitions([3000, 3000, 6000, 10], lambda n: n)) == [[3000], [3000], [6000], [10]]
    assert list(by_partitions([], lambda n: n)) == []


def test_coordinators_are_not_asked_through_a_client_that_cannot_honour_the_settings() -> None:
    """A PKCS#12 keystore: the raw path's client cannot connect, so the answer says why, at once."""
    props = {"bootstrap.servers": "127.0.0.1:1", "ssl.keystore.location": "/k.p12", "ssl.keystore.password": "s"}
    answers = ask_coordinators(props, "test", "connect-x", "x-0")
    assert set(answers) == {"connect-x", "x-0"}
    assert all(a.startswith("not asked: the client cannot honour ssl.keystore.location") for a in answers.values())
