"""The raw fetcher's requests and its answers to partition errors (pure logic: a stand-in wire)."""

from __future__ import annotations

import struct
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.future import Future

from mirror_sink.core.base.error_codes import KafkaErrorCode
from mirror_sink.core.base.errors import SourceOffsetOutOfRange, SourceTruncated
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.base.topic_ids import as_text, as_uuid
from mirror_sink.raw.fetch.fetcher import PARK_LIMIT, RawFetcher
from mirror_sink.raw.wire.memory_budget import MemoryBudget

TP = SourcePartition("orders", 0)
OLD, NEW = uuid.uuid4(), uuid.uuid4()


class _Wire:
    """What the fetcher asks of its connection: versions, metadata (leaders, ids, leader epochs), and
    sending: each Fetch is kept with its future, for the test to answer."""

    def __init__(self, version: int = 13, topic_id: uuid.UUID | None = OLD, leader_epoch: int = 7) -> None:
        self.version = version
        self.id = topic_id
        self.epoch = leader_epoch
        self.refreshes = 0
        self.leaders: dict[SourcePartition, int] = {}
        self.requests: list[Any] = []
        self.futures: list[Future] = []

    def leader(self, topic: str, partition: int) -> int:
        return self.leaders.get(SourcePartition(topic, partition), 1)

    def ready(self, node: int) -> bool:
        return True

    def send(self, node: int, request: Any) -> Future:
        self.requests.append(request)
        self.futures.append(Future())
        return self.futures[-1]

    def poll(self, timeout_s: float) -> None:
        pass

    def close(self) -> None:
        pass

    def negotiate(self, request_class: Any, lowest: int, highest: int) -> int:
        return min(self.version, highest)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.id

    def leader_epoch(self, topic: str, partition: int) -> int:
        return self.epoch

    def refresh_metadata(self) -> None:
        self.refreshes += 1

    def add_metadata_listener(self, listener: Any) -> None:
        self.metadata_updated = listener.on_metadata_update


def _fetcher(wire: _Wire) -> RawFetcher:
    return RawFetcher(
        wire,  # type: ignore[arg-type]
        MemoryBudget(1 << 20),
        fetch_max_bytes=1 << 20,
        partition_max_bytes=1 << 20,
        max_wait_ms=100,
    )


def _answer(code: int = 0, diverging: tuple[int, int] = (-1, -1)) -> SimpleNamespace:
    return SimpleNamespace(
        error_code=code,
        diverging_epoch=SimpleNamespace(epoch=diverging[0], end_offset=diverging[1]),
        last_stable_offset=-1,
        records=None,
        aborted_transactions=None,
    )


def test_topic_ids_round_trip_in_kafkas_printed_form() -> None:
    assert as_uuid(as_text(OLD)) == OLD
    assert len(as_text(OLD)) == 22
    with pytest.raises(ValueError):
        as_uuid("AAAA")


def _next_request(fetcher: RawFetcher) -> Any:
    """The Fetch ``fill`` sends now (the previous one answered empty first, so one can be sent)."""
    wire: _Wire = fetcher.wire  # type: ignore[assignment]
    if wire.futures and not wire.futures[-1].is_done:
        wire.futures[-1].success(SimpleNamespace(error_code=0, session_id=0, responses=[]))
        fetcher.collect()
    fetcher.fill()
    return wire.requests[-1]


def test_a_v13_fetch_asks_by_the_mirrored_topic_id_with_the_leader_and_last_fetched_epochs() -> None:
    fetcher = _fetcher(_Wire(version=13, leader_epoch=7))
    fetcher.assign({TP: 100}, {"orders": OLD})
    fetcher._parts[TP].last_epoch = 5
    request = _next_request(fetcher)
    (topic,) = request.topics
    assert topic.topic_id == OLD
    (partition,) = topic.partitions
    assert (partition.fetch_offset, partition.current_leader_epoch, partition.last_fetched_epoch) == (100, 7, 5)


def test_the_first_fetch_after_a_start_or_a_rewind_sends_the_epoch_stored_with_the_offset() -> None:
    fetcher = _fetcher(_Wire(version=13, leader_epoch=7))
    fetcher.assign({TP: 100}, {"orders": OLD}, {TP: 4})
    (topic,) = _next_request(fetcher).topics
    assert topic.partitions[0].last_fetched_epoch == 4, "a log truncated while the mirror was stopped is reported"
    fetcher._parts[TP].last_epoch = 6
    fetcher.seek({TP: 100}, {TP: 4})
    assert _next_request(fetcher).topics[0].partitions[0].last_fetched_epoch == 4
    fetcher.seek({TP: 100})
    assert _next_request(fetcher).topics[0].partitions[0].last_fetched_epoch == -1


def test_a_v12_broker_is_asked_by_name() -> None:
    fetcher = _fetcher(_Wire(version=12))
    fetcher.assign({TP: 100})
    (topic,) = _next_request(fetcher).topics
    assert topic.topic == "orders"


def test_unknown_topic_id_with_a_new_id_in_the_metadata_is_a_topic_created_again() -> None:
    wire = _Wire(topic_id=NEW)
    fetcher = _fetcher(wire)
    fetcher.assign({TP: 100}, {"orders": OLD})
    fetcher._collector.take(TP, fetcher._parts[TP], _answer(KafkaErrorCode.UNKNOWN_TOPIC_ID))
    with pytest.raises(SourceOffsetOutOfRange, match=f"id {as_text(NEW)} now.*id {as_text(OLD)}"):
        fetcher.check_gone()


def test_unknown_topic_id_while_the_metadata_still_knows_the_old_id_is_asked_again() -> None:
    wire = _Wire(topic_id=OLD)
    fetcher = _fetcher(wire)
    fetcher.assign({TP: 100}, {"orders": OLD})
    fetcher._collector.take(TP, fetcher._parts[TP], _answer(KafkaErrorCode.UNKNOWN_TOPIC_ID))
    fetcher.check_gone()  # nothing to raise: deleted, maybe not created again (yet)
    assert wire.refreshes == 1 and fetcher._parts[TP].retry_at > 0


def test_a_diverging_epoch_below_the_position_is_a_truncated_source_and_stops_the_partition() -> None:
    fetcher = _fetcher(_Wire())
    fetcher.assign({TP: 100}, {"orders": OLD})
    part = fetcher._parts[TP]
    part.last_epoch = 3
    fetcher._collector.take(TP, part, _answer(diverging=(3, 90)))
    with pytest.raises(SourceTruncated, match=r"offsets 90\.\.99 that the source no longer has"):
        fetcher.check_gone()
    fetcher.seek({TP: 100})
    fetcher.check_gone()  # a seek (the task's decision) clears it
    assert part.last_epoch == -1


def test_an_out_of_range_partition_waits_for_the_task_and_the_others_go_on() -> None:
    other = SourcePartition("orders", 1)
    fetcher = _fetcher(_Wire())
    fetcher.assign({TP: 100, other: 5}, {"orders": OLD})
    fetcher._collector.take(TP, fetcher._parts[TP], _answer(KafkaErrorCode.OFFSET_OUT_OF_RANGE))
    with pytest.raises(SourceOffsetOutOfRange, match="offset 100"):
        fetcher.check_gone()
    assert fetcher._parts[TP].gone is not None and fetcher._parts[other].gone is None


# -- incremental fetch sessions (KIP-227) ------------------------------------------------------
def _data(partition: int, base_offset: int, count: int = 2, lso: int = -1, epoch: int = 0) -> SimpleNamespace:
    """A partition's answer carrying ``count`` records from ``base_offset`` (leader epoch ``epoch``)."""
    from tests.unit.raw.wire.test_batches import build

    batch = build([(b"k", b"v", [], 1)] * count, 0, base_offset=base_offset)
    struct.pack_into(">i", batch, 12, epoch)  # partitionLeaderEpoch (not covered by the CRC)
    return SimpleNamespace(
        partition_index=partition,
        error_code=0,
        diverging_epoch=SimpleNamespace(epoch=-1, end_offset=-1),
        last_stable_offset=base_offset + count if lso < 0 else lso,
        records=bytes(batch),
        aborted_transactions=None,
    )


def _nothing(partition: int, lso: int) -> SimpleNamespace:
    return SimpleNamespace(**{**vars(_data(partition, 0)), "records": None, "last_stable_offset": lso})


def _reply(fetcher: RawFetcher, *partitions: SimpleNamespace, session_id: int = 9, error: int = 0) -> None:
    """Answer the Fetch in flight (the last one sent) with ``partitions`` of topic orders (by id)."""
    wire: _Wire = fetcher.wire  # type: ignore[assignment]
    topics = [SimpleNamespace(topic_id=OLD, topic="", partitions=list(partitions))] if partitions else []
    wire.futures[-1].success(SimpleNamespace(error_code=error, session_id=session_id, responses=topics))
    fetcher.collect()


def _named(request: Any) -> dict[int, int]:
    """Partition -> fetch offset, of what a Fetch names."""
    return {p.partition: p.fetch_offset for t in request.topics for p in t.partitions}


def _forgotten(request: Any) -> list[int]:
    return sorted(p for t in request.forgotten_topics_data for p in t.partitions)


def _session_fetcher(wire: _Wire | None = None, **kwargs: Any) -> tuple[RawFetcher, _Wire]:
    wire = wire or _Wire()
    fetcher = _fetcher(wire) if not kwargs else RawFetcher(wire, MemoryBudget(1 << 22), **kwargs)  # type: ignore[arg-type]
    fetcher.assign({SourcePartition("orders", p): 0 for p in range(3)}, {"orders": OLD})
    return fetcher, wire


def _meta(request: Any) -> tuple[int, int]:
    return request.session_id, request.session_epoch


def test_a_session_starts_in_full_then_names_only_what_changed_and_an_idle_fetch_names_nothing() -> None:
    fetcher, wire = _session_fetcher()
    fetcher.fill()
    assert _meta(wire.requests[0]) == (0, 0) and _named(wire.requests[0]) == {0: 0, 1: 0, 2: 0}
    _reply(fetcher, _data(0, 0, lso=2), _nothing(1, 0), _nothing(2, 0))
    fetcher.fill()
    assert _meta(wire.requests[1]) == (9, 1)
    assert _named(wire.requests[1]) == {0: 2}, "only the partition that got data: the broker keeps the others"
    assert wire.requests[1].topics[0].partitions[0].last_fetched_epoch == 0
    while fetcher.pop(SourcePartition("orders", 0)):
        pass
    _reply(fetcher)  # nothing new anywhere: the answer names nothing
    assert fetcher.caught_up(), "the last stable offsets of the earlier answers still hold"
    fetcher.fill()
    assert _meta(wire.requests[2]) == (9, 2) and _named(wire.requests[2]) == {} and _forgotten(wire.requests[2]) == []
    assert fetcher.requests == {"full": 1, "incremental": 2, "sessionless": 0, "watch": 0}
    assert fetcher.session_counts() == {"sessions": 1, "partitions": 3}
    fetcher._sessions[1].epoch = 2**31 - 1
    _reply(fetcher)
    fetcher.fill()
    assert _meta(wire.requests[3]) == (9, 1), "the epoch wraps to 1, never to 0 (a new session)"


def test_a_partition_given_up_is_forgotten_and_its_late_data_never_queued() -> None:
    for version in (13, 12):
        fetcher, wire = _session_fetcher(_Wire(version=version))
        gone = SourcePartition("orders", 2)
        fetcher.fill()
        _reply(fetcher, _nothing(0, 0), _nothing(1, 0), _nothing(2, 0))
        fetcher.fill()  # in flight when the partition is given up
        fetcher.unassign([gone])
        fetcher.assign({gone: 50})  # back, elsewhere: the answer in flight is for another epoch
        _reply(fetcher, _data(2, 0))
        assert fetcher.pending(gone) == 0, "data fetched for the previous assignment is never queued"
        fetcher.fill()
        assert _named(wire.requests[-1]) == {2: 50}, "re-sent at its new offset"
        fetcher.unassign([gone])
        _reply(fetcher)
        fetcher.fill()
        assert _forgotten(wire.requests[-1]) == [2]
        (forgotten,) = wire.requests[-1].forgotten_topics_data
        assert (forgotten.topic_id == OLD) if version == 13 else (forgotten.topic == "orders")


def test_a_seek_resends_the_new_offset_and_drops_what_was_in_flight_for_the_old_one() -> None:
    fetcher, wire = _session_fetcher()
    tp = SourcePartition("orders", 1)
    fetcher.fill()
    _reply(fetcher, _nothing(0, 0), _nothing(1, 0), _nothing(2, 0))
    fetcher.fill()
    fetcher.seek({tp: 40}, {tp: 3})
    _reply(fetcher, _data(1, 0))
    assert fetcher.pending(tp) == 0
    fetcher.fill()
    assert _named(wire.requests[-1]) == {1: 40}
    assert wire.requests[-1].topics[0].partitions[0].last_fetched_epoch == 3
    _reply(fetcher, _data(1, 40))
    assert fetcher.pending(tp) == 1


def test_session_errors_and_lost_requests_fall_back_to_a_full_fetch_and_are_counted() -> None:
    fetcher, wire = _session_fetcher()
    fetcher.fill()
    _reply(fetcher, _nothing(0, 0), _nothing(1, 0), _nothing(2, 0))
    fetcher.fill()
    _reply(fetcher, error=KafkaErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id=0)
    fetcher.fill()
    assert _meta(wire.requests[-1]) == (9, 0), "closes the old session as it asks for a new one"
    assert _named(wire.requests[-1]) == {0: 0, 1: 0, 2: 0}
    _reply(fetcher, _nothing(0, 0), session_id=11)
    fetcher.fill()
    _reply(fetcher, error=KafkaErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0)
    fetcher.fill()
    assert _meta(wire.requests[-1]) == (0, 0), "the broker has no such session: start afresh"
    _reply(fetcher, session_id=12)
    fetcher.fill()
    wire.futures[-1].failure(ConnectionError("broker went away"))
    fetcher.collect()
    fetcher.fill()
    assert _meta(wire.requests[-1]) == (12, 0) and len(_named(wire.requests[-1])) == 3
    assert fetcher.resets == {"INVALID_FETCH_SESSION_EPOCH": 1, "FETCH_SESSION_ID_NOT_FOUND": 1, "disconnect": 1}


def test_a_broker_that_creates_no_session_three_times_is_fetched_from_without_one_for_a_while() -> None:
    fetcher, wire = _session_fetcher()
    for _ in range(3):
        fetcher.fill()
        assert _meta(wire.requests[-1]) == (0, 0)
        _reply(fetcher, session_id=0)
    fetcher.fill()
    assert _meta(wire.requests[-1]) == (0, -1) and len(_named(wire.requests[-1])) == 3
    assert fetcher.resets == {"not_created": 1}
    _reply(fetcher, session_id=0)
    fetcher._sessions[1]._sessionless_until = 0  # the cool-down is over
    fetcher.fill()
    assert _meta(wire.requests[-1]) == (0, 0)


def test_a_partition_that_moved_to_another_leader_is_forgotten_by_the_old_one_and_served_once() -> None:
    fetcher, wire = _session_fetcher()
    moved = SourcePartition("orders", 2)
    fetcher.fill()
    _reply(fetcher, _nothing(0, 0), _nothing(1, 0), _nothing(2, 0))
    fetcher.fill()  # leader 1's Fetch in flight, its session holding the partition at 0
    wire.leaders[moved] = 2
    wire.metadata_updated()
    fetcher.fill()
    assert _named(wire.requests[-1]) == {2: 0} and _meta(wire.requests[-1]) == (0, 0), "leader 2's first Fetch"
    wire.futures[-1].success(
        SimpleNamespace(
            error_code=0, session_id=5, responses=[SimpleNamespace(topic_id=OLD, partitions=[_data(2, 0, lso=5)])]
        )
    )
    fetcher.collect()
    assert fetcher.pending(moved) == 1
    wire.futures[-2].success(
        SimpleNamespace(error_code=0, session_id=9, responses=[SimpleNamespace(topic_id=OLD, partitions=[_data(2, 0)])])
    )
    fetcher.collect()
    assert fetcher.pending(moved) == 1, "the old leader's answer for the same offset is dropped"
    fetcher.fill()
    requests = {r.session_id: r for r in wire.requests[-2:]}
    assert _forgotten(requests[9]) == [2] and _named(requests[9]) == {}
    assert _named(requests[5]) == {2: 2}


def test_a_partition_in_error_is_forgotten_until_it_is_fetched_again() -> None:
    fetcher, wire = _session_fetcher()
    fetcher.fill()
    gone = SimpleNamespace(**{**vars(_nothing(1, 0)), "error_code": KafkaErrorCode.OFFSET_OUT_OF_RANGE})
    _reply(fetcher, _nothing(0, 0), gone, _nothing(2, 0))
    fetcher.fill()
    assert _forgotten(wire.requests[-1]) == [1], "else every answer would repeat the error at once"
    fetcher.seek({SourcePartition("orders", 1): 70})  # the task's decision: skip the gap
    _reply(fetcher)
    fetcher.fill()
    assert _named(wire.requests[-1]) == {1: 70}


def test_without_sessions_every_fetch_names_every_partition() -> None:
    wire = _Wire()
    fetcher = RawFetcher(
        wire,  # type: ignore[arg-type]
        MemoryBudget(1 << 22),
        fetch_max_bytes=1 << 20,
        partition_max_bytes=1 << 20,
        max_wait_ms=100,
        sessions=False,
    )
    fetcher.assign({SourcePartition("orders", p): 0 for p in range(3)}, {"orders": OLD})
    for _ in range(2):
        fetcher.fill()
        assert _meta(wire.requests[-1]) == (0, -1) and len(_named(wire.requests[-1])) == 3
        _reply(fetcher, _nothing(0, 0), session_id=0)
    assert fetcher.requests["sessionless"] == 2


def test_closing_the_fetcher_closes_its_sessions_on_the_brokers() -> None:
    fetcher, wire = _session_fetcher()
    fetcher.fill()
    _reply(fetcher, _nothing(0, 0))
    fetcher.close()
    assert _meta(wire.requests[-1]) == (9, -1) and _named(wire.requests[-1]) == {}


class _Clock:
    """The fetcher's monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_an_idle_round_costs_nothing_per_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    """10,000 caught-up partitions: after the first round, fill and collect look at none of them
    (counted, not timed); a metadata update has every one looked at again, once."""
    clock = _Clock()
    monkeypatch.setattr("mirror_sink.raw.fetch.fetcher.time", clock)

    class _CountingWire(_Wire):
        def __init__(self) -> None:
            super().__init__()
            self.lookups = 0

        def leader_epoch(self, topic: str, partition: int) -> int:
            self.lookups += 1
            return super().leader_epoch(topic, partition)

    wire = _CountingWire()
    fetcher = _fetcher(wire)
    tps = [SourcePartition(f"t{i // 100}", i % 100) for i in range(10_000)]
    fetcher.assign(dict.fromkeys(tps, 0), {tp.topic: OLD for tp in tps})
    fetcher.fill()
    assert wire.lookups == 10_000 and sum(len(t.partitions) for t in wire.requests[-1].topics) == 10_000
    _reply(fetcher)
    for _ in range(5):
        clock.now += 0.1  # a leader of more than PARK_LIMIT partitions is asked once per max wait
        fetcher.fill()
        assert _named(wire.requests[-1]) == {} and _forgotten(wire.requests[-1]) == []
        _reply(fetcher)
    assert wire.lookups == 10_000, "nothing changed: no partition was looked at"
    wire.metadata_updated()
    clock.now += 0.1
    fetcher.fill()
    assert wire.lookups == 20_000 and _named(wire.requests[-1]) == {}, "same leaders and epochs: nothing to send"


def test_an_empty_answer_wakes_nobody_and_the_next_fetch_is_not_parked_longer() -> None:
    """A read_committed Fetch parked longer is not answered when a transaction's marker makes data
    readable, only at its max wait: parking quiet leaders 500 ms doubled p99 at 2,000 records/s."""
    fetcher, wire = _session_fetcher()
    fetcher.fill()
    wire.futures[-1].success(
        SimpleNamespace(error_code=0, session_id=9, responses=[SimpleNamespace(topic_id=OLD, partitions=[_data(0, 0)])])
    )
    assert fetcher.collect(), "data: news for the task"
    fetcher.fill()
    wire.futures[-1].success(SimpleNamespace(error_code=0, session_id=9, responses=[]))
    assert not fetcher.collect(), "an empty answer wakes nobody"
    fetcher.fill()
    assert wire.requests[-1].max_wait_ms == 100 and _named(wire.requests[-1]) == {}


def test_a_leader_of_many_partitions_is_never_parked_and_is_asked_once_per_max_wait_while_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A parked Fetch stays in the broker's purgatory under each of its session's partitions until a
    purge (a source broker ran out of heap at 10,000): above PARK_LIMIT the fetcher waits instead."""
    clock = _Clock()
    monkeypatch.setattr("mirror_sink.raw.fetch.fetcher.time", clock)
    wire = _Wire()
    fetcher = _fetcher(wire)
    fetcher.assign({SourcePartition("orders", p): 0 for p in range(PARK_LIMIT + 1)}, {"orders": OLD})
    fetcher.fill()
    assert wire.requests[-1].max_wait_ms == 0, "answered at once: the broker keeps nothing"
    _reply(fetcher)  # quiet: no records anywhere
    clock.now += 0.05
    fetcher.fill()
    assert len(wire.requests) == 1, "within the max wait of a quiet answer: not asked again"
    clock.now += 0.06
    fetcher.fill()
    assert len(wire.requests) == 2 and wire.requests[-1].max_wait_ms == 0
    _reply(fetcher, _data(0, 0))  # records: asked again at once, for the next ones
    fetcher.fill()
    assert len(wire.requests) == 3 and _named(wire.requests[-1]) == {0: 2}


def _watching(monkeypatch: pytest.MonkeyPatch, idle_wait_ms: int = 500) -> tuple[RawFetcher, _Wire, _Clock]:
    """A fetcher of 3 partitions whose leader has answered once with data, then fallen quiet."""
    clock = _Clock()
    monkeypatch.setattr("mirror_sink.raw.fetch.fetcher.time", clock)
    fetcher, wire = _session_fetcher(
        fetch_max_bytes=1 << 20, partition_max_bytes=1 << 20, max_wait_ms=100, idle_wait_ms=idle_wait_ms
    )
    fetcher.fill()
    _reply(fetcher, _data(0, 0), _nothing(1, 0), _nothing(2, 0))
    while fetcher.pop(SourcePartition("orders", 0)):
        pass
    fetcher.fill()
    _reply(fetcher)  # nothing new anywhere
    return fetcher, wire, clock


def test_a_leader_quiet_for_a_second_is_watched_read_uncommitted_and_its_records_are_never_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ten short-wait Fetches a second per silent leader were most of an idle mirror's CPU; a
    read_committed Fetch parked longer would be answered only at its max wait, so the long wait is
    a read_uncommitted watch, answered at the next append, whose records may be uncommitted."""
    fetcher, wire, clock = _watching(monkeypatch)
    clock.now += 0.5
    fetcher.fill()
    request = wire.requests[-1]
    assert (request.isolation_level, request.max_wait_ms) == (1, 100), "not quiet for a second yet"
    _reply(fetcher)
    clock.now += 0.6
    fetcher.fill()
    watch = wire.requests[-1]
    assert (watch.isolation_level, watch.max_wait_ms, watch.max_bytes) == (0, 500, 1)
    assert _named(watch) == {} and fetcher.requests["watch"] == 1
    # A transaction's first records land: the watch answers them, and they are not taken.
    _reply(fetcher, _data(1, 0, lso=0))
    one = SourcePartition("orders", 1)
    assert not fetcher.pending(one) and fetcher._parts[one].position == 0
    fetcher.fill()
    after = wire.requests[-1]
    assert (after.isolation_level, after.max_wait_ms, after.max_bytes) == (1, 100, 1 << 20), "read_committed again"
    assert _named(after) == {}, "the broker's session still holds partition 1 at offset 0"
    _reply(fetcher, _data(1, 0))  # committed: taken now
    assert fetcher.pending(one) == 1


def test_a_watch_still_reports_a_partitions_error(monkeypatch: pytest.MonkeyPatch) -> None:
    fetcher, wire, clock = _watching(monkeypatch)
    clock.now += 1.1
    fetcher.fill()
    assert wire.requests[-1].isolation_level == 0
    gone = SimpleNamespace(**{**vars(_data(2, 0)), "error_code": KafkaErrorCode.OFFSET_OUT_OF_RANGE})
    _reply(fetcher, gone)
    with pytest.raises(SourceOffsetOutOfRange):
        fetcher.check_gone()


def test_no_watch_when_the_idle_wait_is_not_longer_or_the_session_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    fetcher, wire, clock = _watching(monkeypatch, idle_wait_ms=100)
    clock.now += 5
    fetcher.fill()
    assert wire.requests[-1].isolation_level == 1 and fetcher.requests["watch"] == 0, "fetch.idle.wait.max.ms off"
    fetcher, wire, clock = _watching(monkeypatch)
    clock.now += 5
    fetcher.seek({SourcePartition("orders", 2): 0})
    fetcher.fill()
    request = wire.requests[-1]
    assert request.isolation_level == 1 and _named(request) == {2: 0}, "news for the broker: read it committed"
