"""Integration fixtures: mirror processes that never outlive their test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

from devkafka.data import create_topic
from devkafka.endpoints import KafkaEndpoint
from tests.integration.harness.clusters import address
from tests.integration.harness.processes import MirrorProcess, WorkerProcess
from tests.integration.harness.topics import TopicFactory, Unique

#: The tests' Spark settings: C1 and the serial collector for every Spark JVM (spark-defaults.conf, spark-env.sh).
SPARK_CONF_DIR = Path(__file__).parent / "spark_conf"


@pytest.fixture(scope="session", autouse=True)
def light_spark_jvms() -> Iterator[None]:
    """Point Spark's launch scripts at ``SPARK_CONF_DIR`` for every Spark JVM the tests start (local
    drivers, the standalone master, workers, drivers and executors inherit it): short-lived JVMs on two
    shared cores, like the test brokers. An operator's own ``SPARK_CONF_DIR`` is left alone."""
    before = os.environ.get("SPARK_CONF_DIR")
    os.environ.setdefault("SPARK_CONF_DIR", str(SPARK_CONF_DIR))
    yield
    if before is None:
        os.environ.pop("SPARK_CONF_DIR", None)


class MirrorFactory(Protocol):
    """Makes an unstarted mirror process for a connector config and worker id."""

    def __call__(self, config: dict[str, str], worker_id: str = "w1", *extra: str) -> MirrorProcess: ...


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[MirrorFactory]:
    """``mirror(config, worker_id, *extra)`` -> an unstarted MirrorProcess (``extra``: more ``run``
    flags), killed at teardown if still alive."""
    made: list[MirrorProcess] = []

    def make(config: dict[str, str], worker_id: str = "w1", *extra: str) -> MirrorProcess:
        process = MirrorProcess(config, worker_id, tmp_path, *extra)
        made.append(process)
        return process

    yield make
    for process in made:
        if process.alive():
            process.kill()


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WorkerProcess]:
    """A running REST worker (embedded store, free port); stopped at teardown."""
    process = WorkerProcess(tmp_path).start()
    yield process
    if process.alive():
        process.stop()


@pytest.fixture
def new_topic(request: pytest.FixtureRequest, unique: Unique) -> TopicFactory:
    """``new_topic('orders', 3)`` -> ``orders-3f9a1c``, created on the shared source with 3 partitions
    (and the given topic configs), or on the cluster ``on=`` names: a name no other test uses, as
    ``unique`` gives it (``TopicFactory``). The shared pair is asked for only when a topic goes on it, so
    a test on clusters of its own (secured, replicated, containers) does not start it."""

    def make(
        base: str, partitions: int = 1, config: dict[str, str] | None = None, *, on: KafkaEndpoint | None = None
    ) -> str:
        cluster: KafkaEndpoint = on if on is not None else request.getfixturevalue("source")
        topic = unique(base)
        create_topic(address(cluster), topic, partitions, config)
        return topic

    return make
