"""MirrorSinkTask: consume the source, write the target, commit records and source offsets together.

Ownership comes from a *coordination consumer*: a member of the shadow group on the target,
subscribed to the mirrored target topics, whose partitions are paused (it never fetches). Owning
target partition ``T-p`` means mirroring source partition ``S-p``. Each cycle:

    serve the group (rebalances happen here, never inside a cycle)
    -> consume the source (read_committed) -> produce to the same partition number on the target
    -> send the next source offsets with the member's group metadata -> commit

The group metadata carries the member's generation, so the coordinator rejects the offsets of a task
that stalled while its partitions moved on (KIP-447); the transaction then aborts and its records are
never visible. A new owner reads offsets with ``require_stable``, so it waits for a transaction
still open on them rather than reading an older offset.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from confluent_kafka import Consumer, KafkaException, TopicPartition

from connectors.mirror_sink_config import MirrorMode, MirrorSinkConfig, OffsetFallback
from connectors.topic_provisioner import TopicMapping
from mirror_sink.core import clients
from mirror_sink.core.bounded import call_bounded
from mirror_sink.core.data_path import Committer, DataPath
from mirror_sink.core.errors import AbortCycle, RecoverableTaskFailure, TaskFailure
from mirror_sink.core.logs import context_logger
from mirror_sink.core.stable_offsets import read_stable_offsets
from mirror_sink.raw.raw_path import RawPath
from mirror_sink.raw.wire import RawUnsupported, unsupported
from mirror_sink.record.committers import DeliveryTracker
from mirror_sink.record.record_path import RecordPath

SourceTP = tuple[str, int]
TargetTP = tuple[str, int]
RebalanceCallback = Callable[[Consumer, list[TopicPartition]], None]

_PROGRESS_INTERVAL_S = 30.0
_CLOSE_LIMIT_S = 30.0
_MAX_RECOVERIES = 5
_RECOVERY_WINDOW_S = 600.0


class TaskState(StrEnum):
    """Kafka Connect's task states."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    FAILED = "FAILED"
    STOPPED = "STOPPED"


@dataclass
class TaskCounters:
    """What the task has done, for progress logs and status."""

    records: int = 0
    bytes: int = 0
    commits: int = 0
    aborts: int = 0


def task_slot(connector: str, worker_id: str, task_id: int) -> str:
    """The stable identity of a task slot: its transactional.id (a restart fences its predecessor)."""
    return f"{connector}-{worker_id}-{task_id}"


class MirrorSinkTask:
    """One mirroring task; runs in its own thread (``start``/``stop``) or inline (``run``)."""

    def __init__(
        self,
        config: MirrorSinkConfig,
        task_id: int,
        worker_id: str,
        mappings: Mapping[str, TopicMapping],
    ) -> None:
        self.config = config
        self.task_id = task_id
        self.worker_id = worker_id
        self.slot = task_slot(config.name, worker_id, task_id)
        self.log = context_logger(__name__, f"{config.name} task {task_id}")
        self.state = TaskState.UNASSIGNED
        self.trace: str | None = None
        self.counters = TaskCounters()
        self._mappings: dict[str, TopicMapping] = {}
        self._target_of: dict[str, str] = {}
        self._set_mappings(mappings)
        self._pending_mappings: dict[str, TopicMapping] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Ownership: target partitions the group gave us; source partitions we read, with the
        # offset committed on the target for each (the rewind point).
        self._owned: set[TargetTP] = set()
        self._reading: dict[SourceTP, str] = {}
        self._committed: dict[SourceTP, int] = {}
        self._unsaved_start: set[SourceTP] = set()
        self._cycle_bytes = 0
        self._next_commit_at = 0.0
        self._aborting_since: float | None = None
        self._owner_metadata: object = None
        self._callback_error: Exception | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Run in a background thread."""
        self._thread = threading.Thread(target=self.run, name=f"task-{self.slot}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Ask the task to finish its cycle and leave; wait up to ``timeout`` for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def is_alive(self) -> bool:
        """True while the task thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def update_topics(self, mappings: Mapping[str, TopicMapping]) -> None:
        """New topic mappings from the connector; applied between cycles."""
        with self._lock:
            self._pending_mappings = dict(mappings)

    def run(self) -> None:
        """The task body: mirror until stopped; on error end FAILED with the trace.

        A recoverable failure (a wedged or fatally failed client) replaces all clients and goes on,
        up to ``_MAX_RECOVERIES`` times in ``_RECOVERY_WINDOW_S``; the new producer's
        init_transactions aborts whatever the old one left open, so nothing is committed twice.
        """
        recoveries: list[float] = []
        while True:
            try:
                self._open_clients()
                self.state = TaskState.RUNNING
                self._loop()
                self.state = TaskState.STOPPED
                self._close_clients()
                return
            except RecoverableTaskFailure as exc:
                now = time.monotonic()
                recoveries = [t for t in recoveries if now - t < _RECOVERY_WINDOW_S] + [now]
                if len(recoveries) > _MAX_RECOVERIES or self._stop.is_set():
                    self._fail(exc)
                    return
                self.log.warning("recreating the task's clients (%d/%d): %s", len(recoveries), _MAX_RECOVERIES, exc)
                self._close_clients(abandon_producer=True)
                self._stop.wait(min(2.0 * len(recoveries), 10.0))
            except Exception as exc:
                self._fail(exc)
                return

    def _fail(self, exc: Exception) -> None:
        self.state = TaskState.FAILED
        self.trace = traceback.format_exc()
        self.log.error("task FAILED: %s", exc, exc_info=not isinstance(exc, TaskFailure))
        self._abort_quietly()
        self._close_clients()

    # -- clients -----------------------------------------------------------------------------
    def _reset_ownership(self) -> None:
        """Forget partitions: a new member gets its assignment anew (between cycles only)."""
        self._owned.clear()
        self._reading.clear()
        self._committed.clear()
        self._unsaved_start.clear()
        self._cycle_bytes = 0
        self._next_commit_at = 0.0
        self._aborting_since = None
        self._callback_error = None

    def _open_clients(self) -> None:
        cfg = self.config
        self._reset_ownership()
        txn_id = self.slot if cfg.transaction_producer else None
        # The source consumer reads in record mode; in raw mode it only answers offset queries and
        # takes the informational source-group commits.
        self.source: Consumer = clients.source_consumer(
            cfg.source_consumer(), cfg.source_group_id, client_id=f"{self.slot}-source"
        )
        self.path: DataPath = self._open_path(txn_id)
        self.committer: Committer = self.path.committer
        self.member: Consumer = clients.coordination_consumer(
            cfg.target_consumer(), cfg.shadow_group_id, client_id=f"{self.slot}-member"
        )
        guarantee = f"exactly-once, transactional.id {txn_id}" if txn_id else "at-least-once (idempotent producer)"
        self.log.info("starting in %s mode, %s", self.mode, guarantee)
        # Fence the previous holder of this slot first: its open transaction is aborted now, so the
        # stable offset reads below need not wait for its timeout.
        self.committer.start()
        self._subscribe()

    def _open_path(self, transactional_id: str | None) -> DataPath:
        """Raw mode where the clusters and client settings allow it (or it is asked for), else record."""
        cfg = self.config
        if cfg.mirror_mode is not MirrorMode.RECORD:
            blockers = unsupported(cfg.source_consumer()) + unsupported(cfg.target_producer())
            try:
                if blockers:
                    raise RawUnsupported(f"the raw path's client cannot honour {', '.join(blockers)}")
                path = RawPath(
                    source_props=cfg.source_consumer(),
                    target_props=cfg.target_producer(),
                    target_admin_props=cfg.target_admin(),
                    client_id=self.slot,
                    transactional_id=transactional_id,
                    transaction_timeout_ms=cfg.transaction_timeout_ms,
                    group_id=cfg.shadow_group_id,
                    memory_bytes=cfg.buffer_memory,
                    chunk_bytes=max(cfg.transaction_max_bytes // 4, 1),
                    log=self.log,
                )
                self.mode = "raw"
                return path
            except RawUnsupported as exc:
                if cfg.mirror_mode is MirrorMode.RAW:
                    raise
                self.log.warning("mirror.mode=auto falls back to record mode: %s", exc)
        self.mode = "record"
        deliveries = DeliveryTracker()
        producer = clients.target_producer(
            {**cfg.target_producer(), "on_delivery": deliveries},
            client_id=f"{self.slot}-producer",
            transactional_id=transactional_id,
            transaction_timeout_ms=cfg.transaction_timeout_ms,
        )
        timeout_s = cfg.transaction_timeout_ms / 1000
        return RecordPath(
            self.source,
            producer=producer,
            deliveries=deliveries,
            transactional=transactional_id is not None,
            timeout_s=timeout_s,
            log=self.log,
        )

    def _close_clients(self, *, abandon_producer: bool = False) -> None:
        """Close the consumers (bounded: a close can hang on a vanished coordinator) and the writer.

        ``abandon_producer`` keeps a replaced librdkafka producer alive but unused: a call may still
        be blocked in it, and destroying it under that call would crash the process.
        """
        for name in ("member", "source"):
            client = self.__dict__.pop(name, None)
            if client is not None:
                try:
                    call_bounded(f"closing the {name} consumer", client.close, _CLOSE_LIMIT_S)
                except Exception as exc:
                    self.log.warning("closing the %s consumer: %s", name, exc)
        path: DataPath | None = self.__dict__.pop("path", None)
        if path is not None:
            path.close(abandon=abandon_producer)

    def _abort_quietly(self) -> None:
        committer = getattr(self, "committer", None)
        if committer is not None and committer.open:
            try:
                committer.abort()
            except Exception as exc:
                self.log.warning("abort after failure did not complete: %s (the broker aborts it on timeout)", exc)

    def _subscribe(self) -> None:
        topics = sorted(self._mappings)
        if not topics:
            self.log.warning("no topics to mirror yet; waiting for the connector to find some")
            return
        self.member.subscribe(
            topics,
            on_assign=self._guarded(self._on_assign),
            on_revoke=self._guarded(self._on_revoke),
            on_lost=self._guarded(self._on_lost),
        )
        self.log.info("joined shadow group %s for %d target topics", self.config.shadow_group_id, len(topics))

    # -- group callbacks (run inside member.poll, which the loop calls only between cycles) -----
    def _guarded(self, callback: RebalanceCallback) -> RebalanceCallback:
        """Keep a callback's exception for ``_poll_member`` to raise: through librdkafka's C layer it
        would come out as a non-Exception object that no handler catches."""

        def run(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            if consumer is not self.__dict__.get("member"):
                # A member being closed or replaced (close() serves its revocation from another
                # thread): this task's state belongs to the current member, never touch it.
                return
            try:
                callback(consumer, partitions)
            except Exception as exc:
                self._callback_error = self._callback_error or exc

        return run

    def _poll_member(self, timeout: float) -> None:
        """Serve the group: rebalance callbacks run here; a callback's failure is raised here."""
        msg = self.member.poll(timeout)
        if self._callback_error is not None:
            error, self._callback_error = self._callback_error, None
            raise error
        err = msg.error() if msg is not None else None
        if err is not None:
            if err.fatal():
                raise RecoverableTaskFailure(f"shadow group member failed: {err.str()}")
            self.log.warning("shadow group member: %s", err.str())

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.assign(partitions)
        if partitions:
            consumer.pause(partitions)  # ownership only: this member never fetches the target
        self._owned = {(tp.topic, tp.partition) for tp in partitions}
        self.log.info("assigned %d target partitions: %s", len(partitions), _fmt(self._owned))
        self._sync_reading()

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._give_up(partitions, "revoked")
        consumer.unassign()

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.log.warning("group membership lost (session expired?); dropping %d partitions", len(partitions))
        self._give_up(partitions, "lost")
        consumer.unassign()

    def _give_up(self, partitions: list[TopicPartition], why: str) -> None:
        if self.committer.open:
            # Only reachable from close() after a failure: a cycle is never open while the group is served.
            self.committer.abort()
        self._owned -= {(tp.topic, tp.partition) for tp in partitions}
        self.log.info("%s %d target partitions", why, len(partitions))
        self._sync_reading()

    # -- which source partitions to read, and from where --------------------------------------
    def _sync_reading(self) -> None:
        """Make the source assignment match the owned target partitions that exist on the source."""
        desired: dict[SourceTP, str] = {}
        for target_topic, p in self._owned:
            mapping = self._mappings.get(target_topic)
            if mapping is not None and p < mapping.source_partitions:
                desired[(mapping.source_topic, p)] = target_topic
        removed = [tp for tp in self._reading if tp not in desired]
        if removed:
            self.path.unassign(removed)
            for tp in removed:
                del self._reading[tp]
                self._committed.pop(tp, None)
                self._unsaved_start.discard(tp)
        added = {tp: desired[tp] for tp in desired if tp not in self._reading}
        if not added:
            return
        starts = self._start_offsets(added)
        self.path.assign({tp: starts[tp] for tp in added})
        self._reading.update(added)
        self._committed.update(starts)
        self.log.info("reading %d source partitions from %s", len(added), _fmt_offsets(starts))

    def _start_offsets(self, added: Mapping[SourceTP, str]) -> dict[SourceTP, int]:
        """Committed offsets from the shadow group (stable reads); the fallback where there are none."""
        by_target = {(target, p): (src, p) for (src, p), target in added.items()}
        stored = read_stable_offsets(
            self.member, by_target, give_up_after_s=self.config.transaction_timeout_ms / 1000 + 30
        )
        starts: dict[SourceTP, int] = {}
        missing: list[SourceTP] = []
        for target_tp, source_tp in by_target.items():
            offset = stored.get(target_tp)
            if offset is None:
                missing.append(source_tp)
            else:
                starts[source_tp] = offset
        if missing:
            starts.update(self._fallback_offsets(missing))
            # Save the chosen start at once (next cycle), so a restart cannot resolve "latest" again.
            self._unsaved_start.update(missing)
            self._next_commit_at = 0.0
        return starts

    def _fallback_offsets(self, partitions: list[SourceTP]) -> dict[SourceTP, int]:
        fallback = self.config.offset_fallback
        out: dict[SourceTP, int] = {}
        todo = list(partitions)
        if fallback is OffsetFallback.SOURCE_GROUP:
            group = self.config.offset_fallback_group_id
            reader = clients.source_consumer(self.config.source_consumer(), group, f"{self.slot}-copy")
            try:
                copied = read_stable_offsets(reader, todo, give_up_after_s=60)
            finally:
                reader.close()
            for tp, offset in copied.items():
                if offset is not None:
                    out[tp] = offset
            todo = [tp for tp in todo if tp not in out]
            if out:
                self.log.info("copied start offsets once from source group %s: %s", group, _fmt_offsets(out))
        for topic, p in todo:
            # Resolved to a real offset now and saved by the next cycle: a restart must not resolve
            # "latest" again and skip what came between.
            low, high = self._watermarks(topic, p)
            out[(topic, p)] = high if fallback is OffsetFallback.LATEST else low
        if todo:
            self.log.info("no stored offsets for %s; starting at %s", _fmt(todo), fallback.value)
        return out

    def _watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """Log start and last stable offset (the consumer is read_committed) of a source partition."""
        deadline = time.monotonic() + 30
        while True:
            try:
                low, high = self.source.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
                return int(low), int(high)
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise RecoverableTaskFailure(
                        f"cannot read the offsets of source partition {topic}-{partition}: {exc}"
                    ) from exc
                # A partition added moments ago is missing from the consumer's cached metadata until
                # the next refresh, minutes away: ask for it now.
                self.source.list_topics(topic, timeout=10)
                time.sleep(0.2)

    # -- the cycle ----------------------------------------------------------------------------
    def _loop(self) -> None:
        cfg = self.config
        interval_s = cfg.transaction_interval_ms / 1000
        lag_interval_s = cfg.source_group_commit_interval_ms / 1000
        next_lag_commit = time.monotonic() + lag_interval_s
        next_progress = time.monotonic() + _PROGRESS_INTERVAL_S
        while not self._stop.is_set():
            now = time.monotonic()
            if not self.committer.open:
                self._serve_group()
                if lag_interval_s and now >= next_lag_commit:
                    self._commit_source_positions()
                    next_lag_commit = now + lag_interval_s
                if now >= next_progress:
                    self._log_progress()
                    next_progress = now + _PROGRESS_INTERVAL_S
            if not self._reading:
                self._poll_member(0.2) if self._mappings else self._stop.wait(0.2)
                continue
            wait = max(0.0, min(0.1, self._next_commit_at - now))
            try:
                copied = self.path.copy(wait, self._target_of)
            except AbortCycle as exc:
                self._abort_and_rewind(str(exc))
                continue
            self.counters.records += copied.records
            self._cycle_bytes += copied.bytes
            if self._cycle_bytes >= cfg.transaction_max_bytes or time.monotonic() >= self._next_commit_at:
                self._commit_cycle()
                self._next_commit_at = time.monotonic() + interval_s
        if self.committer.open:
            self._commit_cycle()  # graceful stop: finish the cycle rather than throw it away
        self._commit_source_positions()
        self._log_progress()

    def _set_mappings(self, mappings: Mapping[str, TopicMapping]) -> None:
        self._mappings = dict(mappings)
        self._target_of = {m.source_topic: m.target_topic for m in mappings.values()}

    def _commit_cycle(self) -> None:
        """Commit the open cycle (or save advanced positions), or abort it and rewind."""
        offsets = self._offsets_to_commit()
        if not offsets:
            if self.committer.open:
                raise TaskFailure("internal error: records produced but no source offset advanced")
            return
        try:
            self.committer.commit([TopicPartition(t, p, o) for t, p, o in offsets], self.member, self._owner_metadata)
        except AbortCycle as exc:
            self._abort_and_rewind(str(exc))
            return
        for target, p, offset in offsets:
            self._committed[(self._mappings[target].source_topic, p)] = offset
        self._unsaved_start.clear()
        self._aborting_since = None
        self.counters.commits += 1
        self.counters.bytes += self._cycle_bytes
        self._cycle_bytes = 0

    def _offsets_to_commit(self) -> list[tuple[str, int, int]]:
        """(target topic, partition, next source offset) for every partition that moved on.

        The source consumer's position is past every record it returned and also past control
        records and aborted batches, so committing it lets the shadow group reach the source's end
        offsets exactly.
        """
        positions = self.path.positions({tp: self._committed[tp] for tp in self._reading})
        return [
            (self._reading[tp], tp[1], position)
            for tp, position in positions.items()
            if position > self._committed[tp] or tp in self._unsaved_start
        ]

    def _abort_and_rewind(self, reason: str) -> None:
        self.counters.aborts += 1
        now = time.monotonic()
        self._aborting_since = self._aborting_since or now
        self.log.warning("cycle aborted, rewinding to the committed offsets: %s", reason)
        self.committer.abort()
        self._cycle_bytes = 0
        self.path.rewind({tp: self._committed[tp] for tp in self._reading})
        # Aborts from rebalances or broker bounces clear up; ones that last longer than twice the
        # transaction timeout will not.
        give_up_s = 2 * self.config.transaction_timeout_ms / 1000
        if now - self._aborting_since > give_up_s:
            raise TaskFailure(f"every cycle aborted for {now - self._aborting_since:.0f} s; last: {reason}")
        time.sleep(min(0.1 * (1 + now - self._aborting_since), 2.0))

    def _serve_group(self) -> None:
        with self._lock:
            pending, self._pending_mappings = self._pending_mappings, None
        if pending is not None and pending != self._mappings:
            resubscribe = set(pending) != set(self._mappings)
            self._set_mappings(pending)
            if resubscribe:
                self._subscribe()
            self._sync_reading()
        self._poll_member(0)
        # The generation that owns what the next cycle reads: its commit is fenced by it.
        self._owner_metadata = self.member.consumer_group_metadata()

    def _commit_source_positions(self) -> None:
        """Informational: the committed positions into the source group, for lag tooling."""
        if not self._reading or not self.config.source_group_commit_interval_ms:
            return
        offsets = [TopicPartition(t, p, self._committed[(t, p)]) for t, p in self._reading]
        try:
            self.source.commit(offsets=offsets, asynchronous=True)
        except KafkaException as exc:
            self.log.debug("source group commit skipped: %s", exc)

    def _log_progress(self) -> None:
        c = self.counters
        path = self.__dict__.get("path")
        self.log.info(
            "mirrored %d records (%.1f MB) in %d commits, %d aborted; reading %d partitions; %s",
            c.records,
            c.bytes / 1e6,
            c.commits,
            c.aborts,
            len(self._reading),
            path.describe() if path is not None else "closed",
        )


def _fmt(partitions: Iterable[tuple[str, int]]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(partitions)) or "none"


def _fmt_offsets(offsets: Mapping[tuple[str, int], int]) -> str:
    return ", ".join(f"{t}-{p}@{o}" for (t, p), o in sorted(offsets.items()))
