"""ConnectorOffsets, a MirrorSink connector's KIP-875 offsets and what a consumer failover asks of them:
which target topics are this connector's under its replication policy, how offsets cross between
source and target names, and what each verb refuses (a malformed offset, a group in use, a cluster
that will not answer) with which message.

Every reader and writer is faked where the module names it: its admin client (``_admin``), the shadow
group's reader (``Consumer``), the checkpoints reader (``read_checkpoints``) and ``OffsetTranslator``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

from connectors import offsets
from connectors.offsets import ConnectorOffsets
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.checkpoints import Checkpoint
from mirror_sink.failover.checkpoints.offset_translator import Direction, Outcome, TopicOffset, TranslatedOffset
from mirror_sink.failover.common.readers import StoredCheckpoint
from mirror_sink.worker.connector_plugin import CheckpointState, Conflict, InvalidRequest, PartitionOffset
from tests.unit.connectors.fakes import config

pytestmark = pytest.mark.unit

IDENTITY = {"replication.policy.class": "IdentityReplicationPolicy"}


def kafka_error(code: int, reason: str) -> KafkaException:
    return KafkaException(KafkaError(code, reason))


class Done:
    """A finished admin future: its value, or its error."""

    def __init__(self, value: object = None, error: Exception | None = None) -> None:
        self._value, self._error = value, error

    def result(self, timeout: float | None = None) -> object:
        if self._error is not None:
            raise self._error
        return self._value


@dataclass
class FakeAdmin:
    """The target's admin client: its topics with their partition counts, and the group changes asked."""

    topics: dict[str, int] = field(default_factory=dict)
    altered: list[ConsumerGroupTopicPartitions] = field(default_factory=list)
    alter_answer: Done = field(default_factory=lambda: Done(SimpleNamespace(topic_partitions=[])))
    deleted: list[str] = field(default_factory=list)
    delete_answer: Done = field(default_factory=Done)

    def list_topics(self, timeout: float) -> SimpleNamespace:
        return SimpleNamespace(
            topics={t: SimpleNamespace(partitions=dict.fromkeys(range(n))) for t, n in self.topics.items()}
        )

    def alter_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions]) -> dict[str, Done]:
        self.altered += requests
        return {r.group_id: self.alter_answer for r in requests}

    def delete_consumer_groups(self, groups: list[str], request_timeout: float) -> dict[str, Done]:
        self.deleted += groups
        return dict.fromkeys(groups, self.delete_answer)


class ShadowGroup:
    """The shadow group's committed offsets, and the readers made to read them."""

    def __init__(self, committed: Mapping[tuple[str, int], int]) -> None:
        self.committed = committed
        self.readers: list[dict[str, Any]] = []
        self.asked: list[tuple[str, int]] = []
        self.closed = 0

    def consumer(self, conf: dict[str, Any]) -> ShadowGroup:
        self.readers.append(conf)
        return self

    def committed_offsets(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        self.asked += [(tp.topic, tp.partition) for tp in partitions]
        return [
            TopicPartition(tp.topic, tp.partition, self.committed.get((tp.topic, tp.partition), -1001))
            for tp in partitions
        ]

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> FakeAdmin:
    made = FakeAdmin()
    monkeypatch.setattr(offsets, "_admin", lambda cfg: made)
    return made


def _shadow_group(monkeypatch: pytest.MonkeyPatch, committed: Mapping[tuple[str, int], int]) -> ShadowGroup:
    group = ShadowGroup(committed)
    reader = SimpleNamespace(committed=group.committed_offsets, close=group.close)
    monkeypatch.setattr(offsets, "Consumer", lambda conf: group.consumer(conf) and reader)
    return group


# -- GET ----------------------------------------------------------------------------------------------
def test_the_offsets_are_the_shadow_group_s_on_this_connector_s_topics_keyed_by_source_partition(
    admin: FakeAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin.topics = {"east.orders": 2, "east.payments": 1, "west.orders": 1, "local": 1}
    group = _shadow_group(monkeypatch, {("east.orders", 1): 10, ("east.orders", 0): 5, ("west.orders", 0): 99})
    assert ConnectorOffsets(config()).get() == [PartitionOffset("orders", 0, 5), PartitionOffset("orders", 1, 10)]
    assert sorted(group.asked) == [("east.orders", 0), ("east.orders", 1), ("east.payments", 0)]
    [reader] = group.readers
    assert reader["group.id"] == "connect-mirror" and reader["isolation.level"] == "read_committed"
    assert group.closed == 1


def test_under_the_identity_policy_the_topics_are_those_the_topic_filter_accepts(
    admin: FakeAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin.topics = {"orders": 1, "__consumer_offsets": 50, "mirror-sink-offset-syncs.east.internal": 1}
    group = _shadow_group(monkeypatch, {("orders", 0): 3})
    assert ConnectorOffsets(config(**IDENTITY)).get() == [PartitionOffset("orders", 0, 3)]
    assert group.asked == [("orders", 0)]


def test_with_no_topic_of_this_connector_on_the_target_there_are_no_offsets_and_no_reader(
    admin: FakeAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin.topics = {"west.orders": 1, "local": 1}
    group = _shadow_group(monkeypatch, {})
    assert ConnectorOffsets(config()).get() == [] and not group.readers


# -- PATCH --------------------------------------------------------------------------------------------
def test_source_offsets_are_committed_to_the_shadow_group_under_their_target_names(admin: FakeAdmin) -> None:
    ConnectorOffsets(config()).alter([PartitionOffset("orders", 1, 0), PartitionOffset("orders", 0, 7)])
    [request] = admin.altered
    assert request.group_id == "connect-mirror"
    assert [(tp.topic, tp.partition, tp.offset) for tp in request.topic_partitions or []] == [
        ("east.orders", 1, 0),
        ("east.orders", 0, 7),
    ]


@pytest.mark.parametrize(
    ("offset", "message"),
    [
        (None, "removing one partition's offset is not supported; DELETE resets them all"),
        (-1, 'offset of orders-0 must be {"kafka_offset": <non-negative int>}'),
    ],
    ids=["removal", "negative"],
)
def test_a_removal_or_a_negative_offset_is_refused_before_anything_is_written(
    admin: FakeAdmin, offset: int | None, message: str
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        ConnectorOffsets(config()).alter([PartitionOffset("orders", 1, 4), PartitionOffset("orders", 0, offset)])
    assert refused.value.message == message and not admin.altered


def test_partitions_the_broker_refuses_are_named_in_a_conflict(admin: FakeAdmin) -> None:
    refused_tp = SimpleNamespace(
        topic="east.orders", partition=0, error=KafkaError(KafkaError.UNKNOWN_MEMBER_ID, "group has members")
    )
    accepted_tp = SimpleNamespace(topic="east.orders", partition=1, error=None)
    admin.alter_answer = Done(SimpleNamespace(topic_partitions=[refused_tp, accepted_tp]))
    with pytest.raises(Conflict) as refused:
        ConnectorOffsets(config()).alter([PartitionOffset("orders", 0, 1), PartitionOffset("orders", 1, 1)])
    assert refused.value.message.startswith("cannot alter offsets of group connect-mirror: east.orders-0: ")
    assert "east.orders-1" not in refused.value.message


def test_a_refused_alter_request_is_a_conflict_naming_the_group(admin: FakeAdmin) -> None:
    admin.alter_answer = Done(error=kafka_error(KafkaError.GROUP_AUTHORIZATION_FAILED, "not authorized"))
    with pytest.raises(Conflict, match=r"^cannot alter offsets of group connect-mirror: "):
        ConnectorOffsets(config()).alter([PartitionOffset("orders", 0, 1)])


# -- DELETE -------------------------------------------------------------------------------------------
def test_a_reset_deletes_the_shadow_group_and_a_group_already_gone_is_reset(admin: FakeAdmin) -> None:
    store = ConnectorOffsets(config())
    store.reset()
    admin.delete_answer = Done(error=kafka_error(KafkaError.GROUP_ID_NOT_FOUND, "no such group"))
    store.reset()
    assert admin.deleted == ["connect-mirror", "connect-mirror"]


def test_a_reset_the_broker_refuses_is_a_conflict_naming_the_connector(admin: FakeAdmin) -> None:
    admin.delete_answer = Done(error=kafka_error(KafkaError.NON_EMPTY_GROUP, "The group is not empty"))
    with pytest.raises(Conflict, match=r"^cannot reset the offsets of mirror: "):
        ConnectorOffsets(config()).reset()


# -- checkpoints ------------------------------------------------------------------------------------------
def _stored(group: str, topic: str, partition: int, upstream: int) -> tuple[tuple[str, TargetPartition], Any]:
    target = TargetPartition(topic, partition)
    return (group, target), StoredCheckpoint(Checkpoint(group, target, upstream, upstream - 2), 1_000 + upstream)


def test_the_checkpoints_are_the_newest_of_each_group_on_this_connector_s_topics_sorted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[tuple[Mapping[str, str], str, str, float]] = []
    stored = dict(
        [
            _stored("billing", "east.orders", 0, 40),
            _stored("app", "east.orders", 1, 30),
            _stored("app", "east.orders", 0, 20),
            _stored("app", "west.orders", 0, 10),  # another source's topic
        ]
    )

    def read(props: Mapping[str, str], topic: str, client_id: str, timeout_s: float = 60.0) -> dict[Any, Any]:
        asked.append((props, topic, client_id, timeout_s))
        return stored

    monkeypatch.setattr(offsets, "read_checkpoints", read)
    topic, found = ConnectorOffsets(config()).checkpoints()
    assert topic == "east.checkpoints.internal"
    assert found == [
        CheckpointState("app", "east.orders", 0, 20, 18, 1_020),
        CheckpointState("app", "east.orders", 1, 30, 28, 1_030),
        CheckpointState("billing", "east.orders", 0, 40, 38, 1_040),
    ]
    [(_, read_topic, client_id, timeout_s)] = asked
    assert (read_topic, client_id, timeout_s) == ("east.checkpoints.internal", "mirror-rest", 20)


def test_without_checkpoints_emitted_there_is_nothing_to_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offsets, "read_checkpoints", None)  # never called
    store = ConnectorOffsets(config(**{"emit.checkpoints.enabled": "false"}))
    assert store.checkpoints() == ("east.checkpoints.internal", [])


def test_checkpoints_that_cannot_be_read_are_a_conflict_naming_the_topic(monkeypatch: pytest.MonkeyPatch) -> None:
    def read(props: Mapping[str, str], topic: str, client_id: str, timeout_s: float = 60.0) -> dict[Any, Any]:
        raise TaskFailure("not authorized to read it")

    monkeypatch.setattr(offsets, "read_checkpoints", read)
    with pytest.raises(Conflict) as refused:
        ConnectorOffsets(config()).checkpoints()
    assert refused.value.message == (
        "cannot read the checkpoints of mirror from east.checkpoints.internal: not authorized to read it"
    )


# -- translation ------------------------------------------------------------------------------------------
class FakeTranslator:
    """OffsetTranslator as the connector uses it; every one made is kept."""

    made: ClassVar[list[FakeTranslator]] = []
    refuse: ClassVar[ConfigError | None] = None
    fail: ClassVar[TaskFailure | None] = None

    def __init__(self, cfg: MirrorSinkConfig, client_id: str | None = None) -> None:
        if FakeTranslator.refuse is not None:
            raise FakeTranslator.refuse
        self.client_id = client_id
        self.asked: list[tuple[list[TopicOffset], Direction]] = []
        self.closed = False
        FakeTranslator.made.append(self)

    def translate(self, asked: Sequence[TopicOffset], direction: Direction) -> list[TranslatedOffset]:
        self.asked.append((list(asked), direction))
        if FakeTranslator.fail is not None:
            raise FakeTranslator.fail
        return [
            TranslatedOffset(a, Outcome.EXACT, TopicOffset("east." + a.topic, a.partition, a.offset), "") for a in asked
        ]

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def translator(monkeypatch: pytest.MonkeyPatch) -> type[FakeTranslator]:
    monkeypatch.setattr(FakeTranslator, "made", [])
    monkeypatch.setattr(FakeTranslator, "refuse", None)
    monkeypatch.setattr(FakeTranslator, "fail", None)
    monkeypatch.setattr(offsets, "OffsetTranslator", FakeTranslator)
    return FakeTranslator


def test_offsets_are_translated_in_the_direction_asked_and_the_translator_closed(
    translator: type[FakeTranslator],
) -> None:
    asked = [PartitionOffset("orders", 0, 40), PartitionOffset("orders", 1, -2)]
    answers = ConnectorOffsets(config()).translate(asked, "source-to-target")
    assert [a.answer for a in answers] == [TopicOffset("east.orders", 0, 40), TopicOffset("east.orders", 1, -2)]
    [made] = translator.made
    assert made.asked == [([TopicOffset("orders", 0, 40), TopicOffset("orders", 1, -2)], Direction.SOURCE_TO_TARGET)]
    assert made.client_id == "mirror-rest-translate" and made.closed


@pytest.mark.parametrize("offset", [None, -3])
def test_an_offset_that_is_no_offset_is_refused_before_any_translator_is_made(
    translator: type[FakeTranslator], offset: int | None
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        ConnectorOffsets(config()).translate([PartitionOffset("orders", 2, offset)], "source-to-target")
    assert refused.value.message == 'offset of orders-2 must be {"kafka_offset": <int >= 0, or -2 or -1>}'
    assert not translator.made


def test_a_connector_that_cannot_translate_is_an_invalid_request_naming_why(translator: type[FakeTranslator]) -> None:
    translator.refuse = ConfigError("emit.offset-syncs.enabled", "offsets can only be translated with the syncs")
    with pytest.raises(InvalidRequest) as refused:
        ConnectorOffsets(config()).translate([PartitionOffset("orders", 0, 1)], "target-to-source")
    assert refused.value.message == (
        "connector mirror cannot translate offsets: emit.offset-syncs.enabled: offsets can only be translated with "
        "the syncs"
    )


def test_syncs_that_cannot_be_read_are_a_conflict_and_the_translator_is_closed(
    translator: type[FakeTranslator],
) -> None:
    translator.fail = TaskFailure("syncs topic not readable")
    with pytest.raises(Conflict) as refused:
        ConnectorOffsets(config()).translate([PartitionOffset("orders", 0, 1)], "target-to-source")
    assert refused.value.message == "cannot read the offset syncs of mirror: syncs topic not readable"
    assert translator.made[0].closed
