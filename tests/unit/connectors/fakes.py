"""Small stand-ins for the MirrorSink plugin's unit tests: its config, and the engine's background jobs
(checkpoints, verification, drills, lag) as the plugin's modules use them, without a client.

Each fake job has the lifecycle the plugin calls (``start``, ``request_stop``, ``stop``, ``is_alive``)
and the readings its queries take (``last``, ``mismatches``, ``positions``, ``coverage``,
``reports``), set by the test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.topics.source_discovery import TopicMapping

BASE: dict[str, str] = {
    "name": "mirror",
    "source.cluster.alias": "east",
    "source.cluster.bootstrap.servers": "east:9092",
    "target.cluster.bootstrap.servers": "west:9092",
}


T = TypeVar("T")


def fake(job: object, kind: type[T]) -> T:
    """``job`` (a board's engine job), which the test made a ``kind``."""
    assert isinstance(job, kind)
    return job


def config(**overrides: str) -> MirrorSinkConfig:
    """A connector config: ``BASE`` with Connect keys given as keyword arguments, ``_`` for ``.``."""
    return MirrorSinkConfig.parse({**BASE, **{k.replace("_", "."): v for k, v in overrides.items()}})


class FakeJob:
    """An engine job's lifecycle; ``calls`` says what was asked of it."""

    def __init__(self, config: MirrorSinkConfig, *args: Any, **kwargs: Any) -> None:
        self.config = config
        self.calls: list[str] = []
        self.alive = False

    def start(self) -> None:
        self.calls.append("start")
        self.alive = True

    def request_stop(self) -> None:
        self.calls.append("request_stop")

    def stop(self, timeout_s: float = 30.0) -> None:
        self.calls.append(f"stop({timeout_s:g})")
        self.alive = False

    def is_alive(self) -> bool:
        return self.alive


class FakeCheckpoints(FakeJob):
    """The checkpoint emitter: ``coverage`` is (groups, groups checkpointed, when) after a round."""

    coverage: tuple[int, int, float] | None = None


class FakeVerifier(FakeJob):
    """The background verifier."""

    mismatches = 0
    verified: dict[TargetPartition, int]

    def positions(self) -> dict[TargetPartition, int]:
        return dict(getattr(self, "verified", {}))


class FakeDrills(FakeJob):
    """The drill watch: ``kept`` reports, and a ``refresh`` that may fail."""

    topic = "east.drills.internal"
    kept: list[dict[str, Any]]
    refresh_error: TaskFailure | None = None

    def reports(self) -> list[dict[str, Any]]:
        return list(getattr(self, "kept", []))

    def refresh(self) -> None:
        self.calls.append("refresh")
        if self.refresh_error is not None:
            raise self.refresh_error


class FakeLag(FakeJob):
    """The lag monitor: ``last`` is (records, seconds) per target (topic, partition)."""

    def __init__(self, config: MirrorSinkConfig, mappings: Callable[[], Mapping[str, TopicMapping]]) -> None:
        super().__init__(config)
        self.mappings = mappings
        self.last: dict[tuple[str, int], tuple[int, float]] = {}
