"""Which connector of this worker writes which target topic.

Two connectors writing one target topic would each believe they own it: their transactions would
interleave, each shadow group would hold offsets of only part of it, and failover would translate
from the wrong map. A worker refuses the second, naming both connectors and the topic.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from mirror_sink.core.base.errors import ConfigError


def cluster_key(bootstrap: str) -> str:
    """The target cluster, as its bootstrap servers name it (order and spaces do not matter)."""
    return ",".join(sorted(item.strip().lower() for item in bootstrap.split(",") if item.strip()))


class TargetTopicClaims:
    """The target topics each connector writes, per target cluster; shared by a worker's connectors."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: dict[tuple[str, str], str] = {}  # (cluster, target topic) -> connector

    def claim(self, connector: str, bootstrap: str, topics: Iterable[str]) -> None:
        """Record that ``connector`` writes ``topics`` (its whole set now); ConfigError when another does."""
        cluster = cluster_key(bootstrap)
        wanted = set(topics)
        with self._lock:
            taken = sorted(
                (topic, owner)
                for (c, topic), owner in self._owner.items()
                if c == cluster and topic in wanted and owner != connector
            )
            if taken:
                shown = ", ".join(f"{topic} (written by connector {owner})" for topic, owner in taken)
                raise ConfigError(
                    "topics",
                    f"connector {connector} would write target topics another connector of this worker writes: "
                    f"{shown}. Narrow topics or topics.exclude, or give the connectors different "
                    "source.cluster.alias values under DefaultReplicationPolicy",
                )
            self._forget(connector)
            for topic in wanted:
                self._owner[(cluster, topic)] = connector

    def release(self, connector: str) -> None:
        """Forget what ``connector`` writes (stopped or deleted)."""
        with self._lock:
            self._forget(connector)

    def _forget(self, connector: str) -> None:
        for key in [k for k, owner in self._owner.items() if owner == connector]:
            del self._owner[key]
