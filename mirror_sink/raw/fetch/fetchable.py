"""Which source leader should serve each assigned partition now, and with what fetch state.

A partition is fetchable unless it is gone, in an error backoff, held back (its queue is full) or
its leader or topic id is not known yet: the decision librdkafka's ``rd_kafka_toppar_fetch_decide``
and the Java client's ``fetchablePartitions`` make. What each leader should serve is kept between
rounds and recomputed only for partitions whose fetch state may have changed (``RawFetcher`` marks
them dirty), so an idle round costs nothing per partition; what changed per leader is its fetch
session's diff (``fetch_session``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.raw.fetch.fetch_buffer import PartitionState
from mirror_sink.raw.fetch.fetch_session import Sent
from mirror_sink.raw.wire.wire import WireClient


class Fetchable:
    """Per source leader, the partitions it should serve now with their fetch state."""

    def __init__(
        self,
        wire: WireClient,
        parts: Mapping[SourcePartition, PartitionState],
        names: dict[uuid.UUID, str],
        *,
        partition_max_bytes: int,
        by_id: bool,
    ) -> None:
        self.wire = wire
        #: The fetcher's partitions (read, and their ``held`` and ``topic_id`` set, here).
        self._parts = parts
        #: Topic id -> name, completed here as ids are pinned.
        self._names = names
        self.partition_max_bytes = partition_max_bytes
        #: Fetch v13 asks by topic id: a partition is fetched only once its topic's id is known.
        self.by_id = by_id
        #: Per leader, the partitions it should serve now, with their fetch state.
        self.wanted: dict[Any, dict[SourcePartition, Sent]] = {}
        #: The leader each wanted partition is in ``wanted`` under.
        self._wanted_at: dict[SourcePartition, Any] = {}
        #: Per leader, partitions whose wanted state changed since its last Fetch (its session's diff).
        self.changed: dict[Any, set[SourcePartition]] = {}
        #: Partitions in an error backoff, and held back (for O(1) checks).
        self._retrying: set[SourcePartition] = set()
        self.held: set[SourcePartition] = set()
        #: Leaders or leader epochs may have moved: every partition is recomputed at the next ``refresh``.
        self._metadata_updated = False

    def on_metadata_update(self) -> None:
        """The source's metadata changed: every partition is recomputed at the next ``refresh``."""
        # Called inside the network poll (the fetch thread): a flag, no lock and no I/O.
        self._metadata_updated = True

    def refresh(self, dirty: set[SourcePartition], now: float) -> set[SourcePartition]:
        """Recompute the ``dirty`` partitions (all of them after a metadata update, and those whose
        error backoff is over); the ones to look at again next time (leader or topic id unknown yet)."""
        if self._metadata_updated:
            self._metadata_updated = False
            dirty.update(self._parts)
        if self._retrying:
            due = {tp for tp in self._retrying if (p := self._parts.get(tp)) is None or p.retry_at <= now}
            self._retrying -= due
            dirty |= due
        again: set[SourcePartition] = set()
        for tp in dirty:
            self._recompute(tp, now, again)
        return again

    def _recompute(self, tp: SourcePartition, now: float, again: set[SourcePartition]) -> None:
        """Put ``tp`` under the leader that should serve it now, with its fetch state, or nowhere
        (unassigned, gone, in an error backoff, held back, its leader or topic id unknown yet)."""
        part = self._parts.get(tp)
        leader: Any = None
        state: Sent | None = None
        if part is None or part.gone is not None:
            self.held.discard(tp)
        elif part.retry_at > now:
            self._retrying.add(tp)
        elif part.queued_bytes >= self.partition_max_bytes or (
            part.held and part.queued_bytes > self.partition_max_bytes // 2
        ):
            # Enough waits for this partition: its leader's session forgets it (a partition left
            # out of a session's Fetch is still served) and the budget goes to the others.
            part.held = True
            self.held.add(tp)
        else:
            part.held = False
            self.held.discard(tp)
            leader = self.wire.leader(*tp)  # (None: unknown yet; the topic's metadata is requested)
            by_id = self.by_id
            if leader is not None and by_id and part.topic_id is None:
                part.topic_id = self.wire.topic_id(tp.topic)  # pinned: the id of what is mirrored from here
                if part.topic_id is None:
                    self.wire.refresh_metadata()
                else:
                    self._names[part.topic_id] = tp.topic
            if leader is None or (by_id and part.topic_id is None):
                again.add(tp)  # looked at again next round
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
            del self.wanted[before][tp]
            self.changed.setdefault(before, set()).add(tp)
            del self._wanted_at[tp]
        if state is not None:
            want = self.wanted.setdefault(leader, {})
            if want.get(tp) != state:
                want[tp] = state
                self.changed.setdefault(leader, set()).add(tp)
            self._wanted_at[tp] = leader
