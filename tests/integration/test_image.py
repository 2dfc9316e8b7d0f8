"""The worker's image, built as ``bash deploy/dev.sh image`` builds it and run with podman as the REST
worker against the session's clusters (``--network host``): non-root on a read-only root filesystem,
configured the way the Helm chart configures it, exact through a SIGTERM and a same-id restart.

Its ``podman build`` step runs without network, on a Debian base made here from Debian packages (no
image registry is reachable); the wheels before it come from pip's index (docs/install.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import mirror_sink
from devkafka.cluster import free_port
from devkafka.endpoints import KafkaEndpoint
from devkafka.podman import podman as devkafka_podman
from mirror_sink.core.runtime import build_info
from tests.helm_render import find, render_chart, worker_args, worker_env, worker_mounts
from tests.integration.harness.configs import connector_config
from tests.integration.harness.exactness import assert_exact_mirror, committed_on_target, shadow_caught_up
from tests.integration.harness.records import TransactionalLoad
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
#: The container's user (distroless's "nonroot"), which must own the data volume.
IMAGE_UID = 65532


def podman(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``podman ARGS`` with the project's settings and storage (devkafka.podman); checked by default."""
    out = devkafka_podman(*args, timeout=timeout)
    if check and out.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} exited with {out.returncode}: {out.stderr[-2000:]}")
    return out


@pytest.fixture(scope="module")
def worker_image() -> str:
    """The worker image, built by the command the install page gives (cached base, warm pip cache)."""
    out = subprocess.run(
        ["bash", "deploy/dev.sh", "image"], capture_output=True, text=True, timeout=900, cwd=ROOT, check=False
    )
    assert out.returncode == 0, out.stderr[-4000:]
    name, archive = out.stdout.split()[-2:]
    assert Path(archive).stat().st_size > 0, "the OCI archive"
    # Where the next documented command, a plain `podman run`, looks: the user's default store.
    plain = {k: v for k, v in os.environ.items() if k not in ("CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF")}
    exists = subprocess.run(["podman", "image", "exists", name], env=plain, timeout=60, check=False)
    assert exists.returncode == 0, f"not in podman's default store:\n{out.stderr[-2000:]}"
    return name


class WorkerContainer:
    """``podman run`` of the image with the command line, environment and mounts the Helm chart renders
    (tests/helm_render.py): the chart's worker.properties mounted read-only at its path, the data
    volume, the root filesystem read-only, the pod's name as the hostname (the worker id's host part).

    One change: ``--network host`` cannot remap ports, so CONNECT_LISTENERS names a free loopback port
    instead of the chart's 8083."""

    def __init__(self, image: str, workdir: Path, hostname: str, *, worker_id: str | None = None) -> None:
        self.image = image
        self.port = free_port()
        self.hostname = hostname
        manifests = render_chart()
        self.args = worker_args(manifests)
        self.env = {**worker_env(manifests), "CONNECT_LISTENERS": f"http://127.0.0.1:{self.port}"}
        mounts = {volume: path for path, volume in worker_mounts(manifests).items()}
        self.config_mount, self.data_mount = mounts["config"], mounts["data"]
        self.config_dir = workdir / "etc"
        self.data_dir = workdir / "data"
        self.config_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        os.chown(self.data_dir, IMAGE_UID, IMAGE_UID)
        properties = find(manifests, "ConfigMap")["data"]["worker.properties"]
        if worker_id is not None:  # the chart leaves it to the hostname; see the fencing test
            properties += f"worker.id={worker_id}\n"
        (self.config_dir / "worker.properties").write_text(properties)
        self.name = ""

    @property
    def url(self) -> str:
        """The REST API."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> WorkerContainer:
        """Run it detached; return once /health answers 200."""
        self.name = f"mirror-sink-test-{uuid.uuid4().hex[:8]}"
        env = [f"--env={key}={value}" for key, value in self.env.items()]
        podman(
            "run", "--detach", "--name", self.name, "--hostname", self.hostname, "--network", "host",
            "--read-only", "--volume", f"{self.config_dir}:{self.config_mount}:ro",
            "--volume", f"{self.data_dir}:{self.data_mount}", *env, self.image, *self.args,
        )  # fmt: skip
        wait_until(self._healthy, 60, f"the container's /health at {self.url}", detail=self.logs)
        return self

    def _healthy(self) -> bool:
        state = podman("inspect", "--format", "{{.State.Status}}", self.name).stdout.strip()
        assert state == "running", f"container {state}:\n{self.logs()}"
        try:
            return httpx.get(f"{self.url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def logs(self) -> str:
        """The container's output."""
        out = podman("logs", self.name, check=False)
        return (out.stdout + out.stderr)[-8000:]

    def inspect(self, template: str) -> str:
        """``podman inspect --format TEMPLATE``."""
        return podman("inspect", "--format", template, self.name).stdout.strip()

    def remove(self) -> None:
        """Gone, whatever its state."""
        if self.name:
            podman("rm", "--force", "--time", "0", self.name, check=False)


@pytest.fixture
def containers(worker_image: str, tmp_path: Path) -> Iterator[list[WorkerContainer]]:
    """Containers the test starts, removed at teardown."""
    made: list[WorkerContainer] = []
    yield made
    for container in made:
        container.remove()


def test_the_image_runs_the_worker_exactly_as_non_root_on_a_read_only_root(
    worker_image: str,
    containers: list[WorkerContainer],
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    tmp_path: Path,
) -> None:
    worker = WorkerContainer(worker_image, tmp_path, unique("mirror-sink-0"))
    containers.append(worker.start())
    assert worker.inspect("{{.HostConfig.ReadonlyRootfs}}") == "true"
    assert podman("exec", worker.name, "id", "-u").stdout.strip() == str(IMAGE_UID)
    assert podman("exec", worker.name, "touch", "/opt/mirror-sink/x", check=False).returncode != 0, "root fs writable"
    labels = json.loads(podman("image", "inspect", "--format", "{{json .Labels}}", worker_image).stdout)
    assert labels["org.opencontainers.image.version"] == mirror_sink.__version__
    assert labels["org.opencontainers.image.revision"] == build_info.commit()

    client = httpx.Client(base_url=worker.url, timeout=60)
    info = client.get("/").json()
    assert info["version"] == mirror_sink.__version__
    assert info["commit"] == build_info.commit(), "the commit baked into the image, no git inside"

    name, topic = unique("image"), new_topic("image", 3)
    load = TransactionalLoad(source.bootstrap_servers, topic, 3, 6000, pause_s=0.05, txn_id=unique("image-load"))
    created = client.post("/connectors", json={"name": name, "config": connector_config(source, target, topic)})
    assert created.status_code == 201, created.text
    wait_until(lambda: client.get("/health/ready").status_code == 200, 90, "ready: its tasks run", detail=worker.logs)
    target_topic, group = f"source.{topic}", f"connect-{name}"
    load.start()
    wait_until(lambda: committed_on_target(target, target_topic) > 1000, 120, "a sixth mirrored", detail=worker.logs)

    # SIGTERM mid-load, transactions open: the init hands it to the worker, which finishes or abandons
    # the open transaction and exits 0 within 10 s.
    started = time.monotonic()
    podman("kill", "--signal", "TERM", worker.name)
    podman("wait", worker.name, timeout=30)
    took = time.monotonic() - started
    assert took < 10, f"SIGTERM took {took:.1f} s:\n{worker.logs()}"
    assert worker.inspect("{{.State.ExitCode}}") == "0", worker.logs()
    assert "stopping" in worker.logs().lower()

    # Same data volume, same worker id: it reloads the connector and resumes exactly.
    worker.remove()
    worker.start()
    load.join(300)
    wait_until(
        lambda: shadow_caught_up(source, topic, target, target_topic, group), 180, "caught up", detail=worker.logs
    )
    assert assert_exact_mirror(source, topic, target, target_topic, group) == 6000  # committed ones, aborts skipped
    health = httpx.get(f"{worker.url}/health", timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "healthy"
    metrics = httpx.get(f"{worker.url}/metrics", timeout=10).text
    assert f'connector="{name}"' in metrics and "mirror_sink_" in metrics


def test_a_restart_with_the_same_worker_id_fences_the_old_container(
    worker_image: str,
    containers: list[WorkerContainer],
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    tmp_path: Path,
) -> None:
    """A frozen container (a node cut off) and its replacement with the same worker id, as a
    StatefulSet's pod comes back under its name: the replacement's transactional ids fence the old
    one's, which commits nothing more once thawed."""
    # The same pod name and worker id. Unlike two pods, two containers on the host network cannot both
    # listen on 8083, so the id (host:port) is set to the same value explicitly.
    pod, worker_id = unique("mirror-sink-1"), unique("mirror-sink-1:8083")
    old = WorkerContainer(worker_image, tmp_path / "old", pod, worker_id=worker_id)
    containers.append(old.start())
    client = httpx.Client(base_url=old.url, timeout=60)
    name, topic = unique("fence"), new_topic("fence", 2)
    load = TransactionalLoad(source.bootstrap_servers, topic, 2, 4000, pause_s=0.05, txn_id=unique("fence-load"))
    config: dict[str, Any] = connector_config(source, target, topic, **{"tasks.max": "2"})
    assert client.post("/connectors", json={"name": name, "config": config}).status_code == 201
    wait_until(lambda: client.get("/health/ready").status_code == 200, 90, "old ready", detail=old.logs)
    target_topic, group = f"source.{topic}", f"connect-{name}"
    load.start()
    wait_until(lambda: committed_on_target(target, target_topic) > 500, 120, "the old one mirrors", detail=old.logs)
    podman("pause", old.name)

    new = WorkerContainer(worker_image, tmp_path / "new", pod, worker_id=worker_id)
    containers.append(new.start())
    created = httpx.post(f"{new.url}/connectors", json={"name": name, "config": config}, timeout=60)
    assert created.status_code == 201, created.text
    wait_until(lambda: httpx.get(f"{new.url}/health/ready").status_code == 200, 90, "new ready", detail=new.logs)
    podman("unpause", old.name)
    load.join(300)
    wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 180, "caught up", detail=new.logs)
    assert assert_exact_mirror(source, topic, target, target_topic, group) == 4000
    wait_until(lambda: "fenced" in old.logs().lower(), 60, "the old container told it was fenced", detail=old.logs)


def _documented_run_block() -> str:
    """The ``bash`` block of docs/install.md that runs the image with ``podman run``."""
    text = (ROOT / "docs" / "install.md").read_text()
    blocks = [b.split("\n", 1)[1] for b in text.split("```")[1::2] if b.startswith("bash") and "podman run" in b]
    assert len(blocks) == 1, "one documented podman run block"
    return blocks[0]


def test_the_install_pages_podman_run_block_runs_as_written(
    worker_image: str, target: KafkaEndpoint, unique: Unique, tmp_path: Path
) -> None:
    """The block a reader copies, in a shell with podman's default store, from a folder with an
    ``etc/worker.properties`` like the page's: the worker answers /health."""
    block = _documented_run_block()
    assert worker_image in block, f"the page names another image than {worker_image}"
    port = free_port()
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "worker.properties").write_text(
        f"bootstrap.servers={target.bootstrap_servers}\nconfig.storage=kafka\nlisteners=http://127.0.0.1:{port}\n"
        f"config.storage.topic={unique('doc-configs')}\nstatus.storage.topic={unique('doc-status')}\n"
    )
    # The user's default store; the engine settings this machine needs (its hard open-files limit is
    # below podman's default ulimit: docs/install.md says so and how).
    plain = {k: v for k, v in os.environ.items() if k != "CONTAINERS_STORAGE_CONF"}
    plain["CONTAINERS_CONF"] = str(ROOT / "deploy" / "image" / "containers.conf")

    def plain_podman(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["podman", *args], env=plain, capture_output=True, text=True, timeout=120, check=False)

    plain_podman("rm", "--force", "--time", "0", "mirror-sink")  # a run of this test killed before its cleanup
    plain_podman("volume", "rm", "--force", "mirror-sink-data")
    try:
        ran = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=plain, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr

        def healthy() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        logs = lambda: plain_podman("logs", "mirror-sink").stderr[-4000:]  # noqa: E731
        wait_until(healthy, 90, "the documented container's /health", detail=logs)
        assert plain_podman("exec", "mirror-sink", "id", "-u").stdout.strip() == str(IMAGE_UID)
    finally:
        plain_podman("rm", "--force", "--time", "0", "mirror-sink")
        plain_podman("volume", "rm", "--force", "mirror-sink-data")
