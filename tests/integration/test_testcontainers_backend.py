"""The testcontainers backend, made real: a source and a target broker in containers that
testcontainers' KafkaContainer starts from the image deploy/image/kafka/build.sh makes offline (the
local clusters' own jars), on podman's Docker API where podman is installed, and the core
exactly-once check on them.

A transactional load (one transaction in five aborted) runs while the mirror copies it, raw and
record mode; the mirror is SIGKILLed midway and restarted. Then the target holds, read_committed,
exactly the source's committed records, each once, in order per partition, and the shadow group
stands at the source's end offsets (assert_exact_mirror, with the offset syncs).

The pair is this module's own (``container_pair``, a lane of its own in tests/tiers.py): the
session's shared pair is the local backend's.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from devkafka.backends import open_clusters
from devkafka.containers import build_image, container_engine, default_image, kafka_image
from devkafka.data import read_all
from devkafka.endpoints import KafkaEndpoint
from devkafka.podman import podman
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import assert_exact_mirror, committed_on_target, shadow_caught_up
from tests.integration.harness.records import TransactionalLoad
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

PARTITIONS = 3
#: Committed records; with 100 a transaction, every fifth aborted and a pause between transactions,
#: the load runs for about ten seconds: long enough for the kill to land in the middle of it.
COMMITTED = 6_000


@pytest.fixture(scope="module")
def container_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaEndpoint, KafkaEndpoint]]:
    """``(source, target)`` from the testcontainers backend, for this module.

    MIRROR_SINK_KAFKA_BACKEND is set only while ``open_clusters`` reads it: the other tests of this
    worker keep the local backend.
    """
    engine = container_engine()
    if engine == "docker" and not (os.environ.get("DOCKER_HOST") or shutil.which("docker")):
        # A failure, never a skip: `deploy/dev.sh test` installs podman, so a machine without either
        # engine is one the test command did not set up.
        pytest.fail("neither podman nor Docker here: `bash deploy/dev.sh test` installs podman from Debian")
    if engine == "podman" and kafka_image() == default_image():
        build_image()  # the script's cache: nothing to do when the image of this recipe exists
    with ExitStack() as stack:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MIRROR_SINK_KAFKA_BACKEND", "testcontainers")
            pair = stack.enter_context(open_clusters(tmp_path_factory.mktemp("kafka-containers")))
        yield pair


def test_the_pair_runs_in_containers_of_the_image(container_pair: tuple[KafkaEndpoint, KafkaEndpoint]) -> None:
    """Both brokers are containers of the configured image, each reached through its own mapped port."""
    source, target = container_pair
    assert source.bootstrap_servers != target.bootstrap_servers
    assert all(e.bootstrap_servers.startswith("127.0.0.1:") for e in container_pair)
    if container_engine() != "podman":
        return
    ps = podman("ps", "--filter", f"name=mirror-sink-kafka-{os.getpid()}-", "--format", "{{.Names}} {{.Image}}")
    rows = sorted(line.split() for line in ps.stdout.splitlines())
    assert [name.rsplit("-", 1)[1] for name, _ in rows] == ["source", "target"], ps.stdout + ps.stderr
    assert {image for _, image in rows} == {kafka_image()}


@pytest.mark.parametrize("mode", ["raw", "record"])
def test_exactly_once_through_a_mirror_kill_on_the_containers(
    container_pair: tuple[KafkaEndpoint, KafkaEndpoint],
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
) -> None:
    """A transactional load with aborts, mirrored through a SIGKILL and a restart: exactly once."""
    source, target = container_pair
    name, topic = unique(f"tc-{mode}"), new_topic(f"tc-{mode}", PARTITIONS, on=source)
    target_topic, group = f"source.{topic}", f"connect-{name}"
    load = TransactionalLoad(
        source.bootstrap_servers, topic, PARTITIONS, COMMITTED, abort_every=5, pause_s=0.1, txn_id=unique("tx")
    )
    proc = mirror(mirror_config(name, source, target, topic, **{"mirror.mode": mode})).start()
    load.start()
    try:
        # Midway: the mirror has committed cycles on the target, and the load is still writing.
        wait_until(
            lambda: committed_on_target(target, target_topic) > 0 and load.committed >= COMMITTED // 3,
            90,
            "the mirror to commit on the target while the load runs",
            detail=proc.log_tail,
        )
        assert load.committed < COMMITTED, "the load ended before the kill: nothing was in flight"
        proc.signal(signal.SIGKILL)
        proc.wait(30)
        proc.start()
        load.join(120)
        wait_until(
            lambda: shadow_caught_up(source, topic, target, target_topic, group),
            120,
            f"{topic} mirrored to its end",
            detail=proc.log_tail,
        )
        assert proc.alive(), f"the mirror died:\n{proc.log_tail()}"
    finally:
        load.stop()
        exit_code = proc.stop()
    assert exit_code == 0, proc.log_tail()
    assert sum(len(r) for r in read_all(source.bootstrap_servers, topic).values()) == COMMITTED
    assert assert_exact_mirror(source, topic, target, target_topic, group) == COMMITTED
    assert proc.log_text().count("===== start") == 2, "one restart expected"
