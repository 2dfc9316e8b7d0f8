"""FetchRequestBuilder: a session's plan as Fetch v12 (topics by name) or v13 (topics by id),
read_committed or a watch's read_uncommitted, with each partition's KIP-320 epochs, and a full
Fetch's partitions rotated so that none is always last."""

from __future__ import annotations

import uuid

import pytest

from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.raw.fetch.fetch_request import FetchRequestBuilder
from mirror_sink.raw.fetch.fetch_session import Kind, Plan, Sent

pytestmark = pytest.mark.unit

A, B, C = SourcePartition("orders", 0), SourcePartition("orders", 1), SourcePartition("users", 0)
ORDERS, USERS = uuid.uuid4(), uuid.uuid4()
IDS = {"orders": ORDERS, "users": USERS}


def _sent(tp: SourcePartition, offset: int) -> Sent:
    return Sent(epoch=1, offset=offset, last_epoch=3, leader_epoch=4, topic_id=IDS[tp.topic])


def _incremental() -> Plan:
    return Plan(Kind.INCREMENTAL, 42, 5, {A: _sent(A, 10), C: _sent(C, 30)}, {B: ORDERS})


def test_v12_names_topics_and_forgotten_partitions_by_name() -> None:
    request = FetchRequestBuilder(12, 1 << 20).build(_incremental(), 5000, 100)
    assert [(t.topic, [p.partition for p in t.partitions]) for t in request.topics] == [("orders", [0]), ("users", [0])]
    assert [(t.topic, t.partitions) for t in request.forgotten_topics_data] == [("orders", [1])]
    assert (request.session_id, request.session_epoch) == (42, 5)
    assert (request.max_bytes, request.max_wait_ms, request.isolation_level) == (5000, 100, 1)


def test_v13_names_topics_and_forgotten_partitions_by_id() -> None:
    request = FetchRequestBuilder(13, 1 << 20).build(_incremental(), 5000, 100)
    assert [t.topic_id for t in request.topics] == [ORDERS, USERS]
    assert [(t.topic_id, t.partitions) for t in request.forgotten_topics_data] == [(ORDERS, [1])]


def test_each_partition_carries_its_offset_epochs_and_the_constant_partition_limit() -> None:
    request = FetchRequestBuilder(13, 777).build(_incremental(), 5000, 100)
    partition = request.topics[0].partitions[0]
    assert (partition.fetch_offset, partition.current_leader_epoch, partition.last_fetched_epoch) == (10, 4, 3)
    assert (partition.partition_max_bytes, partition.log_start_offset) == (777, -1)


def test_a_watch_is_read_uncommitted() -> None:
    request = FetchRequestBuilder(13, 1 << 20).build(_incremental(), 1, 500, committed=False)
    assert (request.isolation_level, request.max_bytes, request.max_wait_ms) == (0, 1, 500)


def test_a_full_fetch_rotates_its_partitions_an_incremental_one_keeps_their_order() -> None:
    builder = FetchRequestBuilder(12, 1 << 20)
    full = Plan(Kind.FULL, 0, 0, {A: _sent(A, 0), B: _sent(B, 0), C: _sent(C, 0)})

    def order(plan: Plan) -> list[tuple[str, int]]:
        return [(t.topic, p.partition) for t in builder.build(plan, 1, 0).topics for p in t.partitions]

    firsts = [order(full)[0] for _ in range(3)]
    assert sorted(firsts) == [("orders", 0), ("orders", 1), ("users", 0)], "each partition leads once in three"
    incremental = Plan(Kind.INCREMENTAL, 42, 1, dict(full.send))
    assert order(incremental) == order(incremental) == [("orders", 0), ("orders", 1), ("users", 0)]


def test_a_full_fetch_with_nothing_to_name_is_built() -> None:
    request = FetchRequestBuilder(13, 1 << 20).build(Plan(Kind.SESSIONLESS, 42, -1, {}), 1, 0)
    assert request.topics == [] and request.forgotten_topics_data == []
