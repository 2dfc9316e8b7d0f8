"""Can a cluster be reached at all? One line that names the cluster, the addresses and why not.

librdkafka says nothing useful while no bootstrap server answers: its admin calls time out with an
empty error, after 30 s or more. An operator needs to know at once which cluster, which address and
what went wrong: a name that does not resolve, a port that refuses, or an address that never
answers (a firewall dropping packets, a host that is down). A TCP connection to each bootstrap
address tells these apart within seconds; TLS and credentials are the preflight check's business
(``preflight``), and a reachable cluster that answers late is the clients'.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

#: How long one address may take to accept a TCP connection before it counts as not answering.
CONNECT_TIMEOUT_S = 3.0
#: Addresses of one cluster tried at the same time.
PROBE_THREADS = 8


def bootstrap_addresses(bootstrap: str) -> list[tuple[str, int]]:
    """``host:port`` pairs of a ``bootstrap.servers`` value (IPv6 hosts in brackets allowed)."""
    out = []
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        if host and port.isdigit():
            out.append((host.strip("[]"), int(port)))
    return out


def connect_failure(host: str, port: int, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why ``host:port`` accepts no TCP connection (None: it does), in words an operator can act on."""
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
            return None
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
    """``Unreachable`` when none of ``bootstrap``'s addresses accepts a TCP connection; None when one
    does. The addresses are tried at once, so the answer takes at most about ``timeout_s``: on
    ``pool`` (a prober that comes back every few seconds keeps one, ``PROBE_THREADS`` wide), else on
    threads made for this probe."""
    addresses = bootstrap_addresses(bootstrap)
    if not addresses:
        return Unreachable(cluster, alias, (f"bootstrap.servers {bootstrap!r} names no host:port",))
    if pool is not None:
        reasons = list(pool.map(lambda a: failure(a[0], a[1], timeout_s), addresses))
    else:
        with ThreadPoolExecutor(max_workers=min(len(addresses), PROBE_THREADS), thread_name_prefix="probe") as own:
            reasons = list(own.map(lambda a: failure(a[0], a[1], timeout_s), addresses))
    if any(r is None for r in reasons):
        return None
    return Unreachable(cluster, alias, tuple(r for r in reasons if r is not None))


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
