"""Watches that a connector's two clusters can be reached, and names the one that cannot.

A DR source that is down is an expected state: the mirror waits for it and goes on. What the
operator needs meanwhile is one line, at once and then with backoff, naming the cluster, its
addresses and why it cannot be reached; the same line on the REST status and the status page; and
a gauge of how long it has lasted (``mirror_sink_cluster_unreachable_seconds``). Past the cluster's
give-up setting (``{source,target}.unreachable.give.up.ms``) the connector is FAILED instead.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from mirror_sink.core.clients.reachability import (
    PROBE_THREADS,
    Ask,
    Outage,
    Unreachable,
    ask_kafka,
    ask_tls,
    connect_failure,
    probe,
)
from mirror_sink.core.runtime.logs import Log
from mirror_sink.core.runtime.repeating_job import RepeatingJob
from mirror_sink.core.telemetry.metrics import cluster_unreachable_seconds
from mirror_sink.worker.connector_plugin import WatchedCluster

#: Probing a reachable cluster costs one TCP connection per bootstrap address; an unreachable one
#: is probed more often so that its return is seen soon.
_HEALTHY_INTERVAL_S = 5.0
_OUTAGE_INTERVAL_S = 1.0

Prober = Callable[[str, str, str], Unreachable | None]


class ClusterWatch:
    """Probes the clusters of one connector (its source and target) on a thread of its own."""

    def __init__(
        self, connector: str, clusters: Sequence[WatchedCluster], log: Log, prober: Prober | None = None
    ) -> None:
        self._clusters = {c.role: (c.alias, c.bootstrap, c.give_up_ms) for c in clusters}
        self._connector = connector
        self._log = log
        #: The default prober's connections are tried on threads kept for the watch's life (its
        #: thread shuts them down), not on threads made and joined every round.
        self._pool: ThreadPoolExecutor | None = None
        if prober is None:
            pool = self._pool = ThreadPoolExecutor(PROBE_THREADS, thread_name_prefix=f"probe-{connector}")
            # A connection accepted and then silent is an outage too: ask each listener for an answer.
            asks = {c.role: _ask(c.security_protocol) for c in clusters}

            def prober(cluster: str, alias: str, bootstrap: str) -> Unreachable | None:
                ask = asks[cluster]
                return probe(
                    cluster, alias, bootstrap, failure=lambda h, p, t: connect_failure(h, p, t, ask), pool=pool
                )

        self._probe: Prober = prober
        self._lock = threading.Lock()
        self._outages: dict[str, tuple[Outage, Unreachable]] = {}
        self._checked = threading.Event()  # set once both clusters were probed
        self._job = RepeatingJob(
            f"cluster-watch-{connector}",
            self._probe_both,
            self._interval_s,
            log,
            failure="probe failed",
            finish=self._close,
        )
        for cluster, (alias, _, _) in self._clusters.items():
            cluster_unreachable_seconds.labels(connector, cluster, alias).set(0)

    def start(self) -> ClusterWatch:
        """Begin probing (the first round at once)."""
        self._job.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop probing (waiting up to ``timeout_s`` for a probe under way) and drop this connector's gauges."""
        self._job.stop(timeout_s)
        for cluster, (alias, _, _) in self._clusters.items():
            with contextlib.suppress(KeyError):  # never set: stopped before its first probe
                cluster_unreachable_seconds.remove(self._connector, cluster, alias)

    def is_alive(self) -> bool:
        """True while the probing thread runs."""
        return self._job.is_alive()

    # -- what the runtime asks -------------------------------------------------------------------
    def unreachable(self) -> list[str]:
        """One line per cluster that cannot be reached now, saying for how long (empty: both answer)."""
        now = time.monotonic()
        with self._lock:
            return [f"{what} (for {outage.seconds(now):.0f} s)" for outage, what in self._outages.values()]

    def given_up(self) -> str | None:
        """The line of a cluster unreachable for longer than its give-up setting, if any."""
        now = time.monotonic()
        with self._lock:
            for cluster, (outage, what) in self._outages.items():
                limit_ms = self._clusters[cluster][2]
                if limit_ms >= 0 and outage.seconds(now) * 1000 >= limit_ms:
                    key = f"{cluster}.unreachable.give.up.ms"
                    return f"{what}, for {outage.seconds(now):.0f} s: giving up ({key}={limit_ms})"
        return None

    def wait_checked(self, timeout_s: float) -> bool:
        """Block until both clusters were probed once (True) or ``timeout_s`` passed."""
        return self._checked.wait(timeout_s)

    # -- the thread --------------------------------------------------------------------------------
    def _probe_both(self) -> None:
        for cluster, (alias, bootstrap, _) in self._clusters.items():
            self._record(cluster, alias, self._probe(cluster, alias, bootstrap))
        self._checked.set()

    def _interval_s(self) -> float:
        """Probes come faster during an outage, so its end shows soon."""
        with self._lock:
            return _OUTAGE_INTERVAL_S if self._outages else _HEALTHY_INTERVAL_S

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def _record(self, cluster: str, alias: str, found: Unreachable | None) -> None:
        now = time.monotonic()
        gauge = cluster_unreachable_seconds.labels(self._connector, cluster, alias)
        with self._lock:
            known = self._outages.get(cluster)
            if found is None:
                if known is not None:
                    del self._outages[cluster]
                    self._log.info("%s cluster %r answers again, after %.0f s", cluster, alias, known[0].seconds(now))
                gauge.set(0)
                return
            outage = known[0] if known is not None else Outage(now)
            self._outages[cluster] = (outage, found)
        gauge.set(outage.seconds(now))
        if outage.due(now):
            limit_ms = self._clusters[cluster][2]
            key = f"{cluster}.unreachable.give.up.ms"
            until = "for ever" if limit_ms < 0 else f"for up to {limit_ms / 1000:g} s ({key})"
            self._log.warning("%s, for %.0f s; waiting for it and trying again %s", found, outage.seconds(now), until)


def _ask(security_protocol: str) -> Ask:
    """A TLS handshake for an SSL or SASL_SSL listener, ApiVersions for the others."""
    return ask_tls() if security_protocol.upper().endswith("SSL") else ask_kafka()
