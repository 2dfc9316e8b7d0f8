"""Session-wide fixtures: the real source and target clusters and unique names."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from devkafka.backends import open_clusters
from devkafka.endpoints import KafkaEndpoint
from devkafka.pair import DevClusters
from devkafka.processes import reap_with_this_process
from devkafka.replicated import ReplicatedPair

#: The tiers, the no-skip rule and the time per tier (tests/tiers.py).
pytest_plugins = ["tests.tiers"]


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

    Its target keeps transactions version 1 (``transaction.version=1``, Kafka 3.x's protocol), so that
    every secured test also mirrors into a target without KIP-890 part 2; the main pair has version 2.
    """
    home = tmp_path_factory.mktemp("kafka-secured")
    pair = DevClusters(home, secured=True, target_features={"transaction.version": 1})
    reap_with_this_process(pattern=f"kafka.logs.dir={home}")
    try:
        pair.up()  # inside: a node that failed to start must not leave the others running
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
    try:
        pair.up()  # inside: a node that failed to start must not leave the others running
        yield pair
    finally:
        pair.down(hard=True)


@pytest.fixture
def unique() -> Callable[[str], str]:
    """``unique('orders')`` -> ``orders-3f9a1c`` so tests can share clusters in any order."""
    suffix = uuid.uuid4().hex[:8]
    return lambda base: f"{base}-{suffix}"
