"""Reachability probes on loopback: a refused port, a name that does not resolve, a black hole, and a
listener that accepts connections and then says nothing."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import trustme

from devkafka.link import black_hole, refused_address
from mirror_sink.core.clients.reachability import (
    Outage,
    ask_kafka,
    ask_tls,
    bootstrap_addresses,
    connect_failure,
    probe,
)
from mirror_sink.core.runtime.retry import TryAgain, retry_or_give_up


@pytest.fixture
def refused_port() -> Iterator[int]:
    with refused_address() as address:
        yield int(address.rpartition(":")[2])


@pytest.fixture
def black_hole_port() -> Iterator[int]:
    with black_hole() as address:
        yield int(address.rpartition(":")[2])


@pytest.fixture
def listening_port() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def test_bootstrap_addresses_are_parsed_with_ipv6_brackets_and_spaces() -> None:
    assert bootstrap_addresses("a:1, [::1]:2,b") == [("a", 1), ("::1", 2)]


def test_a_refused_port_is_named_as_refused(refused_port: int) -> None:
    assert connect_failure("127.0.0.1", refused_port) == (
        f"127.0.0.1:{refused_port}: connection refused (nothing listens on that port)"
    )


def test_a_name_that_does_not_resolve_is_named_with_the_resolver_s_reason() -> None:
    reason = connect_failure("no-such-broker.invalid", 9092)
    assert reason is not None and reason.startswith("no-such-broker.invalid:9092 does not resolve (")


def test_a_black_hole_is_named_within_the_connect_timeout(black_hole_port: int) -> None:
    started = time.monotonic()
    reason = connect_failure("127.0.0.1", black_hole_port, timeout_s=0.5)
    assert reason == f"127.0.0.1:{black_hole_port}: no answer within 0.5 s (packets dropped, or the host is down)"
    assert time.monotonic() - started < 2


def test_a_name_shows_the_addresses_it_resolved_to(refused_port: int) -> None:
    reason = connect_failure("localhost", refused_port)
    assert reason is not None and reason.startswith(f"localhost:{refused_port} (")
    assert "127.0.0.1" in reason


def test_a_cluster_is_reachable_when_any_bootstrap_address_accepts(refused_port: int, listening_port: int) -> None:
    assert probe("source", "east", f"127.0.0.1:{refused_port},127.0.0.1:{listening_port}") is None


def test_an_unreachable_cluster_names_itself_and_every_address_at_once(refused_port: int, black_hole_port: int) -> None:
    started = time.monotonic()
    found = probe("source", "east", f"127.0.0.1:{refused_port},127.0.0.1:{black_hole_port}", timeout_s=1.0)
    assert found is not None
    assert str(found) == (
        f"source cluster 'east' is unreachable: 127.0.0.1:{refused_port}: connection refused (nothing listens on "
        f"that port); 127.0.0.1:{black_hole_port}: no answer within 1 s (packets dropped, or the host is down)"
    )
    assert time.monotonic() - started < 2.5, "the addresses are tried at once, not one after the other"


def test_a_bootstrap_value_without_host_and_port_is_said_so() -> None:
    found = probe("target", "west", "broker")
    assert found is not None and "names no host:port" in str(found)


def test_an_outage_is_said_again_with_backoff() -> None:
    outage = Outage(100.0)
    said = [t for t in range(100, 300) if outage.due(float(t))]
    assert said == [100, 105, 115, 135, 175, 235, 295]
    assert outage.seconds(130.0) == 30.0


def test_setting_the_interrupt_ends_a_retry_wait_at_once() -> None:
    stop = threading.Event()
    attempts = []

    def attempt() -> None:
        attempts.append(time.monotonic())
        raise TryAgain("not yet", RuntimeError("cluster never answered"))

    threading.Timer(0.3, stop.set).start()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="cluster never answered"):
        retry_or_give_up(attempt, "start", deadline_s=60, first_delay_s=30, max_delay_s=30, interrupt=stop)
    assert time.monotonic() - started < 2, "the 30 s backoff was cut short"
    assert len(attempts) == 1


def _listening(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """A loopback listener whose thread hands each accepted connection to ``handle``; yields its port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)

        def accept() -> None:
            with contextlib.suppress(OSError):
                while True:
                    handle(server.accept()[0])

        threading.Thread(target=accept, daemon=True).start()
        yield server.getsockname()[1]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """Accepts every connection and never sends a byte, as a link whose far side is gone."""
    held: list[socket.socket] = []
    yield from _listening(held.append)
    for conn in held:
        conn.close()


@pytest.fixture
def answering_port() -> Iterator[int]:
    """Reads a request and answers with a few bytes, as any Kafka listener answers ApiVersions."""

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.recv(64)
            conn.sendall(b"\0\0\0\x04\0\0\0\0")

    yield from _listening(answer)


@pytest.fixture
def tls_port() -> Iterator[int]:
    """A TLS listener with a certificate the probe has never seen; it completes handshakes."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    trustme.CA().issue_cert("broker.test").configure_cert(context)

    def handshake(conn: socket.socket) -> None:
        with contextlib.suppress(OSError), context.wrap_socket(conn, server_side=True) as tls:
            tls.recv(1)

    yield from _listening(handshake)


def test_a_listener_that_accepts_and_stays_silent_is_named_as_silent(silent_port: int) -> None:
    started = time.monotonic()
    for ask in (ask_kafka(0.5), ask_tls(0.5)):
        assert connect_failure("127.0.0.1", silent_port, ask=ask) == (
            f"127.0.0.1:{silent_port}: accepts connections but does not answer within 0.5 s (a broken path behind "
            "it, or a hung broker)"
        )
    assert time.monotonic() - started < 3


def test_a_kafka_listener_that_answers_api_versions_is_reachable(answering_port: int) -> None:
    assert connect_failure("127.0.0.1", answering_port, ask=ask_kafka(5)) is None


def test_a_closed_connection_is_an_answer_and_not_silence(tls_port: int) -> None:
    """ApiVersions sent to a TLS listener is refused at once; that is a cluster that answers."""
    assert connect_failure("127.0.0.1", tls_port, ask=ask_kafka(5)) is None


def test_a_tls_listener_answers_a_handshake_whatever_its_certificate(tls_port: int) -> None:
    assert connect_failure("127.0.0.1", tls_port, ask=ask_tls(5)) is None


def test_a_cluster_whose_every_listener_is_silent_is_unreachable(silent_port: int, answering_port: int) -> None:
    def ask_kafka_briefly(host: str, port: int, timeout_s: float) -> str | None:
        return connect_failure(host, port, timeout_s, ask_kafka(0.5))

    found = probe("source", "east", f"127.0.0.1:{silent_port}", failure=ask_kafka_briefly)
    assert found is not None and str(found).startswith("source cluster 'east' is unreachable: ")
    assert "does not answer within 0.5 s" in str(found)
    both = f"127.0.0.1:{silent_port},127.0.0.1:{answering_port}"
    assert probe("source", "east", both, failure=ask_kafka_briefly) is None


def test_a_cluster_is_reachable_as_soon_as_one_address_answers(silent_port: int, answering_port: int) -> None:
    """A hung broker among healthy ones must not hold every probe for the whole answer timeout."""

    def ask_kafka_patiently(host: str, port: int, timeout_s: float) -> str | None:
        return connect_failure(host, port, timeout_s, ask_kafka(5.0))

    started = time.monotonic()
    both = f"127.0.0.1:{silent_port},127.0.0.1:{answering_port}"
    assert probe("source", "east", both, failure=ask_kafka_patiently) is None
    assert time.monotonic() - started < 2.5, "waited for the silent address"
