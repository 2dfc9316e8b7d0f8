"""The raw fetcher's Fetch requests, per source leader: its incremental fetch session (KIP-227,
``fetch_session``) and the one Fetch in flight to it (librdkafka's per-broker fetch state, the
session handlers and pending requests of the Java client's ``AbstractFetch``).

A Fetch holds every partition ``Fetchable`` puts under its leader, and names only those whose
fetch state changed, so an idle mirror's Fetches name none. Each request first reserves what its
response can cost in memory (``max_bytes`` times the copies the network layer makes of it) and
waits when the budget is spent.

A quiet leader is watched instead of polled. A read_committed Fetch parked in the broker is
answered at its max wait, not when a commit marker makes data readable, so its wait stays short
(``fetch.wait.max.ms``, 100 ms): parking it 500 ms doubled p99 at 2,000 records/s. But ten Fetches
a second per silent leader are most of an idle mirror's CPU. So a leader whose answers have named
no partition for ``QUIET_S`` gets a watch: a read_uncommitted Fetch of at most one batch, parked
``fetch.idle.wait.max.ms`` (500 ms, the Java consumer's wait), which the broker answers as soon as
any record is appended, a transaction's first one included. A watch's records are never taken: its
answer only ends the quiet, and the next Fetch, read_committed with the short wait, reads what is
committed. A lone record after silence is so seen no later than under short waits alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kafka.future import Future

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.raw.fetch.fetch_buffer import PartitionState
from mirror_sink.raw.fetch.fetch_request import FetchRequestBuilder
from mirror_sink.raw.fetch.fetch_session import FetchSession, Kind, Plan, Sent
from mirror_sink.raw.fetch.fetchable import Fetchable
from mirror_sink.raw.wire import receive
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.wire import WireClient

#: Smallest response worth a request: below it the fetcher waits for acknowledgements.
_MIN_FETCH_BYTES = 64 * 1024
#: Copies of a response the network layer holds while receiving and decoding it, so a Fetch in
#: flight is charged that many times its max_bytes: the frame alone when responses are read in
#: place (mirror_sink.raw.wire.receive); else kafka-python's socket pieces, frame, decoded fields and
#: the fetcher's own writable copy.
_COPIES_IN_PLACE = 1
_COPIES_KAFKA_PYTHON = 4
#: A Fetch in flight is charged at most half the budget, leaving the rest for queued data.
_FETCH_SHARE = 2
#: A leader serving more partitions than this is never asked to park a Fetch (max wait 0): the
#: fetcher waits fetch.wait.max.ms itself after an answer without records. A parked Fetch becomes a
#: DelayedFetch that the broker's purgatory keeps under every partition of the session until about
#: fetch.purgatory.purge.interval.requests (1,000) of them have completed: some 190 bytes per
#: partition per Fetch, 1.9 GB at 10,000 partitions, which ran a 768 MB source broker out of heap
#: within two minutes of an idle mirror. An immediate answer leaves nothing behind; the cost is up
#: to one max wait before new data on an idle leader is seen.
PARK_LIMIT = 1000
#: A leader whose answers named no partition (no data, no new high watermark, no error) for this
#: long is watched (see the module docstring).
QUIET_S = 1.0
#: A watch asks for at most this: the broker still answers with the first batch whole (KIP-74).
_WATCH_BYTES = 1

# The fetcher's logger: its lines keep the logger name they had before the fetcher was split up.
log = logging.getLogger("mirror_sink.raw.fetch.fetcher")


@dataclass
class _InFlight:
    future: Future
    reserved: int
    plan: Plan
    #: A read_uncommitted watch of a quiet leader: its records are dropped, never taken.
    watch: bool = False


class LeaderFetches:
    """Each source leader's fetch session and Fetch in flight, within the memory budget."""

    def __init__(
        self,
        wire: WireClient,
        budget: MemoryBudget,
        parts: Mapping[SourcePartition, PartitionState],
        *,
        version: int,
        fetch_max_bytes: int,
        partition_max_bytes: int,
        max_wait_ms: int,
        idle_wait_ms: int,
        sessions: bool,
        clock: Callable[[], float],
    ) -> None:
        self.wire = wire
        self.budget = budget
        #: The fetcher's partitions (read only here).
        self._parts = parts
        self._build = FetchRequestBuilder(version, partition_max_bytes)
        self.fetch_max_bytes = fetch_max_bytes
        self.partition_max_bytes = partition_max_bytes
        self.max_wait_ms = max_wait_ms
        #: A quiet leader's watch is parked this long (no watches when not above ``max_wait_ms``).
        self.idle_wait_ms = idle_wait_ms
        #: When each leader's answer last named a partition (or its session began).
        self._named_at: dict[Any, float] = {}
        #: The fetcher's monotonic clock, read as each answer comes.
        self._clock = clock
        self.inflight: dict[Any, _InFlight] = {}
        #: One fetch session per source leader (sessionless ones when ``sessions`` is False).
        self.sessions: dict[Any, FetchSession] = {}
        self._use_sessions = sessions
        #: Leaders whose last answer carried no records (their partitions were at their end then).
        self.quiet: set[Any] = set()
        #: Fetches sent by kind, and session resets by reason, since the start (for metrics).
        self.requests: dict[str, int] = {kind.value: 0 for kind in Kind}
        self.resets: dict[str, int] = {}
        self._copies = _COPIES_IN_PLACE if receive.installed() else _COPIES_KAFKA_PYTHON

    def send(self, fetchable: Fetchable, now: float) -> bool:
        """Send a Fetch to every leader with no request in flight, as far as the budget allows; True
        when a leader was left without one (the budget or the queues were full)."""
        held_back = bool(fetchable.held)
        # A broker answers one request per connection at a time, a Fetch parked for
        # fetch.wait.max.ms included: a long poll for partitions that had nothing would keep the
        # held ones from being fetched the moment their queues have room (a tenth of the Fetches
        # took the whole 100 ms when only some partitions had reached the end). So while queues
        # are full, Fetches are not parked, and a leader whose partitions are all at their end is
        # asked once per max wait unless its session changed.
        may_park = not held_back
        most = self.budget.limit // (_FETCH_SHARE * self._copies)
        changed = fetchable.changed
        for leader, want in fetchable.wanted.items():
            if not want or leader in self.inflight:
                continue
            session = self.sessions.get(leader)
            if session is None:
                session = self.sessions[leader] = FetchSession(leader, enabled=self._use_sessions)
                self._named_at[leader] = now
            plan = session.plan(want, changed.get(leader, ()), now)
            recent = not plan.changes and now - session.last_answer < self.max_wait_ms / 1000
            if held_back and recent and all(self._parts[tp].at_stable_end for tp in want):
                continue
            park = may_park and len(want) <= PARK_LIMIT
            if not park and recent and leader in self.quiet:
                continue  # waited here, not in the broker's purgatory (PARK_LIMIT)
            max_bytes = min(
                self.fetch_max_bytes,
                most,
                self.budget.available // self._copies,
                len(want) * self.partition_max_bytes,
            )
            if max_bytes < min(_MIN_FETCH_BYTES, most):
                held_back = True
                continue
            if not self.wire.ready(leader):
                continue
            charge = max_bytes * self._copies
            self.budget.take(charge)
            if park and not plan.changes and self._quiet_since(leader, now):
                request = self._build.build(plan, _WATCH_BYTES, self.idle_wait_ms, committed=False)
                watch = True
            else:
                request = self._build.build(plan, max_bytes, self.max_wait_ms if park else 0)
                watch = False
            session.sent(plan)
            changed.pop(leader, None)
            self.requests[Kind.WATCH.value if watch else plan.kind.value] += 1
            self.inflight[leader] = _InFlight(self.wire.send(leader, request), charge, plan, watch)
        return held_back

    def _quiet_since(self, leader: Any, now: float) -> bool:
        """Whether ``leader`` is watched: its answers have named nothing for ``QUIET_S``."""
        return self.idle_wait_ms > self.max_wait_ms and now - self._named_at.get(leader, now) >= QUIET_S

    def answers(self) -> Iterator[tuple[Any, Mapping[SourcePartition, Sent], Any, bool]]:
        """Each completed Fetch's answer once its session has taken it in: its leader, what the
        session holds now (nothing after a reset), the response, and whether it answers a watch
        (whose records must not be taken). A failed Fetch yields nothing."""
        done = [leader for leader, f in self.inflight.items() if f.future.is_done]
        for leader in done:
            flight = self.inflight.pop(leader)
            self.budget.give_back(flight.reserved)
            session = self.sessions[leader]
            if flight.future.failed():
                log.warning("fetch from source broker %s failed (retrying): %s", leader, flight.future.exception)
                self._reset(session.failed())
                self.wire.refresh_metadata()
                continue
            response = flight.future.value
            now = self._clock()
            reason = session.answered(flight.plan, response.error_code, response.session_id, now)
            if reason is not None:
                self._reset(reason)
            if response.responses or reason is not None:
                self._named_at[leader] = now
            yield leader, session.members, response, flight.watch

    def _reset(self, reason: str) -> None:
        self.resets[reason] = self.resets.get(reason, 0) + 1

    def close_sessions(self, timeout_s: float = 1.0) -> None:
        """Tell each leader its session is over, as the Java consumer does on close: frees the slot
        in the broker's session cache at once instead of after its idle timeout. Best effort."""
        futures = []
        for leader, session in self.sessions.items():
            plan = session.close_plan()
            if plan is None or leader in self.inflight or not self.wire.ready(leader):
                continue
            futures.append(self.wire.send(leader, self._build.build(plan, _MIN_FETCH_BYTES, 0)))
        deadline = Deadline(timeout_s)
        while futures and not all(f.is_done for f in futures) and not deadline.passed:
            self.wire.poll(0.05)
        self.sessions.clear()
