"""Ownership: which source partitions a task reads, decided by the shadow group, and from where.

The member and the start-offset resolver are fakes (``tests/unit/task/fakes.py``); the continuity
check the resolver runs on a fetch's out-of-range is the real one, under the config's policies.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from mirror_sink.core.base.errors import RecoverableTaskFailure, SourceOffsetOutOfRange, TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.clients.authorization import AuthorizationFailure
from mirror_sink.core.formats.commit_metadata import stored_at_cut, stored_leader_epoch, stored_topic_id
from mirror_sink.core.formats.skipped_ranges import Recreation, SkippedRange
from mirror_sink.task.ownership import Ownership
from mirror_sink.task.source_continuity import SourceDiscontinuity
from mirror_sink.topics.source_discovery import TopicMapping
from tests.unit.task.fakes import FakeFence, FakeResolver, FakeRun, Held, config, mapping

pytestmark = pytest.mark.unit

A, B, P = SourcePartition("orders", 0), SourcePartition("orders", 1), SourcePartition("payments", 0)
TA, TB, TP = (
    TargetPartition("source.orders", 0),
    TargetPartition("source.orders", 1),
    TargetPartition("source.payments", 0),
)
#: A target partition with no source partition behind it (the target topic has more partitions).
TA2 = TargetPartition("source.orders", 2)


class Scene:
    """An Ownership over the fakes: the shadow group holds A@10 (leader epoch 4) and B@20 of topic
    id ``id-1``, and the source has A and B from 0 up to 30."""

    def __init__(self, mappings: dict[str, TopicMapping] | None = None, **overrides: str) -> None:
        cfg = config(**overrides)
        self.run = FakeRun(cfg)
        default = {"source.orders": mapping("orders", 2, 1_000_000)}
        self.own = Ownership(self.run, default if mappings is None else mappings)
        self.resolver = FakeResolver(cfg)
        self.resolver.held = {A: Held(10, leader_epoch=4), B: Held(20)}
        self.resolver.ids = {"orders": "id-1", "payments": "id-p"}
        self.resolver.marks = {A: (0, 30), B: (0, 30)}
        self.own.resolver = self.resolver
        self.fence = FakeFence()
        self.own.fence = self.fence
        self.member = self.run.fake_member
        self.path = self.run.fake_path

    def assigned(self, *targets: TargetPartition) -> Ownership:
        """Subscribed, then assigned ``targets`` by the next poll."""
        self.own.subscribe()
        self.member.assign_next(targets)
        self.own.serve()
        return self.own


# -- membership -----------------------------------------------------------------------------------
def test_without_topics_nothing_is_joined_and_with_topics_their_target_names_are() -> None:
    empty = Scene(mappings={})
    empty.own.subscribe()
    assert empty.member.subscriptions == []
    scene = Scene(mappings={"source.payments": mapping("payments", 1), "source.orders": mapping("orders", 2)})
    scene.own.subscribe()
    assert scene.member.subscriptions == [["source.orders", "source.payments"]]


def test_the_target_topics_max_message_bytes_reach_the_path_where_the_mappings_know_them() -> None:
    scene = Scene(
        mappings={"source.orders": mapping("orders", 2, 1_000_000), "source.payments": mapping("payments", 1)}
    )
    assert scene.path.batch_limits == [{"source.orders": 1_000_000}]


def test_an_assignment_reads_the_source_partitions_behind_the_owned_targets_from_their_start_offsets() -> None:
    scene = Scene()
    own = scene.assigned(TA, TB, TA2)
    assert own.reading == {A: TA, B: TB}, "target partition 2 has no source partition: nothing to read"
    assert {(tp.topic, tp.partition) for tp in scene.member.paused} == {TA, TB, TA2}, "the member never fetches"
    assert scene.path.assigned == [({A: 10, B: 20}, {A: 4})]
    assert scene.path.targets == {A: TA, B: TB} and scene.path.topic_ids == {"orders": "id-1"}
    assert dict(own.state.committed) == {A: 10, B: 20} and dict(own.state.leader_epochs) == {A: 4}
    assert not own.state.to_save
    assert scene.fence.asked == [{TA, TB, TA2}], "transactions left open on the owned partitions are fenced"
    assert own.rebalances == 1


def test_a_start_the_fallback_chose_is_for_the_next_commit_to_save() -> None:
    scene = Scene()
    scene.resolver.held[B] = Held(None, offset_fallback=7)
    own = scene.assigned(TA, TB)
    assert own.state.committed[B] == 7 and own.state.unsaved(B) and not own.state.unsaved(A)
    assert own.state.to_save


def test_breaks_found_where_reading_starts_are_gone_past_and_left_for_the_next_commit_to_record() -> None:
    scene = Scene(offset_gap_policy="skip", topic_recreation_policy="continue")
    gap = SkippedRange(A, "id-1", 10, 50)
    event = Recreation(B, "id-0", "id-1", 20)
    scene.resolver.held = {A: Held(10, skipped=gap), B: Held(20, recreated=event)}
    own = scene.assigned(TA, TB)
    assert dict(own.state.committed) == {A: 50, B: 0}
    assert own.state.unrecorded.skipped == {A: gap} and own.state.unrecorded.recreated == {B: event}


@pytest.mark.parametrize("how", ["revoked", "lost"])
def test_partitions_given_up_are_no_longer_read_and_take_their_bookkeeping_with_them(how: str) -> None:
    scene = Scene()
    own = scene.assigned(TA, TB)
    scene.member.revoke_next() if how == "revoked" else scene.member.lose_next()
    own.serve()
    assert own.reading == {} and own.owned == set()
    assert sorted(scene.path.unassigned) == [A, B]
    assert dict(own.state.committed) == {}
    assert scene.member.assignment == []


def test_a_cycle_still_open_when_partitions_are_given_up_is_aborted() -> None:
    scene = Scene()
    own = scene.assigned(TA, TB)
    scene.run.committer.begin()
    scene.run.committer.enlist([TA])
    scene.member.revoke_next()
    own.poll(0)
    assert scene.path.committer.aborts == 1 and not scene.run.committer.open


def test_a_closing_run_ignores_the_revocation_its_close_serves() -> None:
    scene = Scene()
    own = scene.assigned(TA, TB)
    scene.run.closing = True
    scene.member.revoke_next()
    own.poll(0)
    assert own.reading == {A: TA, B: TB} and scene.path.unassigned == []


def test_a_callbacks_failure_is_raised_from_poll_once() -> None:
    scene = Scene()
    failure = RecoverableTaskFailure("cannot read the offsets of source partition orders-0")
    scene.resolver.failure = failure
    scene.own.subscribe()
    scene.member.assign_next([TA])
    with pytest.raises(RecoverableTaskFailure) as raised:
        scene.own.poll(0)
    assert raised.value is failure
    scene.own.poll(0)  # raised once: the next poll has nothing to say


@pytest.mark.parametrize(
    ("error", "raised"),
    [
        (KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED), AuthorizationFailure),
        (KafkaError(KafkaError.UNKNOWN_MEMBER_ID, "fatal", fatal=True), RecoverableTaskFailure),
        (KafkaError(KafkaError._FATAL), RecoverableTaskFailure),  # a static member fenced by its instance id
        (KafkaError(KafkaError._TRANSPORT), None),  # said, and the member goes on
    ],
    ids=["not-authorized", "fatal", "fenced-instance", "transient"],
)
def test_the_members_errors_fail_the_task_renew_its_clients_or_are_only_said(
    error: KafkaError, raised: type[TaskFailure] | None
) -> None:
    scene = Scene()
    scene.member.errors.append(error)
    if raised is None:
        scene.own.poll(0)
        return
    with pytest.raises(raised) as info:
        scene.own.poll(0)
    assert type(info.value) is raised, "not authorized is fatal, never retried as recoverable"


def test_serving_notes_the_generation_that_owns_the_next_cycle() -> None:
    scene = Scene()
    own = scene.assigned(TA)
    assert own.metadata is not None and own.metadata.generation == 2
    scene.member.generation = 3  # a rebalance in librdkafka's thread, mid-cycle
    assert own.metadata.generation == 2, "only serving takes the generation again"
    own.serve()
    assert own.metadata.generation == 3


# -- topic changes --------------------------------------------------------------------------------
def test_mappings_that_did_not_change_change_nothing() -> None:
    scene = Scene()
    own = scene.assigned(TA, TB)
    own.update({"source.orders": mapping("orders", 2, 1_000_000)})
    assert scene.member.subscriptions == [["source.orders"]] and len(scene.path.assigned) == 1
    assert len(scene.path.batch_limits) == 1


def test_a_new_topic_is_joined_and_a_source_grown_by_a_partition_is_read_without_joining_again() -> None:
    scene = Scene(mappings={"source.orders": mapping("orders", 1)})
    own = scene.assigned(TA, TB)
    assert own.reading == {A: TA}, "the source has one partition yet"
    own.update({"source.orders": mapping("orders", 2)})
    assert own.reading == {A: TA, B: TB} and scene.member.subscriptions == [["source.orders"]]
    own.update({"source.orders": mapping("orders", 2), "source.payments": mapping("payments", 1)})
    assert scene.member.subscriptions[-1] == ["source.orders", "source.payments"]


def test_a_topic_no_longer_mapped_is_no_longer_read() -> None:
    scene = Scene(mappings={"source.orders": mapping("orders", 2), "source.payments": mapping("payments", 1)})
    scene.resolver.held[P] = Held(5)
    own = scene.assigned(TA, TB, TP)
    assert set(own.reading) == {A, B, P}
    own.update({"source.payments": mapping("payments", 1)})
    assert own.reading == {P: TP} and sorted(scene.path.unassigned) == [A, B]
    assert dict(own.state.committed) == {P: 5}


# -- a fetch's offset gone, and topics created again ---------------------------------------------
def test_an_offset_out_of_range_with_nothing_wrong_on_the_source_is_raised_as_it_is() -> None:
    own = Scene().assigned(TA, TB)
    exc = SourceOffsetOutOfRange("orders", 0, 10, "OFFSET_OUT_OF_RANGE")
    with pytest.raises(SourceOffsetOutOfRange) as raised:
        own.out_of_range(exc)
    assert raised.value is exc


def test_records_deleted_before_they_were_mirrored_fail_the_task_without_offset_gap_policy_skip() -> None:
    scene = Scene()
    own = scene.assigned(TA, TB)
    scene.resolver.marks[A] = (50, 60)
    with pytest.raises(SourceDiscontinuity, match="orders-0: first missing 10, first still there 50"):
        own.out_of_range(SourceOffsetOutOfRange("orders", 0, 10, "gone"))
    assert own.state.committed[A] == 10


def test_with_offset_gap_policy_skip_the_partition_goes_on_from_the_first_offset_still_there() -> None:
    scene = Scene(offset_gap_policy="skip")
    own = scene.assigned(TA, TB)
    scene.resolver.marks[A] = (50, 60)
    crossings = own.out_of_range(SourceOffsetOutOfRange("orders", 0, 10, "gone"))
    gap = SkippedRange(A, "id-1", 10, 50)
    assert crossings.skipped == [gap] and crossings.recreated == []
    assert own.state.committed[A] == 50 and A not in own.state.leader_epochs
    assert own.state.unrecorded.skipped == {A: gap}
    assert len(scene.path.assigned) == 1, "the rewind after the aborted cycle reads from there"


def test_with_topic_recreation_policy_continue_a_recreated_topic_is_read_by_its_new_id_from_its_start() -> None:
    scene = Scene(topic_recreation_policy="continue")
    own = scene.assigned(TA, TB)
    scene.resolver.ids["orders"] = "id-2"
    crossings = own.out_of_range(SourceOffsetOutOfRange("orders", 0, 10, "UNKNOWN_TOPIC_ID"))
    assert crossings.recreated == [Recreation(A, "id-1", "id-2", 10), Recreation(B, "id-1", "id-2", 20)]
    assert own.topic_ids["orders"] == "id-2" and scene.path.topic_ids == {"orders": "id-2"}
    assert scene.path.assigned[1:] == [({A: 0}, {}), ({B: 0}, {})], "each partition again, from the new start"
    assert dict(own.state.committed) == {A: 0, B: 0}
    assert set(own.state.unrecorded.recreated) == {A, B}
    assert stored_topic_id(own.commit_metadata(A, None)) == "id-2"


def test_record_mode_confirms_topic_ids_before_a_commit() -> None:
    scene = Scene()
    own = scene.assigned(TA, TB)
    assert not own.confirm_topic_ids([A, B]), "the same ids: nothing to say"
    del scene.resolver.ids["orders"]
    scene.resolver.marks.clear()  # gone: its partitions have no offsets to read either
    assert not own.confirm_topic_ids([A, B]), "a topic gone now proves nothing: its records were read before"
    scene.resolver.ids["orders"] = "id-2"
    scene.resolver.marks = {A: (0, 30), B: (0, 30)}
    with pytest.raises(SourceDiscontinuity, match="source topic orders was deleted and created again"):
        own.confirm_topic_ids([A])


def test_record_mode_continues_a_recreated_topic_found_before_a_commit_under_the_policy() -> None:
    scene = Scene(topic_recreation_policy="continue")
    own = scene.assigned(TA, TB)
    scene.resolver.ids["orders"] = "id-2"
    crossings = own.confirm_topic_ids([A])
    assert {event.source for event in crossings.recreated} == {A, B}, "every partition of the topic read here"
    assert dict(own.state.committed) == {A: 0, B: 0}


# -- what is committed beside an offset -----------------------------------------------------------
def test_the_commit_metadata_names_the_topic_id_the_leader_epoch_and_a_cut() -> None:
    own = Scene().assigned(TA, TB)
    meta = own.commit_metadata(A, 7, at_cut=True)
    assert (stored_topic_id(meta), stored_leader_epoch(meta), stored_at_cut(meta)) == ("id-1", 7, True)
    unknown = own.commit_metadata(SourcePartition("other", 0), None)
    assert (stored_topic_id(unknown), stored_leader_epoch(unknown), stored_at_cut(unknown)) == (None, None, False)


def test_only_an_exactly_once_task_fences_what_others_left_open() -> None:
    assert Ownership(FakeRun(config()), {}).fence is not None
    assert Ownership(FakeRun(config(transaction_producer="false")), {}).fence is None
