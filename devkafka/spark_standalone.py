"""A Spark standalone cluster (a master and workers) from the installed PySpark's own launch classes, and
``deploy/spark/submit.sh`` runs against it, as the README tells a user to submit a connector (for the
tests and ``bench.runtimes``).

Nothing is downloaded: PySpark's wheel carries Spark's jars, ``bin/spark-class`` and the
``python/lib/pyspark.zip`` that executors put on their path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import psutil
import pyspark

from devkafka.cluster import free_port
from devkafka.processes import reap_with_this_process

ROOT = Path(__file__).resolve().parents[1]
SPARK_HOME = Path(pyspark.__file__).parent


def _spark_env(scratch: Path) -> dict[str, str]:
    """The environment of a Spark JVM whose scratch space (``spark-*`` directories holding shuffle files and
    a copy of the venv archive, about 300 MB) lives under ``scratch``, not ``/tmp``: a JVM killed on purpose
    runs no shutdown hook, and its copies must go when the test's directory does."""
    scratch.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_NO_DAEMONIZE": "1",
        "SPARK_LOCAL_DIRS": str(scratch),
    }


def _is_executor(proc: psutil.Process) -> bool:
    # Asked of each process on its own: an executor's Python workers come and go (and linger as
    # zombies until reaped, whose command line psutil cannot read) while a copy runs.
    try:
        return any("CoarseGrainedExecutorBackend" in part for part in proc.cmdline())
    except psutil.Error:
        return False


class SparkStandalone:
    """``spark://127.0.0.1:<port>`` with two one-core workers, each its own JVM, logs under ``workdir``."""

    def __init__(self, workdir: Path, workers: int = 2) -> None:
        self.workdir = workdir
        self.workers = workers
        self.port, self.ui_port = free_port(), free_port()
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def master_url(self) -> str:
        """What ``--master`` takes."""
        return f"spark://127.0.0.1:{self.port}"

    def _launch(self, name: str, *args: str) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.workdir / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=_spark_env(self.workdir / "scratch"),  # workers hand it to their executors
                start_new_session=True,  # the worker's executors are in its group: stopped with it
            )
        reap_with_this_process(pid=proc.pid)
        self.procs.append(proc)

    def start(self) -> SparkStandalone:
        """Start the master and the workers; return once every worker has registered."""
        self._launch(
            "master", "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port),
        )  # fmt: skip
        for i in range(self.workers):
            work = self.workdir / f"worker{i}"
            self._launch(
                f"worker{i}", "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                "--cores", "1", "--memory", "1500m", "--work-dir", str(work), self.master_url,
            )  # fmt: skip
        deadline = time.monotonic() + 120
        while int(str(self.state().get("aliveworkers", 0))) < self.workers:
            if time.monotonic() > deadline:
                raise RuntimeError(f"Spark workers did not register in 120 s: {self.state()}; logs in {self.workdir}")
            time.sleep(0.5)
        return self

    def state(self) -> dict[str, object]:
        """The master's JSON status (workers, applications), or {} while it is not up."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as resp:
                return dict(json.load(resp))
        except OSError:
            return {}

    def executors(self) -> list[psutil.Process]:
        """The executor JVMs this cluster's workers run now."""
        return [proc for proc in self.processes() if _is_executor(proc)]

    def processes(self) -> list[psutil.Process]:
        """Every JVM and Python process of the cluster now: master, workers, executors and their workers."""
        found = []
        for proc in self.procs:
            try:
                root = psutil.Process(proc.pid)
                found += [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
        return found

    def executor_logs(self) -> str:
        """Every executor's stderr, for a failing test's message."""
        parts = []
        for path in sorted(self.workdir.glob("worker*/app-*/*/stderr")):
            parts.append(f"----- {path.relative_to(self.workdir)}\n{path.read_text(errors='replace')[-4000:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        """SIGTERM each JVM's process group (workers take their executors along), SIGKILL stragglers."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


class SparkSubmit:
    """``MASTER=... bash deploy/spark/submit.sh <connector.json> ...``: the README's recipe, run here."""

    def __init__(self, cluster: SparkStandalone, config: dict[str, str], workdir: Path, *flags: str) -> None:
        self.cluster = cluster
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.config_path = workdir / f"{config['name']}.json"
        self.config_path.write_text(json.dumps({"name": config["name"], "config": config}))
        self.checkpoint = workdir / f"checkpoint-{config['name']}"
        self.flags = flags
        self.log_path = workdir / f"submit-{config['name']}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> SparkSubmit:
        """Submit (available-now: the application ends once the source is mirrored)."""
        ckpt = ("--checkpoint", str(self.checkpoint))
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== submit {time.strftime('%H:%M:%S')} =====\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                ["bash", str(ROOT / "deploy" / "spark" / "submit.sh"), str(self.config_path), *ckpt, *self.flags],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.workdir,
                env={
                    **_spark_env(self.workdir / "scratch"),
                    "MASTER": self.cluster.master_url,
                    "MIRROR_SINK_LOG_LEVEL": "INFO",
                },
                start_new_session=True,  # spark-submit's JVM and the Python driver under it, killed together
            )
        reap_with_this_process(pid=self.proc.pid)
        return self

    def wait(self, timeout: float = 300) -> int:
        """The exit code."""
        assert self.proc is not None
        return self.proc.wait(timeout)

    def kill(self) -> None:
        """SIGKILL the driver: spark-submit's JVM and its Python, as a crashed machine would."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def log_text(self) -> str:
        """The driver's output so far."""
        return self.log_path.read_text(errors="replace")

    def explain(self) -> str:
        """Driver log tail and the executors' logs."""
        return f"{self.log_text()[-6000:]}\n{self.cluster.executor_logs()}"
