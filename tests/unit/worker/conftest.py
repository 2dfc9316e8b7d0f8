"""Fixtures of the worker's unit tests: the fake plugin in the registry, and runtimes shut down after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import pytest

from mirror_sink.worker.connector_runtime import ConnectorRuntime
from mirror_sink.worker.target_claims import TargetTopicClaims
from mirror_sink.worker.worker import Worker
from tests.unit.worker.fakes import install

MakeRuntime = Callable[..., ConnectorRuntime]


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin registry finds ``FakeConnector`` too."""
    install(monkeypatch)


@pytest.fixture
def make_runtime(registry: None) -> Iterator[MakeRuntime]:
    """Makes ``ConnectorRuntime``s of the fake plugin; each is shut down after the test."""
    made: list[ConnectorRuntime] = []

    def make(
        config: Mapping[str, str],
        *,
        task_ids: Callable[[int], list[int]] | None = None,
        claims: TargetTopicClaims | None = None,
    ) -> ConnectorRuntime:
        runtime = ConnectorRuntime(config["name"], config, "worker-1", task_ids, claims)
        made.append(runtime)
        return runtime

    yield make
    for runtime in made:
        runtime.shutdown(1.0)


@pytest.fixture
def worker(registry: None) -> Iterator[Worker]:
    """A Worker (``worker-1``) alone; every runtime it still has is shut down after the test."""
    made = Worker("worker-1")
    yield made
    for name in list(made.runtimes):
        made.remove_runtime(name)
