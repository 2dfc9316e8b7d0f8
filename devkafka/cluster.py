"""One KRaft node (combined broker + controller) on loopback, run from the cached jars: a single-node
cluster by default, or one member of a replicated cluster (``devkafka.replicated``)."""

from __future__ import annotations

import base64
import json
import logging
import os
import random
import secrets
import signal
import socket
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from devkafka.jars import KafkaJars
from devkafka.security import EXTRA_LISTENERS, ClusterSecurity

log = logging.getLogger(__name__)

_STATE_FILE = "cluster.json"


#: kafka-run-class.sh's default, for brokers that serve long runs.
_DEFAULT_JVM_PERFORMANCE_OPTS = "-XX:+UseG1GC -XX:MaxGCPauseMillis=20"


def jvm_performance_opts() -> list[str]:
    """The brokers' JIT and GC flags: ``KAFKA_JVM_PERFORMANCE_OPTS`` as kafka-run-class.sh reads it, or
    its G1 default. The test suite sets it for brokers that live minutes, not months."""
    return os.environ.get("KAFKA_JVM_PERFORMANCE_OPTS", _DEFAULT_JVM_PERFORMANCE_OPTS).split()


class ClusterStartError(RuntimeError):
    """A broker did not come up; the message carries the tail of its logs."""


def _ephemeral_ports() -> range:
    """The kernel's range for the local ports of outgoing connections (Linux's default if unknown)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


def _this_process_ports(candidates: range) -> range:
    """The share of ``candidates`` this process draws from: under pytest-xdist each worker its own
    slice, so that two workers never pick one port in the seconds before their brokers bind it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or not worker[2:].isdigit() or count <= 1:
        return candidates
    size = len(candidates) // count
    k = int(worker[2:]) % count
    return candidates[k * size : (k + 1) * size]


_handed_out: set[int] = set()
_handed_out_lock = threading.Lock()


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now, for a listener started soon after.

    Chosen at random below the ephemeral range: a port the kernel hands out for ``bind(0)`` may be
    taken by any client's outgoing connection before the listener binds it (a broker of the test
    suite failed to start so, while other tests' clients connected). A port is handed out once per
    process, and each pytest-xdist worker draws from its own slice: a JVM binds seconds after the
    port is chosen, and in that window another worker's random pick once chose the same port (a
    clean-clone run lost its shared pair to "Address already in use").
    """
    ephemeral = _ephemeral_ports()
    candidates = _this_process_ports(range(max(1024, ephemeral.start - 12_000), ephemeral.start))
    with _handed_out_lock:
        for _ in range(200):
            port = random.choice(candidates)
            if port in _handed_out:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free port found in {candidates.start}-{candidates.stop - 1} after 200 tries")


def new_cluster_id() -> str:
    """16 random bytes, URL-safe base64 without padding, not starting with '-' (StorageTool's rule)."""
    while True:
        cid = base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


@dataclass
class ClusterState:
    """What survives between CLI calls: identity, ports and the broker's pid."""

    name: str
    cluster_id: str
    port: int
    controller_port: int
    kafka_version: str
    pid: int | None = None
    #: A secured cluster's ports besides ``port`` (its SASL_SSL listener): MTLS, EXPIRED, WRONGHOST.
    extra_ports: dict[str, int] = field(default_factory=dict)
    #: This node's id and its cluster's controller.quorum.voters ("" for a single node: itself).
    node_id: int = 1
    voters: str = ""
    #: Replicas of internal topics and of new topics (the cluster's node count); min ISR is 2 above one.
    replicas: int = 1


@dataclass(frozen=True)
class Membership:
    """What a node of a replicated cluster shares with the others and what is its own."""

    cluster_id: str
    node_id: int
    voters: str
    replicas: int
    port: int
    controller_port: int


def _server_properties(
    state: ClusterState, log_dir: Path, extra: dict[str, str], security: ClusterSecurity | None = None
) -> str:
    rf = state.replicas
    min_isr = str(min(rf, 2))
    replication = (
        # Replicated: any one node may die and every write still has a second copy (Kafka's own
        # transactions system test runs three brokers so). The quorum's timeouts are longer than
        # Kafka's 1 s election and 2 s fetch: six JVMs, a mirror and its loads on 2 cores starve a
        # voter for seconds, and with the defaults a restarted node was seen caught in elections
        # for over 90 s.
        {
            "default.replication.factor": str(rf),
            "min.insync.replicas": min_isr,
            "controller.quorum.election.timeout.ms": "3000",
            "controller.quorum.fetch.timeout.ms": "6000",
        }
        if rf > 1
        # One node: its broker is fenced by its own controller when a heartbeat goes unanswered for
        # broker.session.timeout.ms (9 s), and every partition goes offline until the next one. In one
        # CI run (cc48) a machine-wide stall of about 10 s did that to three test brokers at the same
        # moment, and a test's metadata request failed. With no other broker to move leadership to,
        # fencing the only one only loses availability: 30 s rides out such a stall.
        else {"broker.session.timeout.ms": "30000"}
    )
    props = {
        "process.roles": "broker,controller",
        "node.id": str(state.node_id),
        "controller.quorum.voters": state.voters or f"{state.node_id}@127.0.0.1:{state.controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{state.port},CONTROLLER://127.0.0.1:{state.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{state.port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        # Internal topics ask for as many replicas as there are nodes: on one node, more than one
        # would keep transactions and group commits from ever starting.
        "offsets.topic.replication.factor": str(rf),
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": str(rf),
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": "10",
        "share.coordinator.state.topic.replication.factor": str(rf),
        "share.coordinator.state.topic.min.isr": min_isr,
        **replication,
        "group.initial.rebalance.delay.ms": "0",
        # The controller appends a no-op record to an idle metadata log every 500 ms by default; every
        # 5 s is enough on a dev cluster, and an idle test broker then costs 3.6% of a core, not 5.2%
        # (nothing but liveness rides on it: real metadata changes are written at once).
        "metadata.max.idle.interval.ms": "5000",
        # Tests use short session timeouts to provoke rebalances quickly.
        "group.min.session.timeout.ms": "1000",
        "auto.create.topics.enable": "false",
        # Aborted/expired transactions are cleaned up quickly so chaos tests do not wait minutes.
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "5000",
        **(security.broker_properties(state.port, state.controller_port, state.extra_ports) if security else {}),
        **extra,
    }
    return "".join(f"{k}={v}\n" for k, v in props.items())


class LocalKafkaCluster:
    """A named single-node KRaft cluster whose data lives in ``home`` and survives restarts (or, given
    a ``Membership``, one node of a replicated cluster: see ``devkafka.replicated``).

    ``start`` formats the storage on first use, launches the JVM in its own session (so the caller's
    signals do not reach it) and waits until the broker answers a metadata request. ``stop`` signals
    only the broker's own pid: SIGTERM for a clean shutdown, SIGKILL for a crash.
    """

    def __init__(
        self,
        name: str,
        home: Path,
        jars: KafkaJars,
        *,
        broker_config: dict[str, str] | None = None,
        heap: str = "768m",
        secured: bool = False,
        membership: Membership | None = None,
        features: dict[str, int] | None = None,
    ) -> None:
        self.name = name
        self.home = home
        self.jars = jars
        self.broker_config = broker_config or {}
        #: Feature levels set when the storage is formatted (e.g. ``transaction.version``: 1), else the release's.
        self.features = features or {}
        self.heap = heap
        self.state = self._load_or_create_state(membership)
        #: TLS material and SCRAM users when the cluster is secured (see ``devkafka.security``).
        self.security = ClusterSecurity(home / "security") if secured else None
        if secured and not self.state.extra_ports:
            self.state.extra_ports = {name: free_port() for name in EXTRA_LISTENERS}

    # -- identity -------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the client listener (PLAINTEXT, or SASL_SSL when secured)."""
        return f"127.0.0.1:{self.state.port}"

    @property
    def client_config(self) -> dict[str, Any]:
        """librdkafka settings with full rights: the address, plus the super user's when secured."""
        if self.security is None:
            return {"bootstrap.servers": self.bootstrap_servers}
        return self.security.sasl_ssl(self.bootstrap_servers)

    def listener(self, name: str) -> str:
        """``host:port`` of a secured cluster's extra listener (MTLS, EXPIRED, WRONGHOST)."""
        return f"127.0.0.1:{self.state.extra_ports[name]}"

    @property
    def server_log(self) -> Path:
        """The broker's log4j output."""
        return self.home / "logs" / "server.log"

    @property
    def console_log(self) -> Path:
        """The JVM's stdout and stderr (startup failures land here)."""
        return self.home / "logs" / "console.log"

    def _load_or_create_state(self, membership: Membership | None) -> ClusterState:
        path = self.home / _STATE_FILE
        if path.exists():
            state = ClusterState(**json.loads(path.read_text()))
            if state.kafka_version != self.jars.version:
                raise ClusterStartError(
                    f"cluster {self.name!r} in {self.home} was formatted by Kafka {state.kafka_version}, "
                    f"not {self.jars.version}; remove the directory or set MIRROR_SINK_KAFKA_VERSION"
                )
            return state
        if membership is not None:
            return ClusterState(
                name=self.name,
                cluster_id=membership.cluster_id,
                port=membership.port,
                controller_port=membership.controller_port,
                kafka_version=self.jars.version,
                node_id=membership.node_id,
                voters=membership.voters,
                replicas=membership.replicas,
            )
        return ClusterState(
            name=self.name,
            cluster_id=new_cluster_id(),
            port=free_port(),
            controller_port=free_port(),
            kafka_version=self.jars.version,
        )

    def _save_state(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        tmp = self.home / (_STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self.state), indent=2))
        tmp.replace(self.home / _STATE_FILE)

    # -- process --------------------------------------------------------------------------------
    def is_running(self) -> bool:
        """True while the recorded broker pid is alive (and not a zombie)."""
        pid = self.state.pid
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        try:
            status = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            return True
        return status != "Z"

    def _java_command(self, main_class: str, *args: str) -> list[str]:
        res = resources.files("devkafka") / "resources"
        if self.jars.major >= 4:
            logging_flag = f"-Dlog4j2.configurationFile={res / 'log4j2.properties'}"
        else:
            logging_flag = f"-Dlog4j.configuration=file:{res / 'log4j.properties'}"
        return [
            os.environ.get("JAVA", "java"),
            "-Xms256m", f"-Xmx{self.heap}", *jvm_performance_opts(),
            "-Djava.awt.headless=true", f"-Dkafka.logs.dir={self.home / 'logs'}", logging_flag,
            "-cp", self.jars.classpath, main_class, *args,
        ]  # fmt: skip

    def _format_storage(self, props: Path) -> None:
        if (self.home / "data" / "meta.properties").exists():
            return
        cmd = self._java_command(
            "kafka.tools.StorageTool", "format", "-t", self.state.cluster_id, "-c", str(props),
            "--ignore-formatted", *(self.security.scram_format_args() if self.security else []),
            *(arg for name, level in self.features.items() for arg in ("--feature", f"{name}={level}")),
        )  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ClusterStartError(
                f"formatting cluster {self.name!r} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
            )

    def start(self, timeout: float = 90.0) -> None:
        """Start the broker (format first if new) and wait until it serves metadata; idempotent."""
        if self.is_running():
            self.wait_ready(timeout)
            return
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        props = self.home / "server.properties"
        props.write_text(_server_properties(self.state, self.home / "data", self.broker_config, self.security))
        self._format_storage(props)
        started = time.monotonic()
        with open(self.console_log, "ab") as console:
            proc = subprocess.Popen(
                self._java_command("kafka.Kafka", str(props)),
                stdout=console,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.state.pid = proc.pid
        self._save_state()
        self._popen = proc  # keeps the child reaped when this process started it
        self.wait_ready(timeout)
        log.info(
            "cluster %s ready at %s (pid %d) in %.1f s",
            self.name, self.bootstrap_servers, proc.pid, time.monotonic() - started,
        )  # fmt: skip

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Block until the broker answers a metadata request, or raise with the tail of its logs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.is_running():
                raise ClusterStartError(f"broker {self.name!r} exited during startup\n{self.log_tail()}")
            if self._port_open() and self._answers_metadata():
                return
            time.sleep(0.2)
        raise ClusterStartError(
            f"broker {self.name!r} did not answer metadata at {self.bootstrap_servers} within "
            f"{timeout:.0f} s\n{self.log_tail()}"
        )

    def _port_open(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.state.port), timeout=0.5):
                return True
        except OSError:
            return False

    def _answers_metadata(self) -> bool:
        admin = AdminClient({**self.client_config, "log_level": 0})
        try:
            md = admin.list_topics(timeout=5)  # a loaded machine answers slowly, not never
        except Exception:
            return False
        return bool(md.brokers)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the console and server logs, for error messages."""
        parts = []
        for path in (self.console_log, self.server_log):
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {path} (last {len(tail)} lines) ---\n" + "\n".join(tail))
        return "\n".join(parts) or f"(no logs under {self.home / 'logs'})"

    def stop(self, *, hard: bool = False, timeout: float = 60.0) -> None:
        """Stop the broker by its own pid: SIGTERM (clean, waits) or SIGKILL (crash)."""
        pid = self.state.pid
        if pid is None or not self.is_running():
            self.state.pid = None
            self._save_state()
            return
        os.kill(pid, signal.SIGKILL if hard else signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.is_running():
            popen = getattr(self, "_popen", None)
            if popen is not None:
                popen.poll()
            if time.monotonic() > deadline:
                log.warning("broker %s (pid %d) ignored SIGTERM for %.0f s; killing", self.name, pid, timeout)
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + timeout
            time.sleep(0.1)
        self.state.pid = None
        self._save_state()
        log.info("cluster %s stopped (%s)", self.name, "SIGKILL" if hard else "SIGTERM")

    def restart(self, *, hard: bool = False, timeout: float = 90.0) -> None:
        """Stop (cleanly or hard) and start again on the same log dir and ports."""
        self.stop(hard=hard)
        self.start(timeout)
