"""podman for the testcontainers backend: the project's container settings and storage, and podman's
Docker API on a unix socket of this process's own, which testcontainers (docker-py) talks to.

Every podman command here runs with the environment ``deploy/image/podman-env.sh`` sets for the image
scripts (``containers_env``): ``deploy/image/containers.conf`` (runc, cgroupfs, ulimits under the
host's hard limits) and a ``storage.conf`` that keeps images and containers under mirror-sink's cache
folder. So the images ``deploy/image/kafka/build.sh`` builds are the ones the service runs.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from devkafka.paths import cache_dir
from devkafka.processes import reap_with_this_process

log = logging.getLogger(__name__)

#: The repository's podman settings; devkafka runs from a checkout (deploy/ is not in the wheel).
CONTAINERS_CONF = Path(__file__).resolve().parents[1] / "deploy" / "image" / "containers.conf"


class PodmanError(RuntimeError):
    """podman is missing, or its service did not come up; the message says what it printed."""


def containers_env() -> dict[str, str]:
    """``CONTAINERS_CONF`` and ``CONTAINERS_STORAGE_CONF`` as ``deploy/image/podman-env.sh`` computes
    them, writing the ``storage.conf`` they point to (the same text the script writes)."""
    if not CONTAINERS_CONF.is_file():
        raise PodmanError(f"{CONTAINERS_CONF} not found: the podman engine runs from a mirror-sink checkout")
    store = cache_dir() / "containers"
    store.mkdir(parents=True, exist_ok=True)
    conf = store / "storage.conf"
    text = f'[storage]\ndriver = "overlay"\ngraphroot = "{store}/storage"\nrunroot = "/run/mirror-sink-containers"\n'
    if not conf.is_file() or conf.read_text() != text:
        # Renamed into place: the image scripts and other test processes read it at any moment.
        partial = conf.with_name(f"storage.conf.{os.getpid()}")
        partial.write_text(text)
        partial.replace(conf)
    return {"CONTAINERS_CONF": str(CONTAINERS_CONF), "CONTAINERS_STORAGE_CONF": str(conf)}


def podman_command() -> str:
    """The podman binary, or PodmanError."""
    found = shutil.which("podman")
    if found is None:
        raise PodmanError("podman is not on PATH (apt-get install podman runc)")
    return found


def podman(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``podman ARGS`` with the project's settings and storage; its output (not checked)."""
    return subprocess.run(
        [podman_command(), *args],
        env={**os.environ, **containers_env()},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def remove_containers(names: Sequence[str]) -> None:
    """Remove these containers at once (SIGKILL, no grace period), whether or not they exist."""
    if names:
        podman("rm", "--force", "--ignore", "--time", "0", *names)


def remove_containers_with_this_process(names: Sequence[str], leftovers: Path | None = None) -> None:
    """A watchdog that removes these containers (and the folder ``leftovers``) once this process is
    gone, however it ended.

    testcontainers' own reaper (Ryuk) is a container whose image no registry here serves; a test
    process that died without teardown (SIGKILL, a crash) must not leave brokers running. By name:
    names are unique to this process, so a late removal hits nothing else. The podman service itself
    is reaped by its pid (``PodmanService.start``).
    """
    parent = os.getpid()
    remove = shlex.join([podman_command(), "rm", "--force", "--ignore", "--time", "0", *names])
    if leftovers is not None:
        remove += f"; rm -rf {shlex.quote(str(leftovers))}"
    subprocess.Popen(
        ["sh", "-c", f"while kill -0 {parent} 2>/dev/null; do sleep 2; done; {remove}"],
        env={**os.environ, **containers_env()},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


class PodmanService:
    """``podman system service`` serving the Docker API on a unix socket in a folder of its own."""

    def __init__(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="mirror-sink-podman-"))
        self.socket = self.workdir / "docker.sock"
        self.log_path = self.workdir / "service.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def docker_host(self) -> str:
        """The ``DOCKER_HOST`` value for docker-py, testcontainers and the docker CLI."""
        return f"unix://{self.socket}"

    def start(self, timeout: float = 30.0) -> None:
        """Start the service and wait until it answers ``/_ping``; PodmanError with its log if not."""
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                # --time=0: never exit for want of requests; the test decides when it ends.
                [podman_command(), "system", "service", "--time=0", self.docker_host],
                env={**os.environ, **containers_env()},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C meant for the tests must not end it before the teardown
                # that removes the containers through it.
                start_new_session=True,
            )
        reap_with_this_process(pid=self.proc.pid)
        deadline = time.monotonic() + timeout
        while not self._pings():
            if self.proc.poll() is not None:
                raise PodmanError(f"podman system service exited ({self.proc.returncode}):\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise PodmanError(f"podman system service did not answer within {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.1)
        log.info("podman's Docker API at %s (pid %d)", self.docker_host, self.proc.pid)

    def _pings(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(2)
                conn.connect(str(self.socket))
                conn.sendall(b"GET /_ping HTTP/1.0\r\nHost: podman\r\n\r\n")
                return conn.recv(64).split(b"\r\n", 1)[0].endswith(b"200 OK")
        except OSError:
            return False

    def log_tail(self, lines: int = 20) -> str:
        """The end of the service's output."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:]) or "(no output)"

    def stop(self) -> None:
        """Stop the service (its containers live on: remove them first) and delete its folder."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.workdir, ignore_errors=True)


@contextmanager
def podman_service() -> Iterator[PodmanService]:
    """A running ``PodmanService`` for the block, stopped after it."""
    service = PodmanService()
    try:
        service.start()
        yield service
    finally:
        service.stop()
