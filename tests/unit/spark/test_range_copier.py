"""copy_range, a Spark executor's copy of one planned offset range: what the shadow group decides
(a range already mirrored is skipped, one beyond what it holds is refused as data loss, a source
topic created again is refused), how a range goes on from where the shadow group stands, how a
large range commits in several transactions bounded as a worker task's cycle is (``CycleBounds``),
with the offset syncs of each, and what happens to an open transaction when the copy fails.

The data path, its committer, the consumers and the admin client are fakes at the names
``range_copier`` imports; the shadow group's commit is what the test says."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.clients.stable_offsets import Committed
from mirror_sink.core.formats.commit_metadata import commit_metadata
from mirror_sink.core.formats.offset_syncs import SyncSpan
from mirror_sink.core.interfaces.data_path import Copied
from mirror_sink.spark import range_copier
from mirror_sink.spark.range_copier import DataLossError, RangeResult, copy_range, transactional_id
from mirror_sink.task.source_continuity import SourceDiscontinuity

pytestmark = pytest.mark.unit

SOURCE = SourcePartition("orders", 3)
TARGET = TargetPartition("source.orders", 3)
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


@dataclass
class Commit:
    """One ``Committer.commit`` call."""

    offsets: list[TopicPartition]
    spans: list[SyncSpan]


class FakeCommitter:
    """The range's transactions: begun, committed (with offsets and spans) or aborted."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls
        self.open = False
        self.begins = 0
        self.commits: list[Commit] = []
        self.aborts = 0

    def start(self) -> None:
        self.calls.append("start")

    def begin(self) -> None:
        if not self.open:
            self.open = True
            self.begins += 1

    def commit(self, offsets: list[TopicPartition], member: Any, metadata: Any, spans: list[SyncSpan]) -> None:
        assert metadata == "group-metadata" and member.name == "shadow"
        self.commits.append(Commit(list(offsets), list(spans)))
        self.open = False

    def abort(self) -> None:
        self.aborts += 1
        self.open = False


class FakePath:
    """A source log copied ``step`` records a call (``record_bytes`` each) up to the range's end;
    ``fail_at``: the position at which a copy raises; ``stuck``: copies move nothing."""

    def __init__(self, calls: list[str], *, step: int = 10, record_bytes: int = 100) -> None:
        self.committer = FakeCommitter(calls)
        self.step = step
        self.record_bytes = record_bytes
        self.position: int | None = None
        self.stop: int | None = None
        self.limits: dict[str, int] = {}
        self.fail_at: int | None = None
        self.stuck = False
        self.closed = 0

    def stop_at(self, ends: dict[SourcePartition, int]) -> None:
        self.stop = ends[SOURCE]

    def assign(self, starts: dict[SourcePartition, int], targets: dict[SourcePartition, TargetPartition]) -> None:
        assert targets == {SOURCE: TARGET}
        self.position = starts[SOURCE]

    def limit_batches(self, limits: dict[str, int]) -> None:
        self.limits.update(limits)

    def copy(self, wait_s: float) -> Copied:
        assert self.position is not None and self.stop is not None and self.committer.open
        if self.position == self.fail_at:
            raise TaskFailure("the target refused the batch")
        if self.stuck:
            return Copied()
        moved = min(self.step, self.stop - self.position)
        self.position += moved
        return Copied(moved, moved * self.record_bytes)

    def positions(self, committed: dict[SourcePartition, int]) -> dict[SourcePartition, int]:
        assert self.position is not None
        return {SOURCE: self.position}

    def close(self) -> None:
        self.closed += 1


@dataclass
class FakeConsumer:
    name: str
    closed: int = 0

    def close(self) -> None:
        self.closed += 1


@dataclass
class Rig:
    """The fakes ``copy_range`` runs over, and what it was asked."""

    shadow_commit: Committed | None = None
    topic_id: str | None = TOPIC_ID
    step: int = 10
    calls: list[str] = field(default_factory=list)
    consumers: list[FakeConsumer] = field(default_factory=list)
    paths: list[FakePath] = field(default_factory=list)
    opened_with: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> FakePath:
        (path,) = self.paths
        return path

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def consumer(settings: Any, group: str, client_id: str) -> FakeConsumer:
            self.consumers.append(FakeConsumer("shadow" if client_id.endswith("-shadow") else "source"))
            return self.consumers[-1]

        def open_path(config: MirrorSinkConfig, **kwargs: Any) -> tuple[str, FakePath]:
            self.opened_with = kwargs
            self.paths.append(FakePath(self.calls, step=self.step))
            return "raw", self.paths[-1]

        def stable_commits(shadow: FakeConsumer, partitions: list[TargetPartition], **_: Any) -> dict[Any, Any]:
            self.calls.append("read shadow group")
            assert shadow.name == "shadow" and partitions == [TARGET]
            return {TARGET: self.shadow_commit}

        def topic_ids(admin: Any, topics: list[str]) -> dict[str, str]:
            return {} if self.topic_id is None else {t: self.topic_id for t in topics}

        monkeypatch.setattr(range_copier, "clients", SimpleNamespace(source_consumer=consumer, admin=lambda *a: None))
        monkeypatch.setattr(range_copier, "open_data_path", open_path)
        monkeypatch.setattr(range_copier, "read_stable_commits", stable_commits)
        monkeypatch.setattr(range_copier, "source_topic_ids", topic_ids)
        monkeypatch.setattr(range_copier, "GroupMetadata", SimpleNamespace(of=lambda member: "group-metadata"))

    def closed_everything(self) -> bool:
        return all(c.closed == 1 for c in self.consumers) and all(p.closed == 1 for p in self.paths)


def _config(**extra: str) -> MirrorSinkConfig:
    return MirrorSinkConfig.parse(
        {
            "name": "mirror",
            "source.cluster.bootstrap.servers": "src:9092",
            "target.cluster.bootstrap.servers": "tgt:9092",
            "transaction.max.bytes": "1024",
            "transaction.boundary.interval.ms": "600000",
            **extra,
        }
    )


def _rig(monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> Rig:
    rig = Rig(**kwargs)
    rig.install(monkeypatch)
    return rig


def _held(offset: int, topic_id: str | None = TOPIC_ID) -> Committed:
    return Committed(offset, commit_metadata(topic_id))


def test_each_source_partition_has_its_own_transactional_id_its_fencing_token() -> None:
    assert transactional_id("mirror", "orders", 3) == "mirror.orders.3"


def test_a_range_the_shadow_group_already_holds_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, shadow_commit=_held(120))
    result = copy_range(_config(), "orders", 3, 100, 120)
    assert result == RangeResult("orders", 3, 0, True, "raw")
    assert rig.path.position is None and not rig.path.committer.commits
    assert rig.calls == ["start", "read shadow group"], "the previous holder is fenced before the group is read"
    assert rig.closed_everything()


def test_a_range_beyond_what_the_shadow_group_holds_is_refused_as_data_loss(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, shadow_commit=_held(90))
    with pytest.raises(DataLossError, match=r"records \[90, 100\) would be lost"):
        copy_range(_config(), "orders", 3, 100, 120)
    assert rig.path.position is None and rig.closed_everything()


def test_a_source_topic_created_again_since_the_plan_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, shadow_commit=_held(100, topic_id="BBBBBBBBBBBBBBBBBBBBBB"))
    with pytest.raises(SourceDiscontinuity, match="deleted and created again"):
        copy_range(_config(), "orders", 3, 100, 120)
    assert rig.path.position is None and rig.closed_everything()


@pytest.mark.parametrize(
    ("held", "topic_id"),
    [(None, TOPIC_ID), ("", TOPIC_ID), ("held", None)],
    ids=["committed without an id", "committed without metadata", "the source gives no id"],
)
def test_a_topic_id_missing_on_either_side_is_no_recreation(
    monkeypatch: pytest.MonkeyPatch, held: str | None, topic_id: str | None
) -> None:
    commit = Committed(100, "" if held == "" else commit_metadata(None if held is None else "BBBBBBBBBBBBBBBBBBBBBB"))
    rig = _rig(monkeypatch, shadow_commit=commit, topic_id=topic_id)
    assert copy_range(_config(), "orders", 3, 100, 110).copied == 10
    assert rig.path.committer.commits


def test_a_new_range_is_copied_from_its_start_and_commits_its_end_with_the_topic_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch)
    result = copy_range(_config(), "orders", 3, 100, 105, max_message_bytes=2048)
    assert result == RangeResult("orders", 3, 5, False, "raw")
    assert (rig.opened_with["transactional_id"], rig.opened_with["client_id"]) == ("mirror.orders.3",) * 2
    assert rig.path.stop == 105 and rig.path.limits == {"source.orders": 2048}
    (commit,) = rig.path.committer.commits
    assert [(o.topic, o.partition, o.offset, o.metadata) for o in commit.offsets] == [
        ("source.orders", 3, 105, commit_metadata(TOPIC_ID))
    ]
    assert commit.spans == [SyncSpan(TARGET, "orders", 100, 105)]
    assert rig.closed_everything()


def test_without_a_target_limit_read_the_path_keeps_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch)
    copy_range(_config(), "orders", 3, 0, 5)
    assert rig.path.limits == {}


def test_a_range_partly_mirrored_goes_on_from_the_shadow_groups_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch, shadow_commit=_held(107))
    result = copy_range(_config(), "orders", 3, 100, 112)
    assert result.copied == 5 and not result.skipped
    assert [c.spans for c in rig.path.committer.commits] == [[SyncSpan(TARGET, "orders", 107, 112)]]


def test_a_large_range_commits_in_transactions_bounded_by_the_cycles_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch)  # 10 records of 100 bytes a copy: two copies fill transaction.max.bytes
    assert copy_range(_config(), "orders", 3, 0, 50).copied == 50
    commits = rig.path.committer.commits
    assert [c.offsets[0].offset for c in commits] == [20, 40, 50], "each commits how far it got"
    assert [c.spans for c in commits] == [
        [SyncSpan(TARGET, "orders", 0, 20)],
        [SyncSpan(TARGET, "orders", 20, 40)],
        [SyncSpan(TARGET, "orders", 40, 50)],
    ], "the spans join up: every offset is mapped once"
    assert rig.path.committer.begins == 3 and not rig.path.committer.open


def test_without_offset_syncs_a_commit_carries_no_span(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = _rig(monkeypatch)
    copy_range(_config(**{"emit.offset-syncs.enabled": "false"}), "orders", 3, 0, 30)
    assert [c.spans for c in rig.path.committer.commits] == [[], []]


def test_a_failed_copy_aborts_its_open_transaction_and_keeps_what_was_committed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch)

    def failing_path(config: MirrorSinkConfig, **kwargs: Any) -> tuple[str, FakePath]:
        path = FakePath(rig.calls)
        path.fail_at = 30
        rig.paths.append(path)
        return "record", path

    monkeypatch.setattr(range_copier, "open_data_path", failing_path)
    with pytest.raises(TaskFailure, match="refused the batch"):
        copy_range(_config(), "orders", 3, 0, 50)
    committer = rig.path.committer
    assert [c.offsets[0].offset for c in committer.commits] == [20]
    assert committer.aborts == 1 and not committer.open
    assert rig.closed_everything()


def test_a_range_that_stops_moving_fails_once_a_transaction_timeout_has_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = _rig(monkeypatch)
    clock = itertools.count(start=1000.0, step=5.0)  # every look at the clock is five seconds later
    monkeypatch.setattr(range_copier, "time", SimpleNamespace(monotonic=lambda: next(clock)))

    def stuck_path(config: MirrorSinkConfig, **kwargs: Any) -> tuple[str, FakePath]:
        path = FakePath(rig.calls)
        path.stuck = True
        rig.paths.append(path)
        return "raw", path

    monkeypatch.setattr(range_copier, "open_data_path", stuck_path)
    with pytest.raises(TaskFailure, match=r"orders-3: stuck at offset 0 before 10"):
        copy_range(_config(**{"transaction.timeout.ms": "60000"}), "orders", 3, 0, 10)
    assert rig.path.committer.aborts == 1
