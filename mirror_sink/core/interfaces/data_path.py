"""How a task moves data: the interface its two modes share.

The task decides what to read (ownership), from where (the committed offsets) and when a cycle
ends; a data path reads the source, writes the target inside the cycle and reports how far each
partition has come. ``RecordPath`` re-produces records through librdkafka; ``RawPath`` forwards
the source's record batches byte for byte (KIP-712).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from confluent_kafka import Consumer, TopicPartition

from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.formats.group_metadata import GroupMetadata
from mirror_sink.core.formats.offset_syncs import SyncSpan
from mirror_sink.core.formats.skipped_ranges import AuditRecord
from mirror_sink.core.telemetry.metrics import CycleStats

#: Partitions per offset commit sent to a transaction: the group coordinator appends each
#: TxnOffsetCommit's offsets as one batch to __consumer_offsets and refuses a batch over its 1 MB
#: (UNKNOWN_SERVER_ERROR; about 120 bytes a partition with the commit metadata, so 10,000 partitions
#: made 1.2 MB). Committers send larger sets in parts; the transaction still makes them one commit.
OFFSETS_PER_REQUEST = 2000


class Committer(Protocol):
    """Makes a cycle durable, or voids it: the task's cycle alone begins, commits and aborts, and
    the data path only enlists what it writes."""

    def start(self) -> None:
        """Prepare the producer (fences the previous holder of a transactional.id)."""

    def begin(self) -> None:
        """The cycle starts (the task's cycle calls it before each copy; a no-op while one is
        begun). Nothing reaches a broker: an idle cycle costs no request, and only a write enlisted
        in it makes it open."""

    def enlist(self, partitions: Collection[TargetPartition] = ()) -> None:
        """The data path is about to write to ``partitions`` in the begun cycle (raw mode registers
        them with the transaction in one request; librdkafka does so itself in record mode): the
        cycle is open from now. A write before the cycle began is an internal error."""

    def commit(
        self,
        offsets: list[TopicPartition],
        member: Consumer,
        metadata: GroupMetadata,
        spans: Sequence[SyncSpan] = (),
        audit: Sequence[AuditRecord] = (),
    ) -> None:
        """Make the cycle's records and ``offsets`` durable, or raise AbortCycle / TaskFailure.

        ``spans``: what the cycle consumed per partition; a committer that writes offset syncs
        writes one per span, in the same transaction. ``audit``: records that must commit with the
        offsets, or not at all (skipped ranges); only a transactional committer takes them.

        ``metadata`` is the member's group metadata taken when the cycle's ownership was last
        confirmed (before its first record), not at commit time: librdkafka's background thread can
        change the member's generation mid-cycle, and a commit must be fenced by the generation
        that owned the records it carries.
        """

    def abort(self) -> None:
        """Void the open cycle, if any."""

    @property
    def open(self) -> bool:
        """True while a cycle has uncommitted work."""


@dataclass(frozen=True)
class PathSettings:
    """What a task slot's data path is built from: each cluster's client settings, the slot's
    identities and the cycle's bounds (``MirrorSinkConfig.path_settings`` makes it)."""

    source_props: Mapping[str, str]
    target_props: Mapping[str, str]
    client_id: str
    transactional_id: str | None  # None: at least once (``transaction.producer=false``)
    transaction_timeout_ms: int
    group_id: str  # the shadow group
    memory_bytes: int  # raw mode's budget for data fetched and not yet acknowledged
    chunk_bytes: int  # how much one copy call takes into the cycle at most
    sync_partition: TargetPartition | None  # where offset syncs go (None: not written)
    #: Raw mode: how long a quiet source leader's watch is parked (0: no watches).
    idle_wait_ms: int = 0


@dataclass(frozen=True)
class FetchSessionCounts:
    """Raw mode's Fetches to the source: sent by kind and session resets by reason (since the
    start), and the fetch sessions held now with the partitions in them."""

    requests: Mapping[str, int]
    resets: Mapping[str, int]
    sessions: int
    partitions: int


@dataclass(frozen=True)
class PathStatistics:
    """What a data path has counted, as one value for metrics and the cycle's pacing. Record mode
    leaves raw mode's parts empty: librdkafka keeps its own queues, retries and fetches out of sight."""

    #: Raw mode: batches forwarded as they are and re-encoded (by reason), since the start.
    batches: Mapping[str, int] = field(default_factory=dict)
    #: Raw mode: the memory budget's bytes in use, its limit and its peak.
    memory: Mapping[str, int] = field(default_factory=dict)
    #: How long the latest transaction waited for the previous one's markers to be written to every
    #: partition it touched (raw mode; 0 in record mode, where librdkafka hides the wait).
    marker_wait_s: float = 0.0
    #: Raw mode: its Fetches and fetch sessions (KIP-227); None in record mode (librdkafka sends a
    #: full Fetch every time).
    fetch_sessions: FetchSessionCounts | None = None


@dataclass(frozen=True)
class Copied:
    """What one ``copy`` call added to the open cycle."""

    records: int = 0
    bytes: int = 0


class DataPath(Protocol):
    """Reads assigned source partitions and writes them to the same partitions of their target topics."""

    @property
    def committer(self) -> Committer:
        """What makes the path's cycles durable: it alone begins, commits and aborts them."""

    def assign(
        self,
        starts: Mapping[SourcePartition, int],
        targets: Mapping[SourcePartition, TargetPartition],
        topic_ids: Mapping[str, str] | None = None,
        leader_epochs: Mapping[SourcePartition, int] | None = None,
    ) -> None:
        """Start reading these partitions at these offsets, writing each to its partition in
        ``targets`` (which holds every partition of ``starts``); ``topic_ids``: the id of each topic the
        offsets belong to (Kafka's printed form), where the path can ask by id; ``leader_epochs``:
        the source leader epoch of the record before each offset, where known, so that the source
        says whether its log still agrees (KIP-320)."""

    def unassign(self, partitions: Iterable[SourcePartition]) -> None:
        """Stop reading these partitions."""

    def limit_batches(self, max_message_bytes: Mapping[str, int]) -> None:
        """The target topics' max.message.bytes, by name, as the topic mappings last read them: raw
        mode re-encodes a batch larger than its topic takes (record mode's producer makes its own
        batches, and ignores them). Given before the first ``assign`` and whenever they change."""

    def rewind(
        self, offsets: Mapping[SourcePartition, int], leader_epochs: Mapping[SourcePartition, int] | None = None
    ) -> None:
        """After an aborted cycle: read again from the committed ``offsets`` (``leader_epochs`` as in
        ``assign``)."""

    def stop_at(self, ends: Mapping[SourcePartition, int]) -> None:
        """Copy nothing at or past these offsets, and let positions go no further (a planned range's
        end: Spark's). A batch that crosses an end is re-encoded without its records past it."""

    def hold_at(self, limits: Mapping[SourcePartition, int]) -> None:
        """Copy nothing at or past these offsets for now, but keep it (within the memory budget) for
        when the limits move on: the cut that keeps source transactions whole. Limits are batch
        boundaries (last stable offsets); a call replaces the previous limits."""

    def holding(self) -> bool:
        """Whether something fetched waits at a ``hold_at`` limit."""

    def took_transactional(self) -> bool:
        """Whether anything put in the cycle since ``forget_transactional`` may belong to a source
        transaction (True when the path cannot tell): if not, the positions are a cut themselves."""

    def forget_transactional(self) -> None:
        """A commit was made: ``took_transactional`` starts again from nothing."""

    def copy(self, wait_s: float) -> Copied:
        """Move what is available (waiting up to ``wait_s`` for data) into the open cycle, each
        partition to the target partition it was assigned with.

        Calls ``committer.enlist`` before each write into the cycle the task began; raises AbortCycle when the
        cycle's work is void.
        """

    def positions(self, committed: Mapping[SourcePartition, int]) -> dict[SourcePartition, int]:
        """For each partition, the next source offset once the open cycle commits.

        Past control records and aborted transactions too, so the shadow group can reach the
        source's end offsets exactly.
        """

    def leader_epochs(self) -> dict[SourcePartition, int]:
        """The source leader epoch of the last record or batch put in the open cycle, per partition
        that has one (KIP-320): committed beside the offset, so a restart can ask the source whether
        its log still agrees."""

    def caught_up(self) -> bool:
        """True when everything read so far is in the open cycle and the source had nothing more
        at the last look: the moment to end a transaction when latency matters (``transaction.boundary``)."""

    def record_mode_advised(self) -> str | None:
        """Raw mode: why record mode would copy this source faster (asked between cycles, answered
        once the first batches show it); None otherwise."""

    def take_stats(self) -> dict[TargetPartition, CycleStats]:
        """Records, bytes and timestamps per target partition since the last call (for metrics)."""

    def statistics(self) -> PathStatistics:
        """What the path has counted so far: batches, memory, the latest wait for markers, Fetches."""

    #: True when a partition's position can move with nothing copied (record mode: librdkafka steps
    #: over transaction markers): an idle task then still commits on its interval to save it.
    positions_move_unseen: bool

    def transaction_version(self) -> int:
        """The transaction protocol its producer speaks: 2 (KIP-890 part 2: a new epoch per
        transaction, partitions added by the brokers), 1, or 0 without transactions (at least once)."""

    def describe(self) -> str:
        """The mode and its own counters, for progress logs."""

    def close(self, *, abandon: bool = False) -> None:
        """Release the clients (``abandon``: a client call may still be blocked; keep it alive)."""
