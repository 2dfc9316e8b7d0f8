"""The raw fetcher's requests and its answers to partition errors (pure logic: a stand-in wire)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from mirror_sink.core.error_codes import KafkaErrorCode
from mirror_sink.core.errors import SourceOffsetOutOfRange, SourceTruncated
from mirror_sink.core.partitions import SourcePartition
from mirror_sink.core.topic_ids import as_text, as_uuid
from mirror_sink.raw.fetcher import RawFetcher
from mirror_sink.raw.memory_budget import MemoryBudget

TP = SourcePartition("orders", 0)
OLD, NEW = uuid.uuid4(), uuid.uuid4()


class _Wire:
    """What the fetcher asks of its connection: versions, metadata (ids, leader epochs)."""

    def __init__(self, version: int = 13, topic_id: uuid.UUID | None = OLD, leader_epoch: int = 7) -> None:
        self.version = version
        self.id = topic_id
        self.epoch = leader_epoch
        self.refreshes = 0

    def negotiate(self, request_class: Any, lowest: int, highest: int) -> int:
        return min(self.version, highest)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.id

    def leader_epoch(self, topic: str, partition: int) -> int:
        return self.epoch

    def refresh_metadata(self) -> None:
        self.refreshes += 1


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


def test_a_v13_fetch_asks_by_the_mirrored_topic_id_with_the_leader_and_last_fetched_epochs() -> None:
    fetcher = _fetcher(_Wire(version=13, leader_epoch=7))
    fetcher.assign({TP: 100}, {"orders": OLD})
    fetcher._parts[TP].last_epoch = 5
    request = fetcher._request([TP], 1 << 20, 100)
    (topic,) = request.topics
    assert topic.topic_id == OLD
    (partition,) = topic.partitions
    assert (partition.fetch_offset, partition.current_leader_epoch, partition.last_fetched_epoch) == (100, 7, 5)


def test_the_first_fetch_after_a_start_or_a_rewind_sends_the_epoch_stored_with_the_offset() -> None:
    fetcher = _fetcher(_Wire(version=13, leader_epoch=7))
    fetcher.assign({TP: 100}, {"orders": OLD}, {TP: 4})
    (topic,) = fetcher._request([TP], 1 << 20, 100).topics
    assert topic.partitions[0].last_fetched_epoch == 4, "a log truncated while the mirror was stopped is reported"
    fetcher._parts[TP].last_epoch = 6
    fetcher.seek({TP: 100}, {TP: 4})
    assert fetcher._request([TP], 1 << 20, 100).topics[0].partitions[0].last_fetched_epoch == 4
    fetcher.seek({TP: 100})
    assert fetcher._request([TP], 1 << 20, 100).topics[0].partitions[0].last_fetched_epoch == -1


def test_a_v12_broker_is_asked_by_name() -> None:
    fetcher = _fetcher(_Wire(version=12))
    fetcher.assign({TP: 100})
    (topic,) = fetcher._request([TP], 1 << 20, 100).topics
    assert topic.topic == "orders"


def test_unknown_topic_id_with_a_new_id_in_the_metadata_is_a_topic_created_again() -> None:
    wire = _Wire(topic_id=NEW)
    fetcher = _fetcher(wire)
    fetcher.assign({TP: 100}, {"orders": OLD})
    fetcher._take_response(TP, fetcher._parts[TP], _answer(KafkaErrorCode.UNKNOWN_TOPIC_ID))
    with pytest.raises(SourceOffsetOutOfRange, match=f"id {as_text(NEW)} now.*id {as_text(OLD)}"):
        fetcher.check_gone()


def test_unknown_topic_id_while_the_metadata_still_knows_the_old_id_is_asked_again() -> None:
    wire = _Wire(topic_id=OLD)
    fetcher = _fetcher(wire)
    fetcher.assign({TP: 100}, {"orders": OLD})
    fetcher._take_response(TP, fetcher._parts[TP], _answer(KafkaErrorCode.UNKNOWN_TOPIC_ID))
    fetcher.check_gone()  # nothing to raise: deleted, maybe not created again (yet)
    assert wire.refreshes == 1 and fetcher._parts[TP].retry_at > 0


def test_a_diverging_epoch_below_the_position_is_a_truncated_source_and_stops_the_partition() -> None:
    fetcher = _fetcher(_Wire())
    fetcher.assign({TP: 100}, {"orders": OLD})
    part = fetcher._parts[TP]
    part.last_epoch = 3
    fetcher._take_response(TP, part, _answer(diverging=(3, 90)))
    with pytest.raises(SourceTruncated, match=r"offsets 90\.\.99 that the source no longer has"):
        fetcher.check_gone()
    fetcher.seek({TP: 100})
    fetcher.check_gone()  # a seek (the task's decision) clears it
    assert part.last_epoch == -1


def test_an_out_of_range_partition_waits_for_the_task_and_the_others_go_on() -> None:
    other = SourcePartition("orders", 1)
    fetcher = _fetcher(_Wire())
    fetcher.assign({TP: 100, other: 5}, {"orders": OLD})
    fetcher._take_response(TP, fetcher._parts[TP], _answer(KafkaErrorCode.OFFSET_OUT_OF_RANGE))
    with pytest.raises(SourceOffsetOutOfRange, match="offset 100"):
        fetcher.check_gone()
    assert fetcher._parts[TP].gone is not None and fetcher._parts[other].gone is None
