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

``RawFetcher`` holds the partitions' positions and queues (``fetch_buffer``); ``fetchable`` decides
which leader serves which partition, ``leader_fetches`` sends each leader its Fetch in its session
(``fetch_request`` builds it), and ``fetch_collector`` queues what an answer brings per partition.
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ParamSpec, TypeVar

from kafka.protocol.consumer import FetchRequest

from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.raw.fetch.fetch_buffer import Fetched, PartitionState
from mirror_sink.raw.fetch.fetch_collector import FetchCollector
from mirror_sink.raw.fetch.fetch_request import BY_TOPIC_ID, FETCH_VERSIONS
from mirror_sink.raw.fetch.fetchable import Fetchable
from mirror_sink.raw.fetch.leader_fetches import PARK_LIMIT, LeaderFetches
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.wire import WireClient

__all__ = ["PARK_LIMIT", "Fetched", "RawFetcher"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``method`` under the fetcher's lock (the fetch thread and the task thread share it)."""

    @functools.wraps(method)
    def locked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with args[0]._lock:  # type: ignore[attr-defined]
            return method(*args, **kwargs)

    return locked


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
        idle_wait_ms: int | None = None,
        sessions: bool = True,
    ) -> None:
        self.wire = wire
        self.budget = budget
        self.fetch_max_bytes = fetch_max_bytes
        self.partition_max_bytes = partition_max_bytes
        self.max_wait_ms = max_wait_ms
        self._parts: dict[SourcePartition, PartitionState] = {}
        #: Topic id -> name for v13 responses, which name topics by id only (ids are never reused).
        self._names: dict[uuid.UUID, str] = {}
        #: Partitions whose fetch state may have changed: ``Fetchable`` recomputes them at the next ``fill``.
        self._dirty: set[SourcePartition] = set()
        #: Partitions gone, or with queued items (for O(1) checks).
        self._gone: set[SourcePartition] = set()
        self._ready: set[SourcePartition] = set()
        self._epochs = itertools.count()
        self._lock = threading.RLock()
        #: The last ``fill`` left a leader without a Fetch (the budget or the queues were full):
        #: freeing memory or taking items is then worth a nudge of the fetch thread.
        self.held_back = False
        self.version = wire.negotiate(FetchRequest, *FETCH_VERSIONS)
        self._fetchable = Fetchable(
            wire, self._parts, self._names, partition_max_bytes=partition_max_bytes, by_id=self.version >= BY_TOPIC_ID
        )
        self._leaders = LeaderFetches(
            wire,
            budget,
            self._parts,
            version=self.version,
            fetch_max_bytes=fetch_max_bytes,
            partition_max_bytes=partition_max_bytes,
            max_wait_ms=max_wait_ms,
            idle_wait_ms=max_wait_ms if idle_wait_ms is None else idle_wait_ms,
            sessions=sessions,
            clock=time.monotonic,
        )
        #: The leaders' fetch sessions; Fetches sent by kind and session resets by reason (for metrics).
        self._sessions = self._leaders.sessions
        self.requests = self._leaders.requests
        self.resets = self._leaders.resets
        self._collector = FetchCollector(wire, budget, self._gone)
        # Leaders or leader epochs moved: Fetchable recomputes every partition at the next ``fill``.
        wire.add_metadata_listener(self._fetchable)

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
            self._parts[tp] = PartitionState(
                offset, next(self._epochs), topic_id=topic_id, last_epoch=epochs.get(tp, -1)
            )
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

    def _drop_queue(self, tp: SourcePartition, part: PartitionState) -> None:
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
    def peek(self, tp: SourcePartition) -> Fetched | None:
        """``tp``'s oldest fetched item, left in its queue; None when there is none."""
        queue = self._parts[tp].queue
        return queue[0] if queue else None

    @_locked
    def pop(self, tp: SourcePartition, below: int | None = None) -> Fetched | None:
        """``tp``'s oldest fetched item, or None (also when it starts at or past ``below``: it stays
        queued); its bytes stay charged to the budget until the target acknowledges them (or they are
        dropped): whoever takes the item gives them back."""
        part = self._parts[tp]
        if not part.queue or (below is not None and part.queue[0].start >= below):
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
        self._dirty = self._fetchable.refresh(self._dirty, now)
        self.held_back = self._leaders.send(self._fetchable, now)

    @_locked
    def collect(self) -> bool:
        """Queue the data of completed fetches; True if an answer named a partition (data, a new
        last stable offset, an error: news for the task), False for nothing or an empty answer."""
        by_id = self.version >= BY_TOPIC_ID
        quiet = self._leaders.quiet
        news = False
        for leader, members, response, watch in self._leaders.answers():
            # Data is taken only for what the session holds at the partition's current position:
            # an answer for a partition unassigned, sought, moved to another leader or forgotten
            # since is dropped (a session never serves a partition it was told to forget, but a
            # response already on its way may still carry it). A reset session holds nothing.
            parts = self._parts
            frame: Any = None  # the response's frame, when queued batches are views of it
            quiet.add(leader)
            for topic in response.responses:
                name = self._names.get(topic.topic_id, "") if by_id else topic.topic
                for pd in topic.partitions:
                    if pd.records:
                        quiet.discard(leader)
                    if watch:
                        pd.records = None  # perhaps not committed: the next read_committed Fetch reads it
                        if not _must_take(pd):
                            continue
                    key = (name, pd.partition_index)
                    held, part = members.get(key), parts.get(key)  # type: ignore[call-overload]
                    if (
                        part is not None
                        and held is not None
                        and (held.epoch, held.offset) == (part.epoch, part.position)
                    ):
                        tp = SourcePartition(*key)
                        frame = self._collector.take(tp, part, pd) or frame
                        self._dirty.add(tp)  # its position, or its state, may have moved
                        if part.queue:
                            self._ready.add(tp)
                        news = True
                    pd.records = None
            if frame is not None:
                self._collector.charge_frame(frame)
        return news

    def session_counts(self) -> dict[str, int]:
        """Fetch sessions held now and the partitions in them (for the session gauges)."""
        with self._lock:
            established = [s for s in self._sessions.values() if s.established]
            return {"sessions": len(established), "partitions": sum(len(s.members) for s in established)}

    @_locked
    def close(self, *, close_sessions: bool = True) -> None:
        """Drop everything queued, close the fetch sessions (``close_sessions``: only when no other
        thread drives the connections) and the connections."""
        for tp, part in self._parts.items():
            self._drop_queue(tp, part)
        self._parts.clear()
        if close_sessions:
            self._leaders.close_sessions()
        self.wire.close()


def _must_take(pd: Any) -> bool:
    """Whether a watch's answer for a partition must be taken all the same: an error, or a log that
    diverged, concerns the partition whatever the isolation level (a watch's records never are)."""
    diverging = getattr(pd, "diverging_epoch", None)
    return bool(pd.error_code) or (diverging is not None and diverging.epoch >= 0)
