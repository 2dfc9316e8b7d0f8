"""Cycle, the loop both modes share: what it commits and with which generation, when it aborts and
rewinds, when a source break stops it or is gone past and recorded, what it holds back, when it
commits at a cut of the source's transactions, and when it hands over to record mode.

Each test runs ``Cycle.loop`` over the fakes of ``tests/unit/task/fakes.py`` (a real ``Ownership``
on a fake member and resolver): the path's script says what happens before each copy, and the loop
stops once the script is done. The cycle's clock is a fake one; the loop's stop event returns from
its waits at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from mirror_sink.core.base.errors import AbortCycle, SourceOffsetOutOfRange, SwitchToRecordMode, TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.formats.commit_metadata import stored_at_cut, stored_leader_epoch, stored_topic_id
from mirror_sink.core.formats.offset_syncs import SyncSpan
from mirror_sink.core.formats.skipped_ranges import Recreation, SkippedRange
from mirror_sink.task import cycle as cycle_module
from mirror_sink.task.cycle import Cycle, TaskCounters, commit_interval_s
from mirror_sink.task.ownership import Ownership
from mirror_sink.task.source_continuity import SourceDiscontinuity
from tests.unit.task.fakes import (
    CommitCall,
    FakeCommitter,
    FakeCuts,
    FakeFence,
    FakeLeaders,
    FakeMember,
    FakePath,
    FakeResolver,
    FakeRun,
    Held,
    config,
    mapping,
)

pytestmark = pytest.mark.unit

A, B = SourcePartition("orders", 0), SourcePartition("orders", 1)
TA, TB = TargetPartition("source.orders", 0), TargetPartition("source.orders", 1)
GAPS = TargetPartition("mirror-sink-gaps.source.internal", 0)


class FakeClock:
    """The cycle's ``time``: stands still until a test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class InstantStop(threading.Event):
    """The loop's stop event; its waits (an abort's backoff, an idle poll) return at once, recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return self.is_set()


@dataclass
class Rig:
    """A cycle over the fakes: the shadow group holds A@10 (leader epoch 4) and B@20 of topic id
    ``id-1``; the source has A up to 13 (leader epoch 5) and nothing more of B."""

    clock: FakeClock
    stop: InstantStop
    run: FakeRun
    own: Ownership
    resolver: FakeResolver
    leaders: FakeLeaders
    cycle: Cycle

    @property
    def path(self) -> FakePath:
        return self.run.fake_path

    @property
    def committer(self) -> FakeCommitter:
        return self.run.fake_path.committer

    @property
    def member(self) -> FakeMember:
        return self.run.fake_member

    @property
    def commits(self) -> list[CommitCall]:
        return self.committer.commits

    def offsets(self) -> list[dict[TargetPartition, int]]:
        """Each commit's offsets by target partition."""
        return [call.by_target() for call in self.commits]

    def script(self, *steps: Exception | Callable[[], object]) -> None:
        self.path.script = list(steps)

    def loop(self) -> None:
        self.cycle.loop(self.stop, lambda: None)


def _rig(monkeypatch: pytest.MonkeyPatch, *, mode: str = "raw", cuts: FakeCuts | None = None, **overrides: str) -> Rig:
    clock = FakeClock()
    monkeypatch.setattr(cycle_module, "time", clock)
    cfg = config(transaction_boundary_linger_ms="0", **overrides)
    run = FakeRun(cfg, mode=mode, cuts=cuts)
    stop = InstantStop()
    run.fake_path.stop = stop
    run.fake_path.ends = {A: 13, B: 20}
    run.fake_path.epochs = {A: 5}
    own = Ownership(run, {"source.orders": mapping("orders", 2)})
    resolver = FakeResolver(cfg)
    resolver.held = {A: Held(10, leader_epoch=4), B: Held(20)}
    resolver.ids = {"orders": "id-1"}
    resolver.marks = {A: (0, 13), B: (0, 20)}
    own.resolver = resolver
    own.fence = FakeFence()
    own.subscribe()
    run.fake_member.assign_next([TA, TB])
    cycle = Cycle(run, own, TaskCounters())
    leaders = FakeLeaders()
    cycle.leaders = leaders
    return Rig(clock, stop, run, own, resolver, leaders, cycle)


def _raise_after(action: Callable[[], object], exc: Exception) -> Callable[[], object]:
    def step() -> object:
        action()
        raise exc

    return step


# -- what a commit carries ------------------------------------------------------------------------
def test_a_caught_up_cycle_commits_the_partitions_that_moved_with_the_generation_that_owned_its_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch)

    def rebalance_in_the_background() -> None:
        rig.member.generation += 1  # librdkafka's thread may move the generation mid-cycle

    rig.script(rebalance_in_the_background)
    rig.loop()

    assert rig.offsets() == [{TA: 13}], "B did not move: nothing of it is committed"
    (call,) = rig.commits
    assert call.metadata.generation == 2, "fenced by the generation served before the copy (KIP-447)"
    meta = call.metadata_by_target()[TA]
    assert stored_leader_epoch(meta) == 5 and stored_topic_id(meta) == "id-1"
    assert not stored_at_cut(meta), "no cuts without source.transactions.whole"
    assert call.spans == [SyncSpan(TA, "orders", 10, 13)] and call.audit == []
    assert dict(rig.own.state.committed) == {A: 13, B: 20}
    assert rig.path.forgets == 1, "whether a cycle took part of a source transaction starts again"
    counters = rig.cycle.counters
    assert (counters.records, counters.commits, counters.aborts) == (3, 1, 0)


def test_an_idle_cycle_commits_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch)
    rig.path.ends = {A: 10, B: 20}
    rig.loop()
    assert rig.commits == [] and rig.committer.aborts == 0


def test_a_caught_up_boundary_commits_once_the_backlog_is_copied_not_at_every_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch)
    rig.path.chunk = 2
    rig.path.ends[A] = 16
    rig.script(lambda: None, lambda: None, lambda: None)
    rig.loop()
    assert rig.offsets() == [{TA: 12}, {TA: 16}], "the first commit at once, the next when caught up"


def test_a_transaction_that_reached_transaction_max_bytes_commits_before_its_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch, transaction_boundary="interval", transaction_max_bytes="1024")
    rig.script(
        lambda: None,  # A 10..12: the first commit is due at once
        lambda: rig.path.ends.update({A: 24}),  # 11 records of 100 bytes: over the bound
        lambda: rig.path.ends.update({A: 25}),  # one more: waits for the interval, or the stop
    )
    rig.loop()
    assert rig.offsets() == [{TA: 13}, {TA: 24}, {TA: 25}]


def test_an_aborted_cycles_bytes_do_not_count_toward_the_next_ones_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, transaction_boundary="interval", transaction_max_bytes="1024")
    rig.script(
        lambda: None,  # A 10..12: the first commit is due at once
        lambda: rig.path.ends.update({A: 21}),  # 800 bytes: under the bound
        AbortCycle("a produce was not acknowledged"),
        lambda: None,  # the same 800 bytes copied again
        lambda: rig.path.ends.update({A: 22}),  # 900 bytes: still under it; committed at the stop
    )
    rig.loop()
    assert rig.offsets() == [{TA: 13}, {TA: 22}]


def test_the_group_is_served_only_between_cycles(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, transaction_boundary="interval")

    def revoke_mid_cycle() -> None:
        rig.path.ends[A] = 16
        rig.member.revoke_next()

    rig.script(lambda: None, revoke_mid_cycle, lambda: None)
    rig.loop()
    assert rig.offsets() == [{TA: 13}, {TA: 16}], "the open cycle is committed before the revocation"
    assert rig.committer.aborts == 0


def test_a_start_the_fallback_chose_is_saved_by_a_commit_before_any_data(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch)
    rig.resolver.held[A] = Held(None, offset_fallback=13)  # offset.fallback=latest: A's end now
    rig.loop()
    assert rig.offsets() == [{TA: 13}], "a restart must not resolve latest again"
    assert not rig.commits[0].had_writes
    assert not rig.own.state.unsaved(A)


def test_positions_moved_past_markers_with_nothing_copied_are_saved_at_most_every_five_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch, mode="record")
    rig.path.positions_move_unseen = True
    rig.path.ends = {A: 10, B: 20}
    commits_before_five_seconds: list[int] = []

    def step_over_marker(offset: int) -> Callable[[], object]:
        def step() -> None:
            rig.path.at[A] = rig.path.ends[A] = offset  # librdkafka moved past a transaction marker

        return step

    def after(seconds: float, action: Callable[[], object]) -> Callable[[], object]:
        def step() -> None:
            rig.clock.advance(seconds)
            action()

        return step

    rig.script(
        step_over_marker(11),
        after(1.0, step_over_marker(12)),
        after(4.5, lambda: commits_before_five_seconds.append(len(rig.commits))),
    )
    rig.loop()
    assert commits_before_five_seconds == [1]
    assert rig.offsets() == [{TA: 11}, {TA: 12}]
    assert not any(call.had_writes for call in rig.commits)


def test_records_without_a_source_offset_that_moved_are_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch)
    rig.path.ends = {A: 10, B: 20}
    rig.script(lambda: rig.committer.enlist([TA]))  # a write into the cycle, with no position moved
    with pytest.raises(TaskFailure, match="records produced but no source offset advanced"):
        rig.loop()


def test_a_commit_before_the_group_was_served_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch)
    rig.own.poll(0)  # assigned, but the generation that owns the reads not noted
    rig.path.at[A] = 13
    with pytest.raises(TaskFailure, match="before the shadow group was served"):
        rig.cycle.commit()
    assert rig.commits == []


@pytest.mark.parametrize("interval_ms", ["10000", "0"])
def test_the_committed_positions_reach_the_source_group_for_lag_tools_unless_turned_off(
    monkeypatch: pytest.MonkeyPatch, interval_ms: str
) -> None:
    rig = _rig(monkeypatch, source_group_commit_interval_ms=interval_ms)
    rig.loop()
    sent = {(tp.topic, tp.partition): tp.offset for call in rig.run.fake_source.commits for tp in call}
    assert sent == ({("orders", 0): 13, ("orders", 1): 20} if interval_ms != "0" else {})


# -- aborts and rewinds ---------------------------------------------------------------------------
def test_a_commit_the_group_refuses_aborts_the_cycle_and_reads_again_from_the_committed_offsets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch)
    rig.committer.refuse = [AbortCycle("fenced: the generation is no longer the group's")]
    rig.script(lambda: None)
    rig.loop()
    assert rig.committer.aborts == 1
    assert rig.path.rewinds == [({A: 10, B: 20}, {A: 4})], "to the committed offsets, with their epochs"
    assert rig.offsets() == [{TA: 13}], "copied again, then committed"
    assert (rig.cycle.counters.aborts, rig.cycle.counters.commits) == (1, 1)
    assert rig.path.forgets == 2, "after the abort and after the commit"
    assert rig.stop.waits[0] == pytest.approx(0.1), "a short backoff before reading again"


def test_a_copy_the_path_voids_is_aborted_and_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, transaction_boundary="interval")
    rig.script(
        lambda: None,  # A 10..12: the first commit is due at once
        lambda: rig.path.ends.update({A: 16}),  # A 13..15: open, the next commit not due yet
        AbortCycle("a produce was not acknowledged"),
    )
    rig.loop()
    assert rig.path.rewinds == [({A: 13, B: 20}, {A: 5})], "to what the first commit saved"
    assert rig.offsets() == [{TA: 13}, {TA: 16}], "read again, and committed at the stop"
    assert rig.committer.aborts == 1 and rig.cycle.counters.aborts == 1


def test_aborts_that_go_on_past_twice_the_transaction_timeout_fail_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, transaction_timeout_ms="1000")
    rig.script(
        AbortCycle("first"),
        _raise_after(lambda: rig.clock.advance(1.0), AbortCycle("second")),
        _raise_after(lambda: rig.clock.advance(2.0), AbortCycle("third")),
    )
    with pytest.raises(TaskFailure, match=r"every cycle aborted for 3 s; last: third"):
        rig.loop()
    assert rig.stop.waits == [pytest.approx(0.1), pytest.approx(0.2)], "the backoff grows with the streak"


def test_a_commit_ends_a_streak_of_aborts(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, transaction_timeout_ms="1000")
    rig.script(
        AbortCycle("first"),
        lambda: None,  # A is copied and committed
        _raise_after(lambda: rig.clock.advance(3.0), AbortCycle("later")),
    )
    rig.loop()
    assert rig.offsets() == [{TA: 13}] and rig.cycle.counters.aborts == 2


def test_a_new_assignment_starts_a_new_streak_of_aborts(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, transaction_timeout_ms="1000")
    rig.path.ends[A] = 10  # nothing to copy: no commit ends the streak
    rig.script(
        AbortCycle("a session lost while the abort waited on a dead coordinator"),
        lambda: rig.member.assign_next([TA, TB]),  # served before the next copy
        _raise_after(lambda: rig.clock.advance(3.0), AbortCycle("under the new assignment")),
    )
    rig.loop()
    assert rig.cycle.counters.aborts == 2 and rig.cycle.counters.commits == 0


def test_a_stop_commits_the_open_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, transaction_boundary="interval")
    rig.script(lambda: None, lambda: rig.path.ends.update({A: 16}))
    rig.loop()
    assert rig.offsets() == [{TA: 13}, {TA: 16}]
    assert not rig.committer.open and rig.committer.aborts == 0


def test_an_abort_while_stopping_leaves_the_transaction_to_the_next_owner_and_commits_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch, transaction_boundary="interval")
    rig.script(
        lambda: None,
        lambda: rig.path.ends.update({A: 16}),
        _raise_after(rig.stop.set, AbortCycle("the coordinator does not answer")),
    )
    rig.loop()
    assert rig.committer.aborts == 0, "an abort could wait out the transaction timeout"
    assert rig.path.rewinds == []
    assert rig.offsets() == [{TA: 13}], "the open cycle is not committed at the stop"
    assert rig.cycle.counters.aborts == 1


# -- breaks in the source: gaps and recreated topics ----------------------------------------------
def test_records_deleted_before_they_were_mirrored_stop_the_task_naming_the_gap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch)
    rig.resolver.marks[A] = (50, 60)
    rig.script(SourceOffsetOutOfRange("orders", 0, 10, "OFFSET_OUT_OF_RANGE"))
    with pytest.raises(SourceDiscontinuity, match="orders-0: first missing 10, first still there 50"):
        rig.loop()
    assert rig.commits == []


def test_an_offset_out_of_range_the_source_does_not_explain_is_raised_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch)
    out_of_range = SourceOffsetOutOfRange("orders", 0, 10, "OFFSET_OUT_OF_RANGE")
    rig.script(out_of_range)
    with pytest.raises(SourceOffsetOutOfRange) as raised:
        rig.loop()
    assert raised.value is out_of_range


@pytest.mark.parametrize(("end", "committed"), [(60, 60), (50, 50)], ids=["with-data", "without-data"])
def test_with_offset_gap_policy_skip_the_cycle_rewinds_past_the_gap_and_the_next_commit_records_it(
    monkeypatch: pytest.MonkeyPatch, end: int, committed: int
) -> None:
    rig = _rig(monkeypatch, offset_gap_policy="skip")
    rig.resolver.marks[A] = (50, 60)
    rig.script(_raise_after(lambda: rig.path.ends.update({A: end}), SourceOffsetOutOfRange("orders", 0, 10, "gone")))
    rig.loop()
    assert rig.path.rewinds == [({A: 50, B: 20}, {})], "past the gap; A's old epoch is no longer its"
    assert rig.offsets() == [{TA: committed}], "recorded at once, data or not"
    (call,) = rig.commits
    assert call.spans == [SyncSpan(TA, "orders", 10, committed, 50)], "the span opens with the gap"
    gap = SkippedRange(A, "id-1", 10, 50)
    assert [(r.where, r.key) for r in call.audit] == [(GAPS, gap.audit_key())]
    assert not rig.own.state.to_save, "recorded once"


def test_a_gap_found_after_a_commit_is_recorded_at_once_not_at_the_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, transaction_boundary="interval", offset_gap_policy="skip")
    rig.resolver.marks[A] = (50, 60)
    rig.script(
        lambda: None,  # A 10..12 committed at once; the next commit is an interval away
        _raise_after(lambda: rig.path.ends.update({A: 50}), SourceOffsetOutOfRange("orders", 0, 13, "gone")),
    )
    rig.loop()
    assert rig.offsets() == [{TA: 13}, {TA: 50}]
    assert [r.key for r in rig.commits[1].audit] == [SkippedRange(A, "id-1", 13, 50).audit_key()]


def test_a_recreated_topic_read_on_by_name_fails_the_commit_without_a_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, mode="record")

    def recreate() -> None:
        rig.resolver.ids["orders"] = "id-2"
        rig.resolver.marks = {A: (0, 15), B: (0, 0)}
        rig.path.ends[A] = 15  # the new topic's records, read at the old offsets

    rig.script(recreate)
    with pytest.raises(SourceDiscontinuity, match="source topic orders was deleted and created again"):
        rig.loop()
    assert rig.commits == []


def test_with_topic_recreation_policy_continue_the_new_topic_is_mirrored_from_its_start_and_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch, mode="record", topic_recreation_policy="continue")

    def recreate() -> None:
        rig.resolver.ids["orders"] = "id-2"
        rig.resolver.marks = {A: (0, 15), B: (0, 0)}
        rig.path.ends = {A: 15, B: 0}

    rig.script(recreate)
    rig.loop()
    assert rig.committer.aborts == 1, "the cycle held the new topic's records read at the old offsets"
    assert rig.path.topic_ids == {"orders": "id-2"} and rig.path.rewinds[-1][0] == {A: 0, B: 0}
    assert rig.offsets() == [{TA: 15, TB: 0}]
    (call,) = rig.commits
    assert {stored_topic_id(meta) for meta in call.metadata_by_target().values()} == {"id-2"}
    assert sorted(call.spans) == [
        SyncSpan(TA, "orders", 0, 15, None, "id-2"),
        SyncSpan(TB, "orders", 0, 0, None, "id-2"),
    ]
    events = [Recreation(A, "id-1", "id-2", 10), Recreation(B, "id-1", "id-2", 20)]
    assert sorted(r.key for r in call.audit) == sorted(e.audit_key() for e in events)


# -- holds and record mode ------------------------------------------------------------------------
def test_a_partition_whose_target_leader_does_not_serve_it_yet_is_held_at_its_committed_offset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch)
    rig.leaders.unserved = {TB}
    rig.path.ends[B] = 25
    rig.script(lambda: None, lambda: rig.leaders.serve([TB]))
    rig.loop()
    assert rig.path.holds == [{B: 20}, {}], "held, then released once served"
    assert rig.offsets() == [{TA: 13}, {TB: 25}]


@pytest.mark.parametrize("mode", ["auto", "raw"])
def test_raw_mode_hands_over_to_record_mode_between_cycles_only_under_mirror_mode_auto(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    rig = _rig(monkeypatch, mirror_mode=mode)
    rig.path.advice = "the source's batches hold 1.2 records on average"
    if mode == "auto":
        with pytest.raises(SwitchToRecordMode, match=r"1\.2 records"):
            rig.loop()
    else:
        rig.loop()
    assert rig.offsets() == [{TA: 13}] and not rig.committer.open, "switched after the commit, nothing open"


# -- cuts of source transactions (source.transactions.whole) -------------------------------------
def _cut_rig(monkeypatch: pytest.MonkeyPatch) -> tuple[Rig, FakeCuts]:
    """The source's transactions end at A 13 and B 25; the path has read B only up to 22 so far."""
    cuts = FakeCuts()
    cuts.next_limits = [{A: 13, B: 25}]
    monkeypatch.setattr(FakeCuts, "due", lambda self, spacing_s: True)
    rig = _rig(monkeypatch, cuts=cuts, transaction_boundary="interval", source_transactions_whole="true")
    rig.path.ends[B] = 22
    rig.path.transactional = True
    return rig, cuts


def test_a_due_commit_waits_for_the_cut_and_says_it_is_at_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rig, _ = _cut_rig(monkeypatch)
    commits_short_of_the_cut: list[int] = []

    def reach_the_cut() -> None:
        commits_short_of_the_cut.append(len(rig.commits))
        rig.path.ends[B] = 25

    rig.script(
        lambda: None,  # nothing past the committed offsets until the first cut is taken
        lambda: rig.clock.advance(1.0),  # A 10..12 and B 20..21 copied; the commit is due
        reach_the_cut,
    )
    rig.loop()
    held = [limits for limits in rig.path.holds if limits]
    assert held == [{A: 10, B: 20}, {A: 13, B: 25}], "the committed offsets, then the cut"
    assert commits_short_of_the_cut == [0]
    assert rig.offsets() == [{TA: 13, TB: 25}]
    assert all(map(stored_at_cut, rig.commits[0].metadata_by_target().values()))


def test_while_a_backlog_is_copied_a_caught_up_commit_waits_for_the_last_cut_known(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cuts = FakeCuts()
    cuts.next_limits = [{A: 13, B: 20}, {A: 16, B: 20}]
    monkeypatch.setattr(FakeCuts, "due", lambda self, spacing_s: True)
    rig = _rig(monkeypatch, cuts=cuts, source_transactions_whole="true")
    rig.path.ends[A] = 16
    rig.path.chunk = 2  # A's backlog takes several copies
    rig.path.transactional = True
    rig.script(*[lambda: None] * 5)
    rig.loop()
    assert rig.offsets() == [{TA: 16}], "not at the first cut: a later one was already taken"


def test_a_cut_not_reached_in_a_third_of_the_transaction_timeout_is_committed_before_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig, cuts = _cut_rig(monkeypatch)
    rig.script(lambda: None, lambda: rig.clock.advance(1.0), lambda: rig.clock.advance(20.0))
    rig.loop()
    assert rig.offsets() == [{TA: 13, TB: 22}], "split: B short of its cut"
    assert cuts.counts.split_commits == 1
    assert not any(map(stored_at_cut, rig.commits[0].metadata_by_target().values()))


@pytest.mark.parametrize("transactional", [True, False])
def test_a_stop_between_two_cuts_aborts_the_cycle_unless_it_took_nothing_of_a_source_transaction(
    monkeypatch: pytest.MonkeyPatch, transactional: bool
) -> None:
    rig, _ = _cut_rig(monkeypatch)
    rig.script(lambda: None, lambda: setattr(rig.path, "transactional", transactional))
    rig.loop()
    if transactional:
        assert rig.commits == [] and rig.committer.aborts == 1, "copied again from the committed offsets"
    else:
        assert rig.offsets() == [{TA: 13, TB: 22}], "the positions are a cut themselves"
        assert all(map(stored_at_cut, rig.commits[0].metadata_by_target().values()))


# -- how long a transaction may last --------------------------------------------------------------
@pytest.mark.parametrize(
    ("marker_wait_s", "timeout_s", "backlog", "expected"),
    [
        (5.0, 60.0, False, 1.0),  # caught up: the interval
        (0.1, 60.0, True, 1.0),  # a short wait: still the interval
        (2.0, 60.0, True, 8.0),  # four times the wait for markers
        (20.0, 60.0, True, 20.0),  # at most a third of the transaction timeout
        (20.0, 300.0, True, 30.0),  # and at most 30 s
    ],
)
def test_a_backlog_is_copied_in_transactions_four_times_the_wait_for_markers(
    marker_wait_s: float, timeout_s: float, backlog: bool, expected: float
) -> None:
    assert commit_interval_s(1.0, marker_wait_s, timeout_s, backlog=backlog) == pytest.approx(expected)
