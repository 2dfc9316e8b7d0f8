"""Preflight: a broker too slow to finish the TLS handshake is not a refused credential."""

from __future__ import annotations

import socket
import time

import pytest

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.clients.preflight import _check_tls

pytestmark = pytest.mark.unit


def test_a_handshake_that_times_out_is_left_to_the_clients() -> None:
    # A listener that accepts the TCP connection (backlog) but never answers the ClientHello: what
    # a broker on a loaded machine looks like for a few seconds (cc32).
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        started = time.monotonic()
        _check_tls("source", {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL"}, Deadline(0.5))
        assert time.monotonic() - started < 3.0
