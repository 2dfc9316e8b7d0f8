"""The worker's REST server: Kafka Connect's API (FastAPI) served by uvicorn until SIGTERM/SIGINT.

Its own module so that only the verbs that serve (``worker``, ``mm2``) import FastAPI and uvicorn:
they cost about 0.3 CPU-seconds of start-up that ``mirror-sink run`` and the rest need not pay.
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn

import mirror_sink
from api.app import create_app
from mirror_sink.core import clients
from mirror_sink.worker.herder import Herder

if TYPE_CHECKING:
    from mirror_sink.worker.worker_config import WorkerConfig

log = logging.getLogger(__name__)


@cache
def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(Path(mirror_sink.__file__).resolve().parents[1]), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )  # fmt: skip
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _cluster_id_reader(bootstrap: str | None, herder: Herder) -> Callable[[], str | None]:
    """The target cluster's id: the worker's own cluster, or the first connector's target."""
    known: dict[str, str] = {}

    def read() -> str | None:
        address = bootstrap or herder.queries.first_target()
        if not address:
            return None
        if address not in known:
            try:
                admin = clients.admin({"bootstrap.servers": address}, "worker")
                known[address] = str(admin.describe_cluster().result(10).cluster_id)
            except Exception:
                return None
        return known[address]

    return read


class _Server(uvicorn.Server):
    """uvicorn, minus its signal handling: it re-raises SIGTERM after shutdown, which would kill the
    process before the connectors are stopped gracefully. ``serve`` installs its own handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def serve(config: WorkerConfig, herder: Herder) -> int:
    """Run the REST API until SIGTERM/SIGINT, then stop every connector gracefully."""
    host, port = config.host_port
    app = create_app(herder, commit=_commit(), cluster_id=_cluster_id_reader(config.bootstrap_servers, herder))
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    server = _Server(uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False))

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("%s received: stopping the REST API, then the connectors", signal.Signals(signum).name)
        server.should_exit = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("worker %s: REST API on http://%s:%d", config.id, host, port)
    try:
        server.run()
    finally:
        log.info("worker %s stopping: tasks finish or abort their transactions, then leave their groups", config.id)
        herder.stop()
    return 0


class BackgroundServer:
    """The REST API on a thread of this process (the demo's worker), on ``port`` or a free one."""

    def __init__(self, herder: Herder, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _Server(
            uvicorn.Config(create_app(herder), host=host, port=port, log_config=None, access_log=False)
        )
        self._thread = threading.Thread(target=self._server.run, name="rest-server", daemon=True)
        self.host = host

    def start(self, timeout_s: float = 30.0) -> int:
        """Serve; returns the port once the server listens."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the REST server did not start (port taken?)")
            time.sleep(0.05)
        return int(self._server.servers[0].sockets[0].getsockname()[1])

    def stop(self) -> None:
        """Stop serving (the herder is the caller's to stop)."""
        self._server.should_exit = True
        self._thread.join(10)
