"""``mirror-sink run connector.json``: one connector in this process, until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import faulthandler
import logging
import signal
import socket
from pathlib import Path
from types import FrameType

import prometheus_client

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.runtime.process_exit import exit_now
from mirror_sink.core.settings.config_files import load_connector_config
from mirror_sink.standalone import StandaloneRunner

log = logging.getLogger(__name__)


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
        help="this process's identity; task slots (transactional.ids) derive from it. "
        "A restarted process must keep its id; two live processes must not share one (default: hostname)",
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus metrics on http://0.0.0.0:PORT/metrics (default: none)",
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
        runner.request_stop()

    if args.metrics_port is not None:
        prometheus_client.start_http_server(args.metrics_port)
        log.info("metrics on http://0.0.0.0:%d/metrics", args.metrics_port)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # Like jstack for a JVM: SIGUSR1 prints every thread's stack, for a mirror that seems stuck.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    code = runner.run()
    if not runner.clean:
        exit_now(code, "tasks still waiting on a cluster")
    return code
