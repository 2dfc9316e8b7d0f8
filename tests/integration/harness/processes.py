"""The mirror as real child processes: ``mirror-sink run`` and ``worker`` kept running, one-shot verbs
(failover, failback, drill, verify, audit, translate) run to their exit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Self

import httpx

from devkafka.cluster import free_port
from devkafka.processes import reap_with_this_process
from tests.integration.harness.waiting import wait_until


class ChildProcess:
    """A ``mirror-sink`` command in a child process with its own log file, signalled by its own pid."""

    def __init__(self, label: str, workdir: Path) -> None:
        self.label = label
        self.workdir = workdir
        self.log_path = workdir / f"{label}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env: dict[str, str] = {}
        #: The interpreter command and the working directory the child runs with.
        self.python: list[str] = [sys.executable]
        self.cwd: Path | None = None
        workdir.mkdir(parents=True, exist_ok=True)

    def argv(self) -> list[str]:
        """The ``mirror-sink`` arguments (after ``python -m api.cli``)."""
        raise NotImplementedError

    def start(self) -> Self:
        """Launch (or relaunch) the command."""
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start {time.strftime('%H:%M:%S')} =====\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [*self.python, "-m", "api.cli", *self.argv()],
                cwd=self.cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "MIRROR_SINK_LOG_LEVEL": "INFO", **self.env},
            )
        reap_with_this_process(pid=self.proc.pid)
        return self

    @property
    def pid(self) -> int:
        """The child's pid."""
        assert self.proc is not None
        return self.proc.pid

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to this process only."""
        assert self.proc is not None
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        """Wait for the process to exit; its exit code."""
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait (a thread dump and SIGKILL if it does not stop in time)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGCONT)  # in case a test left it stopped
        self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)  # thread dump into the log
            time.sleep(1)
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"{self.label} ignored SIGTERM for {timeout} s\n{self.log_tail()}") from None

    def kill(self) -> None:
        """SIGKILL: a crash at an arbitrary point."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def alive(self) -> bool:
        """True while the process runs."""
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        """Everything the process logged."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 60) -> str:
        """The end of the log, for assertion messages."""
        return "\n".join(self.log_text().splitlines()[-lines:])


class MirrorProcess(ChildProcess):
    """``mirror-sink run`` for one connector config under one worker id."""

    def __init__(self, config: dict[str, str], worker_id: str, workdir: Path, *extra: str) -> None:
        super().__init__(f"{config['name']}-{worker_id}", workdir)
        self.config = config
        self.worker_id = worker_id
        self.config_path = workdir / f"{self.label}.json"
        self.extra = extra

    def argv(self) -> list[str]:
        """``run <config> --worker-id <id> [extra...]``, writing the config file first."""
        self.config_path.write_text(json.dumps({"name": self.config["name"], "config": self.config}))
        return ["run", str(self.config_path), "--worker-id", self.worker_id, *self.extra]


class WorkerProcess(ChildProcess):
    """``mirror-sink worker`` (or ``mm2``) with its REST API on a free loopback port."""

    def __init__(self, workdir: Path, *extra: str, worker_id: str = "w1", mm2_file: Path | None = None) -> None:
        super().__init__(f"worker-{worker_id}", workdir)
        self.port = free_port()
        self.extra = list(extra)
        self.worker_id = worker_id
        self.mm2_file = mm2_file
        self.data_dir = workdir / f"data-{worker_id}"

    @property
    def url(self) -> str:
        """The REST API's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        """``worker`` (or ``mm2 <file>``) with a fixed listener, worker id and data dir."""
        verb = ["mm2", str(self.mm2_file)] if self.mm2_file else ["worker"]
        flags = ["--listeners", self.url, "--worker-id", self.worker_id, "--data-dir", str(self.data_dir)]
        return [*verb, *flags, *self.extra]

    def start(self) -> Self:
        """Launch and wait until the REST API answers."""
        super().start()
        wait_until(self._answers, 60, f"the worker's REST API at {self.url}")
        return self

    def _answers(self) -> bool:
        if not self.alive():
            code = self.proc.returncode if self.proc else None
            raise AssertionError(f"worker exited with {code}:\n{self.log_tail()}")
        try:
            return httpx.get(f"{self.url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


def run_failover(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink failover`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("failover", config, workdir, *args)


def run_failback(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink failback`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("failback", config, workdir, *args)


def run_drill(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink drill`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("drill", config, workdir, *args)


def run_verify(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink verify`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("verify", config, workdir, *args)


def run_audit(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink audit`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("audit", config, workdir, *args)


def run_translate(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink translate`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("translate", config, workdir, *args)


def _run_verb(verb: str, config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = workdir / f"{verb}-{time.monotonic_ns()}.json"
    path.write_text(json.dumps({"name": config["name"], "config": config}))
    return subprocess.run(
        [sys.executable, "-m", "api.cli", verb, str(path), *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
