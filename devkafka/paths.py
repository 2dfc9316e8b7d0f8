"""Where development state lives: jar cache and cluster data directories (overridable by env)."""

from __future__ import annotations

import os
from pathlib import Path

from mirror_sink.core.runtime.paths import data_dir

__all__ = ["cache_dir", "data_dir", "kafka_version"]

#: The newest complete Apache Kafka 4.x release on Maven Central (4.4.0 has only kafka-clients there).
DEFAULT_KAFKA_VERSION = "4.3.1"


def kafka_version() -> str:
    """The Kafka version to run: ``MIRROR_SINK_KAFKA_VERSION`` or the pinned default."""
    return os.environ.get("MIRROR_SINK_KAFKA_VERSION", DEFAULT_KAFKA_VERSION)


def cache_dir() -> Path:
    """Downloaded jars, shared by every checkout on the machine (``MIRROR_SINK_CACHE_DIR``)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mirror-sink"
    return Path(os.environ.get("MIRROR_SINK_CACHE_DIR", default))
