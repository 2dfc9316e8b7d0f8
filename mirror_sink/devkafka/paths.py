"""Where development state lives: jar cache and cluster data directories (overridable by env)."""

from __future__ import annotations

import os
from pathlib import Path

#: The newest complete Apache Kafka 4.x release on Maven Central (4.4.0 has only kafka-clients there).
DEFAULT_KAFKA_VERSION = "4.3.1"


def kafka_version() -> str:
    """The Kafka version to run: ``MIRROR_SINK_KAFKA_VERSION`` or the pinned default."""
    return os.environ.get("MIRROR_SINK_KAFKA_VERSION", DEFAULT_KAFKA_VERSION)


def cache_dir() -> Path:
    """Downloaded jars, shared by every checkout on the machine (``MIRROR_SINK_CACHE_DIR``)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mirror-sink"
    return Path(os.environ.get("MIRROR_SINK_CACHE_DIR", default))


def data_dir() -> Path:
    """State of the `dev-kafka` clusters and of the embedded worker (``MIRROR_SINK_DATA_DIR``)."""
    default = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "mirror-sink"
    return Path(os.environ.get("MIRROR_SINK_DATA_DIR", default))


def project_root() -> Path:
    """The source checkout this package runs from (it holds ``deploy/kafka/pom.xml``)."""
    return Path(__file__).resolve().parents[2]
