"""The benchmarks' WAN link: every byte arrives, each way late by the set delay (loopback sockets, no broker)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from devkafka.cluster import free_port
from devkafka.delay_link import DelayLink


@pytest.fixture
def echo_port() -> Iterator[int]:
    """A server that echoes every connection's bytes back, until the client's end of stream."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

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


def test_a_round_trip_pays_the_delay_each_way_and_every_byte_arrives_in_order(echo_port: int) -> None:
    link = DelayLink(free_port(), echo_port, 0.025)
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
