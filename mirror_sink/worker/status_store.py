"""Which workers are alive and what state every task is in, shared by all workers (Connect's
StatusBackingStore, ``status.storage.topic``), and which tasks each worker runs.

Workers that share a Kafka config topic form a group: each writes a heartbeat to a compacted status
topic on the same cluster every ``HEARTBEAT_S`` (a tombstone when it stops cleanly) and the state of
each task it runs, keyed by connector and task id, so the newest owner's record wins. Every worker
reads the topic in the background, so any of them answers ``/status`` for all tasks with the worker
that runs each. A worker silent for ``EXPIRY_S`` counts as gone.

Task ids are spread over the live workers, sorted by id, round robin (``assigned_tasks``): when a
worker joins or leaves, each worker stops the tasks it no longer owns and starts the ones it now
does. Which partitions each task mirrors is still decided by the shadow group, with its generation
fencing and the takeover fence, so a task moving between workers never duplicates or loses a record;
for a moment two workers may both run the same task id, each as its own slot.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.worker.config_store import ensure_compacted_topic

log = logging.getLogger(__name__)

#: How often a worker says it is alive (and re-sends its tasks' states).
HEARTBEAT_S = 2.0
#: A worker not heard from for this long is gone: its tasks move to the others.
EXPIRY_S = 10.0


def assigned_tasks(tasks_max: int, live_workers: list[str], worker_id: str) -> list[int]:
    """The task ids ``worker_id`` runs: ids spread round robin over the live workers sorted by id
    (this worker counted as live, as it is about to say so itself)."""
    workers = sorted(set(live_workers) | {worker_id})
    return [i for i in range(tasks_max) if workers[i % len(workers)] == worker_id]


def assigned_worker(task_id: int, live_workers: list[str]) -> str | None:
    """The live worker that should run ``task_id`` (None with no live worker)."""
    workers = sorted(set(live_workers))
    return workers[task_id % len(workers)] if workers else None


class KafkaStatusBackingStore:
    """Heartbeats and task states in a compacted topic; a background thread writes and reads it."""

    def __init__(self, bootstrap: str, topic: str, client_config: dict[str, str] | None, worker_id: str) -> None:
        self.topic = topic
        self.worker_id = worker_id
        base: dict[str, Any] = {"bootstrap.servers": bootstrap, **(client_config or {})}
        ensure_compacted_topic(base, topic, "status")
        self._producer = Producer({**base, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
        self._consumer = Consumer({**base, "group.id": f"{topic}-reader", "enable.auto.commit": False})
        self._consumer.assign([TopicPartition(topic, 0, 0)])
        self._lock = threading.Lock()
        self._latest: dict[str, dict[str, Any]] = {}
        #: Task states this worker reports: (connector, task id) -> (state, trace).
        self._mine: dict[tuple[str, int], tuple[str, str | None]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="status-store", daemon=True)

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Say this worker is alive, read what the others said so far (so a joining worker does not
        start every task as if it were alone), then keep saying it and keep reading."""
        deadline = Deadline(30)
        while True:
            try:  # a topic just created may not be known to every broker for a moment
                _, end = self._consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=10)
                break
            except KafkaException:
                if deadline.passed:
                    raise
                time.sleep(0.2)
        self._beat()
        while self._position() < end and not deadline.passed:
            self._read(timeout_s=0.5)
        self._thread.start()

    def _position(self) -> int:
        (position,) = self._consumer.position([TopicPartition(self.topic, 0)])
        return max(position.offset, 0)

    def close(self) -> None:
        """Leave the group at once (a tombstone for the heartbeat), so the others take its tasks now."""
        self._stop.set()
        self._thread.join(10)
        self._write(f"worker-{self.worker_id}", None)
        self._producer.flush(10)
        self._consumer.close()

    def _run(self) -> None:
        next_beat = 0.0
        while not self._stop.is_set():
            try:
                if time.monotonic() >= next_beat:
                    self._beat()
                    next_beat = time.monotonic() + HEARTBEAT_S
                self._read(timeout_s=0.5)
            except Exception as exc:  # the cluster may be away for a while; the loop goes on
                log.warning("status topic %s: %s (will retry)", self.topic, exc)
                self._stop.wait(1.0)

    def _beat(self) -> None:
        with self._lock:
            mine = dict(self._mine)
        self._write(f"worker-{self.worker_id}", {"worker_id": self.worker_id})
        for (connector, task_id), (state, trace) in mine.items():
            self._write(f"task-{connector}-{task_id}", {"state": state, "trace": trace, "worker_id": self.worker_id})
        self._producer.poll(0)

    def _write(self, key: str, value: dict[str, Any] | None) -> None:
        body = json.dumps({**value, "ts": time.time()}).encode() if value is not None else None
        self._producer.produce(self.topic, key=key.encode(), value=body, partition=0)

    def _read(self, timeout_s: float) -> None:
        for msg in self._consumer.consume(500, timeout_s):
            if msg.error() is not None:
                continue
            key, value = (msg.key() or b"").decode(), msg.value()
            with self._lock:
                if value:
                    self._latest[key] = json.loads(value)
                else:
                    self._latest.pop(key, None)

    # -- what workers report and read -----------------------------------------------------------
    def report(self, connector: str, task_id: int, state: str, trace: str | None) -> None:
        """This worker runs ``task_id`` of ``connector`` in ``state`` (written now if it changed)."""
        with self._lock:
            changed = self._mine.get((connector, task_id)) != (state, trace)
            self._mine[(connector, task_id)] = (state, trace)
        if changed:
            self._write(f"task-{connector}-{task_id}", {"state": state, "trace": trace, "worker_id": self.worker_id})
            self._producer.poll(0)

    def forget(self, connector: str, task_ids: set[int] | None = None) -> None:
        """This worker no longer runs these tasks (all of ``connector``'s when None): stop reporting them."""
        with self._lock:
            for key in [k for k in self._mine if k[0] == connector and (task_ids is None or k[1] in task_ids)]:
                del self._mine[key]

    def live_workers(self) -> list[str]:
        """Ids of the workers heard from within ``EXPIRY_S`` (this one always included)."""
        now = time.time()
        with self._lock:
            live = {
                v["worker_id"]
                for k, v in self._latest.items()
                if k.startswith("worker-") and now - float(v.get("ts", 0)) < EXPIRY_S
            }
        return sorted(live | {self.worker_id})

    def task_state(self, connector: str, task_id: int) -> tuple[str, str | None, str] | None:
        """(state, trace, worker id) last reported for the task by a live worker, else None."""
        with self._lock:
            value = self._latest.get(f"task-{connector}-{task_id}")
        if value is None or value.get("worker_id") not in self.live_workers():
            return None
        return str(value["state"]), value.get("trace"), str(value["worker_id"])
