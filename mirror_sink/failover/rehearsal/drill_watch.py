"""The connector's DR drills, as the worker shows them: the kept reports, read every half minute.

``mirror-sink drill`` keeps each report in ``mirror-sink-drills.{source alias}.internal`` on the
target, so any worker can serve them. This reads them on a thread of the connector runtime, keeps
the newest for ``GET /connectors/{name}/drills`` and the status page, and sets the last drill's
time and result as gauges, for the alerts on a failed drill and on no passed drill for too long.
"""

from __future__ import annotations

import contextlib
import datetime
import threading
from typing import Any

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.formats.drills import drills_topic
from mirror_sink.core.runtime.logs import context_logger
from mirror_sink.core.runtime.repeating_job import RepeatingJob
from mirror_sink.core.telemetry.metrics import (
    last_drill_passed,
    last_drill_timestamp_seconds,
    last_passed_drill_timestamp_seconds,
)
from mirror_sink.failover.rehearsal.drill import read_drills

#: How often the reports are read again.
EVERY_S = 30.0
#: How many of the newest reports are kept in memory.
KEEP = 10


class DrillWatch:
    """The connector's kept drill reports, refreshed on a thread of its own."""

    def __init__(self, config: MirrorSinkConfig, every_s: float = EVERY_S) -> None:
        self.config = config
        self.topic = drills_topic(config.source_alias)
        self.every_s = every_s
        self.log = context_logger(__name__, f"{config.name} drills", connector=config.name)
        self._lock = threading.Lock()
        self._reports: list[dict[str, Any]] = []
        self._job = RepeatingJob(
            f"drills-{config.name}",
            self.refresh,
            every_s,
            self.log,
            failure=f"cannot read the drill reports in {self.topic} (retrying)",
        )

    def start(self) -> None:
        """Read the reports now and every ``every_s`` until ``stop``."""
        self._job.start()

    def request_stop(self) -> None:
        """Ask the thread to end after its current read."""
        self._job.request_stop()

    def stop(self, timeout_s: float = 10.0) -> None:
        """``request_stop``, then wait for the thread; the connector's drill series go with it."""
        self._job.stop(timeout_s)
        for series in (last_drill_passed, last_drill_timestamp_seconds, last_passed_drill_timestamp_seconds):
            with contextlib.suppress(KeyError):
                series.remove(self.config.name)

    def is_alive(self) -> bool:
        """True while the thread runs."""
        return self._job.is_alive()

    def reports(self) -> list[dict[str, Any]]:
        """The newest reports, newest first."""
        with self._lock:
            return list(self._reports)

    def refresh(self) -> None:
        """Read the kept reports and publish the newest's time and result."""
        cfg = self.config
        found = read_drills(cfg.target_consumer(), self.topic, cfg.name, f"{cfg.name}-drills")
        newest = list(reversed(found))[:KEEP]
        with self._lock:
            self._reports = newest
        passed = [r for r in found if r.get("outcome") == "passed"]
        last_passed_drill_timestamp_seconds.labels(cfg.name).set(_started_s(passed[-1]) if passed else 0.0)
        if found:
            last_drill_timestamp_seconds.labels(cfg.name).set(_started_s(found[-1]))
            last_drill_passed.labels(cfg.name).set(1.0 if found[-1].get("outcome") == "passed" else 0.0)


def _started_s(report: dict[str, Any]) -> float:
    try:
        return datetime.datetime.fromisoformat(str(report.get("started"))).timestamp()
    except ValueError:
        return 0.0
