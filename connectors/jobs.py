"""MirrorSinkConnector's background jobs, as the runtime runs them (``ConnectorJob``), and the board
where the connector's queries find the ones running now.

Beside the tasks: the checkpoint emitter (MirrorMaker 2's MirrorCheckpointConnector), the background
verifier and the drill watch, each only when offset syncs are written (and the first two when enabled).
While the connector is RUNNING or PAUSED: the lag monitor (a paused mirror's lag grows). The runtime
starts and stops them; a job asked to stop leaves the board at once, so what the REST API and the
readiness score read is only what runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from connectors.lag_monitor import LagMonitor
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.failover.checkpoints.checkpointer import CheckpointEmitter
from mirror_sink.failover.rehearsal.background_verifier import BackgroundVerifier
from mirror_sink.failover.rehearsal.drill_watch import DrillWatch
from mirror_sink.topics.source_discovery import TopicMapping
from mirror_sink.worker.connector_plugin import ConnectorJob, JobPhase

__all__ = ["JobBoard"]


class _Job:
    """One engine job under the runtime's lifecycle; asked to stop, it first leaves the board."""

    def __init__(
        self,
        name: str,
        job: CheckpointEmitter | BackgroundVerifier | DrillWatch | LagMonitor,
        leave: Callable[[object], None],
    ) -> None:
        self.name = name
        self._job = job
        self._leave = leave
        self._stopped = False

    def start(self) -> None:
        self._job.start()

    def request_stop(self) -> None:
        self._leave(self._job)
        if isinstance(self._job, CheckpointEmitter):
            # The emitter is stopped, not only asked to (as it always was): a checkpoint round reads
            # the shadow group the tasks are about to leave, and ends within its own 30 s.
            self._stop_once(None)
        else:
            self._job.request_stop()

    def stop(self, timeout_s: float) -> None:
        self._leave(self._job)
        self._stop_once(timeout_s)

    def _stop_once(self, timeout_s: float | None) -> None:
        if self._stopped and isinstance(self._job, CheckpointEmitter):
            return  # stopped by request_stop: once is enough to say it is late
        self._stopped = True
        if timeout_s is None:
            self._job.stop()
        else:
            self._job.stop(timeout_s)

    def is_alive(self) -> bool:
        return self._job.is_alive()


class JobBoard:
    """The connector's jobs: made on the runtime's request, and the ones running now."""

    def __init__(self, config: MirrorSinkConfig, mappings: Callable[[], Mapping[str, TopicMapping]]) -> None:
        self._config = config
        self._mappings = mappings
        self._lock = threading.Lock()
        self.checkpoints: CheckpointEmitter | None = None
        self.verifier: BackgroundVerifier | None = None
        self.drills: DrillWatch | None = None
        self.lag: LagMonitor | None = None

    def make(self, phase: JobPhase) -> list[ConnectorJob]:
        """New jobs of ``phase``, on the board from now (the runtime starts them)."""
        cfg = self._config
        made: list[ConnectorJob] = []
        with self._lock:
            if phase is JobPhase.WHILE_ACTIVE:
                self.lag = LagMonitor(cfg, self._mappings)
                made.append(_Job(f"lag-{cfg.name}", self.lag, self._leave))
                return made
            if cfg.emit_checkpoints and cfg.offset_syncs_partition is not None:
                self.checkpoints = CheckpointEmitter(cfg)
                made.append(_Job(f"checkpoints-{cfg.name}", self.checkpoints, self._leave))
            if cfg.verify_enabled and cfg.offset_syncs_partition is not None:
                self.verifier = BackgroundVerifier(cfg)
                made.append(_Job(f"verify-{cfg.name}", self.verifier, self._leave))
            if cfg.offset_syncs_partition is not None:  # drills need the syncs
                self.drills = DrillWatch(cfg)
                made.append(_Job(f"drills-{cfg.name}", self.drills, self._leave))
        return made

    def _leave(self, job: object) -> None:
        """Take ``job`` off the board (a newer job of its kind stays)."""
        with self._lock:
            if self.checkpoints is job:
                self.checkpoints = None
            if self.verifier is job:
                self.verifier = None
            if self.drills is job:
                self.drills = None
            if self.lag is job:
                self.lag = None
