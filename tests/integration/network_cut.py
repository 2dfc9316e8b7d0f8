"""A TCP link that a test can cut: every broker connection of a client goes through it.

This machine's kernel has neither netfilter nor tc's netem, drop actions or classifiers, so the cut
is made in user space: a broker gets a second listener whose advertised address is this proxy, and
a client bootstrapped there reaches the broker only through it. While the link is cut, nothing
passes either way and nothing is refused: bytes are read and dropped, new connections accepted and
left silent, as across a broken WAN link. When it is restored, the connections that lived through
the cut are reset (their streams lost bytes midway, as TCP's retransmission timeout would end them)
and new ones pass again.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class CuttableLink:
    """Forwards ``127.0.0.1:listen_port`` to ``127.0.0.1:upstream_port`` until told to cut."""

    def __init__(self, listen_port: int, upstream_port: int) -> None:
        self.listen_port, self.upstream_port = listen_port, upstream_port
        self._cut = threading.Event()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._server = socket.create_server(("127.0.0.1", listen_port), reuse_port=False)
        self._thread = threading.Thread(target=self._accept, name=f"link-{listen_port}", daemon=True)
        self._thread.start()

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
            with self._lock:
                self._sockets.add(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(1 << 16):
                if not self._cut.is_set():
                    dst.sendall(chunk)
        except OSError:
            pass
        _close(src)
        _close(dst)


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
