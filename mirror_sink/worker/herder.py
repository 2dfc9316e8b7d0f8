"""The Herder: the worker's connectors, kept in step with the config store (Kafka Connect's name).

Every change is written to the store first and applied second, so a worker killed at any moment
comes back to what was last acknowledged. Answers are the domain values of
:mod:`mirror_sink.worker.herder_types`, refusals its exceptions: the REST API maps both to HTTP.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
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
from mirror_sink.worker.herder_types import (
    AssignedState,
    Conflict,
    ConnectorInfo,
    ConnectorNotFound,
    ConnectorStatus,
    ConnectorTaskId,
    HerderError,
    InvalidRequest,
    PartitionOffset,
    TaskConfig,
    TaskNotFound,
    TaskStatus,
)

__all__ = ["Herder", "HerderError", "masked"]

log = logging.getLogger(__name__)


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
            raise ConnectorNotFound(name)
        return stored

    def _runtime(self, name: str) -> ConnectorRuntime:
        self._require(name)
        runtime = self.runtimes.get(name)
        if runtime is None:
            raise Conflict(f"Connector {name} has an invalid config and is not running")
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
            raise InvalidRequest(
                f"Connector name configuration ({props['name']}) doesn't match connector name in the URL ({name})",
            )
        problems = self.validate(props)
        if problems:
            detail = "; ".join(f"{k}: {', '.join(v)}" for k, v in problems.items())
            raise InvalidRequest(
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
        """POST /connectors: Conflict if ``name`` exists."""
        with self._lock:
            if name in self.stored:
                raise Conflict(f"Connector {name} already exists")
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

    def info(self, name: str) -> ConnectorInfo:
        """The connector's masked config and its tasks (Connect's ConnectorInfo)."""
        stored = self._require(name)
        tasks_max = int(stored.config.get("tasks.max", "1"))
        return ConnectorInfo(
            name=name,
            config=masked(stored.config),
            tasks=tuple(ConnectorTaskId(name, i) for i in range(tasks_max)),
        )

    def task_configs(self, name: str) -> list[TaskConfig]:
        """Each task's masked config, with its ``task.id``."""
        config = masked(self._require(name).config)
        return [TaskConfig(task, {**config, "task.id": str(task.task)}) for task in self.info(name).tasks]

    def _assigned(self, info: StateInfo) -> AssignedState:
        return AssignedState(info.state, self.worker_id, info.trace or None)

    def status(self, name: str) -> ConnectorStatus:
        """The connector's state and its tasks' (Connect's ConnectorStateInfo)."""
        self._require(name)
        runtime = self.runtimes.get(name)
        if runtime is None:
            connector = StateInfo(ConnectorState.FAILED, "the stored config is invalid")
            tasks: list[StateInfo] = []
        else:
            connector, tasks = runtime.state, runtime.task_states()
        return ConnectorStatus(
            name=name,
            connector=self._assigned(connector),
            tasks=tuple(TaskStatus(i, self._assigned(t)) for i, t in enumerate(tasks)),
        )

    def task_status(self, name: str, task_id: int) -> TaskStatus:
        """One task's state."""
        tasks = self.status(name).tasks
        if not 0 <= task_id < len(tasks):
            raise TaskNotFound(name, task_id)
        return tasks[task_id]

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
            raise TaskNotFound(name, task_id)
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

    def offsets(self, name: str) -> list[PartitionOffset]:
        """The shadow group's offsets, keyed by the *source* partition, sorted."""
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
            source_topic = _source_topic(tp.topic, cfg, policy)
            if tp.offset >= 0 and source_topic is not None:
                out.append(PartitionOffset(source_topic, tp.partition, tp.offset))
        return sorted(out, key=lambda o: (o.topic, o.partition))

    def _require_stopped(self, name: str) -> None:
        if self._require(name).target_state is not TargetState.STOPPED:
            raise Conflict(f"Connector {name} must be in the STOPPED state before its offsets can be modified")

    def alter_offsets(self, name: str, offsets: Sequence[PartitionOffset]) -> None:
        """Set source partitions' next offsets (while STOPPED); removing one is not supported."""
        self._require_stopped(name)
        _, cfg = self._shadow(name)
        policy = cfg.replication_policy()
        commit = []
        for entry in offsets:
            target_topic = policy.format_remote_topic(cfg.source_alias, entry.topic)
            if entry.offset is None:
                raise InvalidRequest("removing one partition's offset is not supported; DELETE resets them all")
            if entry.offset < 0:
                raise InvalidRequest(
                    f'offset of {entry.topic}-{entry.partition} must be {{"kafka_offset": <non-negative int>}}'
                )
            commit.append(TopicPartition(target_topic, entry.partition, entry.offset))
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
                raise Conflict(f"cannot reset the offsets of {name}: {exc.args[0].str()}") from exc

    @staticmethod
    def _write_offsets(cfg: MirrorSinkConfig, commit: list[TopicPartition]) -> None:
        admin = clients.admin(cfg.target_admin(), client_id=f"{cfg.name}-offsets")
        group = cfg.shadow_group_id
        try:
            admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, commit)])[group].result()
        except KafkaException as exc:
            raise Conflict(f"cannot alter offsets of group {group}: {exc.args[0].str()}") from exc


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
