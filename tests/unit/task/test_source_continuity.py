"""Stored shadow offsets checked against the source: every gap named, none crossed (pure logic)."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Uuid

from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.formats.commit_metadata import (
    commit_metadata,
    kafka_uuid,
    stored_at_cut,
    stored_leader_epoch,
    stored_topic_id,
)
from mirror_sink.core.formats.skipped_ranges import Recreation, SkippedRange
from mirror_sink.task.source_continuity import SourceDiscontinuity, StoredOffset, check_continuity

OLD, NEW = "AAAAAAdbzRUAAAAAOt5osQ", "BBBBBAdbzRUAAAAAOt5osQ"


def test_the_topic_id_round_trips_through_the_commit_metadata() -> None:
    assert stored_topic_id(commit_metadata(OLD)) == OLD
    assert commit_metadata(None) == ""
    assert stored_topic_id("") is None
    assert stored_topic_id("written by another tool") is None


def test_the_leader_epoch_comes_first_in_the_metadata_so_older_readers_read_no_id_not_a_wrong_one() -> None:
    both = commit_metadata(OLD, 7)
    assert both == f"source-leader-epoch=7;source-topic-id={OLD}"
    assert (stored_topic_id(both), stored_leader_epoch(both)) == (OLD, 7)
    assert not both.startswith("source-topic-id="), "the reader before epochs took all after the prefix as the id"
    assert stored_leader_epoch(commit_metadata(OLD)) is None and stored_leader_epoch(commit_metadata(OLD, -1)) is None
    assert commit_metadata(None, 3) == "source-leader-epoch=3"
    assert stored_topic_id(f"source-topic-id={OLD}\0") == OLD, "librdkafka's trailing NUL"


def test_a_position_committed_at_a_cut_of_the_source_transactions_says_so_and_hides_nothing_else() -> None:
    marked = commit_metadata(OLD, 7, at_cut=True)
    assert marked == f"source-transactions=whole;source-leader-epoch=7;source-topic-id={OLD}"
    assert stored_at_cut(marked) and (stored_topic_id(marked), stored_leader_epoch(marked)) == (OLD, 7)
    assert not commit_metadata(OLD, None, at_cut=True).startswith("source-topic-id="), "the oldest readers' prefix"
    assert not stored_at_cut(commit_metadata(OLD, 7)) and not stored_at_cut("") and not stored_at_cut("whole")


def test_offsets_the_source_still_has_pass() -> None:
    orders = [SourcePartition("orders", p) for p in range(2)]
    check_continuity(
        {orders[0]: StoredOffset(10, OLD), orders[1]: StoredOffset(0, None)},
        {orders[0]: (0, 10), orders[1]: (0, 0)},
        {"orders": OLD},
        "connect-m",
    )


def test_records_deleted_before_they_were_mirrored_are_named_for_every_partition() -> None:
    a, b, c = SourcePartition("orders", 0), SourcePartition("orders", 1), SourcePartition("pay", 0)
    with pytest.raises(SourceDiscontinuity) as caught:
        check_continuity(
            {a: StoredOffset(100, OLD), b: StoredOffset(5, OLD), c: StoredOffset(7, None)},
            {a: (250, 400), b: (0, 9), c: (40, 41)},
            {"orders": OLD, "pay": NEW},
            "connect-m",
        )
    message = str(caught.value)
    assert "orders-0: first missing 100, first still there 250 (150 records)" in message
    assert "pay-0: first missing 7, first still there 40 (33 records)" in message
    assert "orders-1" not in message
    assert "Nothing was skipped" in message


def test_a_topic_created_again_is_known_by_its_id_even_when_the_offsets_would_fit() -> None:
    # The new topic has grown past the stored offset: offsets alone would let the mirror go on and
    # never copy the new topic's first 2,102 records.
    tp = SourcePartition("orders", 0)
    with pytest.raises(SourceDiscontinuity) as caught:
        check_continuity({tp: StoredOffset(2102, OLD)}, {tp: (0, 4836)}, {"orders": NEW}, "connect-m")
    message = str(caught.value)
    assert "source topic orders was deleted and created again" in message
    assert f"topic id {OLD}" in message and f"now has id {NEW}" in message
    assert "orders-0 at 2102 (the topic now holds 0..4836)" in message
    assert "connect-m" in message


def test_a_source_that_ends_before_the_stored_offset_is_named_without_ids() -> None:
    tp = SourcePartition("orders", 3)
    with pytest.raises(SourceDiscontinuity, match=r"orders-3: mirrored up to 2102, the source ends at 500"):
        check_continuity({tp: StoredOffset(2102, None)}, {tp: (0, 500)}, {"orders": NEW}, "connect-m")


def test_topic_ids_are_written_as_kafka_prints_them() -> None:
    # Kafka's Uuid.toString: URL-safe base64 without padding (kafka-topics --describe shows the same).
    assert kafka_uuid(Uuid(-1, -5)) == "____________________-w"
    assert kafka_uuid(Uuid(123456789, 987654321)) == "AAAAAAdbzRUAAAAAOt5osQ"


def test_with_skip_deleted_records_come_back_as_ranges_instead_of_a_failure() -> None:
    a, b = SourcePartition("orders", 0), SourcePartition("orders", 1)
    skipped = check_continuity(
        {a: StoredOffset(100, OLD), b: StoredOffset(5, OLD)},
        {a: (250, 400), b: (0, 9)},
        {"orders": OLD},
        "connect-m",
        skip_deleted=True,
    )
    assert skipped.skipped == [SkippedRange(a, OLD, 100, 250)] and skipped.recreated == []
    assert skipped.skipped[0].describe() == "orders-0 offsets 100..249 (150 offsets)"
    assert skipped.start(a, 100) == 250 and skipped.start(b, 5) == 5


def test_skip_never_steps_over_a_topic_created_again() -> None:
    a, b = SourcePartition("orders", 0), SourcePartition("pay", 0)
    with pytest.raises(SourceDiscontinuity, match="deleted and created again"):
        check_continuity(
            {a: StoredOffset(100, OLD), b: StoredOffset(1, NEW)},
            {a: (0, 4000), b: (50, 60)},
            {"orders": NEW, "pay": NEW},
            "connect-m",
            skip_deleted=True,
        )


def test_the_audit_record_has_one_key_per_gap_and_the_whole_story_in_its_value() -> None:
    gap = SkippedRange(SourcePartition("orders", 3), OLD, 100, 150)
    other = SkippedRange(SourcePartition("orders", 3), OLD, 400, 420)
    assert gap.audit_key() != other.audit_key(), "compaction must keep both gaps"
    value = json.loads(
        gap.audit_value(source_alias="us-east", target=TargetPartition("us-east.orders", 3), connector="m", task="m-0")
    )
    assert value["first_missing"] == 100 and value["first_present"] == 150 and value["offsets"] == 50
    assert value["topic_id"] == OLD and value["target_topic"] == "us-east.orders"
    assert value["source_cluster"] == "us-east"
    assert json.loads(gap.audit_key()) == {"topic": "orders", "partition": 3, "topic_id": OLD, "first_missing": 100}


def test_continue_goes_on_with_a_recreated_topic_from_its_offset_0_grown_or_smaller() -> None:
    grown, smaller, other = SourcePartition("orders", 0), SourcePartition("orders", 1), SourcePartition("pay", 0)
    crossings = check_continuity(
        {grown: StoredOffset(2102, OLD), smaller: StoredOffset(2102, OLD), other: StoredOffset(7, OLD)},
        {grown: (0, 4836), smaller: (0, 20), other: (0, 9)},
        {"orders": NEW, "pay": OLD},
        "connect-m",
        continue_recreated=True,
    )
    assert crossings.recreated == [Recreation(grown, OLD, NEW, 2102), Recreation(smaller, OLD, NEW, 2102)]
    assert crossings.skipped == []
    assert [crossings.start(tp, 2102) for tp in (grown, smaller)] == [0, 0] and crossings.start(other, 7) == 7
    assert "continuing the new topic of orders-0 (topic id " in crossings.describe()


def test_continue_checks_the_new_topic_for_deleted_records_like_any_partition() -> None:
    tp = SourcePartition("orders", 0)
    args = ({tp: StoredOffset(2102, OLD)}, {tp: (40, 300)}, {"orders": NEW}, "connect-m")
    with pytest.raises(SourceDiscontinuity, match=r"created again, topic id .*: first missing 0, first still there 40"):
        check_continuity(*args, continue_recreated=True)
    crossings = check_continuity(*args, continue_recreated=True, skip_deleted=True)
    assert crossings.recreated == [Recreation(tp, OLD, NEW, 2102)]
    assert crossings.skipped == [SkippedRange(tp, NEW, 0, 40)] and crossings.start(tp, 2102) == 40


def test_without_continue_the_failure_names_the_policy_that_would_go_on() -> None:
    tp = SourcePartition("orders", 0)
    with pytest.raises(SourceDiscontinuity, match=r"topic\.recreation\.policy=continue mirrors them from its start"):
        check_continuity({tp: StoredOffset(2102, OLD)}, {tp: (0, 4836)}, {"orders": NEW}, "connect-m")


def test_the_recreation_audit_record_names_both_ids_and_where_the_old_topic_ended() -> None:
    event = Recreation(SourcePartition("orders", 3), OLD, NEW, 2102)
    again = Recreation(SourcePartition("orders", 3), NEW, "third", 50)
    assert event.audit_key() != again.audit_key(), "compaction must keep every recreation"
    value = json.loads(
        event.audit_value(source_alias="us-east", target=TargetPartition("us-east.orders", 3), connector="m", task="t")
    )
    assert value["previous_topic_id"] == OLD and value["topic_id"] == NEW
    assert value["previous_mirrored_to"] == 2102 and value["continued_from"] == 0
    assert value["policy"] == "topic.recreation.policy=continue" and value["target_partition"] == 3
