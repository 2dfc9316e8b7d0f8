"""Read the failover topics on the target: the offset syncs (read_committed, incrementally) and the checkpoints."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients.clients import LIBRDKAFKA_LOG
from mirror_sink.core.formats.checkpoints import Checkpoint
from mirror_sink.core.formats.group_cuts import GroupCut
from mirror_sink.core.formats.offset_syncs import OffsetIndex, OffsetSync
from mirror_sink.failover.common.failover_record import FailoverRecord, read_records

log = logging.getLogger(__name__)

_PRUNE_EVERY = 100_000


def assigned_reader(
    props: Mapping[str, str], client_id: str, isolation: str = "read_committed", *, eof: bool = False
) -> Consumer:
    """A consumer for ``assign`` only: it never joins or commits its group (librdkafka wants one)."""
    return Consumer(
        {
            **props,
            "logger": LIBRDKAFKA_LOG,
            "client.id": client_id,
            "group.id": f"{client_id}-unused",  # never joined, never committed
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": eof,
            "auto.offset.reset": "earliest",
            # A reader of ranges (eof) reads to an end it knows and unassigns: a broker holding its
            # fetch at that end for the default 500 ms only delays it (and the next partition's first
            # records). One that stays assigned between reads keeps the default, or it would fetch
            # from an idle partition a hundred times a second.
            **({"fetch.wait.max.ms": 10} if eof else {}),
        }
    )


def unused_group_error(err: KafkaError) -> bool:
    """An error about the reader's own group, which it never uses: librdkafka still looks up its
    coordinator, and a principal with no ACL on that group (least privilege) gets
    GROUP_AUTHORIZATION_FAILED. Fetching is not affected; the error is not the reader's."""
    return err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED


class _TopicReader:
    """Reads partition 0 of one topic up to its end as of each call."""

    def __init__(self, props: Mapping[str, str], topic: str, client_id: str, isolation: str) -> None:
        self.topic = topic
        self.tp = TopicPartition(topic, 0, OFFSET_BEGINNING)
        self.consumer = assigned_reader(props, client_id, isolation)
        self.consumer.assign([self.tp])
        self.position = 0

    def read_new(self, timeout_s: float) -> Iterator[tuple[bytes, bytes, int]]:
        """(key, value, timestamp ms) of every record up to the topic's current end (LSO when read_committed)."""
        try:
            low, end = self.consumer.get_watermark_offsets(
                TopicPartition(self.topic, 0), timeout=timeout_s, cached=False
            )
        except KafkaException as exc:
            raise TaskFailure(f"cannot read the end offset of {self.topic} on the target: {exc.args[0].str()}") from exc
        # Retention may have deleted everything before ``low`` (or all of it: then nothing is ever
        # returned and the consumer's position never moves; the start is ``low`` then).
        self.position = max(self.position, low)
        deadline = Deadline(timeout_s)
        while self.position < end:
            if deadline.passed:
                raise TaskFailure(
                    f"reading {self.topic} on the target: at offset {self.position} of {end} after {timeout_s:.0f} s"
                )
            for msg in self.consumer.consume(10_000, 0.05):
                err = msg.error()
                if err is not None:
                    if unused_group_error(err):
                        continue
                    raise TaskFailure(f"reading {self.topic} on the target: {err.str()}")
                yield msg.key() or b"", msg.value() or b"", msg.timestamp()[1]
            positions = self.consumer.position([TopicPartition(self.topic, 0)])
            if positions and positions[0].offset >= 0:
                self.position = positions[0].offset

    def close(self) -> None:
        self.consumer.close()


class OffsetSyncReader:
    """The committed offset syncs of one source alias, as an ``OffsetIndex`` kept up to date.

    ``floors`` bounds its memory: below a partition's floor nothing is kept (applied while reading,
    every ``_PRUNE_EVERY`` syncs, so a first read of a long topic stays bounded too).
    """

    def __init__(self, target_props: Mapping[str, str], topic: str, client_id: str) -> None:
        self._reader = _TopicReader(target_props, topic, client_id, "read_committed")
        self.index = OffsetIndex()
        self.floors: dict[TargetPartition, int] = {}
        self.skipped = 0
        #: Records read so far (syncs or not): unchanged between two calls when nothing new was committed.
        self.records_read = 0
        #: Per target partition, the timestamp of its newest sync: about when the mirror last committed there.
        self.newest_ms: dict[TargetPartition, int] = {}

    def catch_up(self, timeout_s: float = 600.0) -> OffsetIndex:
        """Read every sync committed since the last call."""
        for read, (key, value, timestamp_ms) in enumerate(self._reader.read_new(timeout_s), 1):
            self.records_read += 1
            try:
                sync = OffsetSync.decode(key, value)
                self.index.add(sync)
                self.newest_ms[sync.target] = max(timestamp_ms, self.newest_ms.get(sync.target, 0))
            except ValueError as exc:
                self.skipped += 1
                log.warning("skipping a record of %s that is not an offset sync: %s", self._reader.topic, exc)
            if read % _PRUNE_EVERY == 0 and self.floors:
                self.index.forget_below(self.floors)
        if self.floors:
            self.index.forget_below(self.floors)
        return self.index

    def close(self) -> None:
        """Release the consumer."""
        self._reader.close()


@dataclass(frozen=True)
class StoredCheckpoint:
    """A checkpoint as read back, with the time it was written."""

    checkpoint: Checkpoint
    timestamp_ms: int


def read_checkpoints(
    target_props: Mapping[str, str], topic: str, client_id: str, timeout_s: float = 60.0
) -> dict[tuple[str, TargetPartition], StoredCheckpoint]:
    """The newest checkpoint of every (group, target partition) in ``topic`` (MM2's or ours)."""
    reader = _TopicReader(target_props, topic, client_id, "read_committed")
    try:
        latest: dict[tuple[str, TargetPartition], StoredCheckpoint] = {}
        for key, value, ts in reader.read_new(timeout_s):  # compacted: small
            try:
                cp = Checkpoint.decode(key, value)
            except ValueError:
                continue  # MM2's reader skips what it cannot parse too
            latest[(cp.group, cp.target)] = StoredCheckpoint(cp, ts)
        return latest
    finally:
        reader.close()


def read_failovers(
    target_props: Mapping[str, str], topic: str, client_id: str, timeout_s: float = 60.0
) -> dict[tuple[str, str], FailoverRecord]:
    """Every whole failover recorded in ``topic`` (``mirror_sink.failover.common.failover_record``)."""
    reader = _TopicReader(target_props, topic, client_id, "read_committed")
    try:
        return read_records((key, value) for key, value, _ in reader.read_new(timeout_s))
    finally:
        reader.close()


def read_group_cuts(
    target_props: Mapping[str, str], topic: str, client_id: str, timeout_s: float = 60.0
) -> dict[tuple[str, TargetPartition], GroupCut]:
    """The newest position at a cut of every (group, target partition) in ``topic``
    (``mirror_sink.core.formats.group_cuts``), read_committed: each is visible with the data it matches."""
    reader = _TopicReader(target_props, topic, client_id, "read_committed")
    try:
        latest: dict[tuple[str, TargetPartition], GroupCut] = {}
        for key, value, _ in reader.read_new(timeout_s):
            try:
                cut = GroupCut.decode(key, value)
            except ValueError:
                continue
            latest[(cut.group, cut.target)] = cut
        return latest
    finally:
        reader.close()
