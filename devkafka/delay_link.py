"""A WAN link in user space: a broker listener reached through a proxy that holds every byte back.

This machine's kernel has no ``tc netem``, so distance is emulated above TCP: a broker gets a second
listener whose advertised address is a ``DelayLink``, and a client bootstrapped there reaches the
broker only through it. Every chunk read from either side is written to the other ``one_way_delay_s``
later, as it arrives (the link is pipelined, like a long fibre: many requests in flight each pay the
delay once), so a request/response round trip costs ``2 * one_way_delay_s`` more. Bandwidth is not
limited and nothing is lost: what differs from a real WAN is TCP's own window growth over a long
path, which the proxy's large buffers hide.
"""

from __future__ import annotations

import collections
import socket
import threading
import time
from contextlib import suppress

from devkafka.cluster import LocalKafkaCluster, free_port

#: Bytes a direction may hold back before it stops reading (a bound, far above a delay's worth).
_HELD_MAX = 256 << 20
_CHUNK = 1 << 20


def add_linked_listener(cluster: LocalKafkaCluster) -> tuple[int, int]:
    """Give a not yet started single-node ``cluster`` a second listener, LINKED, advertised at a port
    for a proxy in front of it; returns (the listener's port, the proxy's port)."""
    broker_port, link_port = free_port(), free_port()
    state = cluster.state
    cluster.broker_config = {
        **cluster.broker_config,
        "listeners": f"PLAINTEXT://127.0.0.1:{state.port},CONTROLLER://127.0.0.1:{state.controller_port},"
        f"LINKED://127.0.0.1:{broker_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{state.port},LINKED://127.0.0.1:{link_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,LINKED:PLAINTEXT",
    }
    return broker_port, link_port


class DelayLink:
    """Forwards ``127.0.0.1:listen_port`` to ``127.0.0.1:upstream_port``, each way ``one_way_delay_s`` late."""

    def __init__(self, listen_port: int, upstream_port: int, one_way_delay_s: float) -> None:
        self.listen_port, self.upstream_port, self.delay_s = listen_port, upstream_port, one_way_delay_s
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._server = socket.create_server(("127.0.0.1", listen_port))
        threading.Thread(target=self._accept, name=f"delay-link-{listen_port}", daemon=True).start()

    @property
    def address(self) -> str:
        """``host:port`` for a client's bootstrap.servers."""
        return f"127.0.0.1:{self.listen_port}"

    def close(self) -> None:
        """Stop listening and drop every connection."""
        self._closing.set()
        _close(self._server)
        with self._lock:
            for sock in self._sockets:
                _close(sock)

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._server.accept()
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                if self._closing.is_set():
                    return
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._sockets |= {client, upstream}
            _Direction(client, upstream, self.delay_s).start()
            _Direction(upstream, client, self.delay_s).start()


class _Direction:
    """One way of one connection: a reader that stamps chunks, a writer that sends each when due."""

    def __init__(self, src: socket.socket, dst: socket.socket, delay_s: float) -> None:
        self.src, self.dst, self.delay_s = src, dst, delay_s
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.held = 0
        self.broken = False  # the writer failed: the reader stops too
        self.ready = threading.Condition()

    def start(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._write, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = self.src.recv(_CHUNK)
            except OSError:
                data = b""
            with self.ready:
                while self.held > _HELD_MAX and not self.broken:
                    self.ready.wait()
                if self.broken:
                    return
                self.queue.append((time.monotonic() + self.delay_s, data))
                self.held += len(data)
                self.ready.notify_all()
            if not data:  # end of stream (or a failure): passed on in its turn
                return

    def _write(self) -> None:
        while True:
            with self.ready:
                while not self.queue:
                    self.ready.wait()
                due, data = self.queue.popleft()
                self.held -= len(data)
                self.ready.notify_all()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:
                with suppress(OSError):
                    self.dst.shutdown(socket.SHUT_WR)
                return
            try:
                self.dst.sendall(data)
            except OSError:
                with self.ready:
                    self.broken = True
                    self.ready.notify_all()
                _close(self.src)
                _close(self.dst)
                return


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.close()
