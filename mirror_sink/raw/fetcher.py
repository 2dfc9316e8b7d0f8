"""Raw read_committed Fetch from the source: whole record batches, never decompressed.

One Fetch request in flight per source leader, in an incremental fetch session (KIP-227,
``fetch_session``) holding every assigned partition it leads that has room in its queue: a Fetch
names only the partitions whose fetch state changed, so an idle mirror's Fetches name none.
``fetch_thread.FetchThread`` drives ``fill`` and ``collect`` on a thread of
their own while the task thread takes the queued items (every method holds the fetcher's lock).
Each request first reserves what its response can cost in memory
(``max_bytes`` times the copies the network layer makes of it) and waits when the budget is spent.
Batches stay in the response's frame, as writable views, and the frame is charged to the budget
whole until its last view is gone (any one view keeps all of it in memory).
Responses are checked (CRC), filtered (control batches and aborted transactions dropped) and
queued per partition as ``Fetched`` items in offset order.
"""

from __future__ import annotations

import functools
import itertools
import logging
import struct
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from kafka.future import Future
from kafka.protocol.consumer import FetchRequest

from mirror_sink.core.deadline import Deadline
from mirror_sink.core.error_codes import RETRIABLE, KafkaErrorCode
from mirror_sink.core.errors import SourceOffsetOutOfRange, SourceTruncated, TaskFailure
from mirror_sink.core.partitions import SourcePartition
from mirror_sink.core.topic_ids import as_text
from mirror_sink.raw import receive
from mirror_sink.raw.batches import (
    HEADER_SIZE,
    BatchHeader,
    CorruptBatch,
    control_type,
    parse_header,
    split_batches,
    verify_crc,
)
from mirror_sink.raw.fetch_session import FetchSession, Kind, Plan, Sent
from mirror_sink.raw.memory_budget import MemoryBudget
from mirror_sink.raw.read_committed import ReadCommittedFilter, Verdict
from mirror_sink.raw.wire import WireClient, error_name

_READ_COMMITTED = 1
#: A partition error that a later Fetch may not see: UNKNOWN_SERVER_ERROR too, as the Java consumer does.
_FETCH_AGAIN = RETRIABLE | {KafkaErrorCode.UNKNOWN_SERVER_ERROR}
#: After a partition error it is left out of Fetches this long (the others go on meanwhile).
_RETRY_BACKOFF_S = 0.2
#: v12 names topics; v13 (Kafka 3.1+) names them by id, so a topic deleted and created again under
#: the same name answers UNKNOWN_TOPIC_ID instead of serving the new topic's records at old offsets.
_FETCH_VERSIONS = (12, 13)
_BY_TOPIC_ID = 13
#: Smallest response worth a request: below it the fetcher waits for acknowledgements.
_MIN_FETCH_BYTES = 64 * 1024
#: Copies of a response the network layer holds while receiving and decoding it, so a Fetch in
#: flight is charged that many times its max_bytes: the frame alone when responses are read in
#: place (mirror_sink.raw.receive); else kafka-python's socket pieces, frame, decoded fields and
#: the fetcher's own writable copy.
_COPIES_IN_PLACE = 1
_COPIES_KAFKA_PYTHON = 4
#: A v2 batch's partitionLeaderEpoch: int32 after baseOffset and batchLength.
_LEADER_EPOCH = struct.Struct(">i")
_LEADER_EPOCH_AT = 12
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

log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``method`` under the fetcher's lock (the fetch thread and the task thread share it)."""

    @functools.wraps(method)
    def locked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with args[0]._lock:  # type: ignore[attr-defined]
            return method(*args, **kwargs)

    return locked


@dataclass(slots=True)
class Fetched:
    """One source batch in offset order, or a run of offsets with nothing to forward.

    ``batch`` is a writable view of the batch (None for control batches, aborted or empty ones);
    ``start`` is the first offset still to mirror when it was fetched (earlier records of the
    batch were mirrored already); ``next_offset`` is where the partition continues after it.
    """

    batch: memoryview | None
    header: BatchHeader | None  # None for the old v0/v1 format
    start: int
    next_offset: int
    #: Bytes of the same buffer that nothing forwards (control and aborted batches, a partial
    #: tail) but that stay in memory as long as this batch's view does: charged with it.
    extra: int = 0
    #: False for a view of a response's frame: the frame is charged whole, until it is freed.
    charged: bool = True
    #: The source leader epoch the batch was written in (-1: not known, the old v0/v1 format).
    leader_epoch: int = -1

    @property
    def size(self) -> int:
        """Bytes of the batch (and of what it keeps in memory), for the partition's queue limit."""
        return (len(self.batch) if self.batch is not None else 0) + self.extra

    @property
    def charge(self) -> int:
        """Bytes held against the memory budget, given back by whoever ends the item's life."""
        return self.size if self.charged else 0


@dataclass
class _Partition:
    position: int  # next offset to fetch
    epoch: int  # new on every assign and seek: a response to an older fetch is dropped
    queue: deque[Fetched] = field(default_factory=deque)
    queued_bytes: int = 0  # sizes of the queued items
    queued_charge: int = 0  # their charges to the memory budget
    #: Its queue reached the partition's byte limit: not fetched (forgotten by its leader's
    #: session) until the queue is down to half of it.
    held: bool = False
    retry_at: float = 0.0  # after a partition error, not fetched again before this
    #: The source's last stable offset in the latest response that named this partition (-1: none
    #: yet); a session's responses leave out partitions with nothing new, and it stays as it was.
    stable_end: int = -1
    #: The id of the topic the mirrored offsets belong to (Fetch v13 asks by it; None: not known yet).
    topic_id: uuid.UUID | None = None
    #: Leader epoch of the last batch fetched (KIP-320's last_fetched_epoch; -1 after a seek).
    last_epoch: int = -1
    #: The source no longer has ``position`` (deleted by retention, the topic created again, the log
    #: truncated): not fetched again until a seek or reassignment, and raised in the task thread by
    #: ``check_gone``.
    gone: TaskFailure | None = None

    @property
    def at_stable_end(self) -> bool:
        """Fetched up to the last stable offset the latest response gave: nothing more was readable then."""
        return 0 <= self.stable_end <= self.position


@dataclass
class _InFlight:
    future: Future
    reserved: int
    plan: Plan


class RawFetcher:
    """Keeps the assigned source partitions' queues filled, within the memory budget."""

    def __init__(
        self,
        wire: WireClient,
        budget: MemoryBudget,
        *,
        fetch_max_bytes: int,
        partition_max_bytes: int,
        max_wait_ms: int,
        sessions: bool = True,
    ) -> None:
        self.wire = wire
        self.budget = budget
        self.fetch_max_bytes = fetch_max_bytes
        self.partition_max_bytes = partition_max_bytes
        self.max_wait_ms = max_wait_ms
        self._parts: dict[SourcePartition, _Partition] = {}
        self._inflight: dict[Any, _InFlight] = {}
        #: One fetch session per source leader (sessionless ones when ``sessions`` is False).
        self._sessions: dict[Any, FetchSession] = {}
        self._use_sessions = sessions
        #: Topic id -> name for v13 responses, which name topics by id only (ids are never reused).
        self._names: dict[uuid.UUID, str] = {}
        # What each leader should serve is kept between rounds and recomputed only for partitions
        # whose fetch state may have changed, so an idle round costs nothing per partition.
        #: Per leader, the partitions it should serve now, with their fetch state.
        self._wanted: dict[Any, dict[SourcePartition, Sent]] = {}
        #: The leader each wanted partition is in ``_wanted`` under.
        self._wanted_at: dict[SourcePartition, Any] = {}
        #: Per leader, partitions whose wanted state changed since its last Fetch (its session's diff).
        self._changed: dict[Any, set[SourcePartition]] = {}
        #: Partitions to recompute at the next ``fill``.
        self._dirty: set[SourcePartition] = set()
        #: Partitions in an error backoff, held back, gone, or with queued items (for O(1) checks).
        self._retrying: set[SourcePartition] = set()
        self._held: set[SourcePartition] = set()
        self._gone: set[SourcePartition] = set()
        self._ready: set[SourcePartition] = set()
        #: Leaders whose last answer carried no records (their partitions were at their end then).
        self._quiet: set[Any] = set()
        #: Leaders or leader epochs may have moved: every partition is recomputed at the next ``fill``.
        self._metadata_updated = False
        #: Fetches sent by kind, and session resets by reason, since the start (for metrics).
        self.requests: dict[str, int] = {kind.value: 0 for kind in Kind}
        self.resets: dict[str, int] = {}
        self._epochs = itertools.count()
        self._rotation = 0
        self._lock = threading.RLock()
        #: The last ``fill`` left a leader without a Fetch (the budget or the queues were full):
        #: freeing memory or taking items is then worth a nudge of the fetch thread.
        self.held_back = False
        self._copies = _COPIES_IN_PLACE if receive.installed() else _COPIES_KAFKA_PYTHON
        self.version = wire.negotiate(FetchRequest, *_FETCH_VERSIONS)
        wire.on_metadata_update(self._on_metadata_update)

    def _on_metadata_update(self) -> None:
        # Called inside the network poll (the fetch thread): a flag, no lock and no I/O.
        self._metadata_updated = True

    # -- assignment -----------------------------------------------------------------------------
    @_locked
    def assign(
        self,
        starts: Mapping[SourcePartition, int],
        topic_ids: Mapping[str, uuid.UUID] | None = None,
        leader_epochs: Mapping[SourcePartition, int] | None = None,
    ) -> None:
        """Start reading ``starts``' partitions at their offsets; ``topic_ids``: the id of each topic
        the offsets belong to (else the id the metadata gives at the first fetch); ``leader_epochs``:
        the leader epoch of the record before each offset, sent as the first fetch's
        last_fetched_epoch so the source reports a log that diverged meanwhile (KIP-320)."""
        ids, epochs = topic_ids or {}, leader_epochs or {}
        for tp, offset in starts.items():
            topic_id = ids.get(tp.topic)
            self._parts[tp] = _Partition(offset, next(self._epochs), topic_id=topic_id, last_epoch=epochs.get(tp, -1))
            if topic_id is not None:
                self._names[topic_id] = tp.topic
        self._dirty.update(starts)

    @_locked
    def unassign(self, partitions: Iterable[SourcePartition]) -> None:
        """Stop reading ``partitions``; their queued data is dropped."""
        for tp in partitions:
            part = self._parts.pop(tp, None)
            if part is not None:
                self._drop_queue(tp, part)
                self._dirty.add(tp)

    @_locked
    def seek(
        self, offsets: Mapping[SourcePartition, int], leader_epochs: Mapping[SourcePartition, int] | None = None
    ) -> None:
        """Read again from ``offsets`` (after an abort): queued and in-flight data is dropped;
        ``leader_epochs`` as in ``assign``."""
        epochs = leader_epochs or {}
        for tp, offset in offsets.items():
            part = self._parts[tp]
            self._drop_queue(tp, part)
            self._dirty.add(tp)
            self._gone.discard(tp)
            part.position = offset
            part.epoch = next(self._epochs)
            part.gone = None
            part.retry_at = 0.0
            part.last_epoch = epochs.get(tp, -1)

    def _drop_queue(self, tp: SourcePartition, part: _Partition) -> None:
        self.budget.give_back(part.queued_charge)
        part.queue.clear()
        part.queued_bytes = part.queued_charge = 0
        self._ready.discard(tp)

    @_locked
    def check_gone(self) -> None:
        """Raise, in the task thread, what happened to the first partition whose next offset the source
        no longer has: ``SourceOffsetOutOfRange`` (the task decides: fail, or skip and seek) or
        ``SourceTruncated`` (the task fails)."""
        for tp in self._gone:
            part = self._parts.get(tp)
            if part is not None and part.gone is not None:
                raise part.gone

    @_locked
    def ready(self) -> list[SourcePartition]:
        """The partitions with fetched items waiting to be taken."""
        return list(self._ready)

    @_locked
    def pending(self, tp: SourcePartition) -> int:
        """How many fetched items of ``tp`` wait to be taken."""
        return len(self._parts[tp].queue)

    @_locked
    def caught_up(self) -> bool:
        """True when no partition has anything queued and each has reached the last stable offset
        its latest Fetch response reported (read_committed: nothing more was readable then)."""
        return all(not p.queue and p.at_stable_end for p in self._parts.values())

    @_locked
    def pop(self, tp: SourcePartition) -> Fetched | None:
        """``tp``'s oldest fetched item, or None; its bytes stay charged to the budget until the target
        acknowledges them (or they are dropped): whoever takes the item gives them back."""
        part = self._parts[tp]
        if not part.queue:
            return None
        item = part.queue.popleft()
        part.queued_bytes -= item.size
        part.queued_charge -= item.charge
        if not part.queue:
            self._ready.discard(tp)
        if part.held and part.queued_bytes <= self.partition_max_bytes // 2:
            self._dirty.add(tp)  # room again: back into its leader's session
        return item

    # -- fetching -------------------------------------------------------------------------------
    @_locked
    def fill(self) -> None:
        """Send a Fetch to every leader with no request in flight, as far as the budget allows."""
        now = time.monotonic()
        if self._metadata_updated:
            self._metadata_updated = False
            self._dirty.update(self._parts)
        if self._retrying:
            due = {tp for tp in self._retrying if (p := self._parts.get(tp)) is None or p.retry_at <= now}
            self._retrying -= due
            self._dirty |= due
        dirty, self._dirty = self._dirty, set()
        for tp in dirty:
            self._recompute(tp, now)
        held_back = bool(self._held)
        # A broker answers one request per connection at a time, a Fetch parked for
        # fetch.wait.max.ms included: a long poll for partitions that had nothing would keep the
        # held ones from being fetched the moment their queues have room (a tenth of the Fetches
        # took the whole 100 ms when only some partitions had reached the end). So while queues
        # are full, Fetches are not parked, and a leader whose partitions are all at their end is
        # asked once per max wait unless its session changed.
        may_park = not held_back
        most = self.budget.limit // (_FETCH_SHARE * self._copies)
        for leader, want in self._wanted.items():
            if not want or leader in self._inflight:
                continue
            session = self._sessions.get(leader)
            if session is None:
                session = self._sessions[leader] = FetchSession(leader, enabled=self._use_sessions)
            plan = session.plan(want, self._changed.get(leader, ()), now)
            recent = not plan.changes and now - session.last_answer < self.max_wait_ms / 1000
            if held_back and recent and all(self._parts[tp].at_stable_end for tp in want):
                continue
            park = may_park and len(want) <= PARK_LIMIT
            if not park and recent and leader in self._quiet:
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
            request = self._request(plan, max_bytes, self.max_wait_ms if park else 0)
            session.sent(plan)
            self._changed.pop(leader, None)
            self.requests[plan.kind.value] += 1
            self._inflight[leader] = _InFlight(self.wire.send(leader, request), charge, plan)
        self.held_back = held_back

    def _recompute(self, tp: SourcePartition, now: float) -> None:
        """Put ``tp`` under the leader that should serve it now, with its fetch state, or nowhere
        (unassigned, gone, in an error backoff, held back, its leader or topic id unknown yet)."""
        part = self._parts.get(tp)
        leader: Any = None
        state: Sent | None = None
        if part is None or part.gone is not None:
            self._held.discard(tp)
        elif part.retry_at > now:
            self._retrying.add(tp)
        elif part.queued_bytes >= self.partition_max_bytes or (
            part.held and part.queued_bytes > self.partition_max_bytes // 2
        ):
            # Enough waits for this partition: its leader's session forgets it (a partition left
            # out of a session's Fetch is still served) and the budget goes to the others.
            part.held = True
            self._held.add(tp)
        else:
            part.held = False
            self._held.discard(tp)
            leader = self.wire.leader(*tp)  # (None: unknown yet; the topic's metadata is requested)
            by_id = self.version >= _BY_TOPIC_ID
            if leader is not None and by_id and part.topic_id is None:
                part.topic_id = self.wire.topic_id(tp.topic)  # pinned: the id of what is mirrored from here
                if part.topic_id is None:
                    self.wire.refresh_metadata()
                else:
                    self._names[part.topic_id] = tp.topic
            if leader is None or (by_id and part.topic_id is None):
                self._dirty.add(tp)  # looked at again next round
                leader = None
            else:
                state = Sent(
                    part.epoch,
                    part.position,
                    part.last_epoch,
                    # KIP-320: the broker refuses a stale or unknown leader (and the session notices a new one).
                    self.wire.leader_epoch(*tp),
                    part.topic_id if by_id else None,
                )
        before = self._wanted_at.get(tp)
        if before is not None and before != leader:
            del self._wanted[before][tp]
            self._changed.setdefault(before, set()).add(tp)
            del self._wanted_at[tp]
        if state is not None:
            want = self._wanted.setdefault(leader, {})
            if want.get(tp) != state:
                want[tp] = state
                self._changed.setdefault(leader, set()).add(tp)
            self._wanted_at[tp] = leader

    def _request(self, plan: Plan, max_bytes: int, wait_ms: int) -> FetchRequest:
        f = FetchRequest
        by_id = self.version >= _BY_TOPIC_ID
        topics: dict[Any, list[Any]] = {}
        named = list(plan.send.items())
        if plan.kind is not Kind.INCREMENTAL and named:
            # Rotated on every full Fetch: the broker fills a response in request order, so a fixed
            # order could leave the last partitions with nothing while the first always have data
            # (in a session the broker rotates the partitions it answered by itself, KAFKA-12330).
            self._rotation = (self._rotation + 1) % len(named)
            named = named[self._rotation :] + named[: self._rotation]
        for (topic, partition), state in named:
            topics.setdefault(state.topic_id if by_id else topic, []).append(
                f.FetchTopic.FetchPartition(
                    partition=partition,
                    # KIP-320: the broker refuses a stale or unknown leader, and answers a last fetched
                    # epoch whose log ended earlier with the diverging epoch (a truncated source).
                    current_leader_epoch=state.leader_epoch,
                    fetch_offset=state.offset,
                    last_fetched_epoch=state.last_epoch,
                    log_start_offset=-1,
                    # Constant: in a session, a partition whose limit changed would be re-sent.
                    partition_max_bytes=self.partition_max_bytes,
                )
            )
        forgotten: dict[Any, list[int]] = {}
        for (topic, partition), topic_id in plan.forget.items():
            forgotten.setdefault(topic_id if by_id else topic, []).append(partition)
        return f(
            version=self.version,
            replica_id=-1,
            max_wait_ms=wait_ms,
            min_bytes=1,
            max_bytes=max_bytes,
            isolation_level=_READ_COMMITTED,
            session_id=plan.session_id,
            session_epoch=plan.session_epoch,
            topics=[
                f.FetchTopic(topic_id=key, partitions=ps) if by_id else f.FetchTopic(topic=key, partitions=ps)
                for key, ps in topics.items()
            ],
            forgotten_topics_data=[
                f.ForgottenTopic(topic_id=key, partitions=ps) if by_id else f.ForgottenTopic(topic=key, partitions=ps)
                for key, ps in forgotten.items()
            ],
            rack_id="",
        )

    @_locked
    def collect(self) -> bool:
        """Queue the data of completed fetches; True if an answer named a partition (data, a new
        last stable offset, an error: news for the task), False for nothing or an empty answer."""
        done = [leader for leader, f in self._inflight.items() if f.future.is_done]
        by_id = self.version >= _BY_TOPIC_ID
        news = False
        for leader in done:
            flight = self._inflight.pop(leader)
            self.budget.give_back(flight.reserved)
            session = self._sessions[leader]
            if flight.future.failed():
                log.warning("fetch from source broker %s failed (retrying): %s", leader, flight.future.exception)
                self._reset(session.failed())
                self.wire.refresh_metadata()
                continue
            response = flight.future.value
            reason = session.answered(flight.plan, response.error_code, response.session_id, time.monotonic())
            if reason is not None:
                self._reset(reason)
            # Data is taken only for what the session holds at the partition's current position:
            # an answer for a partition unassigned, sought, moved to another leader or forgotten
            # since is dropped (a session never serves a partition it was told to forget, but a
            # response already on its way may still carry it). A reset session holds nothing.
            members, parts = session.members, self._parts
            frame: Any = None  # the response's frame, when queued batches are views of it
            self._quiet.add(leader)
            for topic in response.responses:
                name = self._names.get(topic.topic_id, "") if by_id else topic.topic
                for pd in topic.partitions:
                    if pd.records:
                        self._quiet.discard(leader)
                    key = (name, pd.partition_index)
                    held, part = members.get(key), parts.get(key)  # type: ignore[call-overload]
                    if (
                        part is not None
                        and held is not None
                        and (held.epoch, held.offset) == (part.epoch, part.position)
                    ):
                        tp = SourcePartition(*key)
                        frame = self._take_response(tp, part, pd) or frame
                        self._dirty.add(tp)  # its position, or its state, may have moved
                        if part.queue:
                            self._ready.add(tp)
                        news = True
                    pd.records = None
            if frame is not None:
                self._charge_frame(frame)
        return news

    def _reset(self, reason: str) -> None:
        self.resets[reason] = self.resets.get(reason, 0) + 1

    def session_counts(self) -> dict[str, int]:
        """Fetch sessions held now and the partitions in them (for the session gauges)."""
        with self._lock:
            established = [s for s in self._sessions.values() if s.established]
            return {"sessions": len(established), "partitions": sum(len(s.members) for s in established)}

    def _take_response(self, tp: SourcePartition, part: _Partition, pd: Any) -> Any:
        """Queue one partition's data; the response's frame when views of it were queued, else None."""
        where = f"source partition {tp}"
        if pd.error_code == KafkaErrorCode.OFFSET_OUT_OF_RANGE:
            # Not raised here: the fetch thread goes on for the other partitions, and this one waits
            # for the task's decision (``check_gone``, then a seek past the gap or a failure).
            part.gone = SourceOffsetOutOfRange(tp.topic, tp.partition, part.position, "OFFSET_OUT_OF_RANGE")
            self._gone.add(tp)
            return None
        if pd.error_code in (KafkaErrorCode.UNKNOWN_TOPIC_ID, KafkaErrorCode.INCONSISTENT_TOPIC_ID):
            return self._topic_id_unknown(tp, part, pd.error_code)
        diverging = getattr(pd, "diverging_epoch", None)
        if diverging is not None and diverging.epoch >= 0 and 0 <= diverging.end_offset < part.position:
            part.gone = SourceTruncated(
                f"source partition {tp} diverged from what was mirrored (an unclean leader election truncated "
                f"its log?): the mirror read up to offset {part.position} in leader epoch {part.last_epoch}, but "
                f"the source's log of that epoch ends at offset {diverging.end_offset}. The target holds offsets "
                f"{diverging.end_offset}..{part.position - 1} that the source no longer has; the mirror stops "
                "rather than mirror over them (docs/troubleshooting.md)"
            )
            self._gone.add(tp)
            return None
        if pd.error_code in _FETCH_AGAIN:
            log.info("%s: %s; refreshing metadata and retrying", where, error_name(pd.error_code))
            self.wire.refresh_metadata()
            part.retry_at = time.monotonic() + _RETRY_BACKOFF_S
            return None
        if pd.error_code:
            topic_refused = pd.error_code == KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED
            denied = self.wire.denied(pd.error_code, "READ", [tp.topic]) if topic_refused else None
            raise denied or TaskFailure(f"fetching {where}: {error_name(pd.error_code)}")
        part.stable_end = pd.last_stable_offset
        records = pd.records
        if not records:
            return None
        pd.records = None
        in_frame = isinstance(records, memoryview) and not records.readonly
        # A view of the response's frame is rewritten in place (mirror_sink.raw.receive); anything
        # else (a small response, decoded from a copy) gets the one writable copy of its own.
        buf = records if in_frame else memoryview(bytearray(records))
        try:
            last, forwarded = self._queue_batches(part, buf, pd.aborted_transactions or (), charged=not in_frame)
        except CorruptBatch as exc:
            raise TaskFailure(f"{where}: corrupt batch, not mirrored: {exc}") from exc
        if in_frame:
            return records.obj if forwarded else None
        if last is not None:
            # The buffer lives as long as any view of it: what nothing forwards is charged to the last view.
            last.extra = len(buf) - forwarded
            part.queued_bytes += last.extra
            part.queued_charge += last.extra
            self.budget.take(last.extra)
        return None

    def _topic_id_unknown(self, tp: SourcePartition, part: _Partition, code: int) -> None:
        """The topic the mirrored offsets belong to is gone: created again under its name (the task
        fails naming both ids), or deleted (asked again until the connector drops the topic)."""
        now = self.wire.topic_id(tp.topic)
        if part.topic_id is not None and now is not None and now != part.topic_id:
            part.gone = SourceOffsetOutOfRange(
                tp.topic,
                tp.partition,
                part.position,
                f"the topic was deleted and created again: it has id {as_text(now)} now, the mirrored offsets "
                f"belong to id {as_text(part.topic_id)}",
            )
            self._gone.add(tp)
            return
        log.info("source partition %s: %s; refreshing metadata and retrying", tp, error_name(code))
        self.wire.refresh_metadata()
        part.retry_at = time.monotonic() + _RETRY_BACKOFF_S

    def _charge_frame(self, frame: Any) -> None:
        """Charge the whole of ``frame`` until it is freed: any one view keeps all of it in memory."""
        self.budget.take(len(frame))
        weakref.finalize(frame, self.budget.give_back, len(frame))

    def _queue_batches(
        self, part: _Partition, buf: memoryview, aborted: Iterable[Any], *, charged: bool
    ) -> tuple[Fetched | None, int]:
        """Queue the batches of one response: the last item holding a view of it, and the bytes of all such views.

        ``charged``: each view is charged to the budget (False when the buffer is charged whole)."""
        committed = ReadCommittedFilter((a.producer_id, a.first_offset) for a in aborted)
        last = None
        forwarded = 0
        for base, magic, view in split_batches(buf):
            if magic < 2:
                # v0/v1: the wrapper's offset is its last record's; the fallback re-encodes it.
                if base >= part.position:
                    last = self._queue(part, Fetched(view, None, part.position, base + 1, charged=charged))
                    forwarded += len(view)
                continue
            header = parse_header(view)
            epoch = part.last_epoch = _LEADER_EPOCH.unpack_from(view, _LEADER_EPOCH_AT)[0]
            control = control_type(view) if header.is_control and len(view) > HEADER_SIZE else None
            # Every batch goes through the filter, those before the position too: an abort marker
            # there still ends its producer's aborted transaction for the batches after it.
            verdict = committed.verdict(header, control)
            if header.next_offset <= part.position:
                continue
            verify_crc(view, header)
            if verdict is not Verdict.FORWARD or header.record_count == 0:
                self._queue(part, Fetched(None, header, part.position, header.next_offset, leader_epoch=epoch))
            else:
                item = Fetched(view, header, part.position, header.next_offset, charged=charged, leader_epoch=epoch)
                last = self._queue(part, item)
                forwarded += len(view)
        return last, forwarded

    def _queue(self, part: _Partition, item: Fetched) -> Fetched:
        part.queue.append(item)
        part.queued_bytes += item.size
        part.queued_charge += item.charge
        self.budget.take(item.charge)
        part.position = item.next_offset
        return item

    @_locked
    def close(self, *, close_sessions: bool = True) -> None:
        """Drop everything queued, close the fetch sessions (``close_sessions``: only when no other
        thread drives the connections) and the connections."""
        for tp, part in self._parts.items():
            self._drop_queue(tp, part)
        self._parts.clear()
        if close_sessions:
            self._close_sessions()
        self.wire.close()

    def _close_sessions(self, timeout_s: float = 1.0) -> None:
        """Tell each leader its session is over, as the Java consumer does on close: frees the slot
        in the broker's session cache at once instead of after its idle timeout. Best effort."""
        futures = []
        for leader, session in self._sessions.items():
            plan = session.close_plan()
            if plan is None or leader in self._inflight or not self.wire.ready(leader):
                continue
            futures.append(self.wire.send(leader, self._request(plan, _MIN_FETCH_BYTES, 0)))
        deadline = Deadline(timeout_s)
        while futures and not all(f.is_done for f in futures) and not deadline.passed:
            self.wire.poll(0.05)
        self._sessions.clear()
