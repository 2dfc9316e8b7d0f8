"""Run one connector in this process, without the REST worker (``mirror-sink run connector.json``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

from mirror_sink.core.base.states import ConnectorState, TargetState
from mirror_sink.worker.connector_runtime import ConnectorRuntime
from mirror_sink.worker.worker_metrics import WORKER_METRICS

log = logging.getLogger(__name__)


class StandaloneRunner:
    """One connector and its ``tasks.max`` tasks in this process, without the REST worker."""

    def __init__(self, props: Mapping[str, str], worker_id: str) -> None:
        self.runtime = ConnectorRuntime(str(props.get("name", "")), props, worker_id)
        self._stop_requested = False
        #: False when the stop had to leave a thread waiting on a cluster (see ``process_exit``).
        self.clean = True
        self._tick_failed = False

    def request_stop(self) -> None:
        """Ask ``run`` to stop. Safe in a signal handler: it takes no lock.

        (``threading.Event.set`` there can deadlock: the handler runs in the main thread, which may
        hold that very Event's lock inside ``Event.wait``. Seen as a mirror ignoring SIGTERM.)
        """
        self._stop_requested = True

    def _tick_loop(self, done: threading.Event) -> None:
        try:
            while not done.wait(0.5):
                self.runtime.tick()
        except Exception:
            log.exception("connector %s: periodic work failed", self.runtime.name)
            self._tick_failed = True

    def run(self) -> int:
        """Mirror until ``request_stop`` (0) or until the connector or a task fails (1)."""
        runtime = self.runtime

        def reported() -> list[ConnectorRuntime]:
            return [runtime]

        WORKER_METRICS.add(reported)
        runtime.apply(TargetState.RUNNING)
        # Periodic work runs on a thread of its own: a topic refresh can wait 30 s on a cluster that
        # does not answer, and Python runs a signal handler only when the main thread is free.
        ticks_done = threading.Event()
        ticker = threading.Thread(target=self._tick_loop, args=(ticks_done,), name="ticker", daemon=True)
        ticker.start()
        failed = False
        while True:
            time.sleep(0.5)
            if self._stop_requested:
                break
            if runtime.failed() or self._tick_failed:
                failed = True
                break
        ticks_done.set()
        # Read before the shutdown, which empties the task set: every task would read UNASSIGNED after it.
        task_states = runtime.task_states()
        self.clean = runtime.shutdown()
        WORKER_METRICS.remove(reported)
        for i, info in enumerate(task_states):
            if info.state is ConnectorState.FAILED:
                log.error("connector %s task %d FAILED:\n%s", runtime.name, i, info.trace)
        if runtime.state.state is ConnectorState.FAILED:
            log.error("connector %s FAILED:\n%s", runtime.name, runtime.state.trace)
        return 1 if failed else 0
