"""CommitState, the one owner of a cycle's bookkeeping: what a commit saves, what a rewind goes back
to, and what the commit after a crossing records."""

from __future__ import annotations

import logging

import pytest

from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.formats.skipped_ranges import Recreation, SkippedRange
from mirror_sink.task.commit_state import CommitState

pytestmark = pytest.mark.unit

A, B, C = SourcePartition("a", 0), SourcePartition("a", 1), SourcePartition("b", 0)
LOG = logging.getLogger("test.commit_state")


def _state() -> CommitState:
    state = CommitState(LOG)
    state.started({A: 10, B: 20, C: 0}, {A: 3}, unsaved=[C])
    return state


def test_a_commit_moves_the_rewind_points_saves_the_starts_and_keeps_the_epochs_it_carried() -> None:
    state = _state()
    assert state.rewind_points([A, B]) == {A: 10, B: 20}
    pending = state.to_save
    assert pending and state.unsaved(C) and not state.unsaved(A)
    recorded = state.applied({A: 15, C: 0}, {A: 4, B: 9})
    assert not recorded.skipped and not recorded.recreated
    assert dict(state.committed) == {A: 15, B: 20, C: 0}
    assert dict(state.leader_epochs) == {A: 4}, "only the epochs of offsets the commit carried"
    assert not state.to_save and not state.unsaved(C)


def test_the_epoch_of_an_offset_that_did_not_move_is_the_committed_one_else_the_cycles() -> None:
    state = _state()
    assert state.epochs_for({A: 10, B: 25}, {B: 7}) == {A: 3, B: 7}
    assert state.epochs_for({A: 12}, {}) == {}, "an older epoch beside a newer offset would read as a divergence"


def test_a_skipped_range_moves_the_rewind_point_past_it_and_is_recorded_once_merged() -> None:
    state = _state()
    state.skip(SkippedRange(A, "id-a", 10, 50))
    state.skip(SkippedRange(A, "id-a", 50, 80))  # retention overtook again before the first was recorded
    pending = state.to_save
    assert state.committed[A] == 80 and A not in state.leader_epochs and pending
    assert A in state.unrecorded
    recorded = state.applied({A: 80}, {})
    assert recorded.skipped == [SkippedRange(A, "id-a", 10, 80)]
    assert not state.unrecorded and not state.to_save


def test_a_recreated_topic_goes_on_from_its_new_start_and_is_recorded_with_the_next_commit() -> None:
    state = _state()
    event = Recreation(B, "old", "new", 20)
    state.continue_recreated(event, "target-b-1", start=0)
    assert state.committed[B] == 0 and B in state.unrecorded
    assert state.applied({B: 5}, {}).recreated == [event]
    assert not state.unrecorded


def test_partitions_given_up_take_their_bookkeeping_with_them() -> None:
    state = _state()
    state.skip(SkippedRange(A, None, 10, 12))
    state.forget([A, C])
    assert dict(state.committed) == {B: 20} and not state.leader_epochs
    assert not state.to_save, "a partition's next owner finds its crossings and start again"
    with pytest.raises(KeyError):
        state.rewind_points([A])
