"""The connector runtime's periodic services on an idle mirror: clients kept between rounds, and a
checkpoint round skipped when nothing changed writes what a full round would (nothing new)."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients.reachability import probe
from mirror_sink.core.formats.offset_syncs import OffsetIndex, OffsetSync, SyncRun
from mirror_sink.failover.checkpoints import checkpointer
from mirror_sink.failover.common import groups
from mirror_sink.failover.common.groups import GroupActive, GroupMembers


def _config(**extra: str) -> MirrorSinkConfig:
    return MirrorSinkConfig.parse(
        {
            "name": "idle",
            "connector.class": "MirrorSinkConnector",
            "source.cluster.bootstrap.servers": "127.0.0.1:1",
            "target.cluster.bootstrap.servers": "127.0.0.1:2",
            "topics": "t",
            **extra,
        }
    )


# -- GroupMembers ------------------------------------------------------------------------------------
class _Member:
    made: ClassVar[list[_Member]] = []

    def __init__(self, group: str) -> None:
        self.group = group
        self.closed = False
        self.fail: Exception | None = None
        _Member.made.append(self)

    def committed(self, tps: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        if self.fail is not None:
            raise self.fail
        return [TopicPartition(tp.topic, tp.partition, 7) for tp in tps]

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> list[TopicPartition]:
        if self.fail is not None:
            raise self.fail
        return offsets

    def poll(self, timeout: float) -> None:
        return None

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def members(monkeypatch: pytest.MonkeyPatch) -> list[_Member]:
    _Member.made = []
    monkeypatch.setattr(groups, "group_member", lambda props, group, client_id: _Member(group))
    return _Member.made


def test_group_members_keep_one_consumer_per_group_between_reads(members: list[_Member]) -> None:
    kept = GroupMembers({}, "c", "source")
    for _ in range(3):
        assert kept.committed("a", [("t", 0)]) == {("t", 0): 7}
        assert kept.committed("b", [("t", 1)]) == {("t", 1): 7}
    assert [m.group for m in members] == ["a", "b"]
    kept.keep_only(["b"])
    assert [m.closed for m in members] == [True, False]
    kept.close()
    assert all(m.closed for m in members)


def test_group_members_make_a_new_consumer_after_a_failure_but_not_after_group_active(members: list[_Member]) -> None:
    kept = GroupMembers({}, "c", "target")
    kept.committed("a", [("t", 0)])
    members[0].fail = KafkaException(KafkaError(KafkaError.UNKNOWN_MEMBER_ID))
    with pytest.raises(GroupActive):
        kept.commit("a", {("t", 0): 1})
    closed_by_group_active = members[0].closed
    assert not closed_by_group_active  # the group's answer, not the consumer's fault
    members[0].fail = KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED))
    with pytest.raises(TaskFailure, match="group 'a' on the target cluster"):
        kept.committed("a", [("t", 0)])
    assert members[0].closed
    assert kept.committed("a", [("t", 0)]) == {("t", 0): 7}
    assert len(members) == 2


def test_group_members_past_the_limit_serve_a_group_with_a_consumer_for_that_call(members: list[_Member]) -> None:
    kept = GroupMembers({}, "c", "source", keep=1)
    kept.committed("a", [("t", 0)])
    kept.committed("b", [("t", 0)])
    kept.committed("a", [("t", 0)])
    kept.committed("b", [("t", 0)])
    assert [(m.group, m.closed) for m in members] == [("a", False), ("b", True), ("b", True)]


# -- CheckpointEmitter -------------------------------------------------------------------------------
class _Syncs:
    def __init__(self, *args: object) -> None:
        self.index = OffsetIndex()
        self.floors: dict[TargetPartition, int] = {}
        self.records_read = 0
        self.pending: list[OffsetSync] = []

    def catch_up(self) -> OffsetIndex:
        for sync in self.pending:
            self.index.add(sync)
            self.records_read += 1
        self.pending = []
        if self.floors:
            self.index.forget_below(self.floors)
        return self.index

    def close(self) -> None:
        pass


class _Producer:
    def __init__(self, props: Mapping[str, Any], *args: object) -> None:
        self.produced: list[tuple[bytes, bytes]] = []
        self.remaining = 0

    def produce(self, topic: str, value: bytes, key: bytes, partition: int) -> None:
        self.produced.append((key, value))

    def flush(self, timeout: float) -> int:
        return self.remaining

    def poll(self, timeout: float) -> None:
        pass


class _Groups:
    offsets: ClassVar[dict[str, dict[tuple[str, int], int]]] = {}
    reads = 0

    def __init__(self, *args: object) -> None:
        pass

    def committed(self, group: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        _Groups.reads += 1
        return {tp: o for tp, o in self.offsets[group].items() if tp in partitions}

    def keep_only(self, groups: object) -> None:
        pass

    def close(self) -> None:
        pass


def _sync(start: int, end: int) -> OffsetSync:
    return OffsetSync(TargetPartition("source.t", 0), "t", start, end, (SyncRun(start, start + 100, end - start),))


@pytest.fixture
def emitter(monkeypatch: pytest.MonkeyPatch) -> checkpointer.CheckpointEmitter:
    monkeypatch.setattr(checkpointer, "OffsetSyncReader", _Syncs)
    monkeypatch.setattr(checkpointer, "GroupMembers", _Groups)
    monkeypatch.setattr("mirror_sink.core.clients.clients.admin", lambda *args: object())
    monkeypatch.setattr("mirror_sink.core.clients.clients.target_producer", _Producer)
    monkeypatch.setattr(checkpointer, "list_groups", lambda admin, cluster: dict.fromkeys(_Groups.offsets, "EMPTY"))
    _Groups.offsets = {"app": {("t", 0): 5}}
    _Groups.reads = 0
    made = checkpointer.CheckpointEmitter(_config())
    made._syncs.pending = [_sync(0, 10)]  # type: ignore[attr-defined]
    return made


def _written(emitter: checkpointer.CheckpointEmitter) -> list[tuple[bytes, bytes]]:
    producer: _Producer = emitter._producer  # type: ignore[assignment]
    written, producer.produced = producer.produced, []
    return written


def test_a_round_with_no_new_sync_and_no_group_moved_is_skipped(emitter: checkpointer.CheckpointEmitter) -> None:
    first = emitter.run_once()
    assert [(t.source_offset, t.target_offset) for t in first] == [(5, 105)]
    assert len(_written(emitter)) == 1
    again = emitter.run_once()
    assert again == first
    assert emitter.rounds_unchanged == 1
    assert _written(emitter) == []
    assert _Groups.reads == 2  # the groups are still read every round


def test_a_group_that_moved_or_a_new_sync_makes_a_full_round(emitter: checkpointer.CheckpointEmitter) -> None:
    emitter.run_once()
    _written(emitter)
    _Groups.offsets["app"][("t", 0)] = 8
    assert [(t.source_offset, t.target_offset) for t in emitter.run_once()] == [(8, 108)]
    assert len(_written(emitter)) == 1
    _Groups.offsets["app"][("t", 0)] = 12  # ahead of the mirror: the last offset it passed stays checkpointed
    emitter.run_once()
    assert _written(emitter) == []
    emitter._syncs.pending = [_sync(10, 20)]  # type: ignore[attr-defined]
    assert [(t.source_offset, t.target_offset) for t in emitter.run_once()] == [(12, 112)]
    assert len(_written(emitter)) == 1
    _Groups.offsets["other"] = {("t", 0): 9}  # a new group
    emitter.run_once()
    assert len(_written(emitter)) == 1
    assert emitter.rounds_unchanged == 0


def test_a_round_whose_checkpoints_were_not_written_is_never_skipped(emitter: checkpointer.CheckpointEmitter) -> None:
    emitter._producer.remaining = 1  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="unacknowledged"):
        emitter.run_once()
    _written(emitter)
    emitter._producer.remaining = 0  # type: ignore[attr-defined]
    emitter.run_once()
    assert len(_written(emitter)) == 1
    assert emitter.rounds_unchanged == 0


# -- LagMonitor --------------------------------------------------------------------------------------
def test_probe_on_a_kept_pool_gives_the_same_answers() -> None:
    with socket.socket() as server, ThreadPoolExecutor(2) as pool:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        for _ in range(3):
            assert probe("source", "east", f"127.0.0.1:{port}", pool=pool) is None
        found = probe("target", "west", "127.0.0.1:1", pool=pool)
        assert found is not None
        assert "refused" in str(found)


class _Gauge:
    """Counts what the lag monitor sets and removes."""

    def __init__(self) -> None:
        self.sets: list[tuple[tuple[str, ...], float]] = []
        self.removed: list[tuple[str, ...]] = []

    def labels(self, *labels: str) -> Any:
        gauge = self

        class _Child:
            def set(self, value: float) -> None:
                gauge.sets.append((labels, value))

        return _Child()

    def remove(self, *labels: str) -> None:
        self.removed.append(labels)


class _Shadow:
    """The lag monitor's shadow-group consumer: counts OffsetFetch calls, answers ``offsets``."""

    def __init__(self) -> None:
        self.calls = 0
        self.offsets: dict[tuple[str, int], int] = {}

    def committed(self, tps: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        self.calls += 1
        return [TopicPartition(tp.topic, tp.partition, self.offsets.get((tp.topic, tp.partition), -1001)) for tp in tps]

    def poll(self, timeout: float) -> None:
        return None


def _lag_monitor(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, _Shadow, dict[tuple[str, int], int], _Gauge]:
    """A lag monitor of topic t (2 partitions) with stand-ins for its clients and gauges."""
    from connectors import lag_monitor
    from mirror_sink.topics.source_discovery import TopicMapping

    records, seconds = _Gauge(), _Gauge()
    monkeypatch.setattr(lag_monitor, "replication_lag_records", records)
    monkeypatch.setattr(lag_monitor, "replication_lag_seconds", seconds)
    monitor = lag_monitor.LagMonitor.__new__(lag_monitor.LagMonitor)
    monitor.config = _config()
    mapping = TopicMapping.__new__(TopicMapping)
    object.__setattr__(mapping, "source_topic", "t")
    object.__setattr__(mapping, "target_topic", "idle.t")
    object.__setattr__(mapping, "source_partitions", 2)
    monitor._mappings = lambda: {"t": mapping}
    monitor._layout, monitor._published, monitor._rounds = None, {}, 0
    monitor._last_ends, monitor._last_lag = None, {}
    shadow = _Shadow()
    monitor._shadow = monitor._probe = shadow  # type: ignore[assignment]
    ends = {("t", 0): 10, ("t", 1): 20}
    monkeypatch.setattr(monitor, "_ends", lambda layout: dict(ends))
    monkeypatch.setattr(monitor, "_ages", lambda behind: {tp: 1.5 for tp in behind})
    return monitor, shadow, ends, records


def test_an_idle_lag_round_reads_only_the_source_and_sets_no_series(monkeypatch: pytest.MonkeyPatch) -> None:
    from connectors import lag_monitor

    monitor, shadow, ends, records = _lag_monitor(monkeypatch)
    assert monitor.measure() == {("idle.t", 0): 10, ("idle.t", 1): 20}, "nothing mirrored yet"
    assert shadow.calls == 1 and len(records.sets) == 2
    monitor.measure()
    assert shadow.calls == 2, "lag left: every round reads the shadow group (and the ages)"
    assert len(records.sets) == 2, "the same lag: no series set again"
    shadow.offsets = {("idle.t", 0): 10, ("idle.t", 1): 20}
    assert monitor.measure() == {("idle.t", 0): 0, ("idle.t", 1): 0}
    assert shadow.calls == 3 and [value for _, value in records.sets[-2:]] == [0, 0], "caught up: both set to 0"
    calls, sets = shadow.calls, len(records.sets)
    for _ in range(5):
        assert monitor.measure() == {("idle.t", 0): 0, ("idle.t", 1): 0}
    assert shadow.calls == calls and len(records.sets) == sets, "caught up and the source still: nothing read or set"
    ends[("t", 1)] = 25
    assert monitor.measure()[("idle.t", 1)] == 5 and shadow.calls == calls + 1, "the source moved: a full round"
    shadow.offsets[("idle.t", 1)] = 25
    monitor.measure()
    calls, sets = shadow.calls, len(records.sets)
    while monitor._rounds % lag_monitor._FULL_ROUND_EVERY:
        monitor.measure()
    assert shadow.calls == calls + 1 and len(records.sets) == sets + 2, "once a minute: everything, whatever moved"


def test_the_lag_monitor_sets_only_changed_series_and_removes_those_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    from connectors import lag_monitor

    records, seconds = _Gauge(), _Gauge()
    monkeypatch.setattr(lag_monitor, "replication_lag_records", records)
    monkeypatch.setattr(lag_monitor, "replication_lag_seconds", seconds)
    monitor = lag_monitor.LagMonitor.__new__(lag_monitor.LagMonitor)
    monitor._published = {}
    a, b = ("c", "s", "t", "x", "0"), ("c", "s", "t", "x", "1")
    monitor._publish({a: 0, b: 5}, {a: 0.0, b: 2.5}, every=False)
    assert len(records.sets) == len(seconds.sets) == 2
    monitor._publish({a: 0, b: 5}, {a: 0.0, b: 2.5}, every=False)
    assert len(records.sets) == 2, "nothing changed: nothing set"
    monitor._publish({a: 0, b: 3}, {a: 0.0, b: 1.0}, every=False)
    assert records.sets[2:] == [(b, 3)] and seconds.sets[2:] == [(b, 1.0)]
    monitor._publish({b: 3}, {b: 1.0}, every=False)
    assert records.removed == seconds.removed == [a] and len(records.sets) == 3
    monitor._publish({b: 3}, {b: 1.0}, every=True)
    assert records.sets[3:] == [(b, 3)], "every: set again, changed or not"
