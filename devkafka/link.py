"""A network link in user space between clients and a broker: late by a set delay (a WAN), and cut on
demand (a partition).

A broker gets a second listener whose advertised address is a ``Link``, and a client bootstrapped
there reaches the broker only through it (``add_linked_listener``); the test's or benchmark's own
clients connect directly.

- **Delay.** Every chunk read from either side is written to the other ``one_way_delay_s`` later, as
  it arrives (the link is pipelined, like a long fibre: many requests in flight each pay the delay
  once), so a request/response round trip costs ``2 * one_way_delay_s`` more. Bandwidth is not
  limited and nothing is lost: what differs from a real WAN is TCP's own window growth over a long
  path, which the link's large buffers hide.
- **Cut.** Inside ``with link.cut():`` nothing passes either way and nothing is refused: bytes are
  read and dropped, new connections accepted and left silent, as across a broken WAN link. When it is
  restored, the connections that lived through the cut are reset (their streams lost bytes midway, as
  TCP's retransmission timeout would end them) and new ones pass again.

Done above TCP rather than with ``tc netem``, so that it needs no privileges and no kernel modules.
"""

from __future__ import annotations

import collections
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from devkafka.cluster import LocalKafkaCluster, free_port

#: Bytes a direction may hold back before it stops reading (a bound, far above a delay's worth).
_HELD_MAX = 256 << 20
_CHUNK = 1 << 20


def add_linked_listener(cluster: LocalKafkaCluster) -> tuple[int, int]:
    """Give a not yet started single-node ``cluster`` a second listener, LINKED, advertised at a port
    for a link in front of it; returns (the listener's port, the link's port)."""
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


class Link:
    """Forwards ``127.0.0.1:listen_port`` to ``127.0.0.1:upstream_port``, each way ``one_way_delay_s``
    late, until told to cut."""

    def __init__(self, listen_port: int, upstream_port: int, one_way_delay_s: float = 0.0) -> None:
        self.listen_port, self.upstream_port, self.delay_s = listen_port, upstream_port, one_way_delay_s
        self._cut = threading.Event()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._server = socket.create_server(("127.0.0.1", listen_port))
        threading.Thread(target=self._accept, name=f"link-{listen_port}", daemon=True).start()

    @property
    def address(self) -> str:
        """``host:port`` for a client's bootstrap.servers."""
        return f"127.0.0.1:{self.listen_port}"

    @contextmanager
    def cut(self) -> Iterator[None]:
        """Inside the block nothing passes; on leaving it, the connections it silenced are reset."""
        self._cut.set()
        try:
            yield
        finally:
            with self._lock:
                silenced, self._sockets = self._sockets, set()
            for sock in silenced:
                _close(sock)
            self._cut.clear()

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
            except OSError:
                return
            with self._lock:
                self._sockets.add(client)
            if self._cut.is_set():
                continue  # accepted, then silent: no upstream until the link is restored (and it is reset)
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                _close(client)
                continue
            upstream.settimeout(None)
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._sockets.add(upstream)
            _Direction(client, upstream, self.delay_s, self._cut).start()
            _Direction(upstream, client, self.delay_s, self._cut).start()


class _Direction:
    """One way of one connection: a reader that stamps chunks, a writer that sends each when due.
    While the link is cut, what either reads is dropped."""

    def __init__(self, src: socket.socket, dst: socket.socket, delay_s: float, cut: threading.Event) -> None:
        self.src, self.dst, self.delay_s, self.cut = src, dst, delay_s, cut
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
            if data and self.cut.is_set():
                continue
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
            if self.cut.is_set():
                continue  # read before the cut, due after it: lost on the way
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
        sock.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        sock.close()


@contextmanager
def refused_address() -> Iterator[str]:
    """A loopback ``host:port`` bound but not listening: every connection to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@contextmanager
def black_hole() -> Iterator[str]:
    """A loopback ``host:port`` that never answers, as an address behind a firewall that drops packets:
    its accept queue (of one) is kept full, and Linux drops the SYNs of further connections."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        address = server.getsockname()
        with socket.create_connection(address, timeout=5):
            yield f"127.0.0.1:{address[1]}"
