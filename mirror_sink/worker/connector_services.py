"""A connector's background services: the threads that run beside its tasks.

The cluster watch runs from the connector's first start until it is STOPPED; the lag monitor while
it is RUNNING or PAUSED (a paused mirror's lag grows); the checkpoint emitter (MirrorMaker 2's
MirrorCheckpointConnector), the background verifier and the drill watch while its tasks run; the
topic ACL sync and the topic refresh on their own intervals, when the runtime's tick asks.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.runtime.logs import Log
from mirror_sink.failover.checkpoints.checkpointer import CheckpointEmitter
from mirror_sink.failover.rehearsal.background_verifier import BackgroundVerifier
from mirror_sink.failover.rehearsal.drill_watch import DrillWatch
from mirror_sink.worker.cluster_watch import ClusterWatch
from mirror_sink.worker.connector_plugin import ConnectorPlugin
from mirror_sink.worker.lag_monitor import LagMonitor


@dataclass(frozen=True)
class TaskHelpers:
    """The services that run only while the tasks do, taken from the connector to stop with them."""

    checkpoints: CheckpointEmitter | None
    verifier: BackgroundVerifier | None
    drills: DrillWatch | None

    def request_stop(self) -> None:
        """Ask every helper to stop at once (the checkpoint emitter is stopped here)."""
        for helper in (self.verifier, self.drills):
            if helper is not None:
                helper.request_stop()
        if self.checkpoints is not None:
            self.checkpoints.stop()

    def join(self, until: Deadline | None = None) -> None:
        """Wait for the helpers asked to stop, 5 s each at most (less when ``until`` is nearer)."""
        for helper in (self.verifier, self.drills):
            if helper is not None:
                helper.stop(5.0 if until is None else min(5.0, until.left()))


class ConnectorServices:
    """The background services of one connector, each started once and kept until it is stopped.

    It shares the runtime's lock: the tasks and the helpers that run beside them are started, and
    taken to be stopped, under one hold of it.
    """

    def __init__(self, name: str, connector: ConnectorPlugin, lock: threading.RLock, log: Log) -> None:
        self._name = name
        self._connector = connector
        self._lock = lock
        self._log = log
        self.checkpoints: CheckpointEmitter | None = None
        self.verifier: BackgroundVerifier | None = None
        self.drills: DrillWatch | None = None
        self.lag: LagMonitor | None = None
        self.watch: ClusterWatch | None = None
        self._acl_sync: threading.Thread | None = None
        self._next_refresh = 0.0

    def cluster_watch(self) -> ClusterWatch:
        """The cluster watch, started at the first call."""
        with self._lock:
            if self.watch is None:
                self.watch = ClusterWatch(self._connector.config, self._log).start()
            return self.watch

    def start_beside_tasks(self) -> None:
        """Start each service that runs beside the tasks and does not run yet."""
        cfg = self._connector.config
        with self._lock:
            if cfg.emit_checkpoints and cfg.offset_syncs_partition is not None and self.checkpoints is None:
                self.checkpoints = CheckpointEmitter(cfg)
                self.checkpoints.start()
            if cfg.verify_enabled and cfg.offset_syncs_partition is not None and self.verifier is None:
                self.verifier = BackgroundVerifier(cfg)
                self.verifier.start()
            if cfg.offset_syncs_partition is not None and self.drills is None:  # drills need the syncs
                self.drills = DrillWatch(cfg)
                self.drills.start()
            if self.lag is None:
                self.lag = LagMonitor(cfg, lambda: self._connector.mappings)
                self.lag.start()

    def take_task_helpers(self) -> TaskHelpers:
        """The helpers that run only while the tasks do, no longer the connector's: the caller stops them."""
        with self._lock:
            helpers = TaskHelpers(self.checkpoints, self.verifier, self.drills)
            self.checkpoints, self.verifier, self.drills = None, None, None
        return helpers

    def stop_lag(self, timeout_s: float = 15.0) -> None:
        """The lag is watched while the connector is RUNNING or PAUSED (a paused mirror's lag grows)."""
        with self._lock:
            lag, self.lag = self.lag, None
        if lag is not None:
            lag.stop(timeout_s)

    def stop_watch(self, timeout_s: float = 10.0) -> None:
        """Stop the cluster watch (the connector is STOPPED or shut down)."""
        with self._lock:
            watch, self.watch = self.watch, None
        if watch is not None:
            watch.stop(timeout_s)

    def sync_topic_acls(self) -> None:
        """Sync the topic ACLs when due, unless the last sync still runs."""
        # On its own interval, whether or not topics are refreshed, and on its own thread: its admin
        # calls can take seconds on a slow cluster, which the herder's loop (and /health) must not wait.
        if self._connector.topic_acls_due() and not (self._acl_sync and self._acl_sync.is_alive()):
            self._acl_sync = threading.Thread(
                target=self._connector.sync_topic_acls, name=f"acl-sync-{self._name}", daemon=True
            )
            self._acl_sync.start()

    def schedule_refresh(self) -> None:
        """The next topic refresh is due one ``refresh.topics.interval.ms`` from now."""
        self._next_refresh = time.monotonic() + self._connector.config.refresh_topics_interval_ms / 1000

    def refresh_due(self) -> bool:
        """True when a topic refresh is due, and then the next one is scheduled."""
        if time.monotonic() < self._next_refresh:
            return False
        self.schedule_refresh()
        return True
