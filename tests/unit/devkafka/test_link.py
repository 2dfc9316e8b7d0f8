"""The link of the WAN benchmark and the network-fault test: every byte arrives, each way late by the
set delay, and nothing passes while it is cut (loopback sockets, no broker)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from devkafka.cluster import free_port
from devkafka.link import Link


@pytest.fixture
def echo_port() -> Iterator[int]:
    """A server that echoes every connection's bytes back, until the client's end of stream."""
    server = socket.create_server(("127.0.0.1", 0))

    def echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def _receive(sock: socket.socket, n: int) -> bytes:
    got = b""
    while len(got) < n:
        chunk = sock.recv(n - len(got))
        if not chunk:
            break
        got += chunk
    return got


def _ended(sock: socket.socket) -> bool:
    """True when the peer ended the connection (a FIN or a reset), not when it answered."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_a_round_trip_pays_the_delay_each_way_and_every_byte_arrives_in_order(echo_port: int) -> None:
    link = Link(free_port(), echo_port, 0.025)
    try:
        with socket.create_connection(("127.0.0.1", link.listen_port)) as sock:
            started = time.monotonic()
            sock.sendall(b"ping")
            assert _receive(sock, 4) == b"ping"
            assert 0.05 <= time.monotonic() - started < 0.5
            payload = bytes(range(256)) * 8192  # 2 MiB, pipelined through the link in chunks
            sender = threading.Thread(target=sock.sendall, args=(payload,))
            sender.start()
            assert _receive(sock, len(payload)) == payload
            sender.join()
            sock.shutdown(socket.SHUT_WR)
            assert sock.recv(1) == b"", "the end of stream is passed on"
    finally:
        link.close()


def test_a_cut_link_passes_nothing_and_resets_what_lived_through_it(echo_port: int) -> None:
    link = Link(free_port(), echo_port)
    try:
        with socket.create_connection(("127.0.0.1", link.listen_port)) as before:
            before.sendall(b"up")
            assert _receive(before, 2) == b"up"
            with link.cut():
                before.sendall(b"lost")
                during = socket.create_connection(("127.0.0.1", link.listen_port), timeout=5)
                during.sendall(b"lost too")
                for sock in (before, during):
                    sock.settimeout(0.5)
                    with pytest.raises(TimeoutError):
                        sock.recv(1)  # silent: nothing refused, nothing answered
            for sock in (before, during):
                sock.settimeout(5)
                assert _ended(sock), "a connection that lived through the cut is reset"
            during.close()
        with socket.create_connection(("127.0.0.1", link.listen_port), timeout=5) as after:
            after.sendall(b"back")
            assert _receive(after, 4) == b"back"
    finally:
        link.close()
