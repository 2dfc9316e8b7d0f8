"""FetchSession, one source leader's KIP-227 incremental fetch session: what a full and an
incremental Fetch name and forget, how the session id and epoch move with each answer, and which
answers reset it to a full Fetch (or to none for a while)."""

from __future__ import annotations

import uuid

import pytest

from mirror_sink.core.base.error_codes import KafkaErrorCode
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.raw.fetch import fetch_session
from mirror_sink.raw.fetch.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    NO_SESSION,
    THROTTLED,
    FetchSession,
    Kind,
    Sent,
)

pytestmark = pytest.mark.unit

A, B, C = SourcePartition("orders", 0), SourcePartition("orders", 1), SourcePartition("users", 0)
OLD, NEW = uuid.uuid4(), uuid.uuid4()


def _state(offset: int, epoch: int = 1, topic_id: uuid.UUID | None = OLD) -> Sent:
    return Sent(epoch=epoch, offset=offset, last_epoch=-1, leader_epoch=4, topic_id=topic_id)


def _established(wanted: dict[SourcePartition, Sent], session_id: int = 42) -> FetchSession:
    """A session whose full Fetch of ``wanted`` was answered with ``session_id``."""
    session = FetchSession("broker-1")
    plan = session.plan(wanted, wanted, 0.0)
    session.sent(plan)
    assert session.answered(plan, 0, session_id, 1.0) is None
    return session


def test_a_new_session_sends_every_wanted_partition_in_a_full_fetch_asking_for_a_session() -> None:
    session = FetchSession("broker-1")
    wanted = {A: _state(10), B: _state(20)}
    plan = session.plan(wanted, [], 0.0)
    assert (plan.kind, plan.session_id, plan.session_epoch) == (Kind.FULL, NO_SESSION, INITIAL_EPOCH)
    assert plan.send == wanted and not plan.forget and plan.changes
    assert not session.established


def test_a_full_fetch_answered_with_an_id_establishes_the_session_at_epoch_one() -> None:
    session = _established({A: _state(10)})
    assert session.established and (session.id, session.epoch) == (42, 1)
    assert session.members == {A: _state(10)}


def test_an_incremental_fetch_names_only_what_changed_and_forgets_what_is_no_longer_wanted() -> None:
    session = _established({A: _state(10), B: _state(20), C: _state(0)})
    wanted = {A: _state(15), B: _state(20)}  # A got data, C is no longer wanted, B is as it was
    plan = session.plan(wanted, [A, B, C], 2.0)
    assert (plan.kind, plan.session_id, plan.session_epoch) == (Kind.INCREMENTAL, 42, 1)
    assert plan.send == {A: _state(15)}, "B changed nothing the broker holds"
    assert plan.forget == {C: OLD}
    session.sent(plan)
    assert session.members == {A: _state(15), B: _state(20)}


def test_a_partition_not_said_to_have_changed_is_not_compared() -> None:
    session = _established({A: _state(10)})
    plan = session.plan({A: _state(99)}, [], 2.0)
    assert not plan.send and not plan.changes, "an idle mirror's Fetch names nothing"


def test_a_topic_created_again_under_its_name_is_sent_anew_and_the_old_one_forgotten() -> None:
    session = _established({A: _state(10, topic_id=OLD)})
    plan = session.plan({A: _state(0, topic_id=NEW)}, [A], 2.0)
    assert plan.send == {A: _state(0, topic_id=NEW)} and plan.forget == {A: OLD}
    session.sent(plan)
    assert session.members == {A: _state(0, topic_id=NEW)}, "forgotten first, then sent"


def test_each_incremental_answer_moves_the_epoch_on_and_wraps_past_the_largest() -> None:
    session = _established({A: _state(10)})
    plan = session.plan({A: _state(10)}, [], 2.0)
    assert session.answered(plan, 0, 42, 3.0) is None and session.epoch == 2
    session.epoch = 2**31 - 1
    session.answered(session.plan({A: _state(10)}, [], 4.0), 0, 42, 5.0)
    assert session.epoch == 1, "epoch 0 would ask for a new session"
    assert session.last_answer == 5.0


@pytest.mark.parametrize(
    ("code", "reason", "id_after"),
    [
        (KafkaErrorCode.FETCH_SESSION_ID_NOT_FOUND, "FETCH_SESSION_ID_NOT_FOUND", NO_SESSION),
        (KafkaErrorCode.INVALID_FETCH_SESSION_EPOCH, "INVALID_FETCH_SESSION_EPOCH", 42),
        (KafkaErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, "FETCH_SESSION_TOPIC_ID_ERROR", 42),
        (KafkaErrorCode.UNKNOWN_SERVER_ERROR, "error -1", 42),
    ],
)
def test_a_top_level_error_resets_to_a_full_fetch_that_holds_nothing(code: int, reason: str, id_after: int) -> None:
    session = _established({A: _state(10)})
    plan = session.plan({A: _state(10)}, [], 2.0)
    assert session.answered(plan, code, 0, 3.0) == reason
    assert not session.members, "its partitions are not to be taken from this answer"
    following = session.plan({A: _state(10)}, [], 4.0)
    assert (following.kind, following.session_id, following.session_epoch) == (Kind.FULL, id_after, INITIAL_EPOCH)
    assert following.send == {A: _state(10)}


def test_a_throttled_answer_resets_to_a_full_fetch() -> None:
    session = _established({A: _state(10)})
    plan = session.plan({A: _state(11)}, [A], 2.0)
    session.sent(plan)
    assert session.answered(plan, 0, THROTTLED, 3.0) == "throttled"
    assert session.plan({A: _state(11)}, [], 4.0).kind is Kind.FULL


def test_a_session_the_broker_closed_starts_over_without_its_id() -> None:
    session = _established({A: _state(10)})
    plan = session.plan({A: _state(10)}, [], 2.0)
    assert session.answered(plan, 0, NO_SESSION, 3.0) == "closed"
    assert not session.members and session.id == NO_SESSION and not session.established
    assert session.plan({A: _state(10)}, [], 4.0).kind is Kind.FULL


def test_a_fetch_without_an_answer_resets_the_session() -> None:
    session = _established({A: _state(10)})
    assert session.failed() == "disconnect"
    assert not session.members and session.epoch == INITIAL_EPOCH and session.id == 42


def test_a_broker_that_creates_no_session_three_times_is_fetched_without_one_for_a_while() -> None:
    session = FetchSession("broker-1")
    wanted = {A: _state(10)}
    for attempt in range(2):
        plan = session.plan(wanted, [], float(attempt))
        assert plan.kind is Kind.FULL
        assert session.answered(plan, 0, NO_SESSION, float(attempt)) is None
    plan = session.plan(wanted, [], 2.0)
    assert session.answered(plan, 0, NO_SESSION, 2.0) == "not_created"
    sessionless = session.plan(wanted, [], 3.0)
    assert (sessionless.kind, sessionless.session_epoch, sessionless.send) == (Kind.SESSIONLESS, FINAL_EPOCH, wanted)
    assert session.answered(sessionless, 0, NO_SESSION, 3.0) is None
    later = 2.0 + fetch_session._SESSIONLESS_S
    assert session.plan(wanted, [], later).kind is Kind.FULL, "the cool-down over, a session is asked again"


def test_a_session_created_resets_the_count_of_refusals() -> None:
    session = FetchSession("broker-1")
    wanted = {A: _state(10)}
    for now, answer_id in [(0.0, NO_SESSION), (1.0, NO_SESSION), (2.0, 42)]:
        session.answered(session.plan(wanted, [], now), 0, answer_id, now)
    session.failed()
    for now in (3.0, 4.0):
        assert session.answered(session.plan(wanted, [], now), 0, NO_SESSION, now) is None


def test_a_disabled_session_always_fetches_in_full_without_one() -> None:
    session = FetchSession("broker-1", enabled=False)
    plan = session.plan({A: _state(10)}, [], 0.0)
    assert plan.kind is Kind.SESSIONLESS and plan.session_epoch == FINAL_EPOCH
    assert session.answered(plan, 0, 0, 1.0) is None
    assert session.failed() == "disconnect" and session.epoch == FINAL_EPOCH, "a reset never asks for a session"
    assert session.plan({A: _state(10)}, [], 1000.0).kind is Kind.SESSIONLESS


def test_only_an_established_session_has_a_closing_fetch() -> None:
    assert FetchSession("broker-1").close_plan() is None
    close = _established({A: _state(10)}).close_plan()
    assert close is not None
    assert (close.kind, close.session_id, close.session_epoch, close.send) == (Kind.SESSIONLESS, 42, FINAL_EPOCH, {})
