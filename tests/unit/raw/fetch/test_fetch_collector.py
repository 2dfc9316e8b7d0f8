"""FetchCollector: one partition's part of a Fetch response into its queue. Errors become a
partition gone (offset out of range, a topic created again, a diverged log), a backoff (retriable
and unknown errors) or a task failure; data is queued in offset order with control and aborted
batches as skips, each item charged to the memory budget, or the response's frame charged whole."""

from __future__ import annotations

import uuid
from typing import cast

import pytest

from mirror_sink.core.base.error_codes import KafkaErrorCode
from mirror_sink.core.base.errors import SourceOffsetOutOfRange, SourceTruncated, TaskFailure
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.clients.authorization import AuthorizationFailure
from mirror_sink.raw.fetch.fetch_buffer import PartitionState
from mirror_sink.raw.fetch.fetch_collector import FetchCollector
from mirror_sink.raw.wire.batches import TRANSACTIONAL
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.wire import WireClient
from tests.unit.raw.fetch.fakes import FakeSourceWire, answer, marker, v2_batch

pytestmark = pytest.mark.unit

TP = SourcePartition("orders", 0)


class _Frame(bytearray):
    """A response's frame (a bytearray subclass, so that it can be watched for being freed)."""


def _collector() -> tuple[FetchCollector, FakeSourceWire, MemoryBudget, set[SourcePartition]]:
    wire, budget, gone = FakeSourceWire(), MemoryBudget(1 << 20), set[SourcePartition]()
    return FetchCollector(cast(WireClient, wire), budget, gone), wire, budget, gone


def test_batches_are_queued_in_order_with_their_epochs_and_charged_to_the_budget() -> None:
    collector, _, budget, _ = _collector()
    part = PartitionState(0, 1)
    first, second = v2_batch(0, 2, leader_epoch=5), v2_batch(2, 3, leader_epoch=6)
    assert collector.take(TP, part, answer(bytes(first + second), last_stable_offset=5)) is None
    assert [(i.start, i.next_offset, i.leader_epoch, len(i.batch or b"")) for i in part.queue] == [
        (0, 2, 5, len(first)),
        (2, 5, 6, len(second)),
    ]
    assert part.position == 5 and part.last_epoch == 6 and part.stable_end == 5
    assert budget.used == part.queued_charge == part.queued_bytes == len(first) + len(second)


def test_a_batch_that_starts_before_the_position_is_queued_from_the_position() -> None:
    collector, _, _, _ = _collector()
    part = PartitionState(3, 1)
    collector.take(TP, part, answer(bytes(v2_batch(0, 2) + v2_batch(2, 4))))
    assert [(i.start, i.next_offset) for i in part.queue] == [(3, 6)], "the batch wholly before it is dropped"
    at_end = PartitionState(2, 1)
    collector.take(TP, at_end, answer(bytes(v2_batch(0, 2) + v2_batch(2, 4))))
    assert [(i.start, i.next_offset) for i in at_end.queue] == [(2, 6)], "a batch ending at the position is dropped"


def test_aborted_batches_and_markers_are_queued_as_skips_and_charged_to_the_last_data_item() -> None:
    collector, _, budget, _ = _collector()
    part = PartitionState(0, 1)
    data = v2_batch(0, 2)
    aborted = v2_batch(2, 2, producer=(6, 0, 0), attributes=TRANSACTIONAL)
    abort = marker(6, 4)
    response = bytes(data + aborted + abort)
    collector.take(TP, part, answer(response, aborted=[(6, 2)]))
    assert [(i.batch is not None, i.start, i.next_offset) for i in part.queue] == [
        (True, 0, 2),
        (False, 2, 4),
        (False, 4, 5),
    ]
    assert part.queue[0].extra == len(aborted) + len(abort), "the skipped bytes stay in memory with the data's view"
    assert budget.used == len(response) == part.queued_charge


def test_a_response_read_in_place_is_charged_whole_by_its_frame_until_freed() -> None:
    collector, _, budget, _ = _collector()
    part = PartitionState(0, 1)
    frame = _Frame(v2_batch(0, 2))
    returned = collector.take(TP, part, answer(memoryview(frame)))
    assert returned is frame
    assert part.queue[0].charge == 0 and budget.used == 0, "the views are not charged one by one"
    collector.charge_frame(frame)
    assert budget.used == len(frame)
    del frame, returned
    part.queue.clear()  # the last view goes: reference counting frees the frame at once
    assert budget.used == 0, "the frame's bytes come back once its last view is gone"


def test_offset_out_of_range_marks_the_partition_gone_for_the_task_to_decide() -> None:
    collector, _, _, gone = _collector()
    part = PartitionState(42, 1)
    collector.take(TP, part, answer(error_code=KafkaErrorCode.OFFSET_OUT_OF_RANGE))
    assert isinstance(part.gone, SourceOffsetOutOfRange) and part.gone.offset == 42
    assert gone == {TP} and not part.queue


def test_a_topic_created_again_under_its_name_is_gone_naming_both_ids() -> None:
    collector, wire, _, gone = _collector()
    old, new = uuid.uuid4(), uuid.uuid4()
    wire.topic_ids["orders"] = new
    part = PartitionState(10, 1, topic_id=old)
    collector.take(TP, part, answer(error_code=KafkaErrorCode.UNKNOWN_TOPIC_ID))
    assert isinstance(part.gone, SourceOffsetOutOfRange) and "deleted and created again" in str(part.gone)
    assert gone == {TP}


@pytest.mark.parametrize("code", [KafkaErrorCode.UNKNOWN_TOPIC_ID, KafkaErrorCode.INCONSISTENT_TOPIC_ID])
def test_a_topic_id_not_known_yet_or_deleted_is_asked_again_after_a_backoff(code: int) -> None:
    collector, wire, _, gone = _collector()
    part = PartitionState(10, 1)
    collector.take(TP, part, answer(error_code=code))
    assert part.gone is None and not gone
    assert wire.refreshes == 1 and part.retry_at > 0


def test_a_log_that_diverged_below_the_position_is_a_truncated_source() -> None:
    collector, _, _, gone = _collector()
    part = PartitionState(100, 1, last_epoch=4)
    collector.take(TP, part, answer(bytes(v2_batch(90, 2)), diverging=(4, 80)))
    assert isinstance(part.gone, SourceTruncated) and "80..99" in str(part.gone)
    assert gone == {TP} and not part.queue, "nothing of the diverged log is queued"


def test_a_diverging_epoch_at_or_past_the_position_is_not_a_truncation() -> None:
    collector, _, _, gone = _collector()
    part = PartitionState(100, 1)
    collector.take(TP, part, answer(diverging=(4, 100)))
    assert part.gone is None and not gone


@pytest.mark.parametrize("code", [KafkaErrorCode.NOT_LEADER_OR_FOLLOWER, KafkaErrorCode.UNKNOWN_SERVER_ERROR])
def test_retriable_errors_refresh_metadata_and_back_off_the_partition(code: int) -> None:
    collector, wire, _, _ = _collector()
    part = PartitionState(10, 1)
    collector.take(TP, part, answer(bytes(v2_batch(10)), error_code=code))
    assert wire.refreshes == 1 and part.retry_at > 0 and not part.queue and part.position == 10


def test_a_refused_read_fails_the_task_with_the_authorization_failure() -> None:
    collector, wire, _, _ = _collector()
    wire.denial = AuthorizationFailure("source", "READ", "TOPIC", ["orders"], "User:mirror")
    with pytest.raises(AuthorizationFailure):
        collector.take(TP, PartitionState(0, 1), answer(error_code=KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED))


def test_any_other_partition_error_fails_the_task_naming_it() -> None:
    collector, _, _, _ = _collector()
    with pytest.raises(TaskFailure, match=r"fetching source partition orders-0: .*\(2\)"):
        collector.take(TP, PartitionState(0, 1), answer(error_code=KafkaErrorCode.CORRUPT_MESSAGE))


def test_a_corrupt_batch_fails_the_task_and_is_never_queued() -> None:
    collector, _, _, _ = _collector()
    bad = v2_batch(0, 2)
    bad[-1] ^= 0x01
    part = PartitionState(0, 1)
    with pytest.raises(TaskFailure, match="corrupt batch"):
        collector.take(TP, part, answer(bytes(bad)))
    assert not part.queue


def test_an_answer_without_records_only_moves_the_stable_end() -> None:
    collector, _, budget, _ = _collector()
    part = PartitionState(10, 1)
    collector.take(TP, part, answer(b"", last_stable_offset=10))
    assert part.stable_end == 10 and part.at_stable_end and not part.queue and budget.used == 0
