"""The Worker: the connectors this process runs, each with the stored config it runs with (Connect's name).

The Herder decides what should run and changes this table; its queries and its offsets only read it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.settings.config_providers import resolve
from mirror_sink.worker.config_store import StoredConnector
from mirror_sink.worker.connector_runtime import ConnectorRuntime
from mirror_sink.worker.herder_types import Conflict, ConnectorNotFound
from mirror_sink.worker.target_claims import TargetTopicClaims

__all__ = ["Worker"]

log = logging.getLogger(__name__)

#: How long the tasks of a connector being replaced or deleted may take to finish their cycles.
_REPLACE_BUDGET_S = 90.0


class Worker:
    """Each connector's stored config and target state, and the ConnectorRuntime running it.

    A connector whose stored config does not resolve is known (in ``stored``) but has no runtime.
    Changes happen under ``lock``, which the Herder also holds across a store write and its apply.
    """

    def __init__(self, worker_id: str, task_ids: Callable[[int], list[int]] | None = None) -> None:
        self.worker_id = worker_id
        #: Which task ids of a connector with ``tasks.max`` this worker runs (None: all of them).
        self.task_ids = task_ids
        self.stored: dict[str, StoredConnector] = {}
        self.runtimes: dict[str, ConnectorRuntime] = {}
        self.lock = threading.RLock()
        self.target_claims = TargetTopicClaims()

    def require(self, name: str) -> StoredConnector:
        """The stored connector ``name``; ConnectorNotFound if there is none."""
        stored = self.stored.get(name)
        if stored is None:
            raise ConnectorNotFound(name)
        return stored

    def running(self, name: str) -> ConnectorRuntime:
        """The runtime of ``name``; Conflict when its stored config is invalid (nothing runs)."""
        self.require(name)
        runtime = self.runtimes.get(name)
        if runtime is None:
            raise Conflict(f"Connector {name} has an invalid config and is not running")
        return runtime

    def all_runtimes(self) -> list[ConnectorRuntime]:
        """A snapshot of the runtimes, to tick or stop outside the lock."""
        with self.lock:
            return list(self.runtimes.values())

    def apply(self, name: str, stored: StoredConnector) -> None:
        """Make the runtime match ``stored`` (new config: replace the runtime)."""
        with self.lock:
            previous = self.stored.get(name)
            self.stored[name] = stored
            runtime = self.runtimes.get(name)
            if runtime is None or previous is None or previous.config != stored.config:
                self.remove_runtime(name)
                try:
                    runtime = ConnectorRuntime(
                        name, resolve(stored.config), self.worker_id, self.task_ids, self.target_claims
                    )
                except ConfigError as exc:
                    log.error("connector %s has an invalid stored config: %s", name, exc)
                    return
                self.runtimes[name] = runtime
            runtime.apply(stored.target_state)

    def remove_runtime(self, name: str) -> None:
        """Stop a runtime before anything replaces it: old and new tasks share task slots."""
        runtime = self.runtimes.pop(name, None)
        if runtime is not None:
            # Not the process's quick exit: a successor may start in this process, so every old task
            # is waited for rather than left running beside it.
            runtime.shutdown(budget_s=_REPLACE_BUDGET_S)
