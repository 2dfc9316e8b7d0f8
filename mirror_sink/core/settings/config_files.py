"""Read connector configs from files: Connect's JSON (``{name, config}`` or flat) or Java properties."""

from __future__ import annotations

import json
from pathlib import Path

from mirror_sink.core.base.errors import ConfigError


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties``: ``key=value`` or ``key: value`` lines, ``#``/``!`` comments, continuations."""
    props: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        _add_entry(props, logical + line)
        logical = ""
    if logical:  # a continuation on the last line still ends its entry
        _add_entry(props, logical)
    return props


def _add_entry(props: dict[str, str], entry: str) -> None:
    sep = min((i for i in (entry.find("="), entry.find(":")) if i >= 0), default=-1)
    key, value = (entry[:sep], entry[sep + 1 :]) if sep >= 0 else (entry, "")
    props[key.strip()] = value.strip()


def load_connector_config(path: Path) -> dict[str, str]:
    """The flat config of the connector described by ``path`` (its ``name`` included)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError("config file", f"cannot read {path}: {exc.strerror}") from exc
    if path.suffix != ".json":
        return parse_properties(text)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError("config file", f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise ConfigError("config file", f"{path} must hold a JSON object")
    if isinstance(doc.get("config"), dict):
        config = _strings(doc["config"])
        if "name" in doc:
            config.setdefault("name", str(doc["name"]))
        return config
    return _strings(doc)


def _strings(values: dict[str, object]) -> dict[str, str]:
    """Connect configs are strings: booleans as true/false; a JSON null leaves the key unset."""
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in values.items() if v is not None}
