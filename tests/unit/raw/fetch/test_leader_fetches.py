"""LeaderFetches: one Fetch in flight per source leader, in its fetch session, within the memory
budget: what each Fetch reserves and asks for, when it is parked, held back or made a watch, what
an answer gives back and yields, and how a failed Fetch resets the session."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest

from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.raw.fetch import leader_fetches
from mirror_sink.raw.fetch.fetch_buffer import PartitionState
from mirror_sink.raw.fetch.fetchable import Fetchable
from mirror_sink.raw.fetch.leader_fetches import LeaderFetches
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.wire import WireClient
from tests.unit.raw.fetch.fakes import FakeSourceWire

pytestmark = pytest.mark.unit

A, B = SourcePartition("orders", 0), SourcePartition("orders", 1)
MB = 1 << 20


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Rig:
    """Leader fetches over a fake wire, with a real ``Fetchable`` of the test's partitions."""

    def __init__(
        self,
        *,
        budget: int = 64 * MB,
        idle_wait_ms: int = 100,
        parts: dict[SourcePartition, PartitionState] | None = None,
    ) -> None:
        self.wire = FakeSourceWire()
        self.budget = MemoryBudget(budget)
        self.parts = parts if parts is not None else {A: PartitionState(0, 1), B: PartitionState(50, 2)}
        self.clock = _Clock()
        wire = cast(WireClient, self.wire)
        self.fetchable = Fetchable(wire, self.parts, {}, partition_max_bytes=MB, by_id=False)
        self.fetches = LeaderFetches(
            wire,
            self.budget,
            self.parts,
            version=12,
            fetch_max_bytes=50 * MB,
            partition_max_bytes=MB,
            max_wait_ms=100,
            idle_wait_ms=idle_wait_ms,
            sessions=True,
            clock=self.clock,
        )

    def send(self) -> bool:
        self.fetchable.refresh(set(self.parts), self.clock.now)
        return self.fetches.send(self.fetchable, self.clock.now)

    def answer(self, session_id: int = 42, error_code: int = 0, responses: list[object] | None = None) -> None:
        self.wire.sent[-1][2].success(
            SimpleNamespace(error_code=error_code, session_id=session_id, responses=responses or [])
        )


def test_a_leader_gets_one_full_fetch_of_its_partitions_reserving_its_response_in_the_budget() -> None:
    rig = _Rig()
    assert rig.send() is False
    ((leader, request, _),) = rig.wire.sent
    copies = rig.fetches._copies
    assert leader == 1 and request.max_bytes == 2 * MB, "two partitions' worth"
    assert sorted(p.partition for t in request.topics for p in t.partitions) == [0, 1]
    assert request.max_wait_ms == 100, "parked in the broker while nothing is held back"
    assert rig.budget.used == 2 * MB * copies
    assert rig.fetches.requests["full"] == 1
    rig.send()
    assert len(rig.wire.sent) == 1, "one Fetch in flight per leader"


def test_an_answer_gives_the_reservation_back_and_yields_what_the_session_holds() -> None:
    rig = _Rig()
    rig.send()
    rig.answer(session_id=42)
    ((leader, members, response, watch),) = list(rig.fetches.answers())
    assert leader == 1 and set(members) == {A, B} and response.session_id == 42 and not watch
    assert rig.budget.used == 0 and not rig.fetches.inflight
    assert rig.fetches.sessions[1].established


def test_an_established_session_sends_an_incremental_fetch_naming_only_what_changed() -> None:
    rig = _Rig()
    rig.send()
    rig.answer()
    list(rig.fetches.answers())
    rig.parts[A].position = 10
    rig.send()
    request = rig.wire.sent[-1][1]
    assert (request.session_id, request.session_epoch) == (42, 1)
    assert [(t.topic, [p.partition for p in t.partitions]) for t in request.topics] == [("orders", [0])]
    assert rig.fetches.requests["incremental"] == 1


def test_a_failed_fetch_resets_its_session_refreshes_metadata_and_yields_nothing() -> None:
    rig = _Rig()
    rig.send()
    rig.answer()
    list(rig.fetches.answers())
    rig.parts[A].position = 10
    rig.send()
    rig.wire.sent[-1][2].failure(ConnectionError("reset by peer"))
    assert list(rig.fetches.answers()) == []
    assert rig.fetches.resets == {"disconnect": 1} and rig.wire.refreshes == 1 and rig.budget.used == 0
    rig.send()
    assert rig.wire.sent[-1][1].session_epoch == 0, "the next Fetch is full"


def test_an_error_answer_is_counted_as_a_reset_and_yields_an_empty_session() -> None:
    rig = _Rig()
    rig.send()
    rig.answer()
    list(rig.fetches.answers())
    rig.parts[A].position = 5
    rig.send()
    rig.answer(error_code=71)
    ((_, members, _, _),) = list(rig.fetches.answers())
    assert members == {} and rig.fetches.resets == {"INVALID_FETCH_SESSION_EPOCH": 1}


def test_no_fetch_is_sent_when_the_budget_cannot_hold_a_worthwhile_response() -> None:
    rig = _Rig(budget=64 * MB)
    rig.budget.take(64 * MB - 10 * 1024)
    assert rig.send() is True, "held back: freeing memory is worth a nudge"
    assert not rig.wire.sent and rig.budget.used == 64 * MB - 10 * 1024


def test_a_leader_whose_connection_is_not_ready_is_skipped_without_reserving() -> None:
    rig = _Rig()
    rig.wire.not_ready.add(1)
    rig.send()
    assert not rig.wire.sent and rig.budget.used == 0 and not rig.fetches.sessions[1].members


def test_a_leader_of_more_partitions_than_the_park_limit_is_never_parked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leader_fetches, "PARK_LIMIT", 1)
    rig = _Rig()
    rig.send()
    assert rig.wire.sent[-1][1].max_wait_ms == 0


def test_a_held_partition_keeps_the_others_fetches_from_being_parked() -> None:
    rig = _Rig()
    rig.parts[B].queued_bytes = MB  # B's queue is full
    assert rig.send() is True
    request = rig.wire.sent[-1][1]
    assert request.max_wait_ms == 0 and [p.partition for t in request.topics for p in t.partitions] == [0]


def test_a_quiet_leader_is_watched_read_uncommitted_with_the_idle_wait() -> None:
    rig = _Rig(idle_wait_ms=500)
    rig.send()
    rig.answer()
    list(rig.fetches.answers())  # names no partition: the leader is quiet from its session's start
    rig.clock.now += leader_fetches.QUIET_S
    rig.send()
    request = rig.wire.sent[-1][1]
    assert (request.isolation_level, request.max_bytes, request.max_wait_ms) == (0, 1, 500)
    assert rig.fetches.requests["watch"] == 1
    rig.answer()
    ((_, _, _, watch),) = list(rig.fetches.answers())
    assert watch, "its records are not to be taken"


def test_without_a_longer_idle_wait_a_quiet_leader_is_not_watched() -> None:
    rig = _Rig(idle_wait_ms=100)
    rig.send()
    rig.answer()
    list(rig.fetches.answers())
    rig.clock.now += 10 * leader_fetches.QUIET_S
    rig.send()
    assert rig.wire.sent[-1][1].isolation_level == 1 and rig.fetches.requests["watch"] == 0


def test_closing_sends_each_established_session_its_closing_fetch() -> None:
    rig = _Rig()
    rig.send()
    rig.answer()
    list(rig.fetches.answers())
    rig.fetches.close_sessions(timeout_s=0.01)
    request = rig.wire.sent[-1][1]
    assert (request.session_id, request.session_epoch, request.topics) == (42, -1, [])
    assert rig.fetches.sessions == {}
