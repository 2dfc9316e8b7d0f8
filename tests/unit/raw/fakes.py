"""Small fakes of what ``RawPath`` is built from, shared by the unit tests of ``mirror_sink.raw``.

Each fake states what the path may count on from the thing it stands for, and no more:

- ``FakeWire``: a connection that counts wakeups, polls and closes;
- ``FakeFetcher``: ``RawFetcher``'s queues as the task thread sees them (``ready``, ``peek``,
  ``pop`` with its ``below`` limit) and the assignments, seeks and unassignments it was told;
- ``FakeFetchThread``: ``FetchThread`` without a thread (its failure is set by the test);
- ``FakeWriter``: ``RawWriter``'s parts the path uses (pipeline, committer, transaction client);
- ``FakeForwarder``: ``BatchForwarder`` keeping each batch handed to it;
- ``PathRig`` and ``open_path``: a ``RawPath`` built over all of them, by patching the names
  ``raw_path`` imports.

None of them says anything about how a broker behaves.
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.interfaces.data_path import PathSettings
from mirror_sink.core.telemetry.metrics import CycleStats
from mirror_sink.raw import raw_path
from mirror_sink.raw.fetch.fetch_buffer import Fetched
from mirror_sink.raw.raw_path import RawPath
from mirror_sink.raw.wire.batches import TRANSACTIONAL, BatchHeader
from mirror_sink.raw.wire.memory_budget import MemoryBudget

LOG = logging.getLogger("test.raw")


def batch(start: int, count: int = 10, *, size: int = 100, epoch: int = 3, transactional: bool = False) -> Fetched:
    """A fetched data batch of ``count`` records from ``start``, ``size`` bytes, charged to the budget."""
    header = BatchHeader(
        base_offset=start,
        length=size,
        magic=2,
        crc=0,
        attributes=TRANSACTIONAL if transactional else 0,
        last_offset_delta=count - 1,
        producer_id=-1,
        producer_epoch=-1,
        record_count=count,
    )
    return Fetched(memoryview(bytearray(size)), header, start, start + count, leader_epoch=epoch)


def skipped(start: int, end: int, *, epoch: int = -1) -> Fetched:
    """A run of offsets with nothing to forward (control batches, an aborted transaction)."""
    return Fetched(None, None, start, end, leader_epoch=epoch)


class FakeWire:
    """A connection: counts what it was asked."""

    def __init__(self, *args: Any) -> None:
        self.args = args
        self.wakeups = 0
        self.polls: list[float] = []
        self.closed = 0

    def wakeup(self) -> None:
        self.wakeups += 1

    def poll(self, timeout_s: float) -> None:
        self.polls.append(timeout_s)

    def close(self) -> None:
        self.closed += 1


class FakeFetcher:
    """The fetcher's queues, filled by the test, and what it was told."""

    def __init__(self) -> None:
        self.wire = FakeWire()
        self.queues: dict[SourcePartition, deque[Fetched]] = {}
        self.assigned: list[tuple[dict[SourcePartition, int], dict[str, uuid.UUID], dict[SourcePartition, int]]] = []
        self.sought: list[tuple[dict[SourcePartition, int], dict[SourcePartition, int] | None]] = []
        self.unassigned: list[SourcePartition] = []
        self.requests: dict[str, int] = {}
        self.resets: dict[str, int] = {}
        self.sessions = {"sessions": 0, "partitions": 0}
        self.held_back = False
        self.gone: BaseException | None = None
        self.closed: list[bool] = []
        self.settings: dict[str, Any] = {}

    def queue(self, tp: SourcePartition, *items: Fetched) -> None:
        """Items fetched for ``tp``, in offset order."""
        self.queues.setdefault(tp, deque()).extend(items)

    def assign(
        self,
        starts: Mapping[SourcePartition, int],
        topic_ids: Mapping[str, uuid.UUID] | None = None,
        leader_epochs: Mapping[SourcePartition, int] | None = None,
    ) -> None:
        self.assigned.append((dict(starts), dict(topic_ids or {}), dict(leader_epochs or {})))

    def unassign(self, partitions: Iterable[SourcePartition]) -> None:
        for tp in partitions:
            self.unassigned.append(tp)
            self.queues.pop(tp, None)

    def seek(
        self, offsets: Mapping[SourcePartition, int], leader_epochs: Mapping[SourcePartition, int] | None = None
    ) -> None:
        self.sought.append((dict(offsets), None if leader_epochs is None else dict(leader_epochs)))
        for tp in offsets:
            self.queues.pop(tp, None)

    def ready(self) -> list[SourcePartition]:
        return [tp for tp, queue in self.queues.items() if queue]

    def peek(self, tp: SourcePartition) -> Fetched | None:
        queue = self.queues.get(tp)
        return queue[0] if queue else None

    def pop(self, tp: SourcePartition, below: int | None = None) -> Fetched | None:
        queue = self.queues.get(tp)
        if not queue or (below is not None and queue[0].start >= below):
            return None
        return queue.popleft()

    def caught_up(self) -> bool:
        return not self.ready()

    def check_gone(self) -> None:
        if self.gone is not None:
            raise self.gone

    def session_counts(self) -> dict[str, int]:
        return dict(self.sessions)

    def close(self, *, close_sessions: bool = True) -> None:
        self.closed.append(close_sessions)


class FakeFetchThread:
    """The fetch thread's face to the task thread, without a thread."""

    def __init__(self, fetcher: FakeFetcher, wakeup: Any, name: str) -> None:
        self.fetcher = fetcher
        self.name = name
        self.failure: BaseException | None = None
        self.started = self.stopped = self.nudges = 0
        self.alive = False

    def start(self) -> None:
        self.started += 1
        self.alive = True

    def stop(self, timeout_s: float = 10.0) -> None:
        self.stopped += 1

    def nudge(self) -> None:
        self.nudges += 1

    def check(self) -> None:
        if self.failure is not None:
            raise self.failure
        self.fetcher.check_gone()


class FakePipeline:
    """The produce pipeline: batches queued per target partition (set by the test), pumps and reaps."""

    def __init__(self) -> None:
        self.wire = FakeWire()
        self.in_queue: dict[TargetPartition, int] = {}
        self.pumps = self.reaps = 0

    def queued(self, tp: TargetPartition) -> int:
        return self.in_queue.get(tp, 0)

    def pump(self) -> None:
        self.pumps += 1

    def reap(self) -> None:
        self.reaps += 1


class FakeCommitter:
    """The raw committer: the target partitions enlisted in the open transaction."""

    def __init__(self) -> None:
        self.enlisted: list[set[TargetPartition]] = []
        self.fail: BaseException | None = None

    def enlist(self, partitions: set[TargetPartition]) -> None:
        if self.fail is not None:
            raise self.fail
        self.enlisted.append(set(partitions))


@dataclass
class FakeTransaction:
    marker_wait_s: float = 0.0


@dataclass
class FakeTransactions:
    version: int = 2
    transactional: bool = True
    transaction: FakeTransaction = field(default_factory=FakeTransaction)


class FakeWriter:
    """The target side as ``RawWriter.open`` gives it."""

    def __init__(self) -> None:
        self.pipeline = FakePipeline()
        self.committer = FakeCommitter()
        self.transactions = FakeTransactions()
        self.closed = 0
        self.opened_with: dict[str, Any] = {}

    @property
    def transaction(self) -> FakeTransaction:
        return self.transactions.transaction

    def close(self) -> None:
        self.closed += 1


@dataclass
class Sent:
    """One batch handed to the forwarder."""

    source: SourcePartition
    target: TargetPartition
    item: Fetched
    stop: int | None


class FakeForwarder:
    """Keeps each batch handed to it; adds its records and bytes (``fail_at``: the send that raises)."""

    def __init__(self, producer: Any, budget: MemoryBudget, log: Any) -> None:
        self.sent: list[Sent] = []
        self.limits: dict[str, int] = {}
        self.forgotten = 0
        self.counts: dict[str, int] = {"forwarded": 0}
        self.fail_at: int | None = None

    def send(self, tp: SourcePartition, target_tp: TargetPartition, item: Fetched, stop: int | None) -> tuple[int, int]:
        if self.fail_at is not None and len(self.sent) == self.fail_at:
            raise RuntimeError("the pipeline refused the batch")
        assert item.batch is not None and item.header is not None
        self.sent.append(Sent(tp, target_tp, item, stop))
        return item.header.record_count, len(item.batch)

    def forget_stats(self) -> None:
        self.forgotten += 1

    def take_stats(self) -> dict[TargetPartition, CycleStats]:
        return {}

    def batch_counts(self) -> dict[str, int]:
        return dict(self.counts)

    def record_mode_advised(self) -> str | None:
        return None

    def describe(self) -> str:
        return "fake"


def settings(**overrides: Any) -> PathSettings:
    """A task slot's path settings (keyword arguments replace fields)."""
    values: dict[str, Any] = {
        "source_props": {"bootstrap.servers": "src:9092"},
        "target_props": {"bootstrap.servers": "tgt:9092"},
        "client_id": "mirror-0",
        "transactional_id": "mirror-0-txn",
        "transaction_timeout_ms": 60_000,
        "group_id": "shadow",
        "memory_bytes": 1 << 20,
        "chunk_bytes": 1 << 20,
        "sync_partition": None,
        **overrides,
    }
    return PathSettings(**values)


@dataclass
class PathRig:
    """A ``RawPath`` and the fakes it was built from."""

    path: RawPath
    fetcher: FakeFetcher
    writer: FakeWriter
    thread: FakeFetchThread
    forwarder: FakeForwarder
    source: FakeWire

    @property
    def budget(self) -> MemoryBudget:
        return self.path.budget


class _Patches:
    """The fakes ``open_path`` puts in place of the names ``raw_path`` imports."""

    def __init__(self) -> None:
        self.fetcher = FakeFetcher()
        self.writer = FakeWriter()
        self.sources: list[FakeWire] = []
        self.threads: list[FakeFetchThread] = []
        self.forwarders: list[FakeForwarder] = []
        self.writer_failure: BaseException | None = None
        self.fetcher_failure: BaseException | None = None

    def wire(self, *args: Any) -> FakeWire:
        self.sources.append(FakeWire(*args))
        return self.sources[-1]

    def open_writer(self, target_props: Mapping[str, str], **kwargs: Any) -> FakeWriter:
        if self.writer_failure is not None:
            raise self.writer_failure
        self.writer.opened_with = kwargs
        return self.writer

    def new_fetcher(self, source: FakeWire, budget: MemoryBudget, **kwargs: Any) -> FakeFetcher:
        if self.fetcher_failure is not None:
            raise self.fetcher_failure
        self.fetcher.wire = source
        self.fetcher.settings = kwargs
        return self.fetcher

    def thread(self, fetcher: FakeFetcher, wakeup: Any, name: str) -> FakeFetchThread:
        self.threads.append(FakeFetchThread(fetcher, wakeup, name))
        return self.threads[-1]

    def forwarder(self, producer: Any, budget: MemoryBudget, log: Any) -> FakeForwarder:
        self.forwarders.append(FakeForwarder(producer, budget, log))
        return self.forwarders[-1]


def patch_raw_path(monkeypatch: pytest.MonkeyPatch) -> _Patches:
    """Put fakes in place of what ``RawPath`` builds; the returned object holds them."""
    patches = _Patches()
    monkeypatch.setattr(raw_path, "WireClient", patches.wire)
    monkeypatch.setattr(raw_path, "RawWriter", SimpleNamespace(open=patches.open_writer))
    monkeypatch.setattr(raw_path, "RawFetcher", patches.new_fetcher)
    monkeypatch.setattr(raw_path, "FetchThread", patches.thread)
    monkeypatch.setattr(raw_path, "BatchForwarder", patches.forwarder)
    return patches


def open_path(monkeypatch: pytest.MonkeyPatch, **overrides: Any) -> PathRig:
    """A ``RawPath`` over fakes (``overrides``: of its ``PathSettings``)."""
    patches = patch_raw_path(monkeypatch)
    path = RawPath.open(settings(**overrides), LOG)
    return PathRig(path, patches.fetcher, patches.writer, patches.threads[0], patches.forwarders[0], patches.sources[0])
