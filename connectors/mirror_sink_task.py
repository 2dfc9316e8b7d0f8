"""MirrorSinkTask: consume the source, write the target, commit records and source offsets together.

This module is the task's shell, what Kafka Connect's WorkerTask does: a thread, a lifecycle in
Connect's states, and the recovery policy. The work is done by smaller objects, one run at a time:

- ``TaskRun`` (task_run.py): every client of one run, opened and closed together;
- ``Ownership`` (ownership.py): the shadow group's assignment and the start offsets;
- ``Cycle`` (cycle.py): consume -> produce -> offsets -> commit, or abort and rewind.

A recoverable failure (a wedged or fatally failed client) replaces the run; the new producer's
initialisation fences the old one and aborts whatever it left open, so nothing is committed twice.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Mapping

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import RecoverableTaskFailure, SwitchToRecordMode, TaskFailure
from mirror_sink.core.base.states import TaskState
from mirror_sink.core.runtime.logs import context_logger
from mirror_sink.task.cycle import Cycle, TaskCounters
from mirror_sink.task.ownership import Ownership
from mirror_sink.task.task_run import TaskRun, task_slot
from mirror_sink.topics.source_discovery import TopicMapping

__all__ = ["MirrorSinkTask", "TaskCounters"]

_MAX_RECOVERIES = 5
_RECOVERY_WINDOW_S = 600.0


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
        self.log = context_logger(__name__, f"{config.name} task {task_id}", connector=config.name, task=task_id)
        self.state = TaskState.UNASSIGNED
        self.trace: str | None = None
        self.counters = TaskCounters()
        self._mappings: dict[str, TopicMapping] = dict(mappings)
        self._mappings_changed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

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

    @property
    def transaction_version(self) -> int | None:
        """The transaction protocol its producer speaks (2: KIP-890 part 2, 1, 0: at least once; None
        before its first run knows)."""
        return self.counters.transaction_version

    def update_topics(self, mappings: Mapping[str, TopicMapping]) -> None:
        """New topic mappings from the connector; applied between cycles."""
        with self._lock:
            self._mappings = dict(mappings)
            self._mappings_changed = True

    def _new_mappings(self) -> Mapping[str, TopicMapping] | None:
        """The mappings given since the last call, if any (called by the cycle between cycles)."""
        with self._lock:
            if not self._mappings_changed:
                return None
            self._mappings_changed = False
            return self._mappings

    def run(self) -> None:
        """The task body: mirror until stopped; on error end FAILED with the trace.

        A recoverable failure replaces every client and goes on, up to ``_MAX_RECOVERIES`` times in
        ``_RECOVERY_WINDOW_S``.
        """
        recoveries: list[float] = []
        record_mode = False
        while True:
            run: TaskRun | None = None
            try:
                run = TaskRun(self.config, self.slot, self.log, record_mode=record_mode)
                self._mirror(run)
                run.close()
                # Only now: the member has left the shadow group, so a stopped connector's group is
                # empty for an offsets change (KIP-875) the moment its tasks say STOPPED.
                self.state = TaskState.STOPPED
                return
            except SwitchToRecordMode as exc:
                # Everything is committed: the record path goes on from the committed offsets.
                self.log.warning("mirror.mode=auto switches to record mode: %s", exc)
                record_mode = True
                if run is not None:
                    run.close(rejoining=True)
            except RecoverableTaskFailure as exc:
                now = time.monotonic()
                recoveries = [t for t in recoveries if now - t < _RECOVERY_WINDOW_S] + [now]
                if len(recoveries) > _MAX_RECOVERIES or self._stop.is_set():
                    self._fail(exc, run)
                    return
                self.log.warning("recreating the task's clients (%d/%d): %s", len(recoveries), _MAX_RECOVERIES, exc)
                if run is not None:
                    run.close(abandon_producer=True, rejoining=True)
                # A first recovery (a broker failover fenced or timed out a request) goes on at once;
                # repeated ones back off, so a cluster that keeps failing is not hammered.
                self._stop.wait(min(0.5 * 2 ** (len(recoveries) - 1), 10.0))
            except Exception as exc:
                self._fail(exc, run)
                return

    def _mirror(self, run: TaskRun) -> None:
        """One run: fence the slot's previous holder, join the shadow group, cycle until stopped."""
        with self._lock:
            mappings, self._mappings_changed = self._mappings, False
        ownership = Ownership(run, mappings)
        # Fence the previous holder of this slot first: its open transaction is aborted now, so the
        # stable offset reads of the first assignment need not wait for its timeout.
        run.committer.start()
        ownership.subscribe()
        self.state = TaskState.RUNNING
        Cycle(run, ownership, self.counters, self.task_id).loop(self._stop, self._new_mappings)

    def _fail(self, exc: Exception, run: TaskRun | None) -> None:
        self.state = TaskState.FAILED
        self.trace = traceback.format_exc()
        self.log.error("task FAILED: %s", exc, exc_info=not isinstance(exc, TaskFailure))
        if run is not None:
            run.abort_quietly()
            run.close()
