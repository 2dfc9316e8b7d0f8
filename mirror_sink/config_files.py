"""Read connector configs from files: Connect's JSON (``{name, config}`` or flat) or Java properties."""

from __future__ import annotations

import json
from pathlib import Path

from mirror_sink.errors import ConfigError


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
        logical += line
        sep = min((i for i in (logical.find("="), logical.find(":")) if i >= 0), default=-1)
        key, value = (logical[:sep], logical[sep + 1 :]) if sep >= 0 else (logical, "")
        props[key.strip()] = value.strip()
        logical = ""
    return props


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
        config = {k: str(v) if not isinstance(v, bool) else str(v).lower() for k, v in doc["config"].items()}
        if "name" in doc:
            config.setdefault("name", str(doc["name"]))
        return config
    return {k: str(v) if not isinstance(v, bool) else str(v).lower() for k, v in doc.items()}
