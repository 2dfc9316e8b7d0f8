"""Can a cluster be reached at all? One line that names the cluster, the addresses and why not.

librdkafka says nothing useful while no bootstrap server answers: its admin calls time out with an
empty error, after 30 s or more. An operator needs to know at once which cluster, which address and
what went wrong: a name that does not resolve, a port that refuses, or an address that never
answers (a firewall dropping packets, a host that is down). A TCP connection to each bootstrap
address tells these apart within seconds. A link can also accept connections and then pass nothing
(a broken WAN path behind a proxy or load balancer, a hung broker): the clients then wait out their
socket timeouts, 60 s by default, saying nothing. So a probe may also ask for a first answer (a
Kafka ApiVersions request, or a TLS handshake on a TLS listener) and count silence as unreachable.
Whether the answer is a good one (certificates, credentials) is the preflight check's business
(``preflight``).
"""

from __future__ import annotations

import errno
import socket
import ssl
import struct
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

#: How long one address may take to accept a TCP connection before it counts as not answering.
CONNECT_TIMEOUT_S = 3.0
#: How long a connected address may take to answer the probe's first request before it counts as
#: silent. Generous: a broker answers ApiVersions from its network thread, at once unless it is hung.
ANSWER_TIMEOUT_S = 10.0
#: Addresses of one cluster tried at the same time.
PROBE_THREADS = 8

#: Asks a connected socket for a first answer: None when something answered, else why not.
Ask = Callable[[socket.socket], str | None]

#: An ApiVersions v0 request (api key 18), correlation id 0, client id "mirror-sink-probe": every
#: Kafka listener answers it before any authentication (KIP-35, KIP-43).
_CLIENT_ID = b"mirror-sink-probe"
_API_VERSIONS = struct.pack(">hhih", 18, 0, 0, len(_CLIENT_ID)) + _CLIENT_ID
_API_VERSIONS_REQUEST = struct.pack(">i", len(_API_VERSIONS)) + _API_VERSIONS


def bootstrap_addresses(bootstrap: str) -> list[tuple[str, int]]:
    """``host:port`` pairs of a ``bootstrap.servers`` value (IPv6 hosts in brackets allowed)."""
    out = []
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        if host and port.isdigit():
            out.append((host.strip("[]"), int(port)))
    return out


def silence(timeout_s: float) -> str:
    """The reason given for an address that accepted a connection and then said nothing."""
    return f"accepts connections but does not answer within {timeout_s:g} s (a broken path behind it, or a hung broker)"


def ask_kafka(timeout_s: float = ANSWER_TIMEOUT_S) -> Ask:
    """Ask a plaintext or SASL listener: send ApiVersions; any byte back, or a closed connection, is an answer."""

    def ask(sock: socket.socket) -> str | None:
        sock.settimeout(timeout_s)
        try:
            sock.sendall(_API_VERSIONS_REQUEST)
            sock.recv(1)
        except TimeoutError:
            return silence(timeout_s)
        except OSError:
            pass  # reset: something is there, and it answered
        return None

    return ask


def ask_tls(timeout_s: float = ANSWER_TIMEOUT_S) -> Ask:
    """Ask a TLS listener: start a handshake; a server hello or a refusal (alert, reset) is an answer.

    Nothing is verified here: a certificate the client refuses is still an answer, and ``preflight``
    names it.
    """
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE

    def ask(sock: socket.socket) -> str | None:
        sock.settimeout(timeout_s)
        try:
            with context.wrap_socket(sock, do_handshake_on_connect=False) as tls:
                tls.do_handshake()
        except TimeoutError:
            return silence(timeout_s)
        except OSError:
            pass  # an alert or a reset is an answer (ssl.SSLError is an OSError)
        return None

    return ask


def connect_failure(host: str, port: int, timeout_s: float = CONNECT_TIMEOUT_S, ask: Ask | None = None) -> str | None:
    """Why ``host:port`` accepts no TCP connection (None: it does), in words an operator can act on;
    with ``ask``, also why a connection it accepts gives no answer (None: it answers)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return f"{host}:{port} does not resolve ({exc.strerror})"
    reasons = []
    for family, kind, proto, _, address in infos:
        sock = socket.socket(family, kind, proto)
        sock.settimeout(timeout_s)
        try:
            sock.connect(address)
            why = None if ask is None else ask(sock)
            if why is None:
                return None
            reasons.append(why)
        except TimeoutError:
            reasons.append(f"no answer within {timeout_s:g} s (packets dropped, or the host is down)")
        except ConnectionRefusedError:
            reasons.append("connection refused (nothing listens on that port)")
        except OSError as exc:
            reasons.append(exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc)))
        finally:
            sock.close()
    shown = address_list(host, infos)
    return f"{host}:{port}{shown}: {'; '.join(dict.fromkeys(reasons))}"


def address_list(host: str, infos: list[tuple[Any, Any, Any, str, Any]]) -> str:
    """`` (1.2.3.4, ...)`` when ``host`` is a name: the addresses it resolved to; "" for a literal address."""
    resolved = list(dict.fromkeys(str(info[4][0]) for info in infos))
    return "" if resolved == [host] else f" ({', '.join(resolved)})"


@dataclass(frozen=True)
class Unreachable:
    """No bootstrap server of a cluster accepted a connection."""

    cluster: str  # "source" or "target"
    alias: str
    reasons: tuple[str, ...]  # one per bootstrap address

    def __str__(self) -> str:
        return f"{self.cluster} cluster {self.alias!r} is unreachable: {'; '.join(self.reasons)}"


def probe(
    cluster: str,
    alias: str,
    bootstrap: str,
    timeout_s: float = CONNECT_TIMEOUT_S,
    failure: Callable[[str, int, float], str | None] = connect_failure,
    *,
    pool: Executor | None = None,
) -> Unreachable | None:
    """``Unreachable`` when none of ``bootstrap``'s addresses accepts a TCP connection (and answers,
    with a ``failure`` that asks); None as soon as one does. The addresses are tried at once, so the
    answer takes at most about ``timeout_s`` (plus the ask's own timeout), and no longer than the
    first healthy address takes: on ``pool`` (a prober that comes back every few seconds keeps one,
    ``PROBE_THREADS`` wide), else on threads made for this probe."""
    addresses = bootstrap_addresses(bootstrap)
    if not addresses:
        return Unreachable(cluster, alias, (f"bootstrap.servers {bootstrap!r} names no host:port",))
    runner = pool or ThreadPoolExecutor(max_workers=min(len(addresses), PROBE_THREADS), thread_name_prefix="probe")
    try:
        futures = {runner.submit(failure, host, port, timeout_s): i for i, (host, port) in enumerate(addresses)}
        reasons: dict[int, str] = {}
        for done in as_completed(futures):
            reason = done.result()
            if reason is None:  # one address answers: the cluster can be reached
                return None
            reasons[futures[done]] = reason
    finally:
        if pool is None:  # the probe's own threads end with their attempts; nobody waits for them
            runner.shutdown(wait=False, cancel_futures=True)
    return Unreachable(cluster, alias, tuple(reasons[i] for i in sorted(reasons)))


class Outage:
    """How long one cluster has been unreachable, and when to say so again (backoff 5, 10, 20, 40, 60 s)."""

    FIRST_REPEAT_S = 5.0
    MAX_REPEAT_S = 60.0

    def __init__(self, now: float) -> None:
        self.since = now
        self._next_say = now
        self._repeat = self.FIRST_REPEAT_S

    def seconds(self, now: float) -> float:
        """Seconds since the cluster was first found unreachable."""
        return now - self.since

    def due(self, now: float) -> bool:
        """True when the line is to be logged (again) now; moves the next time on."""
        if now < self._next_say:
            return False
        self._next_say = now + self._repeat
        self._repeat = min(self._repeat * 2, self.MAX_REPEAT_S)
        return True
