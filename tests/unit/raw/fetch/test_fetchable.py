"""Fetchable: which source leader serves each assigned partition now, with what fetch state, and
which partitions are left out (gone, in a backoff, held back with a full queue, leader or topic id
not known yet); what changed per leader since its last Fetch."""

from __future__ import annotations

import uuid
from typing import cast

import pytest

from mirror_sink.core.base.errors import SourceOffsetOutOfRange
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.raw.fetch.fetch_buffer import PartitionState
from mirror_sink.raw.fetch.fetch_session import Sent
from mirror_sink.raw.fetch.fetchable import Fetchable
from mirror_sink.raw.wire.wire import WireClient
from tests.unit.raw.fetch.fakes import FakeSourceWire

pytestmark = pytest.mark.unit

A, B = SourcePartition("orders", 0), SourcePartition("orders", 1)
ID = uuid.uuid4()
LIMIT = 1000


def _fetchable(
    parts: dict[SourcePartition, PartitionState], *, by_id: bool = True
) -> tuple[Fetchable, FakeSourceWire, dict[uuid.UUID, str]]:
    wire = FakeSourceWire(topic_id=ID)
    names: dict[uuid.UUID, str] = {}
    fetchable = Fetchable(cast(WireClient, wire), parts, names, partition_max_bytes=LIMIT, by_id=by_id)
    return fetchable, wire, names


def test_a_partition_is_wanted_from_its_leader_with_its_state_and_its_pinned_topic_id() -> None:
    parts = {A: PartitionState(10, 3, last_epoch=2)}
    fetchable, _, names = _fetchable(parts)
    assert fetchable.refresh({A}, 0.0) == set()
    assert fetchable.wanted == {1: {A: Sent(3, 10, 2, 7, ID)}}
    assert fetchable.changed == {1: {A}}
    assert parts[A].topic_id == ID and names == {ID: "orders"}


def test_by_name_the_state_carries_no_topic_id() -> None:
    parts = {A: PartitionState(10, 3)}
    fetchable, _, _ = _fetchable(parts, by_id=False)
    fetchable.refresh({A}, 0.0)
    assert fetchable.wanted[1][A].topic_id is None and parts[A].topic_id is None


def test_a_partition_without_a_known_leader_is_looked_at_again_next_round() -> None:
    parts = {A: PartitionState(10, 3)}
    fetchable, wire, _ = _fetchable(parts)
    wire.leaders[A] = None
    assert fetchable.refresh({A}, 0.0) == {A}
    assert not fetchable.wanted


def test_a_topic_whose_id_is_unknown_asks_for_metadata_and_waits() -> None:
    parts = {A: PartitionState(10, 3)}
    fetchable, wire, _ = _fetchable(parts)
    wire.default_topic_id = None
    assert fetchable.refresh({A}, 0.0) == {A}
    assert wire.refreshes == 1 and not fetchable.wanted


def test_a_pinned_topic_id_is_kept_whatever_the_metadata_says_later() -> None:
    parts = {A: PartitionState(10, 3, topic_id=ID)}
    fetchable, wire, _ = _fetchable(parts)
    wire.default_topic_id = uuid.uuid4()  # the topic was created again
    fetchable.refresh({A}, 0.0)
    assert fetchable.wanted[1][A].topic_id == ID


def test_a_full_queue_holds_the_partition_back_until_it_is_down_to_half() -> None:
    parts = {A: PartitionState(10, 3)}
    fetchable, _, _ = _fetchable(parts)
    fetchable.refresh({A}, 0.0)
    fetchable.changed.clear()
    parts[A].queued_bytes = LIMIT
    fetchable.refresh({A}, 0.0)
    assert parts[A].held and fetchable.held == {A}
    assert fetchable.wanted == {1: {}} and fetchable.changed == {1: {A}}, "its leader's session forgets it"
    parts[A].queued_bytes = LIMIT // 2 + 1
    fetchable.refresh({A}, 0.0)
    assert parts[A].held, "held until half of the limit"
    parts[A].queued_bytes = LIMIT // 2
    fetchable.refresh({A}, 0.0)
    assert not parts[A].held and not fetchable.held and A in fetchable.wanted[1]


def test_a_partition_in_its_backoff_is_left_out_until_the_backoff_is_over() -> None:
    parts = {A: PartitionState(10, 3, retry_at=5.0)}
    fetchable, _, _ = _fetchable(parts)
    fetchable.refresh({A}, 1.0)
    assert not fetchable.wanted
    assert fetchable.refresh(set(), 4.9) == set() and not fetchable.wanted
    fetchable.refresh(set(), 5.0)
    assert A in fetchable.wanted[1], "recomputed by itself once due, without being marked"


def test_a_partition_gone_is_dropped_from_its_leader() -> None:
    parts = {A: PartitionState(10, 3)}
    fetchable, _, _ = _fetchable(parts)
    fetchable.refresh({A}, 0.0)
    fetchable.changed.clear()
    parts[A].gone = SourceOffsetOutOfRange("orders", 0, 10, "retention")
    fetchable.refresh({A}, 0.0)
    assert fetchable.wanted == {1: {}} and fetchable.changed == {1: {A}}


def test_an_unassigned_partition_is_dropped_from_its_leader() -> None:
    parts = {A: PartitionState(10, 3), B: PartitionState(0, 4)}
    fetchable, _, _ = _fetchable(parts)
    fetchable.refresh({A, B}, 0.0)
    del parts[A]
    fetchable.refresh({A}, 0.0)
    assert set(fetchable.wanted[1]) == {B}


def test_a_partition_whose_leader_moved_changes_both_leaders_sessions() -> None:
    parts = {A: PartitionState(10, 3)}
    fetchable, wire, _ = _fetchable(parts)
    fetchable.refresh({A}, 0.0)
    fetchable.changed.clear()
    wire.leaders[A] = 2
    fetchable.on_metadata_update()
    fetchable.refresh(set(), 0.0)
    assert fetchable.wanted == {1: {}, 2: {A: Sent(3, 10, -1, 7, ID)}}
    assert fetchable.changed == {1: {A}, 2: {A}}


def test_a_partition_recomputed_to_the_same_state_is_not_a_change() -> None:
    parts = {A: PartitionState(10, 3)}
    fetchable, wire, _ = _fetchable(parts)
    fetchable.refresh({A}, 0.0)
    fetchable.changed.clear()
    fetchable.refresh({A}, 0.0)
    assert fetchable.changed == {}
    wire.epoch = 8  # a new leader epoch is a change the session must send
    fetchable.refresh({A}, 0.0)
    assert fetchable.changed == {1: {A}} and fetchable.wanted[1][A].leader_epoch == 8
