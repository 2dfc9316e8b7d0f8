"""Where the source and target clusters come from: local jars, an existing pair, or testcontainers.

``MIRROR_SINK_KAFKA_BACKEND`` picks one:
- ``local`` (default): two single-node KRaft clusters from Maven Central jars, bounceable by pid;
- ``external``: clusters already running at ``MIRROR_SINK_SOURCE_BOOTSTRAP`` and
  ``MIRROR_SINK_TARGET_BOOTSTRAP`` (tests that bounce brokers cannot run there);
- ``testcontainers``: two single-node brokers in containers, started by testcontainers'
  ``KafkaContainer`` (``devkafka.containers``); like ``external``, not bounceable by pid.

The ``testcontainers`` backend runs ``MIRROR_SINK_KAFKA_IMAGE``, by default
``localhost/mirror-sink-kafka:<Kafka version>``: the very jars of the local clusters on a Debian JRE,
built offline by ``deploy/image/kafka/build.sh`` (cached; laid out as ``KafkaContainer`` expects of
``confluentinc/cp-kafka``, which ``apache/kafka`` images are not). ``MIRROR_SINK_CONTAINER_ENGINE``:

- ``podman`` (the default where it is installed): the backend builds the image if missing, serves
  podman's Docker API on a socket of its own (``devkafka.podman``: the project's containers.conf and
  storage, as ``deploy/image/podman-env.sh`` sets them), turns Ryuk off and removes the containers at
  the end, or when the test process dies. Rootful podman's port mapping, default network;
- ``docker``: testcontainers as usual (``DOCKER_HOST`` or Docker's socket, Ryuk). Load the image first:
  ``podman save localhost/mirror-sink-kafka:4.3.1 | docker load``, or build it with Docker:
  ``MIRROR_SINK_CONTAINER_ENGINE=docker bash deploy/image/kafka/build.sh --base eclipse-temurin:17-jre``.
  Where the tests themselves run in a container, ``TESTCONTAINERS_CONNECTION_MODE=docker_host`` (else
  testcontainers guesses Docker-in-Docker and asks for the container's gateway).

With ``MIRROR_SINK_KAFKA_BACKEND=testcontainers``, what takes the session's pair (``open_clusters``)
runs on it; tests that bounce brokers by pid need ``local``. ``deploy/image/kafka/README.md`` says how
to get the same pair by hand.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devkafka.endpoints import ExternalCluster, KafkaEndpoint
from devkafka.pair import DevClusters
from devkafka.processes import reap_with_this_process


def backend_name() -> str:
    """The configured backend (``local`` unless ``MIRROR_SINK_KAFKA_BACKEND`` says otherwise)."""
    return os.environ.get("MIRROR_SINK_KAFKA_BACKEND", "local")


@contextmanager
def open_clusters(home: Path) -> Iterator[tuple[KafkaEndpoint, KafkaEndpoint]]:
    """Yield ``(source, target)`` from the configured backend and tear down what it started."""
    backend = backend_name()
    if backend == "local":
        pair = DevClusters(home)
        reap_with_this_process(pattern=f"kafka.logs.dir={home}")
        try:
            pair.up()  # inside: a node that failed to start must not leave the other running
            yield pair.source, pair.target
        finally:
            pair.down(hard=True)  # test data is thrown away; no need for a clean shutdown
    elif backend == "external":
        missing = [v for v in ("MIRROR_SINK_SOURCE_BOOTSTRAP", "MIRROR_SINK_TARGET_BOOTSTRAP") if not os.environ.get(v)]
        if missing:
            raise RuntimeError(f"backend 'external' needs {', '.join(missing)}")
        yield (
            ExternalCluster("source", os.environ["MIRROR_SINK_SOURCE_BOOTSTRAP"]),
            ExternalCluster("target", os.environ["MIRROR_SINK_TARGET_BOOTSTRAP"]),
        )
    elif backend == "testcontainers":
        from devkafka.containers import container_pair  # testcontainers is a dev extra

        with container_pair(home) as in_containers:
            yield in_containers
    else:
        raise RuntimeError(f"MIRROR_SINK_KAFKA_BACKEND={backend!r}: expected local, external or testcontainers")
