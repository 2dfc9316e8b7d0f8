"""The Herder: the worker's connectors, kept in step with the config store (Kafka Connect's name).

Every change is written to the store first and applied second, so a worker killed at any moment
comes back to what was last acknowledged. Answers are the domain values of
:mod:`mirror_sink.worker.herder_types`, refusals its exceptions: the REST API maps both to HTTP.

The Herder itself is the write side (lifecycle, connector CRUD, target states, restarts); reads are
its :class:`~mirror_sink.worker.herder_queries.HerderQueries` (``herder.queries``) and KIP-875
offsets its :class:`~mirror_sink.worker.connector_offsets.ConnectorOffsetsAdmin` (``herder.offsets``),
all three over one :class:`~mirror_sink.worker.worker.Worker`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mirror_sink.core.base.states import ConnectorState, TargetState
from mirror_sink.worker.config_store import ConfigBackingStore, StoredConnector
from mirror_sink.worker.connector_offsets import ConnectorOffsetsAdmin
from mirror_sink.worker.connector_runtime import ConnectorRuntime
from mirror_sink.worker.connector_validation import checked_config
from mirror_sink.worker.herder_queries import HerderQueries
from mirror_sink.worker.herder_types import Conflict, HerderError, TaskNotFound
from mirror_sink.worker.status_store import KafkaStatusBackingStore, assigned_tasks
from mirror_sink.worker.worker import Worker
from mirror_sink.worker.worker_metrics import WORKER_METRICS

__all__ = ["Herder", "HerderError"]

log = logging.getLogger(__name__)

#: States a readiness probe waits no longer for: running, or held as the operator asked.
_SETTLED = frozenset({ConnectorState.RUNNING, ConnectorState.PAUSED, ConnectorState.STOPPED})


class Herder:
    """Owns this worker's connectors: applies the config store to them and changes both on request."""

    def __init__(
        self, worker_id: str, store: ConfigBackingStore, status: KafkaStatusBackingStore | None = None
    ) -> None:
        self.store = store
        #: Shared with the other workers of the group (None: this worker is alone and runs every task).
        self.status = status
        self.worker = Worker(worker_id, self._group_task_ids if status is not None else None)
        self.queries = HerderQueries(self.worker, status)
        self.offsets = ConnectorOffsetsAdmin(self.worker)
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick_loop, name="herder", daemon=True)
        #: When the herder's loop last completed a round (None: not started yet), for /health.
        self.last_tick: float | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Join the worker group (if any), load the stored connectors, start each in its target state,
        begin periodic work."""
        if self.status is not None:
            self.status.start()
        for name, stored in self.store.load().items():
            self.worker.apply(name, stored)
        self.last_tick = time.monotonic()
        WORKER_METRICS.add(self.worker.all_runtimes)
        self._ticker.start()
        log.info("worker %s started with %d connectors", self.worker.worker_id, len(self.worker.stored))

    def stop(self) -> bool:
        """Stop every connector gracefully, all at once and each within its budget; True when nothing
        was left running (a task still waiting on a cluster at the deadline is left)."""
        self._stop.set()
        WORKER_METRICS.remove(self.worker.all_runtimes)
        runtimes = self.worker.all_runtimes()
        clean = True
        if runtimes:
            with ThreadPoolExecutor(max_workers=len(runtimes), thread_name_prefix="shutdown") as pool:
                clean = all(pool.map(lambda r: r.shutdown(), runtimes))
        if self.status is not None:
            self.status.close()
        self.store.close()
        return clean

    def _tick_loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                for name, stored in self.store.changes().items():
                    self._apply_remote(name, stored)
            except Exception as exc:
                log.warning("reading config store changes failed (will retry): %s", exc)
            for runtime in self.worker.all_runtimes():
                runtime.tick()
                self._report(runtime)
            self.last_tick = time.monotonic()

    def _group_task_ids(self, tasks_max: int) -> list[int]:
        """This worker's share of a connector's task ids in the worker group."""
        assert self.status is not None
        return assigned_tasks(tasks_max, self.status.live_workers(), self.worker.worker_id)

    def _report(self, runtime: ConnectorRuntime) -> None:
        """Tell the group the state of each task this worker runs."""
        if self.status is None:
            return
        local = runtime.local_task_ids()
        self.status.forget(runtime.name, {i for i in range(runtime.connector.settings.tasks_max) if i not in local})
        states = runtime.task_states()
        for i in local:
            self.status.report(runtime.name, i, states[i].state.value, states[i].trace)

    def health(self, stuck_after_s: float = 10.0) -> tuple[str, str]:
        """KIP-1017: ("healthy" | "starting" | "unhealthy", a message)."""
        if self.last_tick is None:
            return "starting", "Worker is still starting up."
        idle = time.monotonic() - self.last_tick
        if idle > stuck_after_s:
            return "unhealthy", f"Worker's herder loop has not completed a round for {idle:.0f} s."
        return "healthy", "Worker has completed startup and is ready to handle requests."

    def readiness(self) -> tuple[bool, str]:
        """Ready once healthy and every connector and task this worker runs is RUNNING, or PAUSED or
        STOPPED as asked (Kubernetes' readiness probe: a rollout waits for it before the next pod)."""
        status, message = self.health()
        if status != "healthy":
            return False, message
        here = self.worker.worker_id
        waiting = []
        for name in self.queries.names():
            found = self.queries.status(name)
            states = [(name, found.connector)] + [(f"{name} task {t.id}", t.status) for t in found.tasks]
            waiting += [
                f"{what} is {state.state}"
                for what, state in states
                if state.worker_id == here and state.state not in _SETTLED
            ]
        if waiting:
            return False, "Not every connector and task of this worker runs yet: " + "; ".join(waiting) + "."
        return True, "Every connector and task of this worker runs."

    def _apply_remote(self, name: str, stored: StoredConnector | None) -> None:
        """Apply another worker's change to the shared store (None: the connector was deleted)."""
        with self.worker.lock:
            if stored is None:
                self.worker.remove_runtime(name)
                self.worker.stored.pop(name, None)
                if self.status is not None:
                    self.status.forget(name)
            else:
                self.worker.apply(name, stored)

    # -- connectors ----------------------------------------------------------------------------
    def create(self, name: str, config: Mapping[str, Any], initial_state: TargetState) -> None:
        """POST /connectors: Conflict if ``name`` exists."""
        with self.worker.lock:
            if name in self.worker.stored:
                raise Conflict(f"Connector {name} already exists")
            stored = StoredConnector(checked_config(name, config), initial_state)
            self.store.put(name, stored)
            self.worker.apply(name, stored)

    def put_config(self, name: str, config: Mapping[str, Any]) -> bool:
        """PUT /connectors/{name}/config: create or replace; True when created."""
        with self.worker.lock:
            props = checked_config(name, config)
            previous = self.worker.stored.get(name)
            stored = StoredConnector(props, previous.target_state if previous else TargetState.RUNNING)
            self.store.put(name, stored)
            self.worker.apply(name, stored)
            return previous is None

    def declare(self, name: str, config: Mapping[str, Any]) -> str:
        """Make ``name`` run ``config`` (a declared connector, e.g. from a Kubernetes ConfigMap):
        "created", "updated", or "unchanged" when it already has that config, which then keeps running
        untouched, as each worker of a group re-declares the same files at its start."""
        with self.worker.lock:
            previous = self.worker.stored.get(name)
            if previous is not None and previous.config == checked_config(name, config):
                return "unchanged"
            return "created" if self.put_config(name, config) else "updated"

    def patch_config(self, name: str, patch: Mapping[str, Any]) -> None:
        """PATCH /connectors/{name}/config: merge, a null value deletes the key."""
        with self.worker.lock:
            current = dict(self.worker.require(name).config)
            for key, value in patch.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = str(value)
            self.put_config(name, current)

    def delete(self, name: str) -> None:
        """DELETE /connectors/{name}: stop it and forget it (its shadow group stays on the target)."""
        with self.worker.lock:
            self.worker.require(name)
            self.store.delete(name)
            self.worker.stored.pop(name, None)
            self.worker.remove_runtime(name)
            if self.status is not None:
                self.status.forget(name)

    # -- target states and restarts ------------------------------------------------------------
    def set_target_state(self, name: str, target: TargetState) -> None:
        """pause / resume / stop."""
        with self.worker.lock:
            stored = self.worker.require(name)
            updated = StoredConnector(stored.config, target)
            self.store.put(name, updated)
            self.worker.apply(name, updated)

    def restart(self, name: str, *, include_tasks: bool, only_failed: bool) -> None:
        """POST /connectors/{name}/restart."""
        self.worker.running(name).restart(include_tasks=include_tasks, only_failed=only_failed)

    def restart_task(self, name: str, task_id: int) -> None:
        """POST /connectors/{name}/tasks/{id}/restart."""
        runtime = self.worker.running(name)
        if not 0 <= task_id < runtime.connector.settings.tasks_max:
            raise TaskNotFound(name, task_id)
        runtime.restart_task(task_id)

    def reset_topics(self, name: str) -> None:
        """PUT /connectors/{name}/topics/reset: the set is recomputed at the next refresh."""
        self.worker.running(name).connector.reset_active_topics()
