"""Small fakes of the task engine's own interfaces, shared by the unit tests of ``mirror_sink.task``.

Each fake states what the task engine may count on from the thing it stands for, and no more:

- ``FakeCommitter`` and ``FakePath``: the ``Committer`` and ``DataPath`` protocols
  (``mirror_sink.core.interfaces.data_path``): a source log per partition (``ends``) copied into
  the cycle up to its hold limits, positions, rewinds and holds kept as the protocol describes them;
- ``FakeMember``: the shadow group's member as ``Ownership`` uses it; rebalances the test queues
  run inside ``poll``, as the group's callbacks do;
- ``FakeResolver``: ``StartOffsetResolver`` with the source's log starts and ends and topic ids
  given by the test, and the start offsets a test says the shadow group holds. Its ``check`` is
  the real one (``check_continuity``, under the config's policies);
- ``FakeFence`` and ``FakeLeaders``: the takeover fence and the target leaders' check, answering
  from what the test says (no admin client).

None of them says anything about how a broker behaves.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.clients.source_transactions import SourceTransactions
from mirror_sink.core.formats.group_metadata import GroupMetadata
from mirror_sink.core.formats.offset_syncs import SyncSpan
from mirror_sink.core.formats.skipped_ranges import AuditRecord, Recreation, SkippedRange
from mirror_sink.core.interfaces.data_path import Copied, PathStatistics
from mirror_sink.core.runtime.logs import Log
from mirror_sink.core.telemetry.metrics import CycleStats
from mirror_sink.task.source_continuity import Crossings, StoredOffset
from mirror_sink.task.start_offsets import StartOffsetResolver, StartOffsets
from mirror_sink.task.takeover_fence import TakeoverFence
from mirror_sink.task.target_leaders import TargetLeaders
from mirror_sink.task.task_run import TaskRun
from mirror_sink.task.transaction_cuts import Cut, TransactionCuts
from mirror_sink.topics.source_discovery import TopicMapping

LOG = logging.getLogger("test.task")

BASE: dict[str, str] = {
    "name": "mirror",
    "source.cluster.bootstrap.servers": "src:9092",
    "target.cluster.bootstrap.servers": "tgt:9092",
}


def config(**overrides: str) -> MirrorSinkConfig:
    """A connector config: ``BASE`` with Connect keys given as keyword arguments, ``_`` for ``.``."""
    return MirrorSinkConfig.parse({**BASE, **{k.replace("_", "."): v for k, v in overrides.items()}})


def mapping(source_topic: str, partitions: int, max_message_bytes: int | None = None) -> TopicMapping:
    """``source_topic`` mirrored to ``source.{source_topic}`` (the default replication policy)."""
    return TopicMapping(source_topic, f"source.{source_topic}", partitions, max_message_bytes)


# -- the committer and the data path -------------------------------------------------------------
@dataclass(frozen=True)
class CommitCall:
    """One ``Committer.commit``, as the committer was handed it."""

    offsets: list[TopicPartition]
    metadata: GroupMetadata
    spans: list[SyncSpan]
    audit: list[AuditRecord]
    #: Whether anything was written in the cycle (False: a commit of offsets only).
    had_writes: bool

    def by_target(self) -> dict[TargetPartition, int]:
        """The committed offsets by target partition."""
        return {TargetPartition(tp.topic, tp.partition): tp.offset for tp in self.offsets}

    def metadata_by_target(self) -> dict[TargetPartition, str]:
        """The commit metadata beside each offset, by target partition."""
        return {TargetPartition(tp.topic, tp.partition): tp.metadata or "" for tp in self.offsets}


class FakeCommitter:
    """A ``Committer``: begun by the cycle, opened by the path's first write, and ended by a
    commit (kept in ``commits``) or an abort; ``refuse`` holds what the next commits raise instead."""

    def __init__(self) -> None:
        self.begun = False
        self._open = False
        self.commits: list[CommitCall] = []
        self.aborts = 0
        self.refuse: list[Exception] = []

    def start(self) -> None:
        """Nothing to prepare."""

    def begin(self) -> None:
        self.begun = True

    def enlist(self, partitions: Collection[TargetPartition] = ()) -> None:
        if not self.begun:
            raise TaskFailure("internal error: the data path wrote before the cycle began")
        self._open = True

    def commit(
        self,
        offsets: list[TopicPartition],
        member: Consumer,
        metadata: GroupMetadata,
        spans: Sequence[SyncSpan] = (),
        audit: Sequence[AuditRecord] = (),
    ) -> None:
        if self.refuse:
            raise self.refuse.pop(0)
        self.commits.append(CommitCall(list(offsets), metadata, list(spans), list(audit), self._open))
        self.begun = self._open = False

    def abort(self) -> None:
        self.aborts += 1
        self.begun = self._open = False

    @property
    def open(self) -> bool:
        return self._open


#: A test's loop that copies this often has not stopped when its script was done: a failure, not a hang.
_MOST_COPIES = 1000

#: What a ``FakePath.copy`` does before it copies: raise, or change the scene (a callable).
Step = Exception | Callable[[], object]


class FakePath:
    """A ``DataPath`` over a source log per partition: ``ends[tp]`` is the next offset the source
    has, ``copy`` takes everything from the position up to it (or to the hold limit) into the cycle.

    Before each copy it runs the next ``script`` step; once the script is done, it sets ``stop``
    (when given), so a test's ``Cycle.loop`` ends after that copy."""

    positions_move_unseen: bool = False

    def __init__(self, committer: FakeCommitter | None = None) -> None:
        self._committer = committer or FakeCommitter()
        self.ends: dict[SourcePartition, int] = {}
        #: The source leader epoch of the records each partition has now.
        self.epochs: dict[SourcePartition, int] = {}
        self.script: list[Step] = []
        self.stop: threading.Event | None = None
        #: The next source offset of each partition assigned (moved by copies, assigns and rewinds).
        self.at: dict[SourcePartition, int] = {}
        self.targets: dict[SourcePartition, TargetPartition] = {}
        self.topic_ids: dict[str, str] = {}
        self.assigned: list[tuple[dict[SourcePartition, int], dict[SourcePartition, int]]] = []
        self.unassigned: list[SourcePartition] = []
        self.rewinds: list[tuple[dict[SourcePartition, int], dict[SourcePartition, int]]] = []
        self.holds: list[dict[SourcePartition, int]] = []
        self.batch_limits: list[dict[str, int]] = []
        self.forgets = 0
        self.copies = 0
        self.transactional = False
        self.advice: str | None = None
        #: At most this many records per partition per copy (None: all there is).
        self.chunk: int | None = None
        self.stats = PathStatistics()
        self.cycle_stats: dict[TargetPartition, CycleStats] = {}
        self._limits: dict[SourcePartition, int] = {}
        self._copied_epochs: dict[SourcePartition, int] = {}

    @property
    def committer(self) -> FakeCommitter:
        return self._committer

    def assign(
        self,
        starts: Mapping[SourcePartition, int],
        targets: Mapping[SourcePartition, TargetPartition],
        topic_ids: Mapping[str, str] | None = None,
        leader_epochs: Mapping[SourcePartition, int] | None = None,
    ) -> None:
        self.assigned.append((dict(starts), dict(leader_epochs or {})))
        self.at.update(starts)
        self.targets.update({tp: targets[tp] for tp in starts})
        self.topic_ids.update(topic_ids or {})

    def unassign(self, partitions: Iterable[SourcePartition]) -> None:
        for tp in partitions:
            self.unassigned.append(tp)
            self.at.pop(tp, None)
            self.targets.pop(tp, None)

    def limit_batches(self, max_message_bytes: Mapping[str, int]) -> None:
        self.batch_limits.append(dict(max_message_bytes))

    def rewind(
        self, offsets: Mapping[SourcePartition, int], leader_epochs: Mapping[SourcePartition, int] | None = None
    ) -> None:
        self.rewinds.append((dict(offsets), dict(leader_epochs or {})))
        self.at.update(offsets)
        self._copied_epochs.clear()

    def stop_at(self, ends: Mapping[SourcePartition, int]) -> None:
        raise AssertionError("a task's cycle never stops a path at planned ends (Spark's ranges do)")

    def hold_at(self, limits: Mapping[SourcePartition, int]) -> None:
        self.holds.append(dict(limits))
        self._limits = dict(limits)

    def holding(self) -> bool:
        return any(self.ends.get(tp, at) > at >= self._limits.get(tp, at + 1) for tp, at in self.at.items())

    def took_transactional(self) -> bool:
        return self.transactional

    def forget_transactional(self) -> None:
        self.forgets += 1
        self.transactional = False

    def copy(self, wait_s: float) -> Copied:
        self.copies += 1
        if self.copies > _MOST_COPIES:
            raise AssertionError(f"the loop went on for {_MOST_COPIES} copies past its script")
        if self.script:
            step = self.script.pop(0)
            if isinstance(step, Exception):
                raise step
            step()
        elif self.stop is not None:
            self.stop.set()
        records = 0
        for tp, at in self.at.items():
            end = min(self.ends.get(tp, at), self._limits.get(tp, self.ends.get(tp, at)))
            if self.chunk is not None:
                end = min(end, at + self.chunk)
            if end <= at:
                continue
            self.committer.enlist([self.targets[tp]])
            records += end - at
            self.at[tp] = end
            self._copied_epochs[tp] = self.epochs.get(tp, 0)
            self.cycle_stats.setdefault(self.targets[tp], CycleStats()).add(end - at, 100 * (end - at), 0, 0, 0)
        return Copied(records, 100 * records)

    def positions(self, committed: Mapping[SourcePartition, int]) -> dict[SourcePartition, int]:
        return {tp: self.at.get(tp, offset) for tp, offset in committed.items()}

    def leader_epochs(self) -> dict[SourcePartition, int]:
        return dict(self._copied_epochs)

    def caught_up(self) -> bool:
        return all(self.ends.get(tp, at) <= at for tp, at in self.at.items())

    def record_mode_advised(self) -> str | None:
        return self.advice

    def take_stats(self) -> dict[TargetPartition, CycleStats]:
        stats, self.cycle_stats = self.cycle_stats, {}
        if not self._committer.open:
            self._copied_epochs.clear()
        return stats

    def statistics(self) -> PathStatistics:
        return self.stats

    def transaction_version(self) -> int:
        return 2

    def describe(self) -> str:
        return "fake path"

    def close(self, *, abandon: bool = False) -> None:
        """Nothing to release."""


# -- the shadow group's member and the source consumer ------------------------------------------
def group_metadata(generation: int, member_id: str = "member-1") -> bytes:
    """A member's group metadata in the serialized form ``GroupMetadata.of`` parses."""
    return b"CGMDv2:" + struct.pack("=i", generation) + b"connect-mirror\0" + member_id.encode() + b"\0\1"


@dataclass
class FakeMessage:
    """What a member's ``poll`` returns when the group reports an error."""

    err: KafkaError

    def error(self) -> KafkaError:
        return self.err


RebalanceCallback = Callable[[Consumer, list[TopicPartition]], None]
#: Polls of one member in a test: a loop past this never ends (a failure rather than a hang).
_MOST_POLLS = 10_000


class FakeMember:
    """The shadow group's member as ``Ownership`` uses it: subscribed with three callbacks, which run
    inside ``poll`` for the rebalances a test queued (``assign_next``, ``revoke_next``, ``lose_next``)."""

    def __init__(self) -> None:
        self.generation = 1
        self.polls = 0
        self.subscriptions: list[list[str]] = []
        self.assignment: list[TopicPartition] = []
        self.paused: list[TopicPartition] = []
        self.errors: list[KafkaError] = []
        self._callbacks: dict[str, RebalanceCallback] = {}
        self._queued: list[tuple[str, list[TopicPartition]]] = []

    def subscribe(
        self, topics: list[str], on_assign: RebalanceCallback, on_revoke: RebalanceCallback, on_lost: RebalanceCallback
    ) -> None:
        self.subscriptions.append(list(topics))
        self._callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}

    def assign_next(self, targets: Iterable[TargetPartition]) -> None:
        """The next ``poll`` assigns ``targets`` (a new generation)."""
        self._queued.append(("assign", [TopicPartition(t.topic, t.partition) for t in targets]))

    def revoke_next(self) -> None:
        """The next ``poll`` revokes the whole assignment."""
        self._queued.append(("revoke", []))

    def lose_next(self) -> None:
        """The next ``poll`` finds the session lost."""
        self._queued.append(("lost", []))

    def poll(self, timeout: float) -> FakeMessage | None:
        self.polls += 1
        if self.polls > _MOST_POLLS:
            raise AssertionError(f"the member was polled {_MOST_POLLS} times: a test's loop that never ends")
        while self._queued:
            kind, partitions = self._queued.pop(0)
            if kind == "assign":
                self.generation += 1
            else:
                partitions = list(self.assignment)
            self._callbacks[kind](cast(Consumer, self), partitions)
        return FakeMessage(self.errors.pop(0)) if self.errors else None

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assignment = list(partitions)

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused = list(partitions)

    def unassign(self) -> None:
        self.assignment = []
        self.paused = []

    def consumer_group_metadata(self) -> bytes:
        return group_metadata(self.generation)


class FakeSource:
    """The source consumer as the cycle uses it: the informational source-group commits."""

    def __init__(self) -> None:
        self.commits: list[list[TopicPartition]] = []

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> None:
        self.commits.append(list(offsets))


# -- start offsets, the takeover fence, target leaders and cuts ----------------------------------
@dataclass(frozen=True)
class Held:
    """What the shadow group holds for a partition, as the resolver would find it (``offset``
    None: nothing, the fallback chose ``offset_fallback``)."""

    offset: int | None
    leader_epoch: int | None = None
    offset_fallback: int = 0
    skipped: SkippedRange | None = None
    recreated: Recreation | None = None


class FakeResolver(StartOffsetResolver):
    """Start offsets from ``held``; the source's log starts and ends (``marks``) and topic ids now
    (``ids``) as the test sets them; the continuity check is the real one."""

    def __init__(self, config: MirrorSinkConfig, log: Log = LOG) -> None:
        self.config = config
        self.log = log
        self.client_id = "test"
        self.held: dict[SourcePartition, Held] = {}
        self.marks: dict[SourcePartition, tuple[int, int]] = {}
        self.ids: dict[str, str] = {}
        self.resolved: list[dict[TargetPartition, SourcePartition]] = []
        #: What the next ``resolve`` raises instead (the shadow group or the source unreadable).
        self.failure: Exception | None = None

    def resolve(self, pairs: Mapping[TargetPartition, SourcePartition]) -> StartOffsets:
        self.resolved.append(dict(pairs))
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        held = {source: self.held.get(source, Held(None)) for source in pairs.values()}
        offsets = {
            tp: (h.offset_fallback if h.offset is None else h.skipped.first_present if h.skipped else h.offset)
            for tp, h in held.items()
        }
        offsets.update({tp: 0 for tp, h in held.items() if h.recreated is not None})
        return StartOffsets(
            offsets=offsets,
            unsaved=frozenset(tp for tp, h in held.items() if h.offset is None),
            topic_ids={tp.topic: self.ids[tp.topic] for tp in held if tp.topic in self.ids},
            skipped={tp: h.skipped for tp, h in held.items() if h.skipped is not None},
            recreated={tp: h.recreated for tp, h in held.items() if h.recreated is not None},
            leader_epochs={tp: h.leader_epoch for tp, h in held.items() if h.leader_epoch is not None},
        )

    def topic_ids_now(self, topics: list[str]) -> dict[str, str]:
        return {t: self.ids[t] for t in topics if t in self.ids}

    def check(
        self, stored: Mapping[SourcePartition, StoredOffset], topic_ids: Mapping[str, str] | None = None
    ) -> Crossings:
        return super().check(stored, self.ids if topic_ids is None else topic_ids)

    def watermarks(self, tp: SourcePartition) -> tuple[int, int]:
        return self.marks[tp]


class FakeFence(TakeoverFence):
    """The takeover fence, asked for partitions (kept in ``asked``), fencing nothing."""

    def __init__(self, log: Log = LOG) -> None:
        super().__init__({"bootstrap.servers": "tgt:9092"}, {"bootstrap.servers": "tgt:9092"}, "mirror", "slot", log)
        self.asked: list[set[TargetPartition]] = []

    def fence(self, partitions: Iterable[TargetPartition]) -> list[str]:
        self.asked.append(set(partitions))
        return []


class FakeLeaders(TargetLeaders):
    """Target leaders: the partitions in ``unserved`` wait until the test serves them (``serve``)."""

    def __init__(self, log: Log = LOG) -> None:
        super().__init__(self._no_admin, 30.0, log)
        self.unserved: set[TargetPartition] = set()
        self._now_waiting: set[TargetPartition] = set()
        self._changed = False

    @staticmethod
    def _no_admin() -> AdminClient:
        raise AssertionError("the fake target leaders need no admin client")

    @property
    def waiting(self) -> frozenset[TargetPartition]:
        return frozenset(self._now_waiting)

    def assign(self, targets: Iterable[TargetPartition]) -> None:
        self._now_waiting = set(targets) & self.unserved

    def serve(self, targets: Iterable[TargetPartition]) -> None:
        """Their leaders serve ``targets`` now: the next ``poll`` says so."""
        served = set(targets)
        self.unserved -= served
        self._changed = bool(self._now_waiting & served)
        self._now_waiting -= served

    def poll(self) -> bool:
        changed, self._changed = self._changed, False
        return changed


class FakeCuts(TransactionCuts):
    """Cuts of source transactions: each ``snapshot`` takes the next of ``next_limits`` (none left:
    no cut this time); the rest (the current cut, advancing, ``reached``) is the real class."""

    def __init__(self, log: Log = LOG) -> None:
        super().__init__(cast(SourceTransactions, None), cast(AdminClient, None), log)
        self.next_limits: list[dict[SourcePartition, int]] = []

    def snapshot(self, reading: Collection[SourcePartition], *, with_groups: bool = False) -> bool:
        if not self.next_limits:
            return False
        self.pending.append(Cut(self.next_limits.pop(0), {}))
        self.counts.cuts += 1
        return True


# -- a task's run --------------------------------------------------------------------------------
class FakeRun(TaskRun):
    """A task's run over the fakes: what ``Cycle``, ``Ownership`` and ``CommitPlan`` read of it."""

    def __init__(
        self,
        cfg: MirrorSinkConfig,
        path: FakePath | None = None,
        *,
        mode: str = "raw",
        cuts: TransactionCuts | None = None,
    ) -> None:
        self.config = cfg
        self.slot = "mirror-w1-0"
        self.log = LOG
        self.closing = False
        self.transactional_id = self.slot if cfg.transaction_producer else None
        self.fake_path = path or FakePath()
        self.fake_member = FakeMember()
        self.fake_source = FakeSource()
        # The member and the source consumer stand in for librdkafka consumers: only the calls
        # above are made on them here.
        self.member = cast(Consumer, self.fake_member)
        self.source = cast(Consumer, self.fake_source)
        self.mode = mode
        self.path = self.fake_path
        self.instance_id = None
        self.keep_membership = False
        self.cuts = cuts
        self.committer = self.fake_path.committer
