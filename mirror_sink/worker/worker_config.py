"""The worker's own settings: where it listens, who it is, where its connector configs live, how its
REST API is secured and how its own Kafka clients (the shared config store's) reach the cluster."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.runtime.paths import data_dir
from mirror_sink.core.settings.secrets import MASK, is_secret, mask

# One listener: Connect's ``protocol://host:port``; the host may be empty (every interface) or an
# IPv6 address in brackets.
_LISTENER = re.compile(r"^(?P<scheme>[A-Za-z]+)://(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/\[\]\s]*):(?P<port>\d+)$")

#: The REST server's TLS settings, as Connect's ``ssl.*`` names without the prefix.
REST_SSL_SETTINGS = (
    "keystore.location",
    "keystore.password",
    "key.password",
    "keystore.type",
    "truststore.location",
    "truststore.password",
    "truststore.type",
    "client.auth",
)
_REST_SSL_KEY = re.compile(
    r"^(admin\.listeners\.https\.|listeners\.https\.)?ssl\.(" + "|".join(map(re.escape, REST_SSL_SETTINGS)) + r")$"
)
#: Where each kind of listener looks for a TLS setting, most specific first (Connect's order).
_SSL_PREFIXES = {
    False: ("listeners.https.ssl.", "ssl."),
    True: ("admin.listeners.https.ssl.", "listeners.https.ssl.", "ssl."),
}
_KEYSTORE_TYPES = ("PEM", "PKCS12")
#: The worker clients' security keys (librdkafka's names, which the connector configs use too).
_CLIENT_KEYS = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.username",
        "sasl.password",
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
    }
)
_CLIENT_AUTH = ("none", "requested", "required")


#: Worker settings in the environment, as Confluent's Connect images take them: ``CONNECT_`` then the key.
CONNECT_ENV_PREFIX = "CONNECT_"


def settings_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Worker settings from ``CONNECT_*`` variables, in the convention of Confluent's Connect images:
    upper case, ``.`` as ``_``, ``-`` as ``__`` and ``_`` as ``___`` (``CONNECT_CONFIG_STORAGE`` is
    ``config.storage``, ``CONNECT_REST_ADVERTISED__HOST`` would be ``rest.advertised-host``).

    ``MIRROR_SINK_*`` variables are another set (the CLI's own: log level, data directory) and never
    read here, so the two cannot collide."""
    settings = {}
    for name, value in environ.items():
        if not name.startswith(CONNECT_ENV_PREFIX) or name == CONNECT_ENV_PREFIX:
            continue
        key = name[len(CONNECT_ENV_PREFIX) :].lower()
        # Longest run first: "___" is an underscore, "__" a dash, "_" a dot.
        key = key.replace("___", "\0").replace("__", "-").replace("_", ".").replace("\0", "_")
        settings[key] = value
    return settings


@dataclass(frozen=True)
class Listener:
    """One REST listener: ``http`` or ``https`` on a host and port."""

    scheme: str
    host: str
    port: int

    @property
    def url(self) -> str:
        """As configured (an empty host shows as 0.0.0.0)."""
        return f"{self.scheme}://{self.host or '0.0.0.0'}:{self.port}"

    @property
    def bind_host(self) -> str:
        """The address to bind: brackets dropped, empty meaning every interface."""
        return self.host.strip("[]") or "0.0.0.0"


def parse_listeners(text: str, key: str) -> list[Listener]:
    """``http://host:port, https://host:port, ...``; ConfigError naming ``key`` for a bad entry."""
    out: list[Listener] = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        match = _LISTENER.match(entry)
        if match is None:
            raise ConfigError(key, f"{entry!r} is not a listener URL (http://host:port or https://host:port)")
        scheme, port = match["scheme"].lower(), int(match["port"])
        if scheme not in ("http", "https"):
            raise ConfigError(key, f"{entry!r}: unsupported protocol {scheme} (http or https)")
        if port > 65535:
            raise ConfigError(key, f"{entry!r}: port {port} is out of range")
        listener = Listener(scheme, match["host"], port)
        if listener in out:
            raise ConfigError(key, f"{entry!r} is listed twice")
        out.append(listener)
    return out


@dataclass(frozen=True)
class HttpsSettings:
    """The TLS settings one kind of listener (main or admin) resolved to, with the key each came from
    so that an error can name the key the operator has to fix."""

    values: Mapping[str, str]
    keys: Mapping[str, str]

    def get(self, setting: str) -> str | None:
        """The value of ``setting`` (one of REST_SSL_SETTINGS), or None."""
        return self.values.get(setting)

    def key(self, setting: str, admin: bool = False) -> str:
        """The key that set ``setting``, or the one to set when it is missing."""
        return self.keys.get(setting) or f"{_SSL_PREFIXES[admin][0]}{setting}"

    def __repr__(self) -> str:
        shown = {k: (MASK if "password" in k else v) for k, v in self.values.items()}
        return f"HttpsSettings({shown})"


class WorkerConfig(BaseModel):
    """Worker settings (a ``worker.properties`` file and/or flags), in Connect's names where it has them."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    listeners: str = "http://0.0.0.0:8083"
    admin_listeners: str | None = Field(None, alias="admin.listeners")
    worker_id: str | None = Field(None, alias="worker.id")
    data_dir: Path = Field(default_factory=lambda: data_dir() / "worker", alias="data.dir")
    config_storage: str = Field("file", alias="config.storage", pattern="^(file|kafka)$")
    config_storage_topic: str = Field("mirror-sink-configs", alias="config.storage.topic")
    #: Connector configs (Connect's ``{"name": .., "config": {..}}`` JSON files) applied at each start,
    #: as a PUT of each: a Kubernetes ConfigMap of connectors, declared rather than POSTed by hand.
    connectors_config_dir: Path | None = Field(None, alias="connectors.config.dir")
    #: With config.storage=kafka: the workers' heartbeats and every task's state (Connect's status topic).
    status_storage_topic: str = Field("mirror-sink-status", alias="status.storage.topic")
    bootstrap_servers: str | None = Field(None, alias="bootstrap.servers")
    # REST authentication: our analogue of Connect's BasicAuthSecurityRestExtension (argon2 hashes).
    rest_basic_auth_credentials_file: Path | None = Field(None, alias="rest.basic.auth.credentials.file")
    rest_admin_users: str | None = Field(None, alias="rest.admin.users")
    # The worker's own Kafka clients (librdkafka names): the config store's producer, consumer, admin.
    security_protocol: str | None = Field(
        None, alias="security.protocol", pattern=r"(?i)^(plaintext|ssl|sasl_plaintext|sasl_ssl)$"
    )
    sasl_mechanism: str | None = Field(None, alias="sasl.mechanism")
    sasl_username: str | None = Field(None, alias="sasl.username")
    sasl_password: SecretStr | None = Field(None, alias="sasl.password")
    ssl_ca_location: str | None = Field(None, alias="ssl.ca.location")
    ssl_certificate_location: str | None = Field(None, alias="ssl.certificate.location")
    ssl_key_location: str | None = Field(None, alias="ssl.key.location")
    ssl_key_password: SecretStr | None = Field(None, alias="ssl.key.password")
    ssl_endpoint_identification_algorithm: str | None = Field(
        None, alias="ssl.endpoint.identification.algorithm", pattern=r"(?i)^(none|https)$"
    )
    #: The REST TLS keys as written (``[admin.]listeners.https.ssl.*`` and ``ssl.*``), gathered by
    #: ``_gather_rest_ssl``: three prefixes times eight settings read better as one table than as fields.
    rest_ssl: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _gather_rest_ssl(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        props = dict(data)
        rest = {str(k): str(v) for k, v in dict(props.pop("rest_ssl", None) or {}).items()}
        for key in [k for k in props if isinstance(k, str) and _REST_SSL_KEY.match(k)]:
            # ssl.key.password is also the worker clients' key password (librdkafka's name): it stays
            # a field as well, as in Connect where the unprefixed ssl.* keys serve both.
            rest[key] = str(props[key] if key == "ssl.key.password" else props.pop(key))
        props["rest_ssl"] = rest
        return props

    @model_validator(mode="after")
    def _check(self) -> Self:
        main = parse_listeners(self.listeners, "listeners")
        if not main:
            raise ConfigError("listeners", "at least one listener is required")
        admin = self.admin_listener_list
        for is_admin, kind in ((False, main), (True, admin or [])):
            if not any(listener.scheme == "https" for listener in kind):
                continue
            https = self.https_settings(admin=is_admin)
            if not https.get("keystore.location"):
                raise ConfigError(https.key("keystore.location", is_admin), "is required for an https listener")
            for setting, allowed in (("keystore.type", _KEYSTORE_TYPES), ("truststore.type", _KEYSTORE_TYPES)):
                value = (https.get(setting) or "PEM").upper()
                if value not in allowed:
                    hint = " (convert a JKS store: keytool -importkeystore -deststoretype PKCS12)" * (value == "JKS")
                    raise ConfigError(https.key(setting, is_admin), f"{value} is not supported: PEM or PKCS12{hint}")
            auth = (https.get("client.auth") or "none").lower()
            if auth not in _CLIENT_AUTH:
                raise ConfigError(https.key("client.auth", is_admin), f"{auth!r}: none, requested or required")
            if auth != "none" and not https.get("truststore.location"):
                raise ConfigError(
                    https.key("truststore.location", is_admin), f"is required with client.auth={auth} (mTLS)"
                )
        if self.rest_admin_users is not None and self.rest_basic_auth_credentials_file is None:
            raise ConfigError("rest.admin.users", "needs rest.basic.auth.credentials.file (users must authenticate)")
        return self

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # Passwords never reach a log line through a repr, whichever key they came from (a path is
        # no secret, although rest.basic.auth.credentials.file has "credentials" in its name).
        fields = type(self).model_fields
        for name, value in super().__repr_args__():
            alias = (fields[name].alias if name in fields else None) or name or ""
            if name == "rest_ssl":
                yield name, mask(value)
            elif isinstance(value, SecretStr) or (
                is_secret(alias) and value is not None and not isinstance(value, Path)
            ):
                yield name, MASK
            else:
                yield name, value

    @property
    def listener_list(self) -> list[Listener]:
        """The main REST listeners (Connect's ``listeners``)."""
        return parse_listeners(self.listeners, "listeners")

    @property
    def admin_listener_list(self) -> list[Listener] | None:
        """Where ``/admin`` is served: None = on the main listeners (unset, Connect's default);
        an empty list = nowhere (``admin.listeners=`` disables the admin endpoints)."""
        if self.admin_listeners is None:
            return None
        return parse_listeners(self.admin_listeners, "admin.listeners")

    def https_settings(self, admin: bool = False) -> HttpsSettings:
        """The TLS settings of the main (or admin) https listeners: the most specific key wins."""
        values: dict[str, str] = {}
        keys: dict[str, str] = {}
        for setting in REST_SSL_SETTINGS:
            for prefix in _SSL_PREFIXES[admin]:
                key = prefix + setting
                if key in self.rest_ssl:
                    values[setting], keys[setting] = self.rest_ssl[key], key
                    break
        return HttpsSettings(values, keys)

    @property
    def admin_users(self) -> frozenset[str] | None:
        """Users allowed on ``/admin``; None = every authenticated user."""
        if self.rest_admin_users is None:
            return None
        return frozenset(u.strip() for u in self.rest_admin_users.split(",") if u.strip())

    def kafka_client_config(self) -> dict[str, str]:
        """The security settings of the worker's own Kafka clients (librdkafka names, secrets revealed:
        for the clients only, never for a log)."""
        out: dict[str, str] = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if field.alias in _CLIENT_KEYS and value is not None:
                out[field.alias] = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
        return out

    @property
    def host_port(self) -> tuple[str, int]:
        """Where the (first) REST listener listens."""
        first = self.listener_list[0]
        return first.bind_host, first.port

    @property
    def id(self) -> str:
        """The worker id: configured, or host:port as Connect's."""
        return self.worker_id or f"{socket.gethostname()}:{self.host_port[1]}"
