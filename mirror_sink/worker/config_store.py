"""Where connector configs and target states live, so they survive a worker restart (kill -9 included).

- ``FileConfigBackingStore`` (embedded default): one JSON document under the worker's data directory,
  replaced atomically (write, fsync, rename, fsync the directory): a crash leaves the old or the new
  document, never a torn one.
- ``KafkaConfigBackingStore`` (several workers): a compacted topic on the target cluster, as Kafka
  Connect's config topic: key = connector name, value = JSON {config, target_state}, tombstone = deleted.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.states import TargetState

log = logging.getLogger(__name__)


@dataclass
class StoredConnector:
    """A connector as persisted: its raw config (provider references unresolved) and target state."""

    config: dict[str, str]
    target_state: TargetState = TargetState.RUNNING

    def to_json(self) -> dict[str, Any]:
        """The persisted form."""
        return {"config": self.config, "target_state": self.target_state.value}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> StoredConnector:
        """Parse the persisted form."""
        return cls(dict(doc["config"]), TargetState(doc.get("target_state", "RUNNING")))


class ConfigBackingStore(Protocol):
    """Persists connectors; ``changes`` reports what other workers wrote since the last call."""

    def load(self) -> dict[str, StoredConnector]:
        """Every stored connector."""
        ...

    def put(self, name: str, connector: StoredConnector) -> None:
        """Durably store ``connector`` under ``name`` before returning."""
        ...

    def delete(self, name: str) -> None:
        """Durably forget ``name``."""
        ...

    def changes(self) -> dict[str, StoredConnector | None]:
        """Connectors changed by someone else since the last call (None = deleted)."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...


@dataclass
class FileConfigBackingStore:
    """The embedded store: ``{data_dir}/connectors.json``, replaced atomically on every change."""

    path: Path
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def load(self) -> dict[str, StoredConnector]:
        """Read the document (an absent file is an empty store)."""
        if not self.path.exists():
            return {}
        doc = json.loads(self.path.read_text())
        return {name: StoredConnector.from_json(c) for name, c in doc.get("connectors", {}).items()}

    def _write(self, connectors: dict[str, StoredConnector]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        data = json.dumps({"connectors": {n: c.to_json() for n, c in connectors.items()}}, indent=2)
        with open(tmp, "w") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the rename itself must survive a crash too
        finally:
            os.close(dir_fd)

    def put(self, name: str, connector: StoredConnector) -> None:
        """Store ``connector`` (read-modify-replace under a lock)."""
        with self._lock:
            connectors = self.load()
            connectors[name] = connector
            self._write(connectors)

    def delete(self, name: str) -> None:
        """Remove ``name``."""
        with self._lock:
            connectors = self.load()
            connectors.pop(name, None)
            self._write(connectors)

    def changes(self) -> dict[str, StoredConnector | None]:
        """Only this worker writes the file."""
        return {}

    def close(self) -> None:
        """Nothing to release."""


def ensure_compacted_topic(client_config: dict[str, Any], topic: str, role: str) -> None:
    """Create ``topic`` (one partition, compacted, the cluster's replication factor) unless it exists:
    the shape of the worker group's config and status topics."""
    admin = AdminClient(dict(client_config))
    if topic in admin.list_topics(timeout=30).topics:
        return
    spec = NewTopic(topic, 1, -1, config={"cleanup.policy": "compact"})
    try:
        admin.create_topics([spec])[topic].result(30)
        log.info("created %s topic %s", role, topic)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


class KafkaConfigBackingStore:
    """Connectors in a compacted topic on a Kafka cluster, shared by every worker that uses it."""

    def __init__(self, bootstrap: str, topic: str, client_config: dict[str, str] | None = None) -> None:
        self.topic = topic
        base: dict[str, Any] = {"bootstrap.servers": bootstrap, **(client_config or {})}
        ensure_compacted_topic(base, topic, "config")
        self._producer = Producer({**base, "enable.idempotence": True, "acks": "all", "linger.ms": 0})
        self._consumer = Consumer(
            {
                **base,
                "group.id": f"{topic}-reader",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        self._consumer.assign([TopicPartition(topic, 0, 0)])
        self._state: dict[str, StoredConnector] = {}
        self._next_offset = 0
        self._own_writes: dict[str, StoredConnector | None] = {}

    def _read_to_end(self) -> dict[str, StoredConnector | None]:
        """Apply every record up to the current end; what changed."""
        _, end = self._consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=30)
        changed: dict[str, StoredConnector | None] = {}
        deadline = Deadline(60)
        while self._next_offset < end:
            if deadline.passed:
                raise TimeoutError(f"config topic {self.topic} not read to offset {end} in 60 s")
            for msg in self._consumer.consume(500, 0.5):
                if msg.error() is not None:
                    continue
                self._next_offset = (msg.offset() or 0) + 1
                name = (msg.key() or b"").decode()
                value = msg.value()
                stored = StoredConnector.from_json(json.loads(value)) if value else None
                if stored is None:
                    self._state.pop(name, None)
                else:
                    self._state[name] = stored
                changed[name] = stored
        return changed

    def load(self) -> dict[str, StoredConnector]:
        """Read the topic to its end."""
        self._read_to_end()
        return dict(self._state)

    def _write(self, name: str, value: bytes | None) -> None:
        self._producer.produce(self.topic, key=name.encode(), value=value, partition=0)
        if self._producer.flush(30) != 0:
            raise KafkaException(f"config topic {self.topic}: write of {name!r} not acknowledged in 30 s")

    def put(self, name: str, connector: StoredConnector) -> None:
        """Write and wait for the acknowledgement."""
        self._write(name, json.dumps(connector.to_json()).encode())
        self._own_writes[name] = connector

    def delete(self, name: str) -> None:
        """Write a tombstone."""
        self._write(name, None)
        self._own_writes[name] = None

    def changes(self) -> dict[str, StoredConnector | None]:
        """Records written since the last read, other than this worker's own."""
        changed = self._read_to_end()
        own, self._own_writes = self._own_writes, {}
        return {n: c for n, c in changed.items() if n not in own or own[n] != c}

    def close(self) -> None:
        """Close the clients."""
        self._consumer.close()
        self._producer.flush(10)
