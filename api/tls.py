"""TLS for the https REST listeners: an ``ssl.SSLContext`` from Kafka Connect's ``ssl.*`` settings.

Keystores: ``PEM`` (one file holding the private key and its certificate chain, the key optionally
encrypted with ``ssl.key.password``) or ``PKCS12`` (read with the ``cryptography`` package). Truststores
(for ``ssl.client.auth``): PEM CA certificates, or PKCS12. Every failure is a ConfigError naming the key
to fix and the file, raised at start-up before the worker serves anything.
"""

from __future__ import annotations

import os
import secrets
import ssl
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.worker.worker_config import HttpsSettings

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.serialization.pkcs12 import PKCS12KeyAndCertificates

_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def server_context(settings: HttpsSettings, admin: bool = False) -> ssl.SSLContext:
    """The server-side context of the main (or admin) https listeners."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_keystore(context, settings, admin)
    auth = (settings.get("client.auth") or "none").lower()
    context.verify_mode = _CLIENT_AUTH[auth]
    if auth != "none":
        _load_truststore(context, settings, admin)
    return context


def _read(settings: HttpsSettings, setting: str, admin: bool) -> tuple[Path, bytes]:
    key = settings.key(setting, admin)
    location = settings.get(setting)
    if not location:
        raise ConfigError(key, "is required for an https listener")
    path = Path(location)
    try:
        return path, path.read_bytes()
    except OSError as exc:
        raise ConfigError(key, f"cannot read {path}: {exc.strerror}") from exc


def _load_keystore(context: ssl.SSLContext, settings: HttpsSettings, admin: bool) -> None:
    path, data = _read(settings, "keystore.location", admin)
    key = settings.key("keystore.location", admin)
    kind = (settings.get("keystore.type") or "PEM").upper()
    if kind == "PKCS12":
        _load_pkcs12_keystore(context, settings, admin, path, data)
        return
    # Connect's PEM keystore: the key's password is ssl.key.password (ssl.keystore.password accepted too).
    password_setting = "key.password" if settings.get("key.password") else "keystore.password"
    password = settings.get(password_setting)
    if b"PRIVATE KEY-----" not in data or b"-----BEGIN CERTIFICATE-----" not in data:
        raise ConfigError(key, f"{path} must hold the private key and its certificate chain (PEM)")
    try:
        context.load_cert_chain(path, password=password or (lambda: ""))  # no password: never prompt
    except ssl.SSLError as exc:
        if password is None and b"ENCRYPTED" in data:
            what = f"the key is encrypted: set {settings.key('key.password', admin)}"
        elif b"ENCRYPTED" in data:
            wrong = settings.key(password_setting, admin)
            what = f"the key does not decrypt with {wrong}, or does not match the certificate"
        else:
            what = "the key does not match the certificate"
        raise ConfigError(key, f"{path}: {what} ({exc.reason or exc})") from None


def _pkcs12(settings: HttpsSettings, setting: str, admin: bool, path: Path, data: bytes) -> PKCS12KeyAndCertificates:
    try:
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:  # not a dependency of the worker itself: only PKCS12 stores need it
        raise ConfigError(
            settings.key(setting.replace("location", "type"), admin),
            "PKCS12 needs the cryptography package (pip install cryptography), or use a PEM file",
        ) from None
    password_setting = setting.replace("location", "password")
    password = settings.get(password_setting)
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        wrong = f"{path} is not a PKCS12 store, or {settings.key(password_setting, admin)} is wrong"
        raise ConfigError(settings.key(setting, admin), wrong) from None


def _load_pkcs12_keystore(
    context: ssl.SSLContext, settings: HttpsSettings, admin: bool, path: Path, data: bytes
) -> None:
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, Encoding, PrivateFormat

    store = _pkcs12(settings, "keystore.location", admin, path, data)
    if store.key is None or store.cert is None:
        raise ConfigError(settings.key("keystore.location", admin), f"{path} holds no private key with a certificate")
    # ssl.SSLContext reads keys only from files. The PEM copy is private (mkstemp: 0600), encrypted
    # under a one-off password, and deleted as soon as it is loaded: nothing usable stays on disk.
    one_off = secrets.token_bytes(32)
    pem = store.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(one_off))
    pem += store.cert.certificate.public_bytes(Encoding.PEM)
    pem += b"".join(c.certificate.public_bytes(Encoding.PEM) for c in store.additional_certs)
    fd, tmp = tempfile.mkstemp(prefix="mirror-sink-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        context.load_cert_chain(tmp, password=one_off)
    except ssl.SSLError as exc:
        raise ConfigError(settings.key("keystore.location", admin), f"{path}: {exc.reason or exc}") from None
    finally:
        os.unlink(tmp)


def _load_truststore(context: ssl.SSLContext, settings: HttpsSettings, admin: bool) -> None:
    path, data = _read(settings, "truststore.location", admin)
    key = settings.key("truststore.location", admin)
    if (settings.get("truststore.type") or "PEM").upper() == "PKCS12":
        from cryptography.hazmat.primitives.serialization import Encoding

        store = _pkcs12(settings, "truststore.location", admin, path, data)
        certs = [c.certificate for c in store.additional_certs] + ([store.cert.certificate] if store.cert else [])
        data = b"".join(c.public_bytes(Encoding.PEM) for c in certs)
    try:
        context.load_verify_locations(cadata=data.decode("ascii", errors="replace"))
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(key, f"{path} holds no usable CA certificate ({exc})") from None
