"""Raw mode (KIP-712 shallow mirroring): source batches forwarded byte for byte in target transactions.

Each fetched batch is checked (CRC), filtered (read_committed), and either forwarded with only its
header rewritten, or, when the target would reject it as it is, re-encoded in the same cycle (the
per-batch fallback, counted and logged with its reason). Fetching and producing overlap: the
source is read by a thread of its own (``fetch_thread``) while the task thread produces and
commits, both within one memory budget.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.base.topic_ids import as_uuid
from mirror_sink.core.interfaces.data_path import Copied, FetchSessionCounts, PathSettings, PathStatistics
from mirror_sink.core.runtime.logs import Log
from mirror_sink.core.telemetry.metrics import CycleStats
from mirror_sink.raw.fetch.fetch_thread import FetchThread, TaskWakeup
from mirror_sink.raw.fetch.fetcher import Fetched, RawFetcher
from mirror_sink.raw.forwarder import TARGET_MAX_MESSAGE_BYTES, BatchForwarder
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.wire import WireClient
from mirror_sink.raw.writer import RawWriter

#: Batches per partition queued for the producer beyond those in flight.
_QUEUED_PER_PARTITION = 5
_DEFAULT_FETCH_MAX_BYTES = 50 * 1024 * 1024
_DEFAULT_PARTITION_MAX_BYTES = 1024 * 1024


class RawPath:
    """Fetcher + produce pipeline for one task; the committer wraps the pipeline in target transactions."""

    @classmethod
    def open(cls, settings: PathSettings, log: Log) -> RawPath:
        """The raw path of a task slot: connections to both clusters (the producer id is taken by
        ``committer.start``)."""
        return cls(settings, log)

    def __init__(self, settings: PathSettings, log: Log) -> None:
        source_props, memory_bytes, client_id = settings.source_props, settings.memory_bytes, settings.client_id
        transactional_id, transaction_timeout_ms = settings.transactional_id, settings.transaction_timeout_ms
        self.log = log
        self.budget = MemoryBudget(memory_bytes)
        fetch_max = int(source_props.get("fetch.max.bytes", _DEFAULT_FETCH_MAX_BYTES))
        partition_max = int(source_props.get("max.partition.fetch.bytes", _DEFAULT_PARTITION_MAX_BYTES))
        # A response may exceed its max_bytes by one batch (the first, so progress is always made).
        frame_max = max(fetch_max, memory_bytes) + 2 * max(partition_max, TARGET_MAX_MESSAGE_BYTES)
        source = WireClient(source_props, "source", f"{client_id}-raw-fetcher", frame_max)
        writer: RawWriter | None = None
        try:
            writer = RawWriter.open(
                settings.target_props,
                client_id=f"{client_id}-raw-producer",
                budget=self.budget,
                transactional_id=transactional_id,
                transaction_timeout_ms=transaction_timeout_ms,
                group_id=settings.group_id,
                request_max_bytes=max(1 << 20, min(memory_bytes // 16, 16 << 20)),
                sync_partition=settings.sync_partition,
            )
            self.fetcher = RawFetcher(
                source,
                self.budget,
                fetch_max_bytes=fetch_max,
                partition_max_bytes=partition_max,
                max_wait_ms=int(source_props.get("fetch.wait.max.ms", 100)),
                idle_wait_ms=settings.idle_wait_ms,
            )
        except Exception:  # e.g. RawUnsupported from a version check: no connection left open
            source.close()
            if writer is not None:
                writer.close()
            raise
        #: The target side: connections, transaction client, produce pipeline and committer.
        self.writer = writer
        self.producer = writer.pipeline
        #: New data ends the task thread's wait for the target's acknowledgements.
        self.task_wakeup = TaskWakeup(self.producer.wire)
        self.fetching = FetchThread(self.fetcher, self.task_wakeup, f"{client_id}-fetch")
        # Acknowledgements free memory in copy() and while a commit waits for the last of them: each
        # give-back nudges the fetch thread, which may send what waited for memory.
        self.budget.notify_on_give_back(self.fetching)
        self.committer = writer.committer
        self.forwarder = BatchForwarder(self.producer, self.budget, log)
        self._chunk_bytes = settings.chunk_bytes
        self._position: dict[SourcePartition, int] = {}
        #: The leader epoch of the last batch put in the cycle, per partition (KIP-320).
        self._epoch: dict[SourcePartition, int] = {}
        #: Planned range ends (``stop_at``): nothing at or past them is copied.
        self._stops: dict[SourcePartition, int] = {}
        #: The current cut (``hold_at``): what lies at or past it waits in the fetcher's queues.
        self._holds: dict[SourcePartition, int] = {}
        #: A transactional data batch was put in the cycle since the last commit.
        self._took_transactional = False
        #: Each read partition's target, given with its assignment.
        self._target: dict[SourcePartition, TargetPartition] = {}
        self.fetching.start()

    # -- DataPath -------------------------------------------------------------------------------
    def assign(
        self,
        starts: Mapping[SourcePartition, int],
        targets: Mapping[SourcePartition, TargetPartition],
        topic_ids: Mapping[str, str] | None = None,
        leader_epochs: Mapping[SourcePartition, int] | None = None,
    ) -> None:
        """Fetch these partitions from these offsets for their ``targets``, by the topic ids given
        (Fetch v13+): a topic created again under its name is then never read at the old topic's
        offsets; with the leader epochs given, a log truncated meanwhile is reported by the source
        (KIP-320)."""
        ids = {topic: as_uuid(text) for topic, text in (topic_ids or {}).items()}
        self.fetcher.assign(starts, ids, leader_epochs)
        self._position.update(starts)
        for tp in starts:
            self._epoch.pop(tp, None)
            self._target[tp] = targets[tp]
        self.fetcher.wire.wakeup()  # fetch them now, not at the fetch thread's next look

    def unassign(self, partitions: Iterable[SourcePartition]) -> None:
        """Stop fetching these partitions."""
        tps = list(partitions)
        self.fetcher.unassign(tps)
        for tp in tps:
            self._position.pop(tp, None)
            self._epoch.pop(tp, None)
            self._target.pop(tp, None)

    def limit_batches(self, max_message_bytes: Mapping[str, int]) -> None:
        """Batches for these target topics are re-encoded where larger than their limit."""
        self.forwarder.limits.update(max_message_bytes)

    def rewind(
        self, offsets: Mapping[SourcePartition, int], leader_epochs: Mapping[SourcePartition, int] | None = None
    ) -> None:
        """Fetch again from the committed offsets; what was fetched since is dropped."""
        self.forwarder.forget_stats()
        self.fetcher.seek(offsets, leader_epochs)
        self._position.update(offsets)
        for tp in offsets:
            self._epoch.pop(tp, None)
        self.fetcher.wire.wakeup()

    def stop_at(self, ends: Mapping[SourcePartition, int]) -> None:
        """Copy nothing at or past ``ends``; a batch that crosses one is re-encoded up to it."""
        self._stops.update(ends)

    def hold_at(self, limits: Mapping[SourcePartition, int]) -> None:
        """Take nothing at or past ``limits`` from the fetcher: it stays queued (the queue's byte
        limit stops fetching that partition, within the memory budget) until the limits move on."""
        self._holds = dict(limits)
        self.fetcher.wire.wakeup()

    def holding(self) -> bool:
        """Whether a partition's next fetched item waits at its limit."""
        for tp in self.fetcher.ready():
            limit = self._holds.get(tp)
            if limit is None:
                continue
            item = self.fetcher.peek(tp)
            if item is not None and item.start >= limit:
                return True
        return False

    def took_transactional(self) -> bool:
        """Whether a batch of a source transaction was put in the cycle since the last commit (control
        batches and aborted ones do not count: a marker whose records came before makes nothing visible)."""
        return self._took_transactional

    def forget_transactional(self) -> None:
        """A commit was made."""
        self._took_transactional = False

    def positions(self, committed: Mapping[SourcePartition, int]) -> dict[SourcePartition, int]:
        """Next offset after the last batch (or skipped control/aborted range) put in the cycle."""
        return {tp: self._position.get(tp, offset) for tp, offset in committed.items()}

    def leader_epochs(self) -> dict[SourcePartition, int]:
        """The leader epoch of the last batch put in the cycle, per partition since its (re)start."""
        return dict(self._epoch)

    def copy(self, wait_s: float) -> Copied:
        """Hand the fetched batches to the producer, send, and account acknowledgements.

        Waits up to ``wait_s`` when there was nothing to take; an acknowledgement or news from the
        fetch thread (data, or its failure, raised here) ends the wait sooner.
        """
        self.fetching.check()
        self.task_wakeup.taking()  # before taking: data queued after this point wakes the next wait
        copied, took = self._take()
        self.producer.pump()
        self.producer.wire.poll(0 if took else wait_s)
        self.producer.reap()
        self.producer.pump()
        self.fetching.nudge()  # taken items left room in the fetcher's queues
        return copied

    def close(self, *, abandon: bool = False) -> None:
        """Close both clusters' connections (``abandon`` concerns librdkafka producers only: no call
        of ours can be left blocked in these)."""
        self.fetching.stop()
        self.fetcher.close(close_sessions=not self.fetching.alive)
        self.writer.close()

    def caught_up(self) -> bool:
        """Nothing fetched waits, and every partition has reached the source's last stable offset
        as its latest Fetch response gave it."""
        return self.fetcher.caught_up()

    def record_mode_advised(self) -> str | None:
        """Why record mode would copy this source faster, once the first batches show it; else None."""
        return self.forwarder.record_mode_advised()

    def take_stats(self) -> dict[TargetPartition, CycleStats]:
        """Per target partition: batches' records, bytes and timestamps since the last call."""
        return self.forwarder.take_stats()

    #: Every position move (past control batches and aborted ranges too) is a taken item, which opens the cycle.
    positions_move_unseen = False

    def transaction_version(self) -> int:
        """2 on a target with transactions version 2 finalized, else 1; 0 without transactions."""
        transactions = self.writer.transactions
        return transactions.version if transactions.transactional else 0

    def statistics(self) -> PathStatistics:
        """Batches forwarded as they are and re-encoded by reason; the memory budget (in use, limit,
        peak); the latest transaction's wait for the previous one's markers (its first
        AddPartitionsToTxn in version 1, its first batches' refusals in version 2); the fetcher's
        Fetches by kind, session resets by reason, and the sessions it holds."""
        held = self.fetcher.session_counts()
        return PathStatistics(
            batches=self.forwarder.batch_counts(),
            memory={"in_use": self.budget.used, "limit": self.budget.limit, "peak": self.budget.peak},
            marker_wait_s=self.writer.transaction.marker_wait_s,
            fetch_sessions=FetchSessionCounts(
                dict(self.fetcher.requests), dict(self.fetcher.resets), held["sessions"], held["partitions"]
            ),
        )

    def describe(self) -> str:
        """Batch counts for progress logs."""
        return f"raw mode: {self.forwarder.describe()}; memory peak {self.budget.peak / 1e6:.1f} MB"

    # -- internals ------------------------------------------------------------------------------
    def _take(self) -> tuple[Copied, bool]:
        """Move queued items into the cycle, a bounded chunk per call (the task checks its bounds);
        what they add, and whether there were any."""
        plan: list[tuple[SourcePartition, TargetPartition, Fetched]] = []
        planned_bytes = 0
        for tp in self.fetcher.ready():
            target_tp = self._target[tp]
            room = _QUEUED_PER_PARTITION - self.producer.queued(target_tp)
            stop = self._stops.get(tp)
            hold = self._holds.get(tp)
            while room > 0 and planned_bytes < self._chunk_bytes and (item := self.fetcher.pop(tp, hold)) is not None:
                if stop is not None and item.start >= stop:  # past the planned end: not this range's
                    self.budget.give_back(item.charge)
                    continue
                plan.append((tp, target_tp, item))
                planned_bytes += item.size
                if item.batch is not None:
                    room -= 1
        if not plan:
            return Copied(), False
        records = nbytes = done = 0
        send = self.forwarder.send
        try:
            self.committer.enlist({t for _, t, item in plan if item.batch is not None})
            for tp, target_tp, item in plan:
                if item.batch is not None:
                    if item.header is None or item.header.is_transactional:
                        self._took_transactional = True
                    r, b = send(tp, target_tp, item, self._stops.get(tp))
                    records += r
                    nbytes += b
                stop = self._stops.get(tp)
                self._position[tp] = item.next_offset if stop is None else min(item.next_offset, stop)
                if item.leader_epoch >= 0:
                    self._epoch[tp] = item.leader_epoch
                done += 1
        except BaseException:
            for _, _, item in plan[done:]:  # taken from the fetcher but never handed to the producer
                self.budget.give_back(item.charge)
            raise
        return Copied(records, nbytes), True
