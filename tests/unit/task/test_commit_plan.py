"""CommitPlan, what a commit carries: the source offsets that moved on (or must be saved), each
partition's offset-sync span, and an audit record per break the commit steps over."""

from __future__ import annotations

import json

import pytest

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.formats.offset_syncs import SyncSpan
from mirror_sink.core.formats.skipped_ranges import Recreation, SkippedRange
from mirror_sink.task.commit_plan import CommitPlan
from mirror_sink.task.ownership import Ownership
from tests.unit.task.fakes import FakeFence, FakePath, FakeResolver, FakeRun, Held, config, mapping

pytestmark = pytest.mark.unit

A, B = SourcePartition("orders", 0), SourcePartition("orders", 1)
TA, TB = TargetPartition("source.orders", 0), TargetPartition("source.orders", 1)
GAPS = TargetPartition("mirror-sink-gaps.source.internal", 0)


def _plan(held_b: Held | None = None, **overrides: str) -> tuple[CommitPlan, Ownership, FakePath]:
    """A plan over a task reading A (committed 10) and B (``held_b``) of topic id ``id-1``."""
    cfg = config(**overrides)
    run = FakeRun(cfg)
    own = Ownership(run, {"source.orders": mapping("orders", 2)})
    resolver = FakeResolver(cfg)
    resolver.held = {A: Held(10), B: held_b or Held(20)}
    resolver.ids = {"orders": "id-1"}
    own.resolver = resolver
    own.fence = FakeFence()
    own.subscribe()
    run.fake_member.assign_next([TA, TB])
    own.serve()
    return CommitPlan(run, own), own, run.fake_path


def test_the_offsets_are_those_of_the_partitions_that_moved_on() -> None:
    plan, _, path = _plan()
    assert plan.offsets() == {}, "nothing moved: nothing to commit"
    path.at[A] = 13
    assert plan.offsets() == {A: 13}


def test_a_start_no_commit_saved_yet_is_committed_though_it_did_not_move() -> None:
    plan, own, _ = _plan(held_b=Held(None, offset_fallback=20))
    assert plan.offsets() == {B: 20}
    own.state.applied({B: 20}, {})
    assert plan.offsets() == {}, "saved once"


def test_a_break_to_record_is_committed_with_its_partitions_offset_though_it_did_not_move() -> None:
    plan, own, path = _plan(offset_gap_policy="skip")
    own.state.skip(SkippedRange(B, "id-1", 20, 25))
    path.rewind(own.state.rewind_points(own.reading))  # the aborted cycle's rewind: B reads on from 25
    assert plan.offsets() == {B: 25}


def test_a_span_runs_from_the_committed_offset_to_the_new_one() -> None:
    plan, _, path = _plan()
    path.at[A] = 13
    assert plan.span(A, 13) == SyncSpan(TA, "orders", 10, 13, None, None)


def test_a_span_over_a_skipped_range_opens_with_the_gap() -> None:
    plan, own, _ = _plan(offset_gap_policy="skip")
    own.state.skip(SkippedRange(A, "id-1", 10, 50))
    assert plan.span(A, 55) == SyncSpan(TA, "orders", 10, 55, 50, None), "10..49 skipped, 50..54 mirrored"


def test_a_span_after_a_recreation_opens_the_new_topics_incarnation() -> None:
    plan, own, _ = _plan(offset_gap_policy="skip", topic_recreation_policy="continue")
    own.state.continue_recreated(Recreation(A, "id-1", "id-2", 10), TA, start=0)
    assert plan.span(A, 4) == SyncSpan(TA, "orders", 0, 4, None, "id-2")
    own.state.skip(SkippedRange(A, "id-2", 0, 3))  # the new topic's retention took its first offsets
    assert plan.span(A, 4) == SyncSpan(TA, "orders", 0, 4, 3, "id-2")


def test_no_break_means_no_audit_record_whatever_the_policies() -> None:
    plan, _, _ = _plan()
    assert plan.audit() == []


def test_each_break_gets_one_audit_record_naming_the_target_the_connector_and_the_task() -> None:
    plan, own, _ = _plan(offset_gap_policy="skip", topic_recreation_policy="continue")
    gap = SkippedRange(A, "id-1", 10, 50)
    event = Recreation(B, "id-1", "id-2", 20)
    own.state.skip(gap)
    own.state.continue_recreated(event, TB, start=0)
    audit = plan.audit()
    assert [(r.where, r.key) for r in audit] == [(GAPS, event.audit_key()), (GAPS, gap.audit_key())]
    values = [json.loads(r.value) for r in audit]
    assert [(v["target_topic"], v["target_partition"]) for v in values] == [("source.orders", 1), ("source.orders", 0)]
    assert {(v["source_cluster"], v["connector"], v["task"]) for v in values} == {("source", "mirror", "mirror-w1-0")}


def test_a_break_to_record_without_a_policy_that_allows_it_is_an_internal_error() -> None:
    plan, own, _ = _plan()
    own.state.skip(SkippedRange(A, "id-1", 10, 50))  # only a policy lets a task step over a gap
    with pytest.raises(
        TaskFailure, match=r"a break to record without offset\.gap\.policy or topic\.recreation\.policy"
    ):
        plan.audit()
