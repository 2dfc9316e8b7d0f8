"""The Herder: the worker's connectors, kept in step with the config store (Kafka Connect's name).

Every change is written to the store first and applied second, so a worker killed at any moment
comes back to what was last acknowledged. Errors carry the HTTP status the REST API answers with.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition

from connectors.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core import clients
from mirror_sink.core.config_providers import has_references, resolve
from mirror_sink.core.errors import ConfigError
from mirror_sink.core.replication_policy import ReplicationPolicy
from mirror_sink.core.secrets import MASK, is_secret
from mirror_sink.worker.config_store import ConfigBackingStore, StoredConnector, TargetState
from mirror_sink.worker.connector_runtime import ConnectorRuntime, ConnectorState, StateInfo

log = logging.getLogger(__name__)


@dataclass
class HerderError(Exception):
    """An operation refused, with the HTTP status that says why (400, 404, 409, 500)."""

    status: int
    message: str

    def __str__(self) -> str:
        return self.message


def masked(config: Mapping[str, str]) -> dict[str, str]:
    """``config`` as shown to clients: literal secrets hidden, provider references kept."""
    return {k: (MASK if is_secret(k) and not has_references(v) else v) for k, v in config.items()}


class Herder:
    """Owns the ConnectorRuntimes of this worker and the operations the REST API exposes."""

    def __init__(self, worker_id: str, store: ConfigBackingStore) -> None:
        self.worker_id = worker_id
        self.store = store
        self.stored: dict[str, StoredConnector] = {}
        self.runtimes: dict[str, ConnectorRuntime] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick_loop, name="herder", daemon=True)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Load the stored connectors, start each in its target state, begin periodic work."""
        for name, stored in self.store.load().items():
            self._apply(name, stored)
        self._ticker.start()
        log.info("worker %s started with %d connectors", self.worker_id, len(self.stored))

    def stop(self) -> None:
        """Stop every connector gracefully."""
        self._stop.set()
        with self._lock:
            runtimes = list(self.runtimes.values())
        for runtime in runtimes:
            runtime.shutdown()
        self.store.close()

    def _tick_loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                for name, stored in self.store.changes().items():
                    self._apply_remote(name, stored)
            except Exception as exc:
                log.warning("reading config store changes failed (will retry): %s", exc)
            with self._lock:
                runtimes = list(self.runtimes.values())
            for runtime in runtimes:
                runtime.tick()

    def _apply_remote(self, name: str, stored: StoredConnector | None) -> None:
        with self._lock:
            if stored is None:
                self._remove_runtime(name)
                self.stored.pop(name, None)
            else:
                self._apply(name, stored)

    # -- internals -----------------------------------------------------------------------------
    def _apply(self, name: str, stored: StoredConnector) -> None:
        """Make the runtime match ``stored`` (new config: replace the runtime)."""
        with self._lock:
            previous = self.stored.get(name)
            self.stored[name] = stored
            runtime = self.runtimes.get(name)
            if runtime is None or previous is None or previous.config != stored.config:
                self._remove_runtime(name)
                try:
                    runtime = ConnectorRuntime(name, resolve(stored.config), self.worker_id)
                except ConfigError as exc:
                    log.error("connector %s has an invalid stored config: %s", name, exc)
                    return
                self.runtimes[name] = runtime
            runtime.apply(stored.target_state)

    def _remove_runtime(self, name: str) -> None:
        """Stop a runtime before anything replaces it: old and new tasks share task slots."""
        runtime = self.runtimes.pop(name, None)
        if runtime is not None:
            runtime.shutdown()

    def _require(self, name: str) -> StoredConnector:
        stored = self.stored.get(name)
        if stored is None:
            raise HerderError(404, f"Connector {name} not found")
        return stored

    def _runtime(self, name: str) -> ConnectorRuntime:
        self._require(name)
        runtime = self.runtimes.get(name)
        if runtime is None:
            raise HerderError(409, f"Connector {name} has an invalid config and is not running")
        return runtime

    @staticmethod
    def validate(config: Mapping[str, str]) -> dict[str, list[str]]:
        """Per-key problems of ``config`` after resolving provider references."""
        try:
            resolved = resolve(config)
        except ConfigError as exc:
            return {exc.key: [exc.message]}
        return MirrorSinkConfig.errors(resolved)

    def _checked(self, name: str, config: Mapping[str, Any]) -> dict[str, str]:
        props = {k: str(v) for k, v in config.items() if v is not None}
        if props.setdefault("name", name) != name:
            raise HerderError(
                400,
                f"Connector name configuration ({props['name']}) doesn't match connector name in the URL ({name})",
            )
        problems = self.validate(props)
        if problems:
            detail = "; ".join(f"{k}: {', '.join(v)}" for k, v in problems.items())
            raise HerderError(
                400,
                f"Connector configuration is invalid and contains the following {len(problems)} error(s): {detail}",
            )
        return props

    # -- operations ----------------------------------------------------------------------------
    def first_target(self) -> str | None:
        """Bootstrap servers of the first connector's target cluster (for GET /)."""
        with self._lock:
            for name in sorted(self.stored):
                target = self.stored[name].config.get("target.cluster.bootstrap.servers")
                if target and not has_references(target):
                    return target
        return None

    def names(self) -> list[str]:
        """Connector names, sorted."""
        with self._lock:
            return sorted(self.stored)

    def create(self, name: str, config: Mapping[str, Any], initial_state: TargetState) -> None:
        """POST /connectors: 409 if ``name`` exists."""
        with self._lock:
            if name in self.stored:
                raise HerderError(409, f"Connector {name} already exists")
            stored = StoredConnector(self._checked(name, config), initial_state)
            self.store.put(name, stored)
            self._apply(name, stored)

    def put_config(self, name: str, config: Mapping[str, Any]) -> bool:
        """PUT /connectors/{name}/config: create or replace; True when created."""
        with self._lock:
            props = self._checked(name, config)
            previous = self.stored.get(name)
            stored = StoredConnector(props, previous.target_state if previous else TargetState.RUNNING)
            self.store.put(name, stored)
            self._apply(name, stored)
            return previous is None

    def patch_config(self, name: str, patch: Mapping[str, Any]) -> None:
        """PATCH /connectors/{name}/config: merge, a null value deletes the key."""
        with self._lock:
            current = dict(self._require(name).config)
            for key, value in patch.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = str(value)
            self.put_config(name, current)

    def config(self, name: str) -> dict[str, str]:
        """The stored config, masked."""
        return masked(self._require(name).config)

    def info(self, name: str) -> dict[str, Any]:
        """Connect's ConnectorInfo: name, config, tasks, type."""
        stored = self._require(name)
        tasks_max = int(stored.config.get("tasks.max", "1"))
        return {
            "name": name,
            "config": masked(stored.config),
            "tasks": [{"connector": name, "task": i} for i in range(tasks_max)],
            "type": "sink",
        }

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        """GET /connectors/{name}/tasks."""
        stored = self._require(name)
        return [
            {
                "id": {"connector": name, "task": t["task"]},
                "config": {**masked(stored.config), "task.id": str(t["task"])},
            }
            for t in self.info(name)["tasks"]
        ]

    def _state_json(self, info: StateInfo) -> dict[str, Any]:
        doc: dict[str, Any] = {"state": info.state.value, "worker_id": self.worker_id}
        if info.trace:
            doc["trace"] = info.trace
        return doc

    def status(self, name: str) -> dict[str, Any]:
        """Connect's ConnectorStateInfo."""
        self._require(name)
        runtime = self.runtimes.get(name)
        if runtime is None:
            connector = StateInfo(ConnectorState.FAILED, "the stored config is invalid")
            tasks: list[StateInfo] = []
        else:
            connector, tasks = runtime.state, runtime.task_states()
        return {
            "name": name,
            "connector": self._state_json(connector),
            "tasks": [{"id": i, **self._state_json(t)} for i, t in enumerate(tasks)],
            "type": "sink",
        }

    def task_status(self, name: str, task_id: int) -> dict[str, Any]:
        """One task's state."""
        tasks = self.status(name)["tasks"]
        if not 0 <= task_id < len(tasks):
            raise HerderError(404, f"Task {name}-{task_id} not found")
        return dict(tasks[task_id])

    def set_target_state(self, name: str, target: TargetState) -> None:
        """pause / resume / stop."""
        with self._lock:
            stored = self._require(name)
            updated = StoredConnector(stored.config, target)
            self.store.put(name, updated)
            self._apply(name, updated)

    def restart(self, name: str, *, include_tasks: bool, only_failed: bool) -> None:
        """POST /connectors/{name}/restart."""
        self._runtime(name).restart(include_tasks=include_tasks, only_failed=only_failed)

    def restart_task(self, name: str, task_id: int) -> None:
        """POST /connectors/{name}/tasks/{id}/restart."""
        runtime = self._runtime(name)
        if not 0 <= task_id < runtime.connector.config.tasks_max:
            raise HerderError(404, f"Task {name}-{task_id} not found")
        runtime.restart_task(task_id)

    def delete(self, name: str) -> None:
        """DELETE /connectors/{name}: stop it and forget it (its shadow group stays on the target)."""
        with self._lock:
            self._require(name)
            self.store.delete(name)
            self.stored.pop(name, None)
            self._remove_runtime(name)

    def topics(self, name: str) -> list[str]:
        """Source topics the connector mirrors (Connect's active topics, KIP-558)."""
        runtime = self._runtime(name)
        return sorted(m.source_topic for m in runtime.connector.mappings.values())

    def reset_topics(self, name: str) -> None:
        """PUT /connectors/{name}/topics/reset: the set is recomputed at the next refresh."""
        self._runtime(name).connector.mappings = {}

    # -- offsets (KIP-875), held in the shadow group on the target ------------------------------
    def _shadow(self, name: str) -> tuple[ConnectorRuntime, MirrorSinkConfig]:
        runtime = self._runtime(name)
        return runtime, runtime.connector.config

    def offsets(self, name: str) -> list[dict[str, Any]]:
        """The shadow group's offsets, in Connect's sink format keyed by the *source* partition."""
        _, cfg = self._shadow(name)
        policy = cfg.replication_policy()
        admin = clients.admin(cfg.target_admin(), client_id=f"{cfg.name}-offsets")
        md = admin.list_topics(timeout=30)
        partitions = []
        for target_topic, topic in md.topics.items():
            source_topic = _source_topic(target_topic, cfg, policy)
            if source_topic is not None:
                partitions += [TopicPartition(target_topic, p) for p in topic.partitions]
        if not partitions:
            return []
        reader = Consumer(
            {**cfg.target_consumer(), "group.id": cfg.shadow_group_id, "isolation.level": "read_committed"}
        )
        try:
            committed = reader.committed(partitions, timeout=30)
        finally:
            reader.close()
        out = []
        for tp in committed:
            if tp.offset >= 0:
                out.append(
                    {
                        "partition": {
                            "kafka_topic": _source_topic(tp.topic, cfg, policy),
                            "kafka_partition": tp.partition,
                        },
                        "offset": {"kafka_offset": tp.offset},
                    }
                )
        return sorted(out, key=lambda o: (o["partition"]["kafka_topic"], o["partition"]["kafka_partition"]))

    def _require_stopped(self, name: str) -> None:
        if self._require(name).target_state is not TargetState.STOPPED:
            raise HerderError(409, f"Connector {name} must be in the STOPPED state before its offsets can be modified")

    def alter_offsets(self, name: str, offsets: list[dict[str, Any]]) -> None:
        """PATCH /connectors/{name}/offsets: set source offsets (while STOPPED)."""
        self._require_stopped(name)
        _, cfg = self._shadow(name)
        policy = cfg.replication_policy()
        commit = []
        for entry in offsets:
            partition = entry.get("partition") or {}
            topic, number = partition.get("kafka_topic"), partition.get("kafka_partition")
            if not isinstance(topic, str) or not isinstance(number, int):
                raise HerderError(
                    400,
                    "each offset needs partition.kafka_topic (string) and partition.kafka_partition (int)",
                )
            target_topic = policy.format_remote_topic(cfg.source_alias, topic)
            offset = entry.get("offset")
            if offset is None:
                raise HerderError(400, "removing one partition's offset is not supported; DELETE resets them all")
            value = offset.get("kafka_offset") if isinstance(offset, dict) else None
            if not isinstance(value, int) or value < 0:
                raise HerderError(400, f'offset of {topic}-{number} must be {{"kafka_offset": <non-negative int>}}')
            commit.append(TopicPartition(target_topic, number, value))
        self._write_offsets(cfg, commit)

    def reset_offsets(self, name: str) -> None:
        """DELETE /connectors/{name}/offsets: forget every stored offset (the fallback applies next start)."""
        self._require_stopped(name)
        _, cfg = self._shadow(name)
        admin = clients.admin(cfg.target_admin(), client_id=f"{cfg.name}-offsets")
        try:
            admin.delete_consumer_groups([cfg.shadow_group_id], request_timeout=30)[cfg.shadow_group_id].result()
        except KafkaException as exc:
            if exc.args[0].code() != exc.args[0].GROUP_ID_NOT_FOUND:
                raise HerderError(409, f"cannot reset the offsets of {name}: {exc.args[0].str()}") from exc

    @staticmethod
    def _write_offsets(cfg: MirrorSinkConfig, commit: list[TopicPartition]) -> None:
        admin = clients.admin(cfg.target_admin(), client_id=f"{cfg.name}-offsets")
        group = cfg.shadow_group_id
        try:
            admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, commit)])[group].result()
        except KafkaException as exc:
            raise HerderError(409, f"cannot alter offsets of group {group}: {exc.args[0].str()}") from exc


def _source_topic(target_topic: str, cfg: MirrorSinkConfig, policy: ReplicationPolicy) -> str | None:
    """The source topic a target topic mirrors under this connector's policy, if any."""
    if policy.topic_source(target_topic) == cfg.source_alias:
        return target_topic[len(cfg.source_alias) + len(cfg.replication_policy_separator) :]
    if (
        policy.topic_source(target_topic) is None
        and policy.format_remote_topic(cfg.source_alias, target_topic) == target_topic
    ):
        return target_topic if cfg.topic_filter().accepts(target_topic) else None
    return None
