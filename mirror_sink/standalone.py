"""Run one connector in this process, without the REST worker: ``mirror-sink run connector.json``."""

from __future__ import annotations

import argparse
import faulthandler
import logging
import signal
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import FrameType

from connectors.mirror_sink_connector import MirrorSinkConnector
from connectors.mirror_sink_task import MirrorSinkTask, TaskState
from mirror_sink.config_files import load_connector_config
from mirror_sink.errors import ConfigError, TaskFailure

log = logging.getLogger(__name__)

_TASK_STOP_TIMEOUT_S = 90.0


class StandaloneRunner:
    """The connector and its ``tasks.max`` tasks as threads of this process."""

    def __init__(self, props: Mapping[str, str], worker_id: str) -> None:
        self.connector = MirrorSinkConnector(props)
        self.worker_id = worker_id
        self.tasks: list[MirrorSinkTask] = []
        self.stopping = threading.Event()

    def run(self) -> int:
        """Mirror until ``stopping`` is set (0) or a task fails (1)."""
        cfg = self.connector.config
        mappings = self.connector.start()
        self.tasks = [MirrorSinkTask(cfg, i, self.worker_id, mappings) for i in range(cfg.tasks_max)]
        for task in self.tasks:
            task.start()
        refresh_s = cfg.refresh_topics_interval_ms / 1000 if cfg.refresh_topics_enabled else None
        next_refresh = time.monotonic() + (refresh_s or 0)
        failed = False
        while not self.stopping.wait(0.5):
            if any(t.state is TaskState.FAILED or not t.is_alive() for t in self.tasks):
                failed = True
                break
            if refresh_s is not None and time.monotonic() >= next_refresh:
                next_refresh = time.monotonic() + refresh_s
                try:
                    if self.connector.refresh():
                        for task in self.tasks:
                            task.update_topics(self.connector.mappings)
                except TaskFailure as exc:
                    log.warning("topic refresh failed (will retry): %s", exc)
        for task in self.tasks:
            task.stop(_TASK_STOP_TIMEOUT_S)
        for task in self.tasks:
            if task.state is TaskState.FAILED:
                log.error("connector %s task %d FAILED:\n%s", cfg.name, task.task_id, task.trace)
        return 1 if failed else 0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``run`` verb."""
    p = subparsers.add_parser(
        "run",
        help="run one connector in this process (no REST worker)",
        description="Mirror with one connector until SIGTERM/SIGINT; exit 1 if a task fails.",
    )
    p.add_argument("config", type=Path, help="connector config: Connect JSON ({name, config}) or .properties")
    p.add_argument(
        "--worker-id",
        default=socket.gethostname(),
        help="this process's identity; task slots (transactional.id, group.instance.id) derive from it. "
        "A restarted process must keep its id; two live processes must not share one (default: hostname)",
    )
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Load the config, run, and turn SIGTERM/SIGINT into a graceful stop."""
    try:
        runner = StandaloneRunner(load_connector_config(args.config), args.worker_id)
    except ConfigError as exc:
        log.error("invalid connector config: %s", exc)
        return 2

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("%s received: finishing the current transaction and stopping", signal.Signals(signum).name)
        runner.stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # Like jstack for a JVM: SIGUSR1 prints every thread's stack, for a mirror that seems stuck.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        return runner.run()
    except TaskFailure as exc:
        log.error("connector %s cannot start: %s", runner.connector.config.name, exc)
        return 1
