"""``api.routes.root``: ``GET /`` names the worker's version, commit and cluster; ``/health`` (KIP-1017)
and ``/health/ready`` answer the Herder's health and readiness with the status codes probes read."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from api.routes import root
from mirror_sink import __version__
from tests.unit.api.fakes import FakeHerder, Rest, as_herder, mount

pytestmark = pytest.mark.unit


@dataclass
class Worker:
    """The router, built once, over a herder and the cluster ids it reads, one per request."""

    herder: FakeHerder = field(default_factory=FakeHerder)
    clusters: list[str | None] = field(default_factory=list)
    client: Rest = field(init=False)

    def __post_init__(self) -> None:
        routes = root.router(as_herder(self.herder), commit="0123abc", cluster_id=lambda: self.clusters.pop(0))
        self.client = mount(routes)


@pytest.fixture(scope="module")
def served() -> Worker:
    return Worker()


@pytest.fixture
def worker(served: Worker) -> Worker:
    """The worker, its herder afresh."""
    served.herder.reset()
    served.clusters.clear()
    return served


def test_the_server_info_names_the_version_the_commit_and_the_cluster_read_at_each_request(worker: Worker) -> None:
    worker.clusters += ["cluster-A", None]
    first, second = worker.client.get("/"), worker.client.get("/")
    assert first.status_code == 200
    assert first.json() == {"version": __version__, "commit": "0123abc", "kafka_cluster_id": "cluster-A"}
    assert second.json()["kafka_cluster_id"] is None, "a cluster not known yet is null, not an error"


@pytest.mark.parametrize(
    ("status", "code"),
    [("healthy", 200), ("starting", 503), ("unhealthy", 500), ("anything else", 500)],
)
def test_health_is_200_when_healthy_503_while_starting_and_500_otherwise(
    worker: Worker, status: str, code: int
) -> None:
    worker.herder.health_answer = (status, f"the worker is {status}")
    answer = worker.client.get("/health")
    assert answer.status_code == code
    assert answer.json() == {"status": status, "message": f"the worker is {status}"}


def test_readiness_is_200_and_healthy_once_ready_else_503_starting_naming_what_it_waits_for(worker: Worker) -> None:
    ready = worker.client.get("/health/ready")
    assert (ready.status_code, ready.json()) == (
        200,
        {"status": "healthy", "message": "every connector and task is RUNNING"},
    )
    worker.herder.readiness_answer = (False, "waiting for orders-mirror task 1 (UNASSIGNED)")
    waiting = worker.client.get("/health/ready")
    assert (waiting.status_code, waiting.json()) == (
        503,
        {"status": "starting", "message": "waiting for orders-mirror task 1 (UNASSIGNED)"},
    )
