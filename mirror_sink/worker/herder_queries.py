"""The Herder's read side: connector names, configs, info, status and active topics.

Answers only read the Worker's table; configs always leave masked. What only a plugin answers (for
MirrorSink: lag, verification, drills, readiness) the REST API asks the plugin's extension, which
finds the connector through ``connector``.
"""

from __future__ import annotations

from mirror_sink.core.base.states import ConnectorState
from mirror_sink.core.telemetry.metrics import MIRROR
from mirror_sink.worker.connector_plugin import ConnectorPlugin
from mirror_sink.worker.connector_runtime import StateInfo
from mirror_sink.worker.connector_validation import masked
from mirror_sink.worker.herder_types import (
    AssignedState,
    ConnectorInfo,
    ConnectorStatus,
    ConnectorTaskId,
    TaskConfig,
    TaskNotFound,
    TaskStatus,
)
from mirror_sink.worker.status_store import KafkaStatusBackingStore, assigned_worker
from mirror_sink.worker.worker import Worker

__all__ = ["HerderQueries"]


class HerderQueries:
    """What GET requests about connectors answer, in Kafka Connect's terms."""

    def __init__(self, worker: Worker, status: KafkaStatusBackingStore | None = None) -> None:
        self.worker = worker
        #: The worker group's shared status (None: a worker alone, whose tasks are all here).
        self.group_status = status

    def names(self) -> list[str]:
        """Connector names, sorted."""
        with self.worker.lock:
            return sorted(self.worker.stored)

    def first_target(self) -> dict[str, str] | None:
        """Client settings of the first connector's target cluster, resolved and with its security
        settings (for GET /); None without a connector."""
        with self.worker.lock:
            for name in sorted(self.worker.runtimes):
                return dict(self.worker.runtimes[name].connector.settings.target_client)
        return None

    def connector(self, name: str) -> ConnectorPlugin:
        """The running connector ``name`` (NotFound, or Conflict when its stored config is invalid), for
        a plugin's REST extension."""
        return self.worker.running(name).connector

    def config(self, name: str) -> dict[str, str]:
        """The stored config, masked."""
        return masked(self.worker.require(name).config)

    def info(self, name: str) -> ConnectorInfo:
        """The connector's masked config and its tasks (Connect's ConnectorInfo)."""
        stored = self.worker.require(name)
        tasks_max = int(stored.config.get("tasks.max", "1"))
        return ConnectorInfo(
            name=name,
            config=masked(stored.config),
            tasks=tuple(ConnectorTaskId(name, i) for i in range(tasks_max)),
        )

    def task_configs(self, name: str) -> list[TaskConfig]:
        """Each task's masked config, with its ``task.id``."""
        config = masked(self.worker.require(name).config)
        return [TaskConfig(task, {**config, "task.id": str(task.task)}) for task in self.info(name).tasks]

    def status(self, name: str) -> ConnectorStatus:
        """The connector's state and its tasks' (Connect's ConnectorStateInfo)."""
        self.worker.require(name)
        runtime = self.worker.runtimes.get(name)
        if runtime is None:
            connector = StateInfo(ConnectorState.FAILED, "the stored config is invalid")
            tasks: list[StateInfo] = []
        else:
            connector, tasks = runtime.state, runtime.task_states()
        local = runtime.local_task_ids() if runtime is not None else set()
        return ConnectorStatus(
            name=name,
            connector=self._assigned(connector),
            tasks=tuple(TaskStatus(i, self._task(name, i, t, connector, local)) for i, t in enumerate(tasks)),
        )

    def _task(self, name: str, task_id: int, here: StateInfo, connector: StateInfo, local: set[int]) -> AssignedState:
        """A task as this worker sees it, or, in a worker group, as the worker running it reported it."""
        group = self.group_status
        if group is None or task_id in local or connector.state is not ConnectorState.RUNNING:
            return self._assigned(here)
        reported = group.task_state(name, task_id)
        if reported is None:  # its worker has not said yet (or is gone): where it is due to run
            owner = assigned_worker(task_id, group.live_workers()) or self.worker.worker_id
            return AssignedState(ConnectorState.UNASSIGNED, owner, None)
        state, trace, worker_id = reported
        return AssignedState(ConnectorState(state), worker_id, trace)

    def task_status(self, name: str, task_id: int) -> TaskStatus:
        """One task's state."""
        tasks = self.status(name).tasks
        if not 0 <= task_id < len(tasks):
            raise TaskNotFound(name, task_id)
        return tasks[task_id]

    def topics(self, name: str) -> list[str]:
        """Source topics the connector mirrors (Connect's active topics, KIP-558)."""
        return sorted(self.worker.running(name).connector.active_topics())

    def transaction_versions(self, name: str) -> dict[int, int]:
        """Per task running in this worker, the transaction protocol its producer speaks (2: KIP-890
        part 2, 1, 0: at least once); a task not running here is absent."""
        return self.worker.running(name).transaction_versions()

    def mirrored_records(self, name: str) -> int:
        """Records the connector has committed to the target in this process."""
        self.worker.running(name)  # NotFound for an unknown connector
        return MIRROR.records(name)

    def _assigned(self, info: StateInfo) -> AssignedState:
        # Every connector runs on this worker: there is no other to assign it to.
        return AssignedState(info.state, self.worker.worker_id, info.trace or None)
