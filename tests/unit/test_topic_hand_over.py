"""New target topics handed to the tasks as their leaders come up (the 10,000-partition start):
what ``TopicProvisioner`` holds back, when it releases it, and what the connector gives its tasks."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka.cimpl import NewTopic

from connectors.mirror_sink_connector import MirrorSinkConnector
from mirror_sink.topics import topic_provisioner
from mirror_sink.topics.source_discovery import TopicMapping
from mirror_sink.topics.topic_provisioner import HAND_OVER_ABOVE, TopicProvisioner


class _Leaders:
    """The leader wait: answers each ``unserved`` with the next of ``answers``; counts full waits."""

    def __init__(self, *answers: set[str]) -> None:
        self.answers = list(answers)
        self.waited: list[dict[str, range]] = []

    def unserved(self, partitions: dict[str, range], timeout_s: float = 3.0) -> dict[str, range]:
        left = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return {t: r for t, r in partitions.items() if t in left}

    def wait(self, partitions: dict[str, range]) -> None:
        self.waited.append(partitions)


class _Admin:
    def create_topics(self, topics: list[NewTopic], operation_timeout: float) -> dict[str, Future[None]]:
        out: dict[str, Future[None]] = {}
        for topic in topics:
            out[topic.topic] = Future()
            out[topic.topic].set_result(None)
        return out


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def _provisioner(monkeypatch: pytest.MonkeyPatch, leaders: _Leaders) -> tuple[TopicProvisioner, _Clock]:
    clock = _Clock()
    monkeypatch.setattr(topic_provisioner, "time", clock)
    provisioner = TopicProvisioner.__new__(TopicProvisioner)
    provisioner.target_admin = _Admin()  # type: ignore[assignment]
    provisioner.timeout_s = 60.0
    provisioner._leaders = leaders  # type: ignore[assignment]
    provisioner.held, provisioner._released_at = {}, 0.0
    return provisioner, clock


def _new(n: int, partitions: int) -> list[NewTopic]:
    return [NewTopic(f"t{i}", partitions) for i in range(n)]


def test_many_new_partitions_are_mirrored_as_their_topics_are_served_and_released_in_few_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    leaders = _Leaders({"t0", "t1", "t2"}, {"t1", "t2"}, {"t2"}, {"t2"}, set())
    provisioner, clock = _provisioner(monkeypatch, leaders)
    provisioner._create_topics(_new(3, HAND_OVER_ABOVE // 2), "target topic", hand_over_early=True)
    assert set(provisioner.held) == {"t1", "t2"} and not leaders.waited, "t0 served: mirrored at once"
    clock.now += 1
    assert provisioner.hand_over() == [], "t1 served, but a release changes the subscription: not so soon"
    clock.now += 10
    assert provisioner.hand_over() == ["t1"] and set(provisioner.held) == {"t2"}
    assert provisioner.hand_over() == ["t2"] and provisioner.held == {}, "the last ones: released at once"
    assert provisioner.hand_over() == []


def test_a_few_new_partitions_wait_for_every_leader_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    leaders = _Leaders(set())
    provisioner, _ = _provisioner(monkeypatch, leaders)
    provisioner._create_topics(_new(2, HAND_OVER_ABOVE // 2), "target topic", hand_over_early=True)
    assert provisioner.held == {} and [set(w) for w in leaders.waited] == [{"t0", "t1"}]
    provisioner._create_topics(_new(3, HAND_OVER_ABOVE), "target topic")
    assert provisioner.held == {} and len(leaders.waited) == 2, "Spark's planner waits for all"


def test_no_topic_served_in_time_is_mirrored_anyway(monkeypatch: pytest.MonkeyPatch) -> None:
    leaders = _Leaders({"t0", "t1"})
    provisioner, _ = _provisioner(monkeypatch, leaders)
    provisioner.timeout_s = 0.2
    provisioner._create_topics(_new(2, HAND_OVER_ABOVE), "target topic", hand_over_early=True)
    assert provisioner.held == {}, "as the full wait does after its timeout"


def test_the_connector_gives_its_tasks_only_served_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    def mapping(topic: str) -> TopicMapping:
        return TopicMapping(topic, f"source.{topic}", 4)

    class _Provisioner:
        def __init__(self) -> None:
            self.held = {"source.b": range(4)}

        def hand_over(self) -> list[str]:
            released, self.held = list(self.held), {}
            return released

    connector: Any = MirrorSinkConnector.__new__(MirrorSinkConnector)
    connector._provisioner = _Provisioner()
    connector._provisioned = {"source.a": mapping("a"), "source.b": mapping("b")}
    connector.mappings = connector._served(connector._provisioned)
    assert set(connector.mappings) == {"source.a"}
    assert connector.hand_over() and set(connector.mappings) == {"source.a", "source.b"}
    assert not connector.hand_over()
