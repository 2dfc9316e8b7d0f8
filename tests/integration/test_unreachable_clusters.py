"""A cluster that cannot be reached is named at once, the wait ends at SIGTERM, and a give-up key ends it.

Each kind of unreachable address on its own: a refused port, an address that never answers (a full
accept queue: Linux drops the SYNs, as a dropping firewall does) and a name that does not resolve.
The other cluster is the shared pair's, so only the cluster under test is missing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import httpx
import pytest

from devkafka.endpoints import KafkaEndpoint
from devkafka.link import black_hole, refused_address
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.processes import ChildProcess, WorkerProcess
from tests.integration.harness.topics import Unique
from tests.integration.harness.waiting import wait_until

#: What the issue asks of the first line: within 10 s of start.
FIRST_LINE_S = 10.0
#: And of SIGTERM in that state: honoured within 10 s.
STOP_S = 10.0


@contextmanager
def unresolvable() -> Iterator[str]:
    yield "no-such-broker.invalid:9092"


ADDRESSES: dict[str, tuple[Callable[[], AbstractContextManager[str]], str]] = {
    "refused": (refused_address, "connection refused (nothing listens on that port)"),
    "black-hole": (black_hole, "no answer within 3 s (packets dropped, or the host is down)"),
    "unresolvable": (unresolvable, "does not resolve ("),
}


def first_line(process: ChildProcess, pattern: str, timeout: float) -> tuple[float, str]:
    """Seconds until a log line matching ``pattern`` appears, and the line."""
    started = time.monotonic()
    found: list[str] = []

    def seen() -> bool:
        found[:] = [line for line in process.log_text().splitlines() if re.search(pattern, line)]
        return bool(found)

    wait_until(seen, timeout, f"a line matching {pattern!r}\n{process.log_tail()}")
    return time.monotonic() - started, found[0]


@pytest.mark.parametrize("kind", list(ADDRESSES))
def test_an_unreachable_source_is_named_at_once_and_sigterm_ends_the_wait(
    kind: str, source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, mirror: MirrorFactory
) -> None:
    make_address, reason = ADDRESSES[kind]
    with make_address() as address:
        name = unique(f"unreachable-{kind}")
        config = mirror_config(
            name,
            source,
            target,
            unique("topic"),
            **{"source.cluster.bootstrap.servers": address, "source.cluster.alias": "east"},
        )
        proc = mirror(config).start()
        started = time.monotonic()
        seconds, line = first_line(proc, "source cluster 'east' is unreachable", FIRST_LINE_S + 20)
        assert seconds < FIRST_LINE_S, f"the first line came after {seconds:.1f} s: {line}"
        assert f"{address}" in line and reason in line, line
        assert "waiting for it and trying again for ever" in line, line
        # It keeps waiting (the source's give-up is off by default), saying so again with backoff.
        wait_until(lambda: proc.log_text().count("is unreachable") >= 2, 30, "the line said again")
        assert proc.alive(), proc.log_tail()
        assert "connector FAILED" not in proc.log_text()
        asked = time.monotonic()
        code = proc.stop(timeout=30)
        stopped_in = time.monotonic() - asked
        waited = asked - started
        print(f"{kind}: first line after {seconds:.1f} s; SIGTERM after {waited:.0f} s honoured in {stopped_in:.1f} s")
        assert code == 0, proc.log_tail()
        assert stopped_in < STOP_S, f"SIGTERM took {stopped_in:.1f} s\n{proc.log_tail()}"


def test_an_unreachable_target_fails_the_mirror_past_its_give_up_key(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, mirror: MirrorFactory
) -> None:
    with refused_address() as address:
        config = mirror_config(
            unique("give-up"),
            source,
            target,
            unique("topic"),
            **{"target.cluster.bootstrap.servers": address, "target.unreachable.give.up.ms": "4000"},
        )
        proc = mirror(config).start()
        started = time.monotonic()
        code = proc.wait(60)
        took = time.monotonic() - started
        assert code == 1, proc.log_tail()
        log = proc.log_text()
        assert f"target cluster 'target' is unreachable: {address}: connection refused" in log, log
        assert "giving up (target.unreachable.give.up.ms=4000)" in log, proc.log_tail()
        assert took < 30, f"gave up after {took:.0f} s"


def test_the_rest_status_and_metrics_name_an_unreachable_source_until_it_answers(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, worker: WorkerProcess
) -> None:
    name = unique("unreachable-rest")
    client = httpx.Client(base_url=worker.url, timeout=30)
    with refused_address() as address:
        config = mirror_config(name, source, target, unique("topic"), **{"source.cluster.bootstrap.servers": address})
        del config["name"]
        assert client.put(f"/connectors/{name}/config", json=config).status_code == 201

        def status() -> dict[str, str]:
            return dict(client.get(f"/connectors/{name}/status").json()["connector"])

        wait_until(lambda: "trace" in status(), FIRST_LINE_S, "the status names the source")
        connector = status()
        assert connector["state"] == "UNASSIGNED", connector
        assert connector["trace"].startswith(f"waiting: source cluster 'source' is unreachable: {address}: "), connector
        series = f'mirror_sink_cluster_unreachable_seconds{{alias="source",cluster="source",connector="{name}"}}'
        metrics = client.get("/metrics").text
        assert series in metrics, metrics
        wait_until(lambda: _gauge(client.get("/metrics").text, series) >= 2, 15, "the outage counted in seconds")
        target_series = f'mirror_sink_cluster_unreachable_seconds{{alias="target",cluster="target",connector="{name}"}}'
        assert f"{target_series} 0.0" in metrics, "the target answers"

    # The source's address now answers as the real broker's: repoint the connector there.
    config["source.cluster.bootstrap.servers"] = source.bootstrap_servers
    assert client.put(f"/connectors/{name}/config", json=config).status_code == 200
    wait_until(lambda: status()["state"] == "RUNNING" and "trace" not in status(), 60, "running, nothing named")

    # The worker itself honours SIGTERM at once while one of its connectors waits for a cluster.
    with black_hole() as address:
        waiting = unique("unreachable-rest-wait")
        config = mirror_config(
            waiting, source, target, unique("topic"), **{"source.cluster.bootstrap.servers": address}
        )
        del config["name"]
        assert client.put(f"/connectors/{waiting}/config", json=config).status_code == 201
        wait_until(lambda: "is unreachable" in worker.log_text(), FIRST_LINE_S, "the waiting connector named")
        asked = time.monotonic()
        assert worker.stop(timeout=30) == 0, worker.log_tail()
        took = time.monotonic() - asked
        print(f"worker: SIGTERM honoured in {took:.1f} s, one connector running and one waiting")
        assert took < STOP_S, f"the worker took {took:.1f} s to stop\n{worker.log_tail()}"


def _gauge(metrics: str, series: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0
