"""What the raw path's client can take: which client settings it honours, and how they map to
kafka-python's options. A setting it cannot honour keeps a connector in record mode
(``mirror.mode=auto``) or fails it with the reason (``mirror.mode=raw``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mirror_sink.core.base.errors import TaskFailure

#: librdkafka-style client properties (what connector configs carry) -> kafka-python options.
_PROPERTY_MAP = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
}
_UPPER = {"security_protocol", "sasl_mechanism"}


#: Security settings the raw path's client understands (others mean record mode; see ``unsupported``).
_SASL_MECHANISMS = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})


class RawUnsupported(TaskFailure):
    """The clusters or client settings do not allow raw mode (``mirror.mode=auto`` falls back to record)."""


_PKCS12 = "a PKCS#12 keystore: raw mode reads PEM files (ssl.certificate.location, ssl.key.location)"
#: Why the raw path's client (Python's ssl module, kafka-python's SASL) cannot take a setting.
_WHY_NOT = {
    "ssl.keystore.location": _PKCS12,
    "ssl.keystore.password": _PKCS12,
    "ssl.certificate.pem": "an inline certificate: raw mode reads it from a file (ssl.certificate.location)",
    "ssl.key.pem": "an inline key: raw mode reads it from a file (ssl.key.location)",
    "ssl.ca.pem": "an inline CA: raw mode reads it from a file (ssl.ca.location)",
    "sasl.mechanism": "raw mode authenticates with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 only",
    "sasl.mechanisms": "raw mode authenticates with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 only",
}


_NOT_MAPPED = "not a setting the raw path's client takes"


def unsupported(props: Mapping[str, str]) -> list[str]:
    """Client settings of ``props`` the raw path cannot honour, each with the reason (secrets left out)."""
    out = []
    for key, value in props.items():
        if (
            key.startswith(("sasl.", "ssl."))
            and key not in _PROPERTY_MAP
            and key != "ssl.endpoint.identification.algorithm"
        ):
            out.append(f"{key} ({_WHY_NOT.get(key, _NOT_MAPPED)})")
        elif key in ("sasl.mechanism", "sasl.mechanisms") and value.upper() not in _SASL_MECHANISMS:
            out.append(f"{key}={value} ({_WHY_NOT[key]})")
    return sorted(out)


def client_options(props: Mapping[str, str]) -> dict[str, Any]:
    """kafka-python options for ``props`` (bootstrap.servers and the security settings)."""
    opts: dict[str, Any] = {"bootstrap_servers": props["bootstrap.servers"]}
    for key, option in _PROPERTY_MAP.items():
        if key in props:
            value = props[key]
            opts[option] = value.upper() if option in _UPPER else value
    if props.get("ssl.endpoint.identification.algorithm", "https") == "none":
        opts["ssl_check_hostname"] = False
    return opts
