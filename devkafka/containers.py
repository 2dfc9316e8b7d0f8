"""The testcontainers backend's clusters: two single-node KRaft brokers in containers, started by
testcontainers' ``KafkaContainer``, on podman (its Docker API on a socket of this process's own,
``devkafka.podman``) or on Docker.

The image is ``MIRROR_SINK_KAFKA_IMAGE``, by default ``localhost/mirror-sink-kafka:<Kafka version>``,
which ``deploy/image/kafka/build.sh`` builds offline from the jars the local clusters run (on podman,
the backend builds it when missing; the build is cached). ``KafkaContainer`` drives a
``confluentinc/cp-kafka`` layout: it runs ``/etc/confluent/docker/{configure,launch}`` from a start
script of its own with the broker's settings in ``KAFKA_*`` variables. The image made here has that
layout; so does Confluent's (any ``confluentinc/cp-kafka`` of 7.x or later where a registry serves it);
``apache/kafka`` images have not, and ``KafkaContainer`` cannot start them.

``MIRROR_SINK_CONTAINER_ENGINE`` picks the engine: ``podman`` (the default where podman is installed)
or ``docker`` (testcontainers' own discovery: ``DOCKER_HOST`` or Docker's socket, and its Ryuk reaper
unless ``TESTCONTAINERS_RYUK_DISABLED=true``; ``TESTCONTAINERS_CONNECTION_MODE=docker_host`` where the
tests run inside a container, as ``_testcontainers_on`` sets for podman).
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka.admin import AdminClient

from devkafka.cluster import jvm_performance_opts
from devkafka.endpoints import ExternalCluster
from devkafka.paths import kafka_version
from devkafka.podman import PodmanService, remove_containers, remove_containers_with_this_process

if TYPE_CHECKING:
    from testcontainers.community.kafka import KafkaContainer

log = logging.getLogger(__name__)

#: The image build script (devkafka runs from a checkout, as for the podman settings).
BUILD_SCRIPT = Path(__file__).resolve().parents[1] / "deploy" / "image" / "kafka" / "build.sh"
#: Where the start script testcontainers writes into the container listens for clients (its default).
CLIENT_PORT = 9093

#: The local clusters' broker settings that the tests rely on (devkafka/cluster.py), as ``KAFKA_*``
#: variables; KafkaContainer sets the listeners, the KRaft quorum and node id itself. Transactions need
#: their log's replication factor at 1 on one node (KafkaContainer leaves Kafka's 3: no transaction
#: could start), and KafkaContainer's single offsets partition would put every group on one coordinator.
BROKER_ENV = {
    "KAFKA_NUM_PARTITIONS": "1",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "10",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS": "10",
    "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR": "1",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "1000",
    "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
    "KAFKA_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS": "5000",
}


class ContainerStartError(RuntimeError):
    """The image could not be built, or a broker container did not come up."""


def default_image() -> str:
    """The image ``deploy/image/kafka/build.sh`` makes for the configured Kafka version."""
    return f"localhost/mirror-sink-kafka:{kafka_version()}"


def kafka_image() -> str:
    """The image to run: ``MIRROR_SINK_KAFKA_IMAGE`` or ``default_image()``."""
    return os.environ.get("MIRROR_SINK_KAFKA_IMAGE") or default_image()


def container_engine() -> str:
    """``MIRROR_SINK_CONTAINER_ENGINE``, else podman where it is installed, else docker."""
    engine = os.environ.get("MIRROR_SINK_CONTAINER_ENGINE") or ("podman" if shutil.which("podman") else "docker")
    if engine not in ("podman", "docker"):
        raise ContainerStartError(f"MIRROR_SINK_CONTAINER_ENGINE={engine!r}: expected podman or docker")
    return engine


def build_image(timeout: float = 900.0) -> str:
    """Build ``default_image()`` with podman (skipped when built already from the same recipe) and
    return its name. A cold build makes the Debian JRE base first (debootstrap, about 90 s here)."""
    proc = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=timeout, check=False)
    lines = proc.stdout.split()
    if proc.returncode != 0 or not lines:
        raise ContainerStartError(f"{BUILD_SCRIPT} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return lines[-1]


def _broker_env() -> dict[str, str]:
    """``BROKER_ENV`` and the JVM's flags as the local brokers get them (the suite shortens the JIT's
    work for brokers that live minutes: ``KAFKA_JVM_PERFORMANCE_OPTS``)."""
    return {
        **BROKER_ENV,
        "KAFKA_HEAP_OPTS": "-Xms256m -Xmx768m",
        "KAFKA_JVM_PERFORMANCE_OPTS": " ".join(jvm_performance_opts()),
    }


def _answers_metadata(bootstrap: str) -> bool:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        return bool(admin.list_topics(timeout=5).brokers)
    except Exception:
        return False


def _kafka_container_class() -> type[KafkaContainer]:
    """testcontainers' KafkaContainer, from where the installed version keeps it."""
    try:
        from testcontainers.community.kafka import KafkaContainer
    except ImportError:  # releases before its community modules (pyproject allows 4.4 and later)
        from testcontainers.kafka import KafkaContainer
    return KafkaContainer


def _start_broker(image: str, name: str, timeout: float) -> KafkaContainer:
    """One broker container, started, its client listener answering from this host."""
    kafka_container = _kafka_container_class()
    # SIGKILL to stop: the data is thrown away (as the local backend's down(hard=True)), and PID 1 is
    # KafkaContainer's `sh -c`, which ignores SIGTERM: each removal would wait out podman's 10 s.
    container = kafka_container(image, port=CLIENT_PORT, name=name, stop_signal="SIGKILL")
    if "cp-kafka" in image:
        container.with_kraft()
    else:
        # with_kraft() reads the tag as a Confluent Platform version (KRaft from 7.0.0); the tag of an
        # Apache Kafka image is Kafka's own version, 4.x here, and Kafka 4 runs KRaft only.
        container.kraft_enabled = True
    for key, value in _broker_env().items():
        container.with_env(key, value)
    try:
        container.start(timeout=int(timeout))
        bootstrap = container.get_bootstrap_server()
        deadline = time.monotonic() + timeout
        while not _answers_metadata(bootstrap):
            if time.monotonic() > deadline:
                raise ContainerStartError(f"broker {name} logged its start but {bootstrap} does not answer")
            time.sleep(0.2)
    except BaseException:
        container.stop()
        raise
    return container


@contextmanager
def _testcontainers_on(service: PodmanService) -> Iterator[None]:
    """testcontainers pointed at the podman service for the block, then as it was.

    Ryuk off (its image comes from a registry). The containers' ports are reached through podman's
    port mapping on this host's loopback, at 127.0.0.1 (not "localhost", which may try ::1 first):
    testcontainers would guess Docker-in-Docker otherwise, from the /.dockerenv this machine (itself
    a container) has, and advertise the podman bridge's gateway address.
    """
    from testcontainers.core.config import ConnectionMode
    from testcontainers.core.config import testcontainers_config as config

    saved_env = {k: os.environ.get(k) for k in ("DOCKER_HOST", "TESTCONTAINERS_RYUK_DISABLED")}
    saved = (config.ryuk_disabled, config.connection_mode_override, config.tc_host_override)
    os.environ["DOCKER_HOST"] = service.docker_host
    os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"
    config.ryuk_disabled = True
    config.connection_mode_override = ConnectionMode.docker_host
    config.tc_host_override = "127.0.0.1"
    try:
        yield
    finally:
        config.ryuk_disabled, config.connection_mode_override, config.tc_host_override = saved
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def container_pair(home: Path, timeout: float = 180.0) -> Iterator[tuple[ExternalCluster, ExternalCluster]]:
    """``(source, target)`` single-node brokers in containers for the block; removed after it, their
    logs left in ``home`` (``source.log``, ``target.log``)."""
    image, engine = kafka_image(), container_engine()
    run = f"mirror-sink-kafka-{os.getpid()}-{secrets.token_hex(3)}"
    names = [f"{run}-source", f"{run}-target"]
    home.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        if engine == "podman":
            if image == default_image():
                image = build_image()
            service = PodmanService()
            stack.callback(service.stop)
            service.start()
            stack.enter_context(_testcontainers_on(service))
            # Whatever happens to this process from here on, the containers go (last in, first out:
            # before the service stops).
            remove_containers_with_this_process(names, leftovers=service.workdir)
            stack.callback(remove_containers, names)
        started = time.monotonic()
        with ThreadPoolExecutor(2) as pool:  # in parallel, as the local pair starts
            futures = [pool.submit(_start_broker, image, name, timeout) for name in names]
        containers: list[KafkaContainer] = []
        for label, future in zip(("source", "target"), futures, strict=True):
            if future.exception() is None:  # one that started goes at the end even if the other did not
                containers.append(future.result())
                stack.callback(_save_logs_and_stop, containers[-1], home / f"{label}.log")
        for future in futures:
            if (exc := future.exception()) is not None:
                raise ContainerStartError(f"a {image} container did not start ({engine}): {exc}") from exc
        log.info("%s: source and target up in %.1f s on %s", image, time.monotonic() - started, engine)
        yield (
            ExternalCluster("source", containers[0].get_bootstrap_server()),
            ExternalCluster("target", containers[1].get_bootstrap_server()),
        )


def _save_logs_and_stop(container: KafkaContainer, path: Path) -> None:
    """Keep the broker's log beside the test's files (a failed test's are kept), then remove it."""
    try:
        stdout, stderr = container.get_logs()
        path.write_bytes(stdout + stderr)
    except Exception as exc:  # a container already gone has no logs; its removal below still runs
        log.warning("no logs from %s: %s", path.stem, exc)
    container.stop()
