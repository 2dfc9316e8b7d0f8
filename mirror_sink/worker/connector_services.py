"""A connector's background work in the runtime: the plugin's jobs, the cluster watch, maintenance and
the refresh schedule.

The cluster watch is the runtime's own: it runs from the connector's first start until it is STOPPED
and tells the runtime when to wait. The plugin's jobs (``ConnectorPlugin.jobs``) run by their phase:
those beside the tasks start and stop with them, those while active from the first tasks until the
connector is STOPPED. The plugin's maintenance (``maintain``) and its topic refresh run on their own
intervals, when the runtime's tick asks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.runtime.logs import Log
from mirror_sink.worker.cluster_watch import ClusterWatch
from mirror_sink.worker.connector_plugin import ConnectorJob, ConnectorPlugin, JobPhase


@dataclass(frozen=True)
class TaskHelpers:
    """The jobs that run only while the tasks do, taken from the connector to stop with them."""

    jobs: Sequence[ConnectorJob]

    def request_stop(self) -> None:
        """Ask every job to stop at once."""
        for job in self.jobs:
            job.request_stop()

    def join(self, until: Deadline | None = None) -> None:
        """Wait for the jobs asked to stop, 5 s each at most (less when ``until`` is nearer)."""
        for job in self.jobs:
            job.stop(5.0 if until is None else min(5.0, until.left()))


class ConnectorServices:
    """The background work of one connector, each job started once and kept until it is stopped.

    It shares the runtime's lock: the tasks and the jobs that run beside them are started, and taken
    to be stopped, under one hold of it.
    """

    def __init__(self, name: str, connector: ConnectorPlugin, lock: threading.RLock, log: Log) -> None:
        self._name = name
        self._connector = connector
        self._lock = lock
        self._log = log
        self._beside_tasks: list[ConnectorJob] = []
        #: The jobs that run while the connector is RUNNING or PAUSED (None: not started).
        self.active: list[ConnectorJob] | None = None
        self.watch: ClusterWatch | None = None
        self._maintenance: threading.Thread | None = None
        self._next_refresh = 0.0

    def cluster_watch(self) -> ClusterWatch:
        """The cluster watch, started at the first call."""
        with self._lock:
            if self.watch is None:
                settings = self._connector.settings
                self.watch = ClusterWatch(settings.name, settings.clusters, self._log).start()
            return self.watch

    def start_beside_tasks(self) -> None:
        """Start the jobs that run beside the tasks, and those while active unless they run already."""
        with self._lock:
            if not self._beside_tasks:
                self._beside_tasks = list(self._connector.jobs(JobPhase.BESIDE_TASKS))
                for job in self._beside_tasks:
                    job.start()
            if self.active is None:
                self.active = list(self._connector.jobs(JobPhase.WHILE_ACTIVE))
                for job in self.active:
                    job.start()

    def take_task_helpers(self) -> TaskHelpers:
        """The jobs that run only while the tasks do, no longer the connector's: the caller stops them."""
        with self._lock:
            helpers = TaskHelpers(self._beside_tasks)
            self._beside_tasks = []
        return helpers

    def stop_active(self, timeout_s: float = 15.0) -> None:
        """Stop the jobs that run while the connector is RUNNING or PAUSED (it is STOPPED or shut down)."""
        with self._lock:
            active, self.active = self.active, None
        for job in active or []:
            job.stop(timeout_s)

    def stop_watch(self, timeout_s: float = 10.0) -> None:
        """Stop the cluster watch (the connector is STOPPED or shut down)."""
        with self._lock:
            watch, self.watch = self.watch, None
        if watch is not None:
            watch.stop(timeout_s)

    def maintain(self) -> None:
        """The plugin's maintenance when due, unless the last run still goes on."""
        # On its own interval, whether or not topics are refreshed, and on its own thread: its admin
        # calls can take seconds on a slow cluster, which the herder's loop (and /health) must not wait.
        if self._connector.maintenance_due() and not (self._maintenance and self._maintenance.is_alive()):
            self._maintenance = threading.Thread(
                target=self._connector.maintain, name=f"maintain-{self._name}", daemon=True
            )
            self._maintenance.start()

    def schedule_refresh(self) -> None:
        """The next topic refresh is due one refresh interval from now."""
        self._next_refresh = time.monotonic() + self._connector.settings.refresh_interval_s

    def refresh_due(self) -> bool:
        """True when a topic refresh is due, and then the next one is scheduled."""
        if time.monotonic() < self._next_refresh:
            return False
        self.schedule_refresh()
        return True
