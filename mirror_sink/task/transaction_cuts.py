"""Where a task may cut the source so that every source transaction lands whole on the target.

A source transaction's commit marker is written to each of its partitions on its own, so a mirror
that copies whatever each partition's last stable offset (LSO) allows can copy one partition's
part of a transaction in one target transaction and another's in the next. A **cut** is one limit
per partition (an offset the cycle copies up to and no further) at which every source transaction
over several of the task's partitions is on the same side everywhere.

A cut is taken from the source itself (``TransactionCuts.snapshot``):

1. read the ends of the coordinator's log, ``__transaction_state`` (``before``);
2. read the LSO of every partition the task reads (one ListOffsets per leader);
3. read the log's ends again (``after``), and the log up to them (``SourceTransactions``).

A transaction whose CompleteCommit was written before step 1 had all its markers written: it is
below the LSO everywhere. One whose PrepareCommit was written after step 3 had none: it is above
the LSO everywhere (the coordinator writes markers only once PrepareCommit is replicated, and
CompleteCommit only once every marker is). Any other committed transaction over two or more of the
task's partitions may have been caught mid-markers: then the snapshot is not a cut and is dropped
(counted); the next one is taken a moment later. LSOs are the same offsets read_committed
consumers stop at, so a cut also holds back only what a hanging source transaction holds back on
the source: the partitions it touched.

The cycle copies up to the current cut (the data paths hold what lies past it), commits only when
every partition has reached it, and then moves to the next cut. Cuts taken while a backlog is
copied are kept in order (``pending``), so a backlog is copied in cuts of about one snapshot
interval each, not in one transaction.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.clients.source_transactions import (
    CONSUMER_OFFSETS_TOPIC,
    Prepared,
    SourceTransaction,
    SourceTransactions,
)
from mirror_sink.core.formats.transaction_log import TRANSACTION_STATE_TOPIC, coordinator_partition
from mirror_sink.core.runtime.logs import Log

#: At most this many cuts are kept ahead of the current one while a backlog is copied.
_MAX_PENDING = 256
_REQUEST_TIMEOUT_S = 10.0
_LATEST = OffsetSpec.latest()  # type: ignore[no-untyped-call]  # confluent-kafka leaves it unannotated


#: The coordinator log's ends read just before and just after a snapshot's LSOs (per log partition):
#: what tells, for any transaction, whether it was visible at that snapshot (``Prepared.visible``).
LogEnds = tuple[dict[int, int], dict[int, int]]


@dataclass
class Cut:
    """One cut: a limit per partition, and the selected source groups' committed offsets read at it
    (when it was taken with them): those go with the data up to the limits. ``bases``: for each
    partition, the log ends of the snapshot its limit came from (a partial cut keeps some partitions
    at an older one)."""

    limits: dict[SourcePartition, int]
    bases: dict[SourcePartition, LogEnds]
    groups: dict[str, dict[SourcePartition, int]] | None = None
    taken_ms: int = 0


def held_back(
    transactions: Iterable[Prepared],
    owned: Collection[tuple[str, int]],
    bases: Mapping[tuple[str, int], LogEnds],
    now: LogEnds,
) -> set[tuple[str, int]]:
    """The partitions that must stay at their current limits (from the snapshots in ``bases``) so
    that a snapshot with log ends ``now`` can move every other partition to its LSO and still be a cut.

    A committed transaction over two or more ``owned`` partitions whose markers may have been written
    during ``now`` holds its partitions back. So does, transitively, one that has partitions held
    back and others not, when it was visible at ``now`` but not at a held partition's base (or the
    reverse): it would land on one side of the cut on some partitions and on the other elsewhere.
    """
    mine = set(owned)
    relevant = [
        (t, t.transaction.partitions & mine)
        for t in transactions
        if t.transaction.committed and len(t.transaction.partitions & mine) >= 2
    ]
    held: set[tuple[str, int]] = set()
    for t, parts in relevant:
        if t.visible(*now) is None:
            held |= parts
    changed = True
    while changed:
        changed = False
        for t, parts in relevant:
            inside = parts & held
            if not inside or inside == parts:
                continue
            at_now = t.visible(*now)
            if any(t.visible(*bases[p]) != at_now for p in inside):
                held |= parts
                changed = True
    return held


@dataclass
class CutCounts:
    """What the cuts have done, for metrics and logs."""

    cuts: int = 0  # cuts taken
    #: Cuts that moved only the partitions no transaction caught mid-markers ties to the others.
    partial_cuts: int = 0
    mid_markers: int = 0  # snapshots dropped: a transaction's markers were being written
    #: Commits made before every partition reached the cut (a cut that did not fill in time).
    split_commits: int = 0
    #: Source transactions over partitions this task does not mirror, by transactional.id (once each).
    spanning: dict[str, frozenset[tuple[str, int]]] = field(default_factory=dict)


class TransactionCuts:
    """The current cut of one task and the cuts taken ahead of it (see the module's docstring)."""

    def __init__(self, transactions: SourceTransactions, admin: AdminClient, log: Log) -> None:
        self.transactions = transactions
        self.admin = admin
        self.log = log
        #: The current cut: the cycle copies up to these offsets and no further.
        self.limits: dict[SourcePartition, int] = {}
        #: The log ends of the snapshot each current limit came from (none after ``reset``).
        self.bases: dict[SourcePartition, LogEnds] = {}
        #: The groups' offsets read at the current cut (None: it was taken without them).
        self.groups_at_cut: Cut | None = None
        #: Cuts taken and not yet moved to, oldest first.
        self.pending: deque[Cut] = deque()
        self.counts = CutCounts()
        #: Source groups of exactly-once applications writing to the task's partitions: their
        #: offsets are read at every cut (``discover_groups``).
        self.groups: list[str] = []
        #: ``__consumer_offsets`` partitions that committed source transactions over the task's
        #: partitions sent offsets to: the coordinators of those applications' groups.
        self.offsets_partitions: set[int] = set()
        self._groups_looked_at = 0.0
        self._offsets_partitions_looked_at: frozenset[int] = frozenset()
        self._last_snapshot = 0.0

    def reset(self, base: Mapping[SourcePartition, int]) -> None:
        """Start again from ``base`` (the committed offsets, after an assignment): nothing past them
        is copied until the next cut."""
        self.limits = dict(base)
        self.bases = {}
        self.groups_at_cut = None
        self.pending.clear()

    def reached(self, positions: Mapping[SourcePartition, int]) -> bool:
        """Whether every partition has been copied up to the current cut."""
        return all(positions.get(tp, -1) >= limit for tp, limit in self.limits.items())

    def advance(self) -> bool:
        """Move to the oldest cut taken ahead; False when there is none."""
        if not self.pending:
            return False
        cut = self.pending.popleft()
        self.limits = cut.limits
        self.bases = cut.bases
        self.groups_at_cut = cut if cut.groups is not None else None
        return True

    def due(self, spacing_s: float) -> bool:
        """Whether a snapshot may be taken now (``spacing_s`` after the last one) and is worth it."""
        return len(self.pending) < _MAX_PENDING and time.monotonic() - self._last_snapshot >= spacing_s

    def snapshot(self, reading: Collection[SourcePartition], *, with_groups: bool = False) -> bool:
        """Take a snapshot of ``reading`` and keep it as a cut when it is one; False when it was not
        (a transaction mid-markers, an LSO that went back) or could not be read. ``with_groups``: the
        ``groups``' committed offsets are read inside the snapshot too, and the cut carries them (a
        transaction that sent offsets and touched a partition read is then in the rule as well)."""
        self._last_snapshot = time.monotonic()
        latest = self.pending[-1].limits if self.pending else self.limits
        groups: dict[str, dict[SourcePartition, int]] | None = None
        try:
            self.transactions.refresh()
            before = self._log_ends()
            lsos = self._lsos(reading)
            if with_groups:
                groups = self._group_offsets(reading)
            if self.transactions.refresh():
                return False  # the source's first transaction began meanwhile: read its log first
            after = self._log_ends()
        except (KafkaException, TimeoutError) as exc:
            self.log.debug("no cut this time: %s", exc)
            return False
        if not self.transactions.read_to(after, _REQUEST_TIMEOUT_S):
            return False
        owned = {(tp.topic, tp.partition) for tp in reading}
        prepared = self.transactions.take_prepared()
        self._report_spanning(prepared, reading)
        for txn in prepared:
            if txn.committed and txn.partitions & owned:
                self.offsets_partitions |= txn.offsets_partitions
        caught = [
            t.transaction
            for t in self.transactions.prepared
            if t.visible(before, after) is None
            and (
                len(t.transaction.partitions & owned) >= 2
                or (groups is not None and t.transaction.sent_offsets and t.transaction.partitions & owned)
            )
        ]
        if any(lsos[tp] < latest.get(tp, 0) for tp in lsos):
            self._forget(before)
            return False  # a new leader not yet at its predecessor's LSO: ask again
        now: LogEnds = (before, after)
        if caught:
            cut = self._partial(lsos, now, owned) if groups is None else None
            self._forget(before)
            if cut is None:
                self.counts.mid_markers += 1
                return False
            self.pending.append(cut)
            self.counts.partial_cuts += 1
            return True
        self._forget(before)
        if groups is None and all(lsos[tp] == latest.get(tp) for tp in lsos) and len(lsos) == len(latest):
            return True  # nothing new
        self.pending.append(Cut(lsos, dict.fromkeys(lsos, now), groups, int(time.time() * 1000)))
        self.counts.cuts += 1
        return True

    def _partial(self, lsos: Mapping[SourcePartition, int], now: LogEnds, owned: set[tuple[str, int]]) -> Cut | None:
        """A cut that moves only the partitions no transaction caught mid-markers ties to the others
        (``held_back``); None when none can move, or when the current limits' snapshots are not all
        known (after a start or an assignment: the first cut is a whole one)."""
        if self.pending or set(self.bases) != set(lsos) or set(self.limits) != set(lsos):
            return None
        bases = {(tp.topic, tp.partition): ends for tp, ends in self.bases.items()}
        held = held_back(self.transactions.prepared, owned, bases, now)
        moving = [tp for tp in lsos if (tp.topic, tp.partition) not in held and lsos[tp] > self.limits[tp]]
        if not moving:
            return None
        limits, cut_bases = dict(self.limits), dict(self.bases)
        for tp in moving:
            limits[tp], cut_bases[tp] = lsos[tp], now
        return Cut(limits, cut_bases, None, int(time.time() * 1000))

    def _forget(self, before: Mapping[int, int]) -> None:
        """Forget the transactions every snapshot still in use saw whole (the oldest base's ends)."""
        floor = dict(before)
        # Partitions share their snapshot's ends: each distinct snapshot once, not once per partition.
        in_use = {id(b): b for b in [*self.bases.values(), *(b for cut in self.pending for b in cut.bases.values())]}
        for ends_before, _ in in_use.values():
            for partition, end in ends_before.items():
                floor[partition] = min(floor.get(partition, end), end)
        self.transactions.forget(floor)

    def discover_groups(self, accepts: Callable[[str], bool], own: Collection[str], every_s: float = 30.0) -> None:
        """Which source groups are read at cuts: those ``accepts`` takes (not the mirror's ``own``)
        whose coordinator partition received offsets in a source transaction over the task's
        partitions. Looked up every ``every_s``, and at once when such a partition is new."""
        now = time.monotonic()
        partitions = frozenset(self.offsets_partitions)
        if not partitions or (
            now - self._groups_looked_at < every_s and partitions == self._offsets_partitions_looked_at
        ):
            return
        self._groups_looked_at, self._offsets_partitions_looked_at = now, partitions
        try:
            listed = self.admin.list_consumer_groups(request_timeout=_REQUEST_TIMEOUT_S).result(_REQUEST_TIMEOUT_S)
            meta = self.admin.list_topics(CONSUMER_OFFSETS_TOPIC, timeout=_REQUEST_TIMEOUT_S).topics
        except (KafkaException, TimeoutError) as exc:
            self.log.debug("source groups not listed this time: %s", exc)
            return
        topic = meta.get(CONSUMER_OFFSETS_TOPIC)
        count = len(topic.partitions) if topic is not None and topic.error is None and topic.partitions else 50
        found = sorted(
            g.group_id
            for g in listed.valid
            if accepts(g.group_id) and g.group_id not in own and coordinator_partition(g.group_id, count) in partitions
        )
        if found != self.groups:
            self.log.info("positions of %s are kept at each cut, with the outputs they match", ", ".join(found))
            self.groups = found
            self.pending.clear()  # cuts taken without these groups' positions would leave them behind

    def _group_offsets(self, reading: Collection[SourcePartition]) -> dict[str, dict[SourcePartition, int]]:
        """The ``groups``' committed offsets on ``reading``, read stable (a pending transactional
        commit is waited out, so what is read is what the last committed transaction left)."""
        out: dict[str, dict[SourcePartition, int]] = {}
        asked = [TopicPartition(tp.topic, tp.partition) for tp in reading]
        for group in self.groups:
            request = [ConsumerGroupTopicPartitions(group, asked)]
            future = self.admin.list_consumer_group_offsets(
                request, require_stable=True, request_timeout=_REQUEST_TIMEOUT_S
            )[group]
            found = future.result(_REQUEST_TIMEOUT_S)
            offsets = {}
            for tp in found.topic_partitions or []:
                if tp.error is not None:
                    # UNSTABLE_OFFSET_COMMIT: a transaction of the app holds offsets not committed yet.
                    # A cut needs every position as the last committed transaction left it: not now.
                    raise KafkaException(tp.error)
                if tp.offset >= 0:
                    offsets[SourcePartition(tp.topic, tp.partition)] = tp.offset
            if offsets:
                out[group] = offsets
        return out

    def _log_ends(self) -> dict[int, int]:
        asked = [TopicPartition(TRANSACTION_STATE_TOPIC, p) for p in self.transactions.partitions]
        if not asked:
            return {}
        futures = self.admin.list_offsets(dict.fromkeys(asked, _LATEST), request_timeout=_REQUEST_TIMEOUT_S)
        return {tp.partition: f.result(_REQUEST_TIMEOUT_S).offset for tp, f in futures.items()}

    def _lsos(self, reading: Iterable[SourcePartition]) -> dict[SourcePartition, int]:
        asked = {TopicPartition(tp.topic, tp.partition): _LATEST for tp in reading}
        if not asked:
            return {}
        futures = self.admin.list_offsets(
            asked, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=_REQUEST_TIMEOUT_S
        )
        return {
            SourcePartition(tp.topic, tp.partition): f.result(_REQUEST_TIMEOUT_S).offset for tp, f in futures.items()
        }

    def _report_spanning(self, prepared: Iterable[SourceTransaction], reading: Collection[SourcePartition]) -> None:
        """A committed source transaction over partitions this task reads and partitions it does not
        cannot be kept whole here: say so once per transactional.id."""
        owned = {(tp.topic, tp.partition) for tp in reading}
        for txn in prepared:
            mine = txn.partitions & owned
            others = txn.partitions - owned
            if not txn.committed or not mine or not others or txn.transactional_id in self.counts.spanning:
                continue
            self.counts.spanning[txn.transactional_id] = txn.partitions
            self.log.warning(
                "source transactions of %s span partitions this task does not mirror (%s beside %s): those "
                "cannot land whole on the target; mirror them with one task (tasks.max) and one connector",
                txn.transactional_id,
                ", ".join(f"{t}-{p}" for t, p in sorted(others)[:10]),
                ", ".join(f"{t}-{p}" for t, p in sorted(mine)[:10]),
            )
