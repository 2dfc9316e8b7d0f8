"""A real worker process with its REST API secured as Kafka Connect's can be: an https listener and an
https admin listener (certificates from a CA made for the test), basic authentication from a
credentials file written by ``mirror-sink passwd``, /admin for admins only; and workers that refuse
to start with a bad keystore or a plaintext password. No Kafka cluster is needed: the connector it
creates stays STOPPED, so nothing reaches a broker."""

from __future__ import annotations

import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Self

import httpx
import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from devkafka.cluster import free_port
from tests.integration.harness.processes import ChildProcess, WorkerProcess
from tests.integration.harness.waiting import wait_until

PLUGIN = "org.apache.kafka.connect.mirror.MirrorSinkConnector"
KEY_PASSWORD = "key-pw-s3cret"
WORKER_SASL_PASSWORD = "worker-sasl-s3cret"
USERS = {"alice": "alice-pw", "bob": "bob-pw"}  # alice is the admin


def passwd(file: Path, user: str, password: str) -> None:
    """``mirror-sink passwd FILE USER``, the password on stdin as a script would feed it."""
    subprocess.run(
        [sys.executable, "-m", "api.cli", "passwd", str(file), user],
        input=f"{password}\n",
        text=True,
        check=True,
        capture_output=True,
    )


class SecureWorker(WorkerProcess):
    """``mirror-sink worker worker.properties`` with ``properties`` besides its listeners, worker id
    and data dir; it answers once /health does over https with ``trust`` and ``auth``."""

    def __init__(self, workdir: Path, properties: dict[str, str], trust: ssl.SSLContext, auth: tuple[str, str]) -> None:
        super().__init__(workdir)
        self.admin_port = free_port()
        self.properties = properties
        self.trust = trust
        self.auth = auth
        self.properties_path = workdir / "worker.properties"

    @property
    def url(self) -> str:
        """The main (https) listener."""
        return f"https://127.0.0.1:{self.port}"

    @property
    def admin_url(self) -> str:
        """The admin (https) listener."""
        return f"https://127.0.0.1:{self.admin_port}"

    def argv(self) -> list[str]:
        """``worker worker.properties``, the file written first."""
        props = {
            "listeners": self.url,
            "admin.listeners": self.admin_url,
            "worker.id": self.worker_id,
            "data.dir": str(self.data_dir),
            **self.properties,
        }
        self.properties_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return ["worker", str(self.properties_path)]

    def start(self) -> Self:
        """Launch and wait until /health answers (with credentials: Connect's health is behind auth too)."""
        ChildProcess.start(self)
        wait_until(self._answers, 60, f"the worker's REST API at {self.url}")
        return self

    def _answers(self) -> bool:
        if not self.alive():
            raise AssertionError(
                f"worker exited with {self.proc.returncode if self.proc else None}:\n{self.log_tail()}"
            )
        try:
            return httpx.get(f"{self.url}/health", verify=self.trust, auth=self.auth, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    """The test's own certificate authority."""
    return trustme.CA()


@pytest.fixture
def trust(ca: trustme.CA) -> ssl.SSLContext:
    """A client context that trusts only the test's CA."""
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


def encrypted_keystore(ca: trustme.CA, path: Path) -> Path:
    """A PEM keystore for 127.0.0.1: the key encrypted with KEY_PASSWORD, then the chain."""
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(KEY_PASSWORD.encode()),
    )
    path.write_bytes(pem + b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    return path


@pytest.fixture
def secure_worker(tmp_path: Path, ca: trustme.CA, trust: ssl.SSLContext) -> Iterator[SecureWorker]:
    """A worker with https listeners and basic authentication; stopped at teardown."""
    credentials = tmp_path / "rest-users"
    for user, password in USERS.items():
        passwd(credentials, user, password)
    properties = {
        "listeners.https.ssl.keystore.location": str(encrypted_keystore(ca, tmp_path / "server.pem")),
        "listeners.https.ssl.key.password": KEY_PASSWORD,
        "rest.basic.auth.credentials.file": str(credentials),
        "rest.admin.users": "alice",
        # Unused by the embedded store, but a worker secret like any other: it must never be logged.
        "sasl.password": WORKER_SASL_PASSWORD,
    }
    process = SecureWorker(tmp_path, properties, trust, ("alice", USERS["alice"])).start()
    yield process
    if process.alive():
        process.kill()


def error(response: httpx.Response, status: int) -> str:
    """Assert Connect's error shape and status; the message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error_code", "message"} and body["error_code"] == status, body
    return str(body["message"])


def test_https_listeners_basic_auth_and_admin_listener(
    secure_worker: SecureWorker, trust: ssl.SSLContext, tmp_path: Path
) -> None:
    worker = secure_worker
    alice = httpx.Client(base_url=worker.url, verify=trust, auth=("alice", USERS["alice"]), timeout=30)
    bob = httpx.Client(base_url=worker.url, verify=trust, auth=("bob", USERS["bob"]), timeout=30)
    anonymous = httpx.Client(base_url=worker.url, verify=trust, timeout=30)

    # Authentication on every path, /health included (as Connect's basic-auth extension does).
    for path in ("/connectors", "/health", "/metrics", "/ui", "/openapi.json"):
        response = anonymous.get(path)
        error(response, 401)
        assert response.headers["www-authenticate"] == 'Basic realm="mirror-sink"'
    error(anonymous.get("/connectors", auth=("alice", "wrong")), 401)
    error(anonymous.get("/connectors", auth=("mallory", USERS["alice"])), 401)
    assert alice.get("/connectors").json() == []
    assert bob.get("/connectors").status_code == 200
    assert bob.get("/health").json()["status"] == "healthy"

    # /admin only on the admin listener, and only for admins.
    assert error(alice.get("/admin/loggers"), 404) == "HTTP 404 Not Found"
    admin_alice = httpx.Client(base_url=worker.admin_url, verify=trust, auth=("alice", USERS["alice"]), timeout=30)
    assert admin_alice.get("/admin/loggers").json()["root"]["level"] in {"INFO", "DEBUG", "WARN"}
    assert "bob" in error(admin_alice.get("/admin/loggers", auth=("bob", USERS["bob"])), 403)
    error(admin_alice.get("/admin/loggers", auth=None), 401)
    error(admin_alice.get("/connectors"), 404)  # the admin listener serves /admin only

    # TLS: no plaintext on the https port; a client that does not trust the CA gets no connection.
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{worker.port}/connectors", auth=("alice", USERS["alice"]), timeout=5)
    stranger = ssl.create_default_context()
    trustme.CA().configure_trust(stranger)
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{worker.url}/connectors", verify=stranger, auth=("alice", USERS["alice"]), timeout=5)

    # A connector created over HTTPS: its secret comes back masked, as on a plain listener.
    config = {
        "connector.class": PLUGIN,
        "source.cluster.bootstrap.servers": "127.0.0.1:1",
        "target.cluster.bootstrap.servers": "127.0.0.1:1",
        "topics": "orders",
        "source.cluster.sasl.password": "s3cret",
    }
    created = bob.post("/connectors", json={"name": "secured", "config": config, "initial_state": "STOPPED"})
    assert created.status_code == 201, created.text
    assert created.json()["config"]["source.cluster.sasl.password"] == "[hidden]"
    shown = alice.get("/connectors/secured/config").json()
    assert shown["source.cluster.sasl.password"] == "[hidden]" and shown["topics"] == "orders"
    assert alice.get("/connectors/secured/status").json()["connector"]["state"] == "STOPPED"
    assert "s3cret" not in alice.get("/connectors/secured").text

    # SIGTERM still stops the worker gracefully with several listeners, promptly although the
    # clients above keep idle TLS connections open.
    started = time.monotonic()
    assert worker.stop() == 0
    assert time.monotonic() - started < 10, worker.log_tail()
    log = worker.log_text()
    assert "stopping: tasks finish or abort their transactions" in log
    assert f"https://127.0.0.1:{worker.admin_port} (admin endpoints only)" in log
    for secret in ("s3cret", KEY_PASSWORD, WORKER_SASL_PASSWORD, *USERS.values()):
        assert secret not in log, f"{secret} in the worker's log"


class FailingWorker(ChildProcess):
    """``mirror-sink worker worker.properties`` expected to refuse to start."""

    def __init__(self, workdir: Path, properties: dict[str, str]) -> None:
        super().__init__("failing-worker", workdir)
        self.properties_path = workdir / "failing-worker.properties"
        self.properties = {"worker.id": "f1", "data.dir": str(workdir / "data-f1"), **properties}

    def argv(self) -> list[str]:
        """``worker worker.properties``, the file written first."""
        self.properties_path.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()))
        return ["worker", str(self.properties_path)]


def refused(tmp_path: Path, properties: dict[str, str]) -> str:
    """Start a worker that must exit non-zero at once; its log."""
    process = FailingWorker(tmp_path, properties).start()
    assert process.wait(60) != 0, process.log_tail()
    return process.log_text()


def test_bad_keystore_or_plaintext_credentials_stop_the_worker_at_start_up(tmp_path: Path, ca: trustme.CA) -> None:
    https = {"listeners": f"https://127.0.0.1:{free_port()}"}
    missing = tmp_path / "nowhere.pem"
    log = refused(tmp_path, {**https, "listeners.https.ssl.keystore.location": str(missing)})
    assert f"listeners.https.ssl.keystore.location: cannot read {missing}" in log

    keystore = encrypted_keystore(ca, tmp_path / "server.pem")
    log = refused(tmp_path, {**https, "ssl.keystore.location": str(keystore), "ssl.key.password": "wrong-pw-s3cret"})
    assert f"ssl.keystore.location: {keystore}" in log and "wrong-pw-s3cret" not in log

    credentials = tmp_path / "users"
    passwd(credentials, "alice", "alice-pw")
    with credentials.open("a") as f:
        f.write("bob=plain-s3cret\n")
    log = refused(
        tmp_path, {"listeners": f"http://127.0.0.1:{free_port()}", "rest.basic.auth.credentials.file": str(credentials)}
    )
    assert f"{credentials}:2: the value for user 'bob' is not an argon2 hash" in log
    assert "plain-s3cret" not in log
