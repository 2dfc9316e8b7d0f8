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
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirror_sink.core.logs import Log
from mirror_sink.core.partitions import SourcePartition
from mirror_sink.core.source_transactions import SourceTransaction, SourceTransactions
from mirror_sink.core.transaction_log import TRANSACTION_STATE_TOPIC

#: At most this many cuts are kept ahead of the current one while a backlog is copied.
_MAX_PENDING = 256
_REQUEST_TIMEOUT_S = 10.0
_LATEST = OffsetSpec.latest()  # type: ignore[no-untyped-call]  # confluent-kafka leaves it unannotated


@dataclass
class CutCounts:
    """What the cuts have done, for metrics and logs."""

    cuts: int = 0  # cuts taken
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
        #: Cuts taken and not yet moved to, oldest first.
        self.pending: deque[dict[SourcePartition, int]] = deque()
        self.counts = CutCounts()
        self._last_snapshot = 0.0

    def reset(self, base: Mapping[SourcePartition, int]) -> None:
        """Start again from ``base`` (the committed offsets, after an assignment): nothing past them
        is copied until the next cut."""
        self.limits = dict(base)
        self.pending.clear()

    def reached(self, positions: Mapping[SourcePartition, int]) -> bool:
        """Whether every partition has been copied up to the current cut."""
        return all(positions.get(tp, -1) >= limit for tp, limit in self.limits.items())

    def advance(self) -> bool:
        """Move to the oldest cut taken ahead; False when there is none."""
        if not self.pending:
            return False
        self.limits = self.pending.popleft()
        return True

    def due(self, spacing_s: float) -> bool:
        """Whether a snapshot may be taken now (``spacing_s`` after the last one) and is worth it."""
        return len(self.pending) < _MAX_PENDING and time.monotonic() - self._last_snapshot >= spacing_s

    def snapshot(self, reading: Collection[SourcePartition]) -> bool:
        """Take a snapshot of ``reading`` and keep it as a cut when it is one; False when it was not
        (a transaction mid-markers, an LSO that went back) or could not be read."""
        self._last_snapshot = time.monotonic()
        latest = self.pending[-1] if self.pending else self.limits
        try:
            self.transactions.refresh()
            before = self._log_ends()
            lsos = self._lsos(reading)
            if self.transactions.refresh():
                return False  # the source's first transaction began meanwhile: read its log first
            after = self._log_ends()
        except (KafkaException, TimeoutError) as exc:
            self.log.debug("no cut this time: %s", exc)
            return False
        if not self.transactions.read_to(after, _REQUEST_TIMEOUT_S):
            return False
        self._report_spanning(self.transactions.take_prepared(), reading)
        owned = {(tp.topic, tp.partition) for tp in reading}
        caught = [
            t.transaction
            for t in self.transactions.prepared
            if len(t.transaction.partitions & owned) >= 2 and t.visible(before, after) is None
        ]
        self.transactions.forget(before)
        if caught:
            self.counts.mid_markers += 1
            return False
        if any(lsos[tp] < latest.get(tp, 0) for tp in lsos):
            return False  # a new leader not yet at its predecessor's LSO: ask again
        if all(lsos[tp] == latest.get(tp) for tp in lsos) and len(lsos) == len(latest):
            return True  # nothing new
        self.pending.append(lsos)
        self.counts.cuts += 1
        return True

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
