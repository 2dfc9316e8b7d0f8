"""Session-wide fixtures: the real source and target clusters, unique names, and the no-skip rule."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devkafka.backends import KafkaEndpoint, open_clusters, reap_with_this_process
from devkafka.pair import DevClusters
from devkafka.replicated import ReplicatedPair

# Every test under tests/integration talks to real brokers.
_INTEGRATION_DIR = Path(__file__).parent / "integration"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark integration tests ``kafka`` so ``-m 'not kafka'`` runs only the unit tests."""
    for item in items:
        if _INTEGRATION_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.kafka)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """With MIRROR_SINK_REQUIRE_KAFKA=1 (the test command sets it) a skipped Kafka test fails the run.

    A Kafka test that did not run proved nothing, so CI must not go green on it.
    """
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and os.environ.get("MIRROR_SINK_REQUIRE_KAFKA") == "1" and "kafka" in item.keywords:
        report.outcome = "failed"
        report.longrepr = f"Kafka test skipped while MIRROR_SINK_REQUIRE_KAFKA=1: {report.longrepr}"


@pytest.fixture(scope="session")
def kafka_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaEndpoint, KafkaEndpoint]]:
    """The ``source`` and ``target`` clusters, shared by the whole session."""
    with open_clusters(tmp_path_factory.mktemp("kafka")) as pair:
        yield pair


@pytest.fixture(scope="session")
def source(kafka_pair: tuple[KafkaEndpoint, KafkaEndpoint]) -> KafkaEndpoint:
    """The cluster mirrored from."""
    return kafka_pair[0]


@pytest.fixture(scope="session")
def target(kafka_pair: tuple[KafkaEndpoint, KafkaEndpoint]) -> KafkaEndpoint:
    """The cluster mirrored into."""
    return kafka_pair[1]


@pytest.fixture(scope="session")
def secured_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevClusters]:
    """A second ``source`` and ``target`` pair, secured: SASL_SSL (SCRAM-SHA-512), mTLS, TLS made for
    the run, and the StandardAuthorizer (``admin`` is the super user; ``mirror`` gets only its ACLs).

    Always local: its brokers need the run's certificates and SCRAM users at format time.
    """
    home = tmp_path_factory.mktemp("kafka-secured")
    pair = DevClusters(home, secured=True)
    pair.up()
    reap_with_this_process(pattern=f"kafka.logs.dir={home}")
    try:
        yield pair
    finally:
        pair.down(hard=True)


@pytest.fixture(scope="module")
def replicated_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicatedPair]:
    """``source`` and ``target`` clusters of three nodes each (replication factor 3, min.insync.replicas
    2), for the tests that kill brokers under load. Always local: they signal the brokers' own pids.
    Per module, so their six JVMs are not left running beside the rest of the suite."""
    home = tmp_path_factory.mktemp("kafka-replicated")
    pair = ReplicatedPair(home)
    reap_with_this_process(pattern=f"kafka.logs.dir={home}")
    pair.up()
    try:
        yield pair
    finally:
        pair.down(hard=True)


@pytest.fixture
def unique() -> Callable[[str], str]:
    """``unique('orders')`` -> ``orders-3f9a1c`` so tests can share clusters in any order."""
    suffix = uuid.uuid4().hex[:8]
    return lambda base: f"{base}-{suffix}"
