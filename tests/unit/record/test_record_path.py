"""Record mode holds what lies past the current cut and never reports a position past a record it has
not copied (mirror_sink.record.record_path, ``hold_at``): the cut's bookkeeping, with stand-ins for
librdkafka's consumer and producer calls (no broker behaviour is imitated: offsets are given)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.record.committers import DeliveryTracker
from mirror_sink.record.record_path import RecordPath

pytestmark = pytest.mark.unit

A, B = SourcePartition("a", 0), SourcePartition("b", 0)


class _Msg:
    def __init__(self, tp: SourcePartition, offset: int) -> None:
        self._tp, self._offset = tp, offset

    def topic(self) -> str:
        return self._tp.topic

    def partition(self) -> int:
        return self._tp.partition

    def offset(self) -> int:
        return self._offset

    def error(self) -> None:
        return None

    def key(self) -> bytes:
        return b"k"

    def value(self) -> bytes:
        return b"v%d" % self._offset

    def headers(self) -> None:
        return None

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_000 + self._offset)


class _Consumer:
    """Hands out the records queued in ``batches``, one list per consume; the position after the last
    record handed out per partition."""

    def __init__(self) -> None:
        self.batches: list[list[_Msg]] = []
        self.handed: dict[SourcePartition, int] = {}
        self.paused: set[tuple[str, int]] = set()

    def consume(self, num: int, timeout: float) -> list[_Msg]:
        batch = self.batches.pop(0) if self.batches else []
        for m in batch:
            self.handed[SourcePartition(m.topic(), m.partition())] = m.offset() + 1
        return batch

    def position(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self.handed.get(SourcePartition(tp.topic, tp.partition), -1001))
            for tp in tps
        ]

    def incremental_unassign(self, tps: list[TopicPartition]) -> None:
        pass

    def incremental_assign(self, tps: list[TopicPartition]) -> None:
        pass

    def seek(self, tp: TopicPartition) -> None:
        pass

    def pause(self, tps: list[TopicPartition]) -> None:
        self.paused.update((tp.topic, tp.partition) for tp in tps)

    def resume(self, tps: list[TopicPartition]) -> None:
        self.paused.difference_update((tp.topic, tp.partition) for tp in tps)


class _Producer:
    def __init__(self) -> None:
        self.produced: list[tuple[str, bytes]] = []

    def produce(self, topic: str, value: bytes, key: bytes, **kwargs: Any) -> None:
        self.produced.append((topic, value))

    def poll(self, timeout: float = 0) -> int:
        return 0


def _path(hold_bytes: int = 1 << 20) -> tuple[RecordPath, _Consumer, _Producer]:
    consumer, producer = _Consumer(), _Producer()
    path = RecordPath(
        consumer,  # type: ignore[arg-type]
        producer=producer,  # type: ignore[arg-type]
        deliveries=DeliveryTracker(track_offsets=False),
        transactional=False,
        timeout_s=5.0,
        log=logging.getLogger("test"),
        hold_bytes=hold_bytes,
    )
    path._target_topic = {"a": "t.a", "b": "t.b"}
    path.committer.begin = lambda: None  # type: ignore[method-assign]
    path.committer.enlist = lambda *a: None  # type: ignore[method-assign]
    return path, consumer, producer


def test_records_past_the_cut_wait_and_the_position_stops_at_the_cut() -> None:
    path, consumer, producer = _path()
    path.hold_at({A: 3, B: 2})
    consumer.batches = [[_Msg(A, 1), _Msg(A, 2), _Msg(A, 3), _Msg(B, 1), _Msg(A, 4), _Msg(B, 2)]]
    path.copy(0)
    assert [v for _, v in producer.produced] == [b"v1", b"v2", b"v1"]
    assert path.holding()
    # librdkafka's position is past what was held; the path's stops at the cut.
    assert path.positions({A: 0, B: 0}) == {A: 3, B: 2}
    assert not consumer.paused, "a pause would drop librdkafka's prefetch: only past the memory bound"


def test_a_new_cut_releases_the_held_records_in_order_and_positions_wait_for_their_copy() -> None:
    path, consumer, producer = _path()
    path.hold_at({A: 2})
    consumer.batches = [[_Msg(A, 1), _Msg(A, 2), _Msg(A, 3)], [_Msg(A, 4), _Msg(A, 5)]]
    path.copy(0)
    path.hold_at({A: 5})
    # Released but not copied yet: the position must not pass them (a commit now would lose them).
    assert path.positions({A: 0}) == {A: 2}
    path.copy(0)
    assert [v for _, v in producer.produced] == [b"v1", b"v2", b"v3", b"v4"]
    assert path.positions({A: 0}) == {A: 5} and path.holding()


def test_past_the_memory_bound_the_holding_partitions_are_paused_until_released() -> None:
    path, consumer, _ = _path(hold_bytes=100)
    path.hold_at({A: 1})
    consumer.batches = [[_Msg(A, n) for n in range(1, 5)]]
    path.copy(0)
    assert consumer.paused == {("a", 0)}
    path.hold_at({A: 10})
    assert not consumer.paused


def test_a_rewind_drops_what_was_held() -> None:
    path, consumer, _ = _path(hold_bytes=100)
    path.hold_at({A: 1})
    consumer.batches = [[_Msg(A, n) for n in range(1, 5)]]
    path.copy(0)
    path.rewind({A: 1})
    assert not path.holding() and not consumer.paused


def test_partitions_lost_and_assigned_again_copy_nothing_kept_from_before() -> None:
    # A lost session (the group took the partitions away) and the same partitions back: they are read
    # again from their committed offsets. Held or released records of before would be copied out of
    # order, or twice, and in the cycle at CI's stop they were: "records produced but no source
    # offset advanced".
    path, consumer, producer = _path(hold_bytes=100)
    path.hold_at({A: 2, B: 1})
    consumer.batches = [[_Msg(A, 1), _Msg(A, 2), _Msg(A, 3), _Msg(B, 1), _Msg(B, 2)]]
    path.copy(0)
    path.hold_at({A: 3, B: 1})  # A's record 2 released, not copied yet; B's still held
    assert consumer.paused, "past the memory bound"
    produced = len(producer.produced)
    path.unassign([A, B])
    assert not path.holding() and not consumer.paused
    path.hold_at({A: 1, B: 1})  # assigned again, at the committed offsets
    consumer.batches = [[_Msg(A, 1), _Msg(B, 1)]]
    path.copy(0)
    assert producer.produced[produced:] == [], "nothing below the limits came again, nothing of before"
    assert path.positions({A: 1, B: 1}) == {A: 1, B: 1}
