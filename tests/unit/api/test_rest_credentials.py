"""REST API security without a worker process: the credentials file and its ``passwd`` verb, the
worker keys for listeners, admin listeners and TLS, the TLS contexts (PEM and PKCS12, over a real
in-memory handshake) and what a listener lets through (401, 403, 404 in Connect's shape)."""

from __future__ import annotations

import asyncio
import io
import ssl
import stat
import tempfile
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
import trustme
from argon2 import PasswordHasher
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from fastapi import FastAPI
from pydantic import ValidationError

from api.cli.main import main as cli
from api.rest_credentials import BasicAuthenticator, parse_credentials, set_password
from api.security import ListenerApp
from api.tls import server_context
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.worker.worker_config import Listener, WorkerConfig

# ----------------------------------------------------------------------------- credentials file


def test_credentials_file_with_hashes_is_read(tmp_path: Path) -> None:
    hashed = PasswordHasher().hash("pw")
    path = tmp_path / "users"
    path.write_text(f"# REST users\n\nalice={hashed}\n  bob = {hashed}  \n")
    assert parse_credentials(path) == {"alice": hashed, "bob": hashed}


def test_plaintext_password_is_refused_with_file_and_line_never_the_value(tmp_path: Path) -> None:
    path = tmp_path / "users"
    path.write_text(f"# users\nalice={PasswordHasher().hash('pw')}\nbob=hunter2\n")
    with pytest.raises(ConfigError) as err:
        parse_credentials(path)
    assert err.value.key == "rest.basic.auth.credentials.file"
    assert f"{path}:3" in str(err.value) and "'bob'" in str(err.value)
    assert "hunter2" not in str(err.value)
    assert f"mirror-sink passwd {path} bob" in str(err.value)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("alice: secret\n", "expected username=<argon2 hash>"),  # Connect's property-file style, refused
        ("=x\n", "expected username=<argon2 hash>"),
        ("al ice=$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaA\n", "invalid username"),
        ("alice=$argon2id$garbage\n", "not an argon2 hash"),
    ],
)
def test_malformed_lines_are_refused(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "users"
    path.write_text(content)
    with pytest.raises(ConfigError, match=expected) as err:
        parse_credentials(path)
    assert f"{path}:1" in str(err.value)
    assert "secret" not in str(err.value)


def test_duplicate_user_and_missing_file_are_refused(tmp_path: Path) -> None:
    hashed = PasswordHasher().hash("pw")
    path = tmp_path / "users"
    path.write_text(f"alice={hashed}\nalice={hashed}\n")
    with pytest.raises(ConfigError, match=rf"{path}:2: user 'alice' is listed twice"):
        parse_credentials(path)
    with pytest.raises(ConfigError, match=r"cannot read .*missing"):
        parse_credentials(tmp_path / "missing")


def _passwd(monkeypatch: pytest.MonkeyPatch, path: Path, user: str, password: str) -> int:
    monkeypatch.setattr("sys.stdin", io.StringIO(password + "\n"))  # not a TTY: read from stdin
    return cli(["passwd", str(path), user])


def test_passwd_verb_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "users"
    assert _passwd(monkeypatch, path, "alice", "correct horse") == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "correct horse" not in path.read_text()
    assert _passwd(monkeypatch, path, "bob", "battery staple") == 0
    first_bob = parse_credentials(path)["bob"]
    assert _passwd(monkeypatch, path, "bob", "new one") == 0  # replaces bob's line, keeps alice's
    users = parse_credentials(path)
    assert set(users) == {"alice", "bob"} and users["bob"] != first_bob
    assert len(path.read_text().splitlines()) == 2
    auth = BasicAuthenticator(users)
    assert auth.verify("alice", "correct horse")
    assert auth.verify("bob", "new one")
    assert not auth.verify("bob", "battery staple")
    assert not auth.verify("carol", "correct horse")


def test_passwd_keeps_comments_and_refuses_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "users"
    path.write_text("# who may call the REST API\n")
    assert set_password(path, "alice", "pw") is True
    assert set_password(path, "alice", "pw2") is False
    assert path.read_text().startswith("# who may call the REST API\nalice=$argon2id$")
    assert _passwd(monkeypatch, path, "bad:user", "pw") == 2
    assert _passwd(monkeypatch, path, "carol", "") == 2
    assert set(parse_credentials(path)) == {"alice"}


def test_successful_checks_are_cached_and_failures_are_not() -> None:
    calls: list[str | bytes] = []

    class Counting(PasswordHasher):
        def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
            calls.append(password)
            return super().verify(hash, password)

    auth = BasicAuthenticator({"alice": PasswordHasher().hash("pw")}, _hasher=Counting())
    assert auth.verify("alice", "pw") and auth.verify("alice", "pw")
    assert calls == ["pw"], "the second check of the same pair is served from the cache"
    assert not auth.verify("alice", "nope") and not auth.verify("alice", "nope")
    assert calls == ["pw", "nope", "nope"]
    assert not auth.verify("mallory", "pw"), "an unknown user still costs a verify (no timing hint)"
    assert len(calls) == 4
    auth.ttl_s = 0  # expired: checked again
    auth._cache.clear()
    assert auth.verify("alice", "pw") and len(calls) == 5


# ----------------------------------------------------------------------------- worker keys


def config(**props: str) -> WorkerConfig:
    """A WorkerConfig from worker.properties keys, the ConfigError its checks raise re-raised."""
    try:
        return WorkerConfig.model_validate(props)
    except ValidationError as exc:
        cause = exc.errors()[0].get("ctx", {}).get("error")
        if isinstance(cause, ConfigError):
            raise cause from None
        raise


def test_listeners_one_or_several() -> None:
    assert WorkerConfig.model_validate({}).listener_list == [Listener("http", "0.0.0.0", 8083)]
    assert WorkerConfig.model_validate({}).host_port == ("0.0.0.0", 8083)
    one = config(listeners="http://127.0.0.1:8083")
    assert one.host_port == ("127.0.0.1", 8083) and one.admin_listener_list is None
    several = config(
        listeners="http://:8083, HTTPS://[::1]:8443",
        **{"listeners.https.ssl.keystore.location": "/k.pem"},
    )
    assert several.listener_list == [Listener("http", "", 8083), Listener("https", "[::1]", 8443)]
    assert several.listener_list[1].bind_host == "::1"


@pytest.mark.parametrize(
    ("props", "key", "message"),
    [
        ({"listeners": "localhost:8083"}, "listeners", "is not a listener URL"),
        ({"listeners": "ftp://h:21"}, "listeners", "unsupported protocol ftp"),
        ({"listeners": "http://h:99999"}, "listeners", "out of range"),
        ({"listeners": "http://h:1,http://h:1"}, "listeners", "listed twice"),
        ({"listeners": " , "}, "listeners", "at least one listener"),
        ({"listeners": "https://h:1"}, "listeners.https.ssl.keystore.location", "required for an https listener"),
        ({"admin.listeners": "https://h:2"}, "admin.listeners.https.ssl.keystore.location", "required"),
        ({"admin.listeners": "http://h:2,bogus"}, "admin.listeners", "is not a listener URL"),
        (
            {"listeners": "https://h:1", "ssl.keystore.location": "/k", "ssl.keystore.type": "JKS"},
            "ssl.keystore.type",
            "keytool -importkeystore",
        ),
        (
            {"listeners": "https://h:1", "ssl.keystore.location": "/k", "listeners.https.ssl.client.auth": "maybe"},
            "listeners.https.ssl.client.auth",
            "none, requested or required",
        ),
        (
            {"listeners": "https://h:1", "ssl.keystore.location": "/k", "ssl.client.auth": "required"},
            "listeners.https.ssl.truststore.location",
            "required with client.auth=required",
        ),
        ({"rest.admin.users": "alice"}, "rest.admin.users", "needs rest.basic.auth.credentials.file"),
    ],
)
def test_bad_worker_keys_name_the_key(props: dict[str, str], key: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        config(**props)
    assert err.value.key == key


def test_unknown_and_malformed_keys_are_refused() -> None:
    with pytest.raises(ValidationError, match=r"listeners\.https\.ssl\.keystore\.bogus"):
        config(**{"listeners.https.ssl.keystore.bogus": "x"})
    with pytest.raises(ValidationError, match=r"security\.protocol"):
        config(**{"security.protocol": "TLS"})


def test_prefixed_ssl_keys_win_and_admin_falls_back() -> None:
    worker = config(
        listeners="https://h:1",
        **{
            "admin.listeners": "https://h:2",
            "ssl.keystore.location": "/plain.pem",
            "ssl.key.password": "plain-pw",
            "listeners.https.ssl.keystore.location": "/main.pem",
            "admin.listeners.https.ssl.keystore.type": "PKCS12",
            "admin.listeners.https.ssl.keystore.location": "/admin.p12",
        },
    )
    main, admin = worker.https_settings(), worker.https_settings(admin=True)
    assert main.get("keystore.location") == "/main.pem" and main.key("keystore.location") == (
        "listeners.https.ssl.keystore.location"
    )
    assert main.get("key.password") == "plain-pw" and main.key("key.password") == "ssl.key.password"
    assert main.get("keystore.type") is None
    assert admin.get("keystore.location") == "/admin.p12" and admin.get("keystore.type") == "PKCS12"
    assert admin.get("key.password") == "plain-pw"
    # ssl.key.password is the worker clients' key password too (librdkafka's name).
    assert worker.kafka_client_config() == {"ssl.key.password": "plain-pw"}


def test_admin_listeners_unset_empty_or_listed() -> None:
    assert config().admin_listener_list is None  # /admin on the main listeners, Connect's default
    assert config(**{"admin.listeners": ""}).admin_listener_list == []  # disabled everywhere
    assert config(**{"admin.listeners": "http://127.0.0.1:9"}).admin_listener_list == [Listener("http", "127.0.0.1", 9)]


def test_worker_client_security_keys_and_masking() -> None:
    worker = config(
        **{
            "config.storage": "kafka",
            "bootstrap.servers": "k:9093",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "worker",
            "sasl.password": "sasl-s3cret",
            "ssl.ca.location": "/ca.pem",
            "ssl.certificate.location": "/c.pem",
            "ssl.key.location": "/k.pem",
            "ssl.key.password": "key-s3cret",
            "ssl.endpoint.identification.algorithm": "https",
            "listeners": "https://h:1",
            "listeners.https.ssl.keystore.location": "/rest.pem",
            "listeners.https.ssl.keystore.password": "store-s3cret",
            "admin.listeners.https.ssl.key.password": "admin-s3cret",
        }
    )
    assert worker.kafka_client_config() == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "worker",
        "sasl.password": "sasl-s3cret",
        "ssl.ca.location": "/ca.pem",
        "ssl.certificate.location": "/c.pem",
        "ssl.key.location": "/k.pem",
        "ssl.key.password": "key-s3cret",
        "ssl.endpoint.identification.algorithm": "https",
    }
    shown = f"{worker!r} {worker} {worker.https_settings()!r} {worker.https_settings(admin=True)!r}"
    assert "s3cret" not in shown, shown
    assert "[hidden]" in shown and "/rest.pem" in shown and "SCRAM-SHA-512" in shown


# ----------------------------------------------------------------------------- TLS contexts


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    """A CA made for this run."""
    return trustme.CA()


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> None:
    """A TLS handshake between the two contexts over memory BIOs (raises on failure)."""
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    s = server.wrap_bio(s_in, s_out, server_side=True)
    c = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    done = {"s": False, "c": False}
    for _ in range(20):
        for name, end in (("c", c), ("s", s)):
            if not done[name]:
                try:
                    end.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return
    raise AssertionError("handshake did not complete")


def _client(ca: trustme.CA) -> ssl.SSLContext:
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return client


def _https(**props: str) -> WorkerConfig:
    return config(listeners="https://127.0.0.1:1", **props)


def test_pem_keystore_serves_tls(ca: trustme.CA, tmp_path: Path) -> None:
    keystore = tmp_path / "server.pem"
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(str(keystore))
    context = server_context(_https(**{"listeners.https.ssl.keystore.location": str(keystore)}).https_settings())
    _handshake(context, _client(ca))
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(context, _client(trustme.CA()))  # a client that does not trust our CA


def _p12(ca: trustme.CA, password: bytes | None) -> bytes:
    leaf = ca.issue_cert("localhost")
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    chain = [x509.load_pem_x509_certificate(b.bytes()) for b in leaf.cert_chain_pems]
    encryption = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    return pkcs12.serialize_key_and_certificates(b"rest", key, chain[0], chain[1:], encryption)  # type: ignore[arg-type]


def test_pkcs12_keystore_serves_tls_and_leaves_no_pem_behind(
    ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where mkstemp puts the PEM copy
    keystore = tmp_path / "server.p12"
    keystore.write_bytes(_p12(ca, b"store-pw"))
    worker = _https(
        **{
            "listeners.https.ssl.keystore.location": str(keystore),
            "listeners.https.ssl.keystore.type": "PKCS12",
            "listeners.https.ssl.keystore.password": "store-pw",
        }
    )
    _handshake(server_context(worker.https_settings()), _client(ca))
    assert list((tmp_path / "tmp").iterdir()) == [], "the PEM copy of the key is deleted once loaded"


def test_mtls_requires_a_client_certificate(ca: trustme.CA, tmp_path: Path) -> None:
    keystore, truststore = tmp_path / "server.pem", tmp_path / "ca.pem"
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(str(keystore))
    ca.cert_pem.write_to_path(str(truststore))
    worker = _https(
        **{
            "ssl.keystore.location": str(keystore),
            "ssl.truststore.location": str(truststore),
            "ssl.client.auth": "required",
        }
    )
    context = server_context(worker.https_settings())
    assert context.verify_mode == ssl.CERT_REQUIRED
    client = _client(ca)
    ca.issue_cert("client").configure_cert(client)
    _handshake(context, client)
    with pytest.raises(ssl.SSLError):
        _handshake(context, _client(ca))  # no client certificate


def test_bad_keystores_name_the_key_and_the_file(ca: trustme.CA, tmp_path: Path) -> None:
    key = "listeners.https.ssl.keystore.location"
    missing = tmp_path / "missing.pem"
    with pytest.raises(ConfigError, match=f"cannot read {missing}") as err:
        server_context(_https(**{key: str(missing)}).https_settings())
    assert err.value.key == key
    cert_only = tmp_path / "cert.pem"
    ca.cert_pem.write_to_path(str(cert_only))
    with pytest.raises(ConfigError, match=f"{cert_only} must hold the private key"):
        server_context(_https(**{key: str(cert_only)}).https_settings())
    p12 = tmp_path / "server.p12"
    p12.write_bytes(_p12(ca, b"right"))
    wrong = _https(**{key: str(p12), "ssl.keystore.type": "PKCS12", "listeners.https.ssl.keystore.password": "wrong"})
    with pytest.raises(ConfigError, match=r"listeners\.https\.ssl\.keystore\.password is wrong") as err:
        server_context(wrong.https_settings())
    assert err.value.key == key and str(p12) in str(err.value)
    mismatched = tmp_path / "mismatched.pem"
    mismatched.write_bytes(ca.issue_cert("a").private_key_pem.bytes() + ca.issue_cert("b").cert_chain_pems[0].bytes())
    with pytest.raises(ConfigError, match=str(mismatched)):
        server_context(_https(**{key: str(mismatched)}).https_settings())


# ----------------------------------------------------------------------------- what a listener lets through


def _call(app: ListenerApp, path: str, auth: tuple[str, str] | None = None) -> httpx.Response:
    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://w", auth=auth) as client:
            return await client.get(path)

    return asyncio.run(call())


def _inner() -> FastAPI:
    app = FastAPI()

    @app.get("/connectors")
    def connectors() -> list[str]:
        return []

    @app.get("/admin/loggers")
    def loggers() -> dict[str, Any]:
        return {"root": {"level": "INFO"}}

    return app


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body.keys() == {"error_code", "message"} and body["error_code"] == status
    return str(body["message"])


def test_listener_gates_authenticates_and_authorizes() -> None:
    auth = BasicAuthenticator({u: PasswordHasher().hash(f"{u}-pw") for u in ("alice", "bob")})
    main = ListenerApp(_inner(), main=True, admin=False, authenticator=auth, admin_users=frozenset({"alice"}))
    admin = ListenerApp(_inner(), main=False, admin=True, authenticator=auth, admin_users=frozenset({"alice"}))
    missing = _call(main, "/connectors")
    _error(missing, 401)
    assert missing.headers["www-authenticate"] == 'Basic realm="mirror-sink"'
    _error(_call(main, "/connectors", ("alice", "wrong")), 401)
    _error(_call(main, "/connectors", ("nobody", "alice-pw")), 401)
    assert _call(main, "/connectors", ("bob", "bob-pw")).json() == []
    assert _error(_call(main, "/admin/loggers", ("alice", "alice-pw")), 404) == "HTTP 404 Not Found"
    _error(_call(admin, "/connectors", ("alice", "alice-pw")), 404)
    assert _call(admin, "/admin/loggers", ("alice", "alice-pw")).status_code == 200
    assert "bob" in _error(_call(admin, "/admin/loggers", ("bob", "bob-pw")), 403)
    _error(_call(admin, "/admin/loggers"), 401)
    open_listener = ListenerApp(_inner())
    assert _call(open_listener, "/admin/loggers").status_code == 200  # no credentials file: no auth


def test_encrypted_pem_key_needs_its_password(ca: trustme.CA, tmp_path: Path) -> None:
    leaf = ca.issue_cert("localhost")
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"pw")
    )
    keystore = tmp_path / "server.pem"
    keystore.write_bytes(encrypted + b"".join(b.bytes() for b in leaf.cert_chain_pems))
    location = {"listeners.https.ssl.keystore.location": str(keystore)}
    with pytest.raises(ConfigError, match=r"the key is encrypted: set listeners\.https\.ssl\.key\.password"):
        server_context(_https(**location).https_settings())  # and no prompt on a terminal
    with pytest.raises(ConfigError, match=r"does not decrypt with ssl\.key\.password"):
        server_context(_https(**location, **{"ssl.key.password": "wrong"}).https_settings())
    context = server_context(_https(**location, **{"ssl.key.password": "pw"}).https_settings())
    _handshake(context, _client(ca))
