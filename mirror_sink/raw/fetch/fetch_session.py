"""KIP-227 incremental fetch sessions: what one source leader's session holds, and what the next
Fetch must say to keep it right.

A broker keeps, per session, each partition's fetch state (offset, last fetched epoch, leader epoch)
as the client last sent it, and never moves it by itself: a partition left out of a request is
served again from the same offset. So a partition is re-sent whenever its state changed (it got
data, was sought, its leader epoch moved) and is forgotten (``forgotten_topics_data``) whenever it
should no longer be served (unassigned, held back, in an error backoff). An idle mirror then sends
Fetches that name nothing, and the broker answers only for partitions that have something new.

Data is taken from a response only for a partition the session holds at the fetcher's current
position (``RawFetcher.collect``); any doubt about what the broker holds (an error, a failed
request, a throttled answer) resets the session to a full Fetch, which re-sends everything.
The session's rules follow Kafka's ``FetchSessionHandler`` and kafka-python's port of it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from mirror_sink.core.base.error_codes import KafkaErrorCode
from mirror_sink.core.base.partitions import SourcePartition

log = logging.getLogger(__name__)

#: Session ids and epochs with a meaning of their own (FetchRequest.json).
NO_SESSION = 0
THROTTLED = -1
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1
#: Full Fetches in a row that the broker answered without creating a session (its cache is full)
#: before the session stops asking for one for a while: each such ask makes the broker try evicting.
_NOT_CREATED_LIMIT = 3
_SESSIONLESS_S = 300.0


class Kind(StrEnum):
    """A Fetch's kind, as counted in ``mirror_sink_fetch_requests_total``."""

    FULL = "full"  # names every partition, and asks for a (new) session
    INCREMENTAL = "incremental"  # names only what changed
    SESSIONLESS = "sessionless"  # names every partition, no session (disabled, or none to be had)
    WATCH = "watch"  # an incremental Fetch of a quiet leader that names nothing, read_uncommitted (leader_fetches)


@dataclass(frozen=True, slots=True)
class Sent:
    """A partition's fetch state as a Fetch sends it: what the broker's session holds once sent."""

    #: The fetcher's epoch of the partition (new on every assign and seek).
    epoch: int
    offset: int
    last_epoch: int
    leader_epoch: int
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Plan:
    """The next Fetch to one leader: its session id and epoch, the partitions it names (with their
    state) and the ones it forgets (with the topic id the session holds them under)."""

    kind: Kind
    session_id: int
    session_epoch: int
    send: dict[SourcePartition, Sent]
    forget: dict[SourcePartition, uuid.UUID | None] = field(default_factory=dict)

    @property
    def changes(self) -> bool:
        """Whether the Fetch tells the broker anything new (a full Fetch always does)."""
        return self.kind is not Kind.INCREMENTAL or bool(self.send) or bool(self.forget)


#: Top-level Fetch errors after which the session is given up (each resets it).
_RESETS: dict[int, str] = {
    KafkaErrorCode.FETCH_SESSION_ID_NOT_FOUND: "FETCH_SESSION_ID_NOT_FOUND",
    KafkaErrorCode.INVALID_FETCH_SESSION_EPOCH: "INVALID_FETCH_SESSION_EPOCH",
    KafkaErrorCode.FETCH_SESSION_TOPIC_ID_ERROR: "FETCH_SESSION_TOPIC_ID_ERROR",
}


class FetchSession:
    """One source leader's fetch session, as the client sees it."""

    def __init__(self, leader: object, *, enabled: bool = True) -> None:
        self.leader = leader
        self.enabled = enabled
        self.id = NO_SESSION
        self.epoch = INITIAL_EPOCH if enabled else FINAL_EPOCH
        #: What the broker's session holds, per partition (after the last Fetch sent).
        self.members: dict[SourcePartition, Sent] = {}
        #: When the last answer came (monotonic seconds; 0: none yet).
        self.last_answer = 0.0
        self._not_created = 0
        self._sessionless_until = 0.0

    @property
    def established(self) -> bool:
        """True while the broker holds a session for this client."""
        return self.id != NO_SESSION and self.epoch > INITIAL_EPOCH

    def plan(self, wanted: Mapping[SourcePartition, Sent], changed: Iterable[SourcePartition], now: float) -> Plan:
        """The Fetch that makes the broker serve exactly ``wanted``, given the partitions whose
        wanted state ``changed`` since the last Fetch sent (nothing is changed until ``sent``)."""
        if self.epoch == FINAL_EPOCH and self.enabled and now >= self._sessionless_until:
            self.epoch = INITIAL_EPOCH  # the cool-down is over: ask for a session again
        if self.epoch == FINAL_EPOCH:
            return Plan(Kind.SESSIONLESS, NO_SESSION, FINAL_EPOCH, dict(wanted))
        if self.epoch == INITIAL_EPOCH:
            return Plan(Kind.FULL, self.id, INITIAL_EPOCH, dict(wanted))
        # Only what changed is compared: the session held the rest as wanted since its last Fetch.
        members = self.members
        send: dict[SourcePartition, Sent] = {}
        forget: dict[SourcePartition, uuid.UUID | None] = {}
        for tp in changed:
            state, held = wanted.get(tp), members.get(tp)
            if state is None:
                if held is not None:
                    forget[tp] = held.topic_id
            elif state != held:
                send[tp] = state
                if held is not None and held.topic_id != state.topic_id:
                    forget[tp] = held.topic_id  # another topic under the same name: a partition of its own
        return Plan(Kind.INCREMENTAL, self.id, self.epoch, send, forget)

    def sent(self, plan: Plan) -> None:
        """``plan``'s Fetch is on its way: the session holds what it says."""
        if plan.kind is Kind.INCREMENTAL:
            for tp in plan.forget:
                self.members.pop(tp, None)
            self.members.update(plan.send)
        else:
            self.members = dict(plan.send)

    def answered(self, plan: Plan, error_code: int, session_id: int, now: float) -> str | None:
        """The answer to ``plan``'s Fetch came: the next session id and epoch; why the session was
        reset (its partitions are then not to be taken), else None."""
        self.last_answer = now
        if error_code:
            self.members = {}
            if error_code == KafkaErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.id = NO_SESSION
            return self._full(_RESETS.get(error_code, f"error {error_code}"))
        if session_id == THROTTLED:
            # The broker may not have applied the request: only a full Fetch says for sure what it holds.
            return self._full("throttled")
        if plan.kind is Kind.SESSIONLESS:
            return None
        if plan.kind is Kind.FULL:
            if session_id == NO_SESSION:
                self.id = NO_SESSION
                self._not_created += 1
                if self._not_created >= _NOT_CREATED_LIMIT:
                    self._not_created = 0
                    self.epoch = FINAL_EPOCH
                    self._sessionless_until = now + _SESSIONLESS_S
                    log.info(
                        "source broker %s created no fetch session %d times in a row (its session cache is "
                        "full?): fetching without one for %.0f s",
                        self.leader,
                        _NOT_CREATED_LIMIT,
                        _SESSIONLESS_S,
                    )
                    return "not_created"
                return None  # answered in full; asked again with the next Fetch
            self._not_created = 0
            self.id, self.epoch = session_id, 1
            return None
        if session_id == NO_SESSION:  # the broker closed the session
            self.members = {}
            self.id = NO_SESSION
            return self._full("closed")
        self.epoch = 1 if self.epoch == _MAX_EPOCH else self.epoch + 1
        return None

    def failed(self) -> str:
        """The Fetch got no answer (the connection broke): the broker may or may not have applied it."""
        self.members = {}
        return self._full("disconnect")

    def close_plan(self) -> Plan | None:
        """The Fetch that closes the session on the broker (frees its cache slot), if there is one."""
        if not self.established:
            return None
        return Plan(Kind.SESSIONLESS, self.id, FINAL_EPOCH, {})

    def _full(self, reason: str) -> str:
        """Next Fetch in full, closing the session the broker may still hold (id kept, epoch 0)."""
        if self.epoch != FINAL_EPOCH:
            self.epoch = INITIAL_EPOCH
        if self.enabled and reason != "throttled":
            log.info(
                "fetch session %d with source broker %s reset (%s): the next Fetch names every partition",
                self.id,
                self.leader,
                reason,
            )
        return reason
