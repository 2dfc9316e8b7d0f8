"""The worker's REST server: Kafka Connect's API (FastAPI) served by uvicorn until SIGTERM/SIGINT.

Every listener (``listeners`` and ``admin.listeners``, http or https) is bound before the herder
starts and served by its own ``uvicorn.Server`` on one event loop in the main thread, so SIGTERM
still reaches our handler, which stops them all and then the herder.

Its own module so that only the verbs that serve (``worker``, ``mm2``) import FastAPI and uvicorn:
they cost about 0.3 CPU-seconds of start-up that ``mirror-sink run`` and the rest need not pay.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import logging
import signal
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from api.app import create_app
from api.rest_credentials import BasicAuthenticator
from api.security import ListenerApp
from api.tls import server_context
from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.clients import clients
from mirror_sink.core.runtime import build_info
from mirror_sink.core.runtime.process_exit import exit_now
from mirror_sink.worker.herder import Herder
from mirror_sink.worker.worker_config import Listener, WorkerConfig

log = logging.getLogger(__name__)


#: How long one cluster-id lookup may take (a TLS and SASL handshake on a busy machine, too).
_CLUSTER_ID_TIMEOUT_S = 30.0
#: How long GET / waits for a lookup under way before it answers without the id.
_CLUSTER_ID_WAIT_S = 5.0
#: Between failed lookups of one cluster: doubling from the first, up to the last.
_CLUSTER_ID_BACKOFF_S = (2.0, 60.0)


class _ClusterIdReader:
    """The target cluster's id for GET /: the worker's own cluster (reached with the worker's client
    security settings), or the first connector's target.

    Asked in the background: GET / waits for the answer a few seconds at most, and answers ``null``
    while it has not come, however slow the cluster is. The lookup goes on meanwhile, so the id shows
    as soon as the cluster answers; a failed one is tried again by a later GET, with backoff. (A
    lookup cut at 5 s on the request path was not tried again for a minute: a secured cluster slow
    to its first handshake on a busy machine showed no id for that long.)
    """

    def __init__(self, bootstrap: str | None, herder: Herder, client_config: Mapping[str, str] | None) -> None:
        self._own = {"bootstrap.servers": bootstrap, **(client_config or {})} if bootstrap else None
        self._herder = herder
        self._known: dict[str, str] = {}
        self._next_try: dict[str, float] = {}
        self._backoff: dict[str, float] = {}
        self._asking: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def __call__(self) -> str | None:
        settings = self._own or self._herder.queries.first_target()
        if not settings:
            return None
        address = settings["bootstrap.servers"]
        with self._lock:
            if address in self._known or time.monotonic() < self._next_try.get(address, 0):
                return self._known.get(address)
            answered = self._asking.get(address)
            if answered is None:
                answered = self._asking[address] = threading.Event()
                asking = threading.Thread(target=self._ask, args=(dict(settings), answered), daemon=True)
                asking.start()
        answered.wait(_CLUSTER_ID_WAIT_S)
        with self._lock:
            return self._known.get(address)

    def _ask(self, settings: dict[str, str], answered: threading.Event) -> None:
        address = settings["bootstrap.servers"]
        try:
            admin = clients.admin(settings, "worker")
            described = admin.describe_cluster(request_timeout=_CLUSTER_ID_TIMEOUT_S)
            found = str(described.result(_CLUSTER_ID_TIMEOUT_S).cluster_id)
        except Exception as exc:
            first, most = _CLUSTER_ID_BACKOFF_S
            with self._lock:
                wait = self._backoff[address] = min(most, 2 * self._backoff.get(address, first / 2))
                self._next_try[address] = time.monotonic() + wait
                del self._asking[address]
            answered.set()
            log.info("GET /: the cluster id of %s is not known yet (%s); asking again in %.0f s", address, exc, wait)
            return
        with self._lock:
            self._known[address] = found
            del self._asking[address]
        answered.set()


class _Server(uvicorn.Server):
    """uvicorn, minus its signal handling: it re-raises SIGTERM after shutdown, which would kill the
    process before the connectors are stopped gracefully. ``serve`` installs its own handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown, with idle TLS connections let go at once (see ``_abort_closed_tls``)."""
        reaper = asyncio.create_task(self._abort_closed_tls())
        try:
            await super().shutdown(sockets)
        finally:
            reaper.cancel()

    async def _abort_closed_tls(self) -> None:
        # uvicorn closes idle keep-alive connections at once, but over TLS asyncio then waits up to
        # 30 s (its ssl_shutdown_timeout) for the client's close_notify, which an idle client never
        # sends: SIGTERM would reach the herder 30 s late. A transport that is already closing and
        # has nothing left to send has no response to deliver: abort it. Requests still being
        # answered are left alone.
        while True:
            await asyncio.sleep(0.5)
            for connection in list(self.server_state.connections):
                transport = getattr(connection, "transport", None)
                if (
                    isinstance(transport, asyncio.Transport)
                    and transport.is_closing()
                    and transport.get_write_buffer_size() == 0
                ):
                    transport.abort()


class _Config(uvicorn.Config):
    """uvicorn's settings with a ready-made SSLContext (ours does PKCS12 and client authentication,
    which uvicorn's file-name settings cannot express)."""

    def __init__(self, app: ASGIApp, context: ssl.SSLContext | None, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._context = context

    def load(self) -> None:
        """uvicorn's load, then our context in place of the one it would build from files."""
        super().load()
        self.ssl = self._context


@dataclass
class _Endpoint:
    """One bound listener and what it serves."""

    listener: Listener
    socket: socket.socket
    main: bool
    admin: bool
    context: ssl.SSLContext | None

    def describe(self) -> str:
        """The URL and, when it is not everything, what it serves."""
        port = self.socket.getsockname()[1]
        share = "" if self.main and self.admin else (" (admin endpoints only)" if self.admin else " (no admin)")
        return f"{self.listener.scheme}://{self.listener.bind_host}:{port}{share}"


def _plan(config: WorkerConfig) -> list[tuple[Listener, bool, bool]]:
    """(listener, serves the main routes, serves /admin) for every distinct listener."""
    main, admin = config.listener_list, config.admin_listener_list
    if admin is None:  # Connect's default: /admin on the main listeners
        return [(listener, True, True) for listener in main]
    plan = [(listener, True, listener in admin) for listener in main]
    return plan + [(listener, False, True) for listener in admin if listener not in main]


def _bind(listener: Listener, key: str) -> socket.socket:
    host = listener.bind_host
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, listener.port), family=family, backlog=2048)
    except OSError as exc:
        raise ConfigError(key, f"cannot listen on {listener.url}: {exc.strerror or exc}") from None


class RestServer:
    """The worker's REST listeners, prepared before the herder starts so that a bad keystore, a
    credentials file with a plaintext password or a port in use stops the worker at once (a
    ConfigError naming the key and the file) instead of after its connectors started."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        file = config.rest_basic_auth_credentials_file
        self.authenticator = BasicAuthenticator.from_file(file) if file is not None else None
        contexts: dict[bool, ssl.SSLContext] = {}
        self.endpoints: list[_Endpoint] = []
        try:
            for listener, main, admin in _plan(config):
                context = None
                if listener.scheme == "https":
                    kind = not main  # a listener in both lists is a main listener, with the main TLS keys
                    if kind not in contexts:
                        contexts[kind] = server_context(config.https_settings(admin=kind), admin=kind)
                    context = contexts[kind]
                sock = _bind(listener, "listeners" if main else "admin.listeners")
                self.endpoints.append(_Endpoint(listener, sock, main, admin, context))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Release the sockets (when the worker gives up before serving)."""
        for endpoint in self.endpoints:
            endpoint.socket.close()

    def serve(self, herder: Herder) -> int:
        """Run every listener until SIGTERM/SIGINT, then stop every connector gracefully."""
        config = self.config
        app = create_app(
            herder,
            commit=build_info.commit(),
            cluster_id=_ClusterIdReader(config.bootstrap_servers, herder, config.kafka_client_config()),
        )
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        servers = [
            _Server(
                _Config(
                    ListenerApp(app, e.main, e.admin, self.authenticator, config.admin_users),
                    e.context,
                    host=e.listener.bind_host,
                    port=e.listener.port,
                    log_config=None,
                    access_log=False,
                    # One app behind every listener: its lifespan runs once.
                    lifespan="auto" if i == 0 else "off",
                    # SIGTERM is honoured within 10 s: a request still open after 2 s is cut.
                    timeout_graceful_shutdown=2,
                )
            )
            for i, e in enumerate(self.endpoints)
        ]

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            log.info("%s received: stopping the REST API, then the connectors", signal.Signals(signum).name)
            for server in servers:
                server.should_exit = True

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        auth = "basic authentication" if self.authenticator else "no authentication"
        for endpoint in self.endpoints:
            log.info("worker %s: REST API on %s, %s", config.id, endpoint.describe(), auth)
        try:
            asyncio.run(self._run(servers))
        finally:
            log.info("worker %s stopping: tasks finish or abort their transactions, then leave their groups", config.id)
            clean = herder.stop()
            self.close()
        if not clean:
            exit_now(0, "tasks still waiting on a cluster")
        return 0

    async def _run(self, servers: list[_Server]) -> None:
        """Every listener on one event loop; when one stops (a signal, or a failure) all stop."""
        tasks = [asyncio.create_task(s.serve([e.socket])) for s, e in zip(servers, self.endpoints, strict=True)]
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)
        for task in done:
            task.result()  # a listener that failed fails the worker (after the others closed)


def serve(config: WorkerConfig, herder: Herder) -> int:
    """Run the REST API until SIGTERM/SIGINT, then stop every connector gracefully."""
    return RestServer(config).serve(herder)


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
        deadline = Deadline(timeout_s)
        while not self._server.started:
            if deadline.passed or not self._thread.is_alive():
                raise RuntimeError("the REST server did not start (port taken?)")
            time.sleep(0.05)
        return int(self._server.servers[0].sockets[0].getsockname()[1])

    def stop(self) -> None:
        """Stop serving (the herder is the caller's to stop)."""
        self._server.should_exit = True
        self._thread.join(10)
