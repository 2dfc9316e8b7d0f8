"""RawPath, raw mode's data path: where each partition's position and leader epoch stand, what a
``copy`` takes from the fetcher's queues (within the producer's room, the chunk, the planned range
ends and the current cut) and hands to the forwarder, what it gives back to the memory budget, and
what it reports.

Each test builds a ``RawPath`` over the fakes of ``tests/unit/raw/fakes.py`` (no sockets, no
thread): the test queues fetched items in the fake fetcher and reads what reached the forwarder.
"""

from __future__ import annotations

import uuid

import pytest

from mirror_sink.core.base.errors import SourceOffsetOutOfRange, TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.base.topic_ids import as_text
from mirror_sink.core.interfaces.data_path import Copied, FetchSessionCounts
from mirror_sink.raw import raw_path
from mirror_sink.raw.fetch.fetch_buffer import Fetched
from mirror_sink.raw.forwarder import TARGET_MAX_MESSAGE_BYTES
from tests.unit.raw.fakes import LOG, PathRig, batch, open_path, patch_raw_path, settings, skipped

pytestmark = pytest.mark.unit

A, B = SourcePartition("orders", 0), SourcePartition("orders", 1)
TA, TB = TargetPartition("source.orders", 0), TargetPartition("source.orders", 1)


def _assigned(monkeypatch: pytest.MonkeyPatch, **overrides: int) -> PathRig:
    rig = open_path(monkeypatch, **overrides)
    rig.path.assign({A: 0, B: 100}, {A: TA, B: TB})
    return rig


def _charged(rig: PathRig, *items: Fetched) -> None:
    """The fetcher charged these items to the budget when it queued them."""
    for item in items:
        rig.budget.take(item.charge)


# -- building and closing ------------------------------------------------------------------------
def test_the_source_frame_fits_a_whole_response_plus_two_of_the_largest_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    props = {"fetch.max.bytes": str(4 << 20), "max.partition.fetch.bytes": str(2 << 20), "fetch.wait.max.ms": "250"}
    rig = open_path(monkeypatch, source_props=props, memory_bytes=8 << 20, idle_wait_ms=5000)
    given, role, client_id, frame_max = rig.source.args
    assert (given, role, client_id) == (props, "source", "mirror-0-raw-fetcher")
    assert frame_max == (8 << 20) + 2 * (2 << 20), "the larger of the response limit and the budget, plus two batches"
    assert rig.fetcher.settings == {
        "fetch_max_bytes": 4 << 20,
        "partition_max_bytes": 2 << 20,
        "max_wait_ms": 250,
        "idle_wait_ms": 5000,
    }
    assert rig.thread.started == 1, "fetching starts with the path"


def test_small_partition_limits_still_leave_room_for_the_targets_largest_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = open_path(monkeypatch, source_props={}, memory_bytes=1 << 20)
    frame_max = rig.source.args[3]
    assert frame_max == 50 * 1024 * 1024 + 2 * TARGET_MAX_MESSAGE_BYTES
    assert rig.writer.opened_with["request_max_bytes"] == 1 << 20, "a produce request is at least 1 MiB"


def test_a_produce_request_is_a_sixteenth_of_the_budget_up_to_16_mib(monkeypatch: pytest.MonkeyPatch) -> None:
    assert open_path(monkeypatch, memory_bytes=64 << 20).writer.opened_with["request_max_bytes"] == 4 << 20
    assert open_path(monkeypatch, memory_bytes=1 << 30).writer.opened_with["request_max_bytes"] == 16 << 20


def test_a_writer_that_cannot_open_leaves_no_source_connection_open(monkeypatch: pytest.MonkeyPatch) -> None:
    patches = patch_raw_path(monkeypatch)
    patches.writer_failure = TaskFailure("the target speaks no transactions")
    with pytest.raises(TaskFailure):
        raw_path.RawPath(settings(), LOG)
    assert patches.sources[0].closed == 1
    assert not patches.threads, "no fetch thread was started"


def test_a_fetcher_that_cannot_start_closes_the_source_and_the_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    patches = patch_raw_path(monkeypatch)
    patches.fetcher_failure = TaskFailure("the source has no Fetch v12")
    with pytest.raises(TaskFailure):
        raw_path.RawPath(settings(), LOG)
    assert patches.sources[0].closed == 1 and patches.writer.closed == 1


def test_closing_stops_the_thread_and_closes_the_sessions_only_when_no_thread_drives_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = open_path(monkeypatch)
    rig.thread.alive = False
    rig.path.close()
    rig.thread.alive = True  # the thread outlived its stop: its connections are not ours to use
    rig.path.close()
    assert rig.thread.stopped == 2
    assert rig.fetcher.closed == [True, False]
    assert rig.writer.closed == 2


# -- assignment, positions, rewind ---------------------------------------------------------------
def test_assigning_fetches_by_topic_id_and_leader_epoch_and_starts_the_positions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = open_path(monkeypatch)
    topic_id = uuid.uuid4()
    wakeups = rig.source.wakeups
    rig.path.assign({A: 5}, {A: TA}, {"orders": as_text(topic_id)}, {A: 2})
    assert rig.fetcher.assigned == [({A: 5}, {"orders": topic_id}, {A: 2})]
    assert rig.path.positions({A: 0, B: 7}) == {A: 5, B: 7}, "a partition the path does not read stays where it is"
    assert rig.source.wakeups == wakeups + 1, "the fetch thread fetches the new partitions at once"


def test_positions_and_epochs_follow_each_item_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.fetcher.queue(A, batch(0, 10, epoch=3), skipped(10, 12), batch(12, 5, epoch=4))
    rig.fetcher.queue(B, batch(100, 10, epoch=-1))
    rig.path.copy(0)
    assert rig.path.positions({A: 0, B: 100}) == {A: 17, B: 110}
    assert rig.path.leader_epochs() == {A: 4}, "an item of unknown epoch (old format) records none"


def test_a_skipped_run_without_an_epoch_keeps_the_last_batchs_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.fetcher.queue(A, batch(0, 10, epoch=3), skipped(10, 12))
    rig.path.copy(0)
    assert rig.path.positions({A: 0}) == {A: 12} and rig.path.leader_epochs() == {A: 3}


def test_a_rewind_seeks_the_fetcher_forgets_the_cycles_stats_and_its_epochs(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.fetcher.queue(A, batch(0, 10, epoch=3))
    rig.fetcher.queue(B, batch(100, 10, epoch=5))
    rig.path.copy(0)
    rig.path.rewind({A: 0}, {A: 2})
    assert rig.fetcher.sought == [({A: 0}, {A: 2})]
    assert rig.forwarder.forgotten == 1
    assert rig.path.positions({A: 99, B: 99}) == {A: 0, B: 110}
    assert rig.path.leader_epochs() == {B: 5}, "only the rewound partitions lose the cycle's epoch"


def test_reassigning_a_partition_drops_its_old_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.fetcher.queue(A, batch(0, 10, epoch=3))
    rig.path.copy(0)
    rig.path.assign({A: 50}, {A: TA})
    assert rig.path.leader_epochs() == {} and rig.path.positions({A: 0}) == {A: 50}


def test_an_unassigned_partition_is_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.fetcher.queue(A, batch(0, 10))
    rig.path.copy(0)
    rig.path.unassign([A])
    assert rig.fetcher.unassigned == [A]
    assert rig.path.positions({A: 3}) == {A: 3} and A not in rig.path.leader_epochs()


# -- what copy takes -----------------------------------------------------------------------------
def test_copy_hands_each_batch_to_the_forwarder_for_its_target_and_adds_it_up(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    first, second = batch(0, 10, size=100), batch(100, 4, size=60)
    rig.fetcher.queue(A, first, skipped(10, 11))
    rig.fetcher.queue(B, second)
    assert rig.path.copy(0) == Copied(14, 160)
    assert [(s.source, s.target, s.item, s.stop) for s in rig.forwarder.sent] == [
        (A, TA, first, None),
        (B, TB, second, None),
    ]
    assert rig.writer.committer.enlisted == [{TA, TB}], "the batches' targets join the transaction first"


def test_a_copy_of_only_skipped_runs_moves_positions_and_enlists_no_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.fetcher.queue(A, skipped(0, 5))
    assert rig.path.copy(0) == Copied()
    assert rig.path.positions({A: 0}) == {A: 5}
    assert rig.writer.committer.enlisted == [set()] and not rig.forwarder.sent


def test_copy_takes_no_more_batches_than_the_producers_queue_has_room_for(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.writer.pipeline.in_queue[TA] = 3  # room for 5 - 3 = 2 batches
    rig.fetcher.queue(A, batch(0), skipped(10, 11), batch(11), batch(21))
    rig.path.copy(0)
    assert [s.item.start for s in rig.forwarder.sent] == [0, 11], "a skipped run takes no room"
    assert [item.start for item in rig.fetcher.queues[A]] == [21]


def test_a_partition_with_a_full_producer_queue_is_not_taken_from(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.writer.pipeline.in_queue[TA] = 5
    rig.fetcher.queue(A, batch(0))
    assert rig.path.copy(0.5) == Copied()
    assert len(rig.fetcher.queues[A]) == 1
    assert rig.writer.pipeline.wire.polls == [0.5], "nothing taken: the copy waits for acknowledgements"


def test_one_copy_takes_a_chunk_and_leaves_the_rest_for_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch, chunk_bytes=250)
    rig.fetcher.queue(A, batch(0, size=100), batch(10, size=100), batch(20, size=100), batch(30, size=100))
    rig.path.copy(0)
    assert [s.item.start for s in rig.forwarder.sent] == [0, 10, 20], "the chunk is reached by the last item taken"
    rig.path.copy(0)
    assert [s.item.start for s in rig.forwarder.sent] == [0, 10, 20, 30]


def test_copy_sends_without_waiting_when_it_took_something(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.fetcher.queue(A, batch(0))
    rig.path.copy(2.0)
    pipeline = rig.writer.pipeline
    assert pipeline.wire.polls == [0] and pipeline.pumps == 2 and pipeline.reaps == 1
    assert rig.thread.nudges == 1, "taken items left room in the fetcher's queues"


def test_copy_raises_what_stopped_the_fetch_thread_before_taking_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.fetcher.queue(A, batch(0))
    rig.thread.failure = TaskFailure("the source went away")
    with pytest.raises(TaskFailure, match="went away"):
        rig.path.copy(0)
    assert len(rig.fetcher.queues[A]) == 1 and not rig.forwarder.sent


def test_copy_raises_a_partition_the_source_no_longer_has(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.fetcher.gone = SourceOffsetOutOfRange("orders", 0, 0, "deleted by retention")
    with pytest.raises(SourceOffsetOutOfRange):
        rig.path.copy(0)


# -- planned range ends (stop_at) and cuts (hold_at) ----------------------------------------------
def test_nothing_at_or_past_a_planned_end_is_copied_and_its_bytes_go_back(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    inside, crossing, past = batch(0, 10), batch(10, 10), batch(20, 10)
    _charged(rig, inside, crossing, past)
    rig.fetcher.queue(A, inside, crossing, past)
    rig.path.stop_at({A: 15})
    assert rig.path.copy(0) == Copied(20, 200)
    assert [(s.item, s.stop) for s in rig.forwarder.sent] == [(inside, 15), (crossing, 15)]
    assert rig.path.positions({A: 0}) == {A: 15}, "the crossing batch ends the range at its planned end"
    assert rig.budget.used == inside.charge + crossing.charge, "the batch past the end was dropped"


def test_items_past_a_planned_end_are_dropped_not_left_queued(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    past = batch(20, 10)
    _charged(rig, past)
    rig.fetcher.queue(A, past)
    rig.path.stop_at({A: 20})
    assert rig.path.copy(0) == Copied()
    assert not rig.fetcher.queues[A] and rig.budget.used == 0
    assert rig.thread.nudges >= 1, "the bytes given back may let the fetch thread send"


def test_a_cut_leaves_what_lies_at_or_past_it_queued_until_it_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.fetcher.queue(A, batch(0, 10), batch(10, 10))
    wakeups = rig.source.wakeups
    rig.path.hold_at({A: 10})
    assert rig.source.wakeups == wakeups + 1
    assert not rig.path.holding(), "the next item starts before the cut"
    rig.path.copy(0)
    assert [s.item.start for s in rig.forwarder.sent] == [0]
    assert rig.path.holding() and rig.path.positions({A: 0}) == {A: 10}
    rig.path.hold_at({B: 100})  # a new cut replaces the old one
    assert not rig.path.holding()
    rig.path.copy(0)
    assert [s.item.start for s in rig.forwarder.sent] == [0, 10]


def test_holding_looks_only_at_partitions_with_a_cut_and_something_queued(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    rig.path.hold_at({A: 0})
    assert not rig.path.holding(), "nothing queued waits"
    rig.fetcher.queue(B, batch(100))
    assert not rig.path.holding(), "B has no cut"
    rig.fetcher.queue(A, batch(0))
    assert rig.path.holding()


# -- transactional data, failures ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("item", "took"),
    [
        (batch(0, transactional=True), True),
        (batch(0, transactional=False), False),
        (skipped(0, 10), False),
    ],
    ids=["transactional batch", "plain batch", "control or aborted run"],
)
def test_only_a_transactional_batch_marks_the_cycle_as_carrying_source_transactions(
    monkeypatch: pytest.MonkeyPatch, item: Fetched, took: bool
) -> None:
    rig = _assigned(monkeypatch)
    rig.fetcher.queue(A, item)
    rig.path.copy(0)
    assert rig.path.took_transactional() is took
    rig.path.forget_transactional()
    assert not rig.path.took_transactional()


def test_an_old_format_batch_counts_as_transactional(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    old = batch(0)
    old.header = None
    rig.forwarder.fail_at = 0  # the forwarder would re-encode it; here it refuses, after the mark
    rig.fetcher.queue(A, old)
    with pytest.raises(RuntimeError):
        rig.path.copy(0)
    assert rig.path.took_transactional(), "without a header the path cannot tell, so it assumes the worst"


def test_a_send_that_fails_gives_back_what_was_taken_and_not_handed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    items = [batch(0), batch(10), batch(20)]
    _charged(rig, *items)
    rig.fetcher.queue(A, *items)
    rig.forwarder.fail_at = 1
    with pytest.raises(RuntimeError, match="refused"):
        rig.path.copy(0)
    assert rig.budget.used == items[0].charge, "the failed batch and the one after it are given back"
    assert rig.path.positions({A: 0}) == {A: 10}, "the position moved past the batch handed over only"


def test_a_refused_enlistment_gives_back_every_item_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _assigned(monkeypatch)
    items = [batch(0), batch(10)]
    _charged(rig, *items)
    rig.fetcher.queue(A, *items)
    rig.writer.committer.fail = TaskFailure("fenced")
    with pytest.raises(TaskFailure):
        rig.path.copy(0)
    assert rig.budget.used == 0 and not rig.forwarder.sent
    assert rig.path.positions({A: 0}) == {A: 0}


# -- what it reports -----------------------------------------------------------------------------
def test_statistics_report_batches_memory_marker_wait_and_fetch_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = open_path(monkeypatch, memory_bytes=1000)
    rig.forwarder.counts = {"forwarded": 7, "reencoded_too_large": 2}
    rig.budget.take(600)
    rig.budget.give_back(200)
    rig.writer.transactions.transaction.marker_wait_s = 0.25
    rig.fetcher.requests.update({"full": 2, "incremental": 9})
    rig.fetcher.resets.update({"session_evicted": 1})
    rig.fetcher.sessions = {"sessions": 1, "partitions": 4}
    stats = rig.path.statistics()
    assert stats.batches == {"forwarded": 7, "reencoded_too_large": 2}
    assert stats.memory == {"in_use": 400, "limit": 1000, "peak": 600}
    assert stats.marker_wait_s == 0.25
    assert stats.fetch_sessions == FetchSessionCounts({"full": 2, "incremental": 9}, {"session_evicted": 1}, 1, 4)
    rig.fetcher.requests["full"] += 1
    assert stats.fetch_sessions.requests["full"] == 2, "a copy, not the fetcher's live counter"


def test_the_transaction_version_is_zero_without_transactions(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = open_path(monkeypatch)
    assert rig.path.transaction_version() == 2
    rig.writer.transactions.transactional = False
    assert rig.path.transaction_version() == 0


def test_batch_limits_go_to_the_forwarder(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = open_path(monkeypatch)
    rig.path.limit_batches({"source.orders": 2048})
    rig.path.limit_batches({"source.users": 4096})
    assert rig.forwarder.limits == {"source.orders": 2048, "source.users": 4096}
