"""A small connector plugin for the worker's unit tests, speaking only ``connector_plugin``'s protocol.

- ``FakeConnector``: a ``ConnectorPlugin`` class (``validate`` included) that the plugin registry
  finds under ``FAKE_CLASS`` once ``install`` has run. What it does on each call the test says by
  setting its fields (an error to raise, what a refresh finds); what was called, and in which order,
  it writes to ``events``, which its tasks and jobs share.
- ``FakeTask``: a task that starts and stops at once, without a thread (``stuck`` ignores a stop, as a
  task still in its cycle does; ``fail`` ends it FAILED).
- ``FakeJob``: a background job as the runtime runs it.

Nothing here connects anywhere; the settings name no cluster, so the runtime's cluster watch probes
nothing unless a test gives it clusters and a prober.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.base.states import TaskState
from mirror_sink.core.clients.reachability import Unreachable
from mirror_sink.core.settings import plugins
from mirror_sink.worker.connector_plugin import (
    ConnectorJob,
    ConnectorSettings,
    ConnectorTask,
    JobPhase,
    MetricFamily,
    PartitionOffset,
    WatchedCluster,
)
from mirror_sink.worker.connector_runtime import ConnectorRuntime

#: The ``connector.class`` the registry resolves to ``FakeConnector`` (after ``install``).
FAKE_CLASS = "FakeConnector"
#: How long a test waits for a runtime's transition thread (it takes milliseconds).
SETTLE_S = 2.0


def install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the plugin registry answer ``FAKE_CLASS`` with ``FakeConnector`` (every other name as before)."""
    real = plugins.load

    def load(name: str) -> object:
        return FakeConnector if name == FAKE_CLASS else real(name)

    monkeypatch.setattr(plugins, "load", load)


def props(name: str = "fake", **extra: str) -> dict[str, str]:
    """A fake connector's config: ``extra`` keys with ``_`` for ``.``."""
    return {"name": name, "connector.class": FAKE_CLASS, **{k.replace("_", "."): v for k, v in extra.items()}}


def fake_of(runtime: ConnectorRuntime) -> FakeConnector:
    """The fake plugin ``runtime`` runs."""
    connector = runtime.connector
    assert isinstance(connector, FakeConnector)
    return connector


def settle(runtime: ConnectorRuntime) -> None:
    """Wait until the runtime's transitions so far have run."""
    transition = runtime._transition
    if transition is not None:
        transition.join(SETTLE_S)
        assert not transition.is_alive(), "a transition did not finish"


def eventually(condition: Callable[[], bool], timeout_s: float = SETTLE_S) -> None:
    """Wait until ``condition`` holds (a background thread's doing), polling every few milliseconds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.002)


class FakeTask:
    """A task that starts and stops at once; ``events`` says when."""

    def __init__(self, task_id: int, worker_id: str, events: list[str]) -> None:
        self.task_id = task_id
        self.worker_id = worker_id
        self.state = TaskState.UNASSIGNED
        self.trace: str | None = None
        self.version: int | None = None
        self.stuck = False  # ignores stop, as a task still in its cycle at the deadline
        self.stops: list[float | None] = []
        self._alive = False
        self._events = events

    @property
    def transaction_version(self) -> int | None:
        return self.version

    def start(self) -> None:
        self._events.append(f"task {self.task_id} start")
        self._alive = True
        self.state = TaskState.RUNNING

    def stop(self, timeout: float | None = None) -> None:
        self._events.append(f"task {self.task_id} stop({'-' if timeout is None else f'{timeout:g}'})")
        self.stops.append(timeout)
        if not self.stuck:
            self._alive = False
            if self.state is not TaskState.FAILED:
                self.state = TaskState.STOPPED

    def is_alive(self) -> bool:
        return self._alive

    def fail(self, trace: str) -> None:
        """End FAILED with ``trace``, as a task's own thread does."""
        self._alive = False
        self.state = TaskState.FAILED
        self.trace = trace


class FakeJob:
    """A background job; ``events`` says when it was started, asked to stop and stopped."""

    def __init__(self, name: str, events: list[str]) -> None:
        self.name = name
        self.alive = False
        self.stop_timeouts: list[float] = []
        self._events = events

    def start(self) -> None:
        self._events.append(f"{self.name} start")
        self.alive = True

    def request_stop(self) -> None:
        self._events.append(f"{self.name} request_stop")

    def stop(self, timeout_s: float) -> None:
        self._events.append(f"{self.name} stop")
        self.stop_timeouts.append(timeout_s)
        self.alive = False

    def is_alive(self) -> bool:
        return self.alive


class FakeProber:
    """The cluster watch's reachability check: the clusters in ``down`` refuse, the others answer."""

    def __init__(self, *down: str) -> None:
        self.down = set(down)
        self.calls: list[str] = []

    def __call__(self, cluster: str, alias: str, bootstrap: str) -> Unreachable | None:
        self.calls.append(cluster)
        return Unreachable(cluster, alias, (f"{bootstrap}: connection refused",)) if cluster in self.down else None


def clusters(give_up_ms: int = -1) -> tuple[WatchedCluster, ...]:
    """A source ``east`` and a target ``west``, both given up after ``give_up_ms`` (negative: never)."""
    return (
        WatchedCluster("source", "east", "east:9092", give_up_ms, "PLAINTEXT"),
        WatchedCluster("target", "west", "west:9092", give_up_ms, "PLAINTEXT"),
    )


@dataclass
class JobsMade:
    """The jobs a ``FakeConnector`` has made, by phase."""

    beside_tasks: list[FakeJob] = field(default_factory=list)
    while_active: list[FakeJob] = field(default_factory=list)


class FakeConnector:
    """A ``ConnectorPlugin`` whose every answer the test sets (see the module's docstring).

    Its props: ``name``, ``tasks.max`` (1), ``topics`` (comma separated, what its start and refreshes
    find; ``orders``), ``target`` (its target bootstrap; ``target:9092``) and ``invalid`` (any value:
    a ``ConfigError`` on that key)."""

    def __init__(self, props: Mapping[str, Any]) -> None:
        if "invalid" in props:
            raise ConfigError("invalid", "the fake connector refuses this config")
        self.props = dict(props)
        target = str(props.get("target", "target:9092"))
        self.settings = ConnectorSettings(
            name=str(props.get("name", "fake")),
            tasks_max=int(props.get("tasks.max", "1")),
            target_bootstrap=target,
            target_client={"bootstrap.servers": target, "security.protocol": "PLAINTEXT"},
            clusters=(),
            refresh_enabled=True,
            refresh_interval_s=0.0,
            transaction_timeout_ms=60_000,
        )
        self.events: list[str] = []
        #: The source topics a start or a refresh finds.
        self.found = [t for t in str(props.get("topics", "orders")).split(",") if t]
        self.topics: list[str] = []
        #: Raised by the next starts, one each; then the start succeeds.
        self.start_errors: list[Exception] = []
        self.preflight_error: Exception | None = None
        #: What the next refresh answers: True/False (changed), or an exception to raise.
        self.refresh_result: bool | Exception = False
        self.maintenance_is_due = False
        #: Set to hold ``maintain`` until the test releases it.
        self.maintain_gate: threading.Event | None = None
        self.maintained = 0
        self.tasks: list[FakeTask] = []
        self.jobs_made = JobsMade()
        #: The jobs each phase makes, by name.
        self.job_names: dict[JobPhase, tuple[str, ...]] = {
            JobPhase.BESIDE_TASKS: ("checkpoints", "verify"),
            JobPhase.WHILE_ACTIVE: ("lag",),
        }
        self.families: list[MetricFamily] = []
        self.stored_offsets: list[PartitionOffset] = []

    @classmethod
    def validate(cls, props: Mapping[str, str]) -> dict[str, list[str]]:
        return {"invalid": ["the fake connector refuses this config"]} if "invalid" in props else {}

    def preflight(self) -> None:
        self.events.append("preflight")
        if self.preflight_error is not None:
            raise self.preflight_error

    def start(self) -> None:
        self.events.append("start")
        if self.start_errors:
            raise self.start_errors.pop(0)
        self.topics = list(self.found)

    def refresh(self) -> bool:
        self.events.append("refresh")
        if isinstance(self.refresh_result, Exception):
            raise self.refresh_result
        if self.refresh_result:
            self.topics = list(self.found)
        return self.refresh_result

    def reconfigure_tasks(self) -> None:
        self.events.append("reconfigure")

    def active_topics(self) -> list[str]:
        return list(self.topics)

    def reset_active_topics(self) -> None:
        self.events.append("reset topics")
        self.topics = []

    def target_topics(self) -> list[str]:
        return [f"target.{t}" for t in self.topics]

    def maintenance_due(self) -> bool:
        return self.maintenance_is_due

    def maintain(self) -> None:
        if self.maintain_gate is not None:
            self.maintain_gate.wait(SETTLE_S)
        self.maintained += 1

    def task(self, task_id: int, worker_id: str) -> ConnectorTask:
        made = FakeTask(task_id, worker_id, self.events)
        self.tasks.append(made)
        return made

    def jobs(self, phase: JobPhase) -> Sequence[ConnectorJob]:
        made = [FakeJob(name, self.events) for name in self.job_names[phase]]
        kept = self.jobs_made.beside_tasks if phase is JobPhase.BESIDE_TASKS else self.jobs_made.while_active
        kept += made
        return made

    def metrics(self) -> Sequence[MetricFamily]:
        return list(self.families)

    def offsets(self) -> list[PartitionOffset]:
        return list(self.stored_offsets)

    def alter_offsets(self, offsets: Sequence[PartitionOffset]) -> None:
        self.events.append("alter offsets")
        self.stored_offsets = sorted(offsets, key=lambda o: (o.topic, o.partition))

    def reset_offsets(self) -> None:
        self.events.append("reset offsets")
        self.stored_offsets = []

    # -- what the test reads -----------------------------------------------------------------
    def live_tasks(self) -> list[FakeTask]:
        """The tasks made that still run."""
        return [t for t in self.tasks if t.is_alive()]
