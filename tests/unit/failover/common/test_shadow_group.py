"""ShadowGroupOffsets: a link's position written from outside its tasks, in the format its tasks read
back (each offset with its source topic's id), committed as a non-member or inside a transaction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.commit_metadata import commit_metadata, stored_topic_id
from mirror_sink.failover.common import shadow_group
from mirror_sink.failover.common.shadow_group import ShadowGroupOffsets
from tests.unit.failover.fakes import (
    NEW_PRIMARY,
    OLD_PRIMARY,
    FakeAdmin,
    FakeClusters,
    FakeProducer,
    forward_config,
    kafka_exception,
)

pytestmark = pytest.mark.unit

A0, A1, B0 = (
    TargetPartition("us-east.orders", 0),
    TargetPartition("us-east.orders", 1),
    TargetPartition("us-east.pay", 0),
)


class _Member:
    """A consumer of the group that never joins it: records its commits and whether it was closed."""

    def __init__(self, config: Mapping[str, object], fail: Exception | None = None) -> None:
        self.config = dict(config)
        self.fail = fail
        self.commits: list[tuple[list[TopicPartition], bool]] = []
        self.closed = False

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        self.commits.append((offsets, asynchronous))
        if self.fail is not None:
            raise self.fail

    def consumer_group_metadata(self) -> str:
        return f"metadata of {self.config['group.id']}"

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def ids_asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    """The source clusters' topic ids: ``orders`` has one, ``pay`` cannot be described."""
    asked: list[tuple[str, list[str]]] = []
    clusters = FakeClusters(FakeAdmin(OLD_PRIMARY), FakeAdmin(NEW_PRIMARY))

    def source_topic_ids(admin: FakeAdmin, topics: list[str], timeout_s: float = 30.0) -> dict[str, str]:
        asked.append((admin.bootstrap, topics))
        return {"orders": "id-of-orders"}

    monkeypatch.setattr(shadow_group, "clients", clusters)
    monkeypatch.setattr(shadow_group, "source_topic_ids", source_topic_ids)
    return asked


def _offsets() -> ShadowGroupOffsets:
    return ShadowGroupOffsets(
        "connect-orders-mirror",
        (TopicPartition("us-east.orders", 0, 40, metadata=commit_metadata("id-of-orders")),),
    )


def test_a_link_s_offsets_carry_each_source_topic_s_id_read_once_from_the_link_s_source(
    ids_asked: list[tuple[str, list[str]]],
) -> None:
    link = forward_config()
    positions = [(A1, "orders", 12), (B0, "pay", 3), (A0, "orders", 10)]
    offsets = ShadowGroupOffsets.for_link(link, positions, "test")
    assert ids_asked == [(OLD_PRIMARY, ["orders", "pay"])], "each topic asked once, of the link's source"
    assert offsets.group == link.shadow_group_id
    assert [(tp.topic, tp.partition, tp.offset) for tp in offsets.offsets] == [
        ("us-east.orders", 1, 12),
        ("us-east.pay", 0, 3),
        ("us-east.orders", 0, 10),
    ], "kept in the order given"
    assert [stored_topic_id(tp.metadata or "") for tp in offsets.offsets] == ["id-of-orders", None, "id-of-orders"]
    assert offsets.starts == {A1: 12, B0: 3, A0: 10}


def test_a_topic_the_source_cannot_describe_is_written_without_an_id_not_left_out(
    ids_asked: list[tuple[str, list[str]]],
) -> None:
    offsets = ShadowGroupOffsets.for_link(forward_config(), [(B0, "pay", 3)], "test")
    [only] = offsets.offsets
    assert ids_asked == [(OLD_PRIMARY, ["pay"])]
    assert (only.offset, only.metadata) == (3, ""), "no id proves nothing either way; the offset still goes"


def test_a_commit_is_one_synchronous_commit_of_every_offset_from_a_non_member_which_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    members: list[_Member] = []

    def group_member(props: Mapping[str, str], group: str, client_id: str) -> _Member:
        members.append(_Member({**props, "group.id": group}))
        return members[-1]

    monkeypatch.setattr(shadow_group, "group_member", group_member)
    _offsets().commit({"bootstrap.servers": NEW_PRIMARY}, "test")
    [member] = members
    assert (member.config["bootstrap.servers"], member.config["group.id"]) == (NEW_PRIMARY, "connect-orders-mirror")
    [(committed, asynchronous)] = member.commits
    assert [(tp.topic, tp.partition, tp.offset) for tp in committed] == [("us-east.orders", 0, 40)]
    assert not asynchronous and member.closed


def test_a_refused_commit_is_raised_as_librdkafka_raised_it_and_its_member_is_closed_all_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refusal = kafka_exception(KafkaError.UNKNOWN_MEMBER_ID, "the link's tasks are members")
    member = _Member({}, fail=refusal)
    monkeypatch.setattr(shadow_group, "group_member", lambda props, group, client_id: member)
    with pytest.raises(type(refusal)) as raised:
        _offsets().commit({"bootstrap.servers": NEW_PRIMARY}, "test")
    assert raised.value is refusal and member.closed


def test_offsets_sent_to_a_transaction_go_with_the_group_s_metadata_from_a_consumer_that_never_joins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    members: list[_Member] = []

    def consumer(config: Mapping[str, Any]) -> _Member:
        members.append(_Member(config))
        return members[-1]

    monkeypatch.setattr(shadow_group, "Consumer", consumer)
    producer = FakeProducer()
    offsets = _offsets()
    offsets.send_to_transaction(producer, {"bootstrap.servers": OLD_PRIMARY})  # type: ignore[arg-type]
    [member] = members
    assert member.config == {
        "bootstrap.servers": OLD_PRIMARY,
        "group.id": "connect-orders-mirror",
        "enable.auto.commit": False,
    }
    assert producer.calls == [
        ("send_offsets_to_transaction", list(offsets.offsets), "metadata of connect-orders-mirror")
    ], "the offsets commit with the transaction, not on their own"
    assert member.closed and not member.commits
