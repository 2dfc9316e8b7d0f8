"""Kafka Connect config providers (KIP-297): ``${env:NAME}`` and ``${file:/path:key}`` references.

A config value may reference values kept outside the connector config, as Connect allows:

* ``${env:NAME}`` is the environment variable ``NAME`` (``EnvVarConfigProvider``, KIP-887);
* ``${file:/path/to/file.properties:key}`` is ``key`` in that Java ``.properties`` file
  (``FileConfigProvider``).

A value may hold several references and literal text around them; each is replaced. Resolved values
are not scanned again for references, as in Connect's ``ConfigTransformer``.

Resolved values are often credentials, so no error raised here carries one: messages name the config
key, the provider and the variable, path or key in the file, never a value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.settings.config_files import parse_properties

SUPPORTED_PROVIDERS = ("env", "file")

# ``${provider:body}``; the body is ``NAME`` for env and ``path:key`` for file.
_REFERENCE = re.compile(r"\$\{([A-Za-z0-9_.-]+):([^}]*)\}")


def has_references(value: str) -> bool:
    """True when ``value`` holds a ``${provider:...}`` reference."""
    return "${" in value and _REFERENCE.search(value) is not None


def resolve(config: Mapping[str, str], *, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``config`` with every ``${env:NAME}`` and ``${file:/path:key}`` reference replaced.

    ``environ`` supplies ``${env:...}`` values (``os.environ`` when omitted). Each referenced file is read
    and parsed once per call. ``config`` itself is not changed.

    Raises:
        ConfigError: keyed by the config key whose value holds a reference that is malformed, names an
            unknown provider, an unset environment variable, an unreadable file or a key missing from
            the file. The message never holds a resolved value.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    files: dict[str, dict[str, str]] = {}
    resolved: dict[str, str] = {}
    for key, value in config.items():
        if not has_references(value):
            resolved[key] = value
            continue

        def substitute(match: re.Match[str], key: str = key) -> str:
            return _lookup(key, match.group(1), match.group(2), env, files)

        resolved[key] = _REFERENCE.sub(substitute, value)
    return resolved


def _lookup(key: str, provider: str, body: str, env: Mapping[str, str], files: dict[str, dict[str, str]]) -> str:
    """The value of one ``${provider:body}`` reference in the value of config ``key``."""
    if provider not in SUPPORTED_PROVIDERS:
        raise ConfigError(
            key,
            f"unknown config provider {provider!r} in a ${{{provider}:...}} reference; "
            f"supported providers: {', '.join(SUPPORTED_PROVIDERS)}",
        )
    if "${" in body:
        raise ConfigError(key, f"malformed ${{{provider}:...}} reference: nested references are not supported")
    if provider == "env":
        return _env_value(key, body, env)
    return _file_value(key, body, files)


def _env_value(key: str, body: str, env: Mapping[str, str]) -> str:
    """``${env:NAME}``, or ``${env::NAME}`` with Connect's empty path; any other path is an error."""
    path, _, name = body.rpartition(":")
    if path:
        raise ConfigError(key, "malformed ${env:...} reference: the env provider takes no path, only ${env:NAME}")
    if not name.strip():
        raise ConfigError(key, "malformed ${env:...} reference: the environment variable name is empty")
    try:
        return env[name]
    except KeyError:
        raise ConfigError(key, f"environment variable {name} is not set") from None


def _file_value(key: str, body: str, files: dict[str, dict[str, str]]) -> str:
    """``${file:/path:key}``: the path runs up to the last ``:``, the key in the file follows it."""
    path, sep, file_key = body.rpartition(":")
    if not sep or not path:
        raise ConfigError(
            key,
            "malformed ${file:...} reference: expected ${file:/path/to/file.properties:key}, no path given",
        )
    if not file_key.strip():
        raise ConfigError(key, f"malformed ${{file:{path}:...}} reference: the key in the file is empty")
    props = files.get(path)
    if props is None:
        props = files[path] = _read_properties(key, path)
    try:
        return props[file_key]
    except KeyError:
        raise ConfigError(key, f"file {path} has no key {file_key}") from None


def _read_properties(key: str, path: str) -> dict[str, str]:
    """The parsed ``.properties`` file at ``path``; errors name the path, never the file's contents."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ConfigError(key, f"config provider file {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(key, f"cannot read config provider file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        # The codec's message quotes the offending bytes, which may belong to a secret.
        raise ConfigError(key, f"config provider file {path} is not valid UTF-8") from None
    return parse_properties(text)
