"""TLS material, SCRAM users and listener settings of a secured local cluster, generated for the run.

A secured cluster serves clients the way production clusters do: SASL_SSL with SCRAM-SHA-512 users
created when the storage is formatted, TLS certificates signed by a CA made for this cluster (trustme;
nothing hand-made is kept in the repository), and the StandardAuthorizer with ``admin`` as the super
user, so every other principal needs ACLs. Beside the main listener it opens listeners that tests of
bad input need, each with its own certificate:

- ``MTLS``: TLS with client certificates required (a certificate's CN is its principal);
- ``EXPIRED``: SASL_SSL whose server certificate expired yesterday;
- ``WRONGHOST``: SASL_SSL whose certificate names another host.

The broker itself authenticates with its own certificate (principal ``broker``, a super user) on the
controller and inter-broker listener, so no listener accepts anonymous clients.
"""

from __future__ import annotations

import datetime
import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme
from cryptography.hazmat.primitives import serialization

MECHANISM = "SCRAM-SHA-512"
SUPER_USER = "admin"
#: The least-privilege principal tests grant ACLs to (SCRAM user and client certificate CN alike).
MIRROR_USER = "mirror"
BROKER_PRINCIPAL = "broker"
#: Listeners besides the main SASL_SSL one and the controller, in the order their ports are kept.
EXTRA_LISTENERS = ("MTLS", "EXPIRED", "WRONGHOST")
_SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
_HOSTS = ("127.0.0.1", "localhost")


def _pkcs8(key_pem: bytes) -> bytes:
    """The key as unencrypted PKCS#8, the only PEM private-key form Kafka's PEM keystore reads."""
    key = serialization.load_pem_private_key(key_pem, password=None)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass(frozen=True)
class ClientCertificate:
    """A client's certificate and key files (for mTLS)."""

    cert: Path
    key: Path


class ClusterSecurity:
    """Certificates and SCRAM passwords of one secured cluster, kept under ``home`` across restarts."""

    def __init__(self, home: Path, users: tuple[str, ...] = (SUPER_USER, MIRROR_USER)) -> None:
        self.home = home
        self.users = users
        self.home.mkdir(parents=True, exist_ok=True)
        if not (self.home / "passwords.json").exists():
            self._generate()
        self.passwords: dict[str, str] = json.loads((self.home / "passwords.json").read_text())

    # -- files ----------------------------------------------------------------------------------
    @property
    def ca_file(self) -> Path:
        """The CA that signed every certificate of this cluster (what clients trust)."""
        return self.home / "ca.pem"

    @property
    def untrusted_ca_file(self) -> Path:
        """A CA that signed nothing here: a client trusting only it must refuse the broker."""
        return self.home / "other-ca.pem"

    def keystore(self, name: str) -> Path:
        """A broker keystore (PEM: PKCS#8 key, then the certificate chain): broker, expired, wronghost."""
        return self.home / f"{name}.keystore.pem"

    def client_certificate(self, principal: str) -> ClientCertificate:
        """The client certificate whose CN is ``principal`` (made on first use)."""
        cert, key = self.home / f"client-{principal}.crt.pem", self.home / f"client-{principal}.key.pem"
        if not cert.exists():
            ca = trustme.CA.from_pem(self.ca_file.read_bytes(), (self.home / "ca.key.pem").read_bytes())
            leaf = ca.issue_cert(f"{principal}.client", common_name=principal)
            key.write_bytes(_pkcs8(leaf.private_key_pem.bytes()))
            key.chmod(0o600)
            cert.write_bytes(b"".join(p.bytes() for p in leaf.cert_chain_pems))
        return ClientCertificate(cert, key)

    def _generate(self) -> None:
        ca = trustme.CA(organization_name="mirror-sink dev-kafka")
        self.ca_file.write_bytes(ca.cert_pem.bytes())
        (self.home / "ca.key.pem").write_bytes(ca.private_key_pem.bytes())
        (self.home / "ca.key.pem").chmod(0o600)
        self.untrusted_ca_file.write_bytes(trustme.CA(organization_name="someone else").cert_pem.bytes())
        now = datetime.datetime.now(datetime.UTC)
        leaves = {
            "broker": ca.issue_cert(*_HOSTS, common_name=BROKER_PRINCIPAL),
            "expired": ca.issue_cert(
                *_HOSTS,
                common_name=BROKER_PRINCIPAL,
                not_before=now - datetime.timedelta(days=30),
                not_after=now - datetime.timedelta(days=1),
            ),
            "wronghost": ca.issue_cert("kafka.elsewhere.invalid", common_name=BROKER_PRINCIPAL),
        }
        for name, leaf in leaves.items():
            chain = b"".join(p.bytes() for p in leaf.cert_chain_pems)
            self.keystore(name).write_bytes(_pkcs8(leaf.private_key_pem.bytes()) + chain)
            self.keystore(name).chmod(0o600)
        passwords = {user: secrets.token_urlsafe(18) for user in self.users}
        (self.home / "passwords.json").write_text(json.dumps(passwords))
        (self.home / "passwords.json").chmod(0o600)

    # -- broker side ----------------------------------------------------------------------------
    def scram_format_args(self) -> list[str]:
        """StorageTool ``format`` arguments that create every SCRAM user with the storage."""
        out: list[str] = []
        for user, password in self.passwords.items():
            out += ["--add-scram", f"{MECHANISM}=[name={user},password={password}]"]
        return out

    def broker_properties(self, port: int, controller_port: int, extra_ports: dict[str, int]) -> dict[str, str]:
        """Listener, TLS, SASL and authorizer settings of the secured broker."""
        listeners = {"SASL_SSL": port, **extra_ports, "CONTROLLER": controller_port}
        protocols = {"SASL_SSL": "SASL_SSL", "MTLS": "SSL", "EXPIRED": "SASL_SSL", "WRONGHOST": "SASL_SSL"}
        props = {
            "listeners": ",".join(f"{name}://127.0.0.1:{p}" for name, p in listeners.items()),
            "advertised.listeners": ",".join(
                f"{name}://127.0.0.1:{p}" for name, p in listeners.items() if name != "CONTROLLER"
            ),
            "listener.security.protocol.map": ",".join(f"{name}:{protocols.get(name, 'SSL')}" for name in listeners),
            # The broker talks to itself (transaction markers) and to its controller with its own
            # certificate, as principal 'broker'.
            "inter.broker.listener.name": "MTLS",
            "listener.name.mtls.ssl.client.auth": "required",
            "listener.name.controller.ssl.client.auth": "required",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.keystore("broker")),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
            "listener.name.expired.ssl.keystore.location": str(self.keystore("expired")),
            "listener.name.wronghost.ssl.keystore.location": str(self.keystore("wronghost")),
            # CN=mirror,OU=...,O=... -> principal User:mirror, the same as the SCRAM user's.
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/,DEFAULT",
            "sasl.enabled.mechanisms": MECHANISM,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": f"User:{SUPER_USER};User:{BROKER_PRINCIPAL}",
            "allow.everyone.if.no.acl.found": "false",
        }
        for name in ("sasl_ssl", "expired", "wronghost"):
            props[f"listener.name.{name}.{MECHANISM.lower()}.sasl.jaas.config"] = _SCRAM_LOGIN
        return props

    # -- client side ----------------------------------------------------------------------------
    def sasl_ssl(self, bootstrap: str, user: str = SUPER_USER, password: str | None = None) -> dict[str, Any]:
        """librdkafka settings of ``user`` over SASL_SSL (SCRAM-SHA-512) at ``bootstrap``."""
        return {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": MECHANISM,
            "sasl.username": user,
            "sasl.password": self.passwords[user] if password is None else password,
            "ssl.ca.location": str(self.ca_file),
        }

    def mtls(self, bootstrap: str, principal: str = MIRROR_USER) -> dict[str, Any]:
        """librdkafka settings of a client authenticated by its certificate (CN ``principal``)."""
        cert = self.client_certificate(principal)
        return {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(self.ca_file),
            "ssl.certificate.location": str(cert.cert),
            "ssl.key.location": str(cert.key),
        }
