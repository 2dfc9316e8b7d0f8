"""The failover topics' readers: a consumer that never joins its group, reading partition 0 up to its
end as of each call (from where retention left it), and what each topic's reader keeps of it: every
committed offset sync, the newest checkpoint and group cut per key, every whole failover."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_INVALID, KafkaError, KafkaException, TopicPartition

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.checkpoints import Checkpoint
from mirror_sink.core.formats.group_cuts import GroupCut
from mirror_sink.core.formats.offset_syncs import OffsetSync, SyncRun
from mirror_sink.failover.common import readers
from mirror_sink.failover.common.failover_record import FailoverRecord, PartitionCut
from mirror_sink.failover.common.readers import (
    OffsetSyncReader,
    assigned_reader,
    read_checkpoints,
    read_failovers,
    read_group_cuts,
    unused_group_error,
)
from tests.unit.failover.fakes import NEW_PRIMARY, kafka_exception

pytestmark = pytest.mark.unit

TARGET = {"bootstrap.servers": NEW_PRIMARY}
T0, T1 = TargetPartition("us-east.orders", 0), TargetPartition("us-east.orders", 1)


@dataclass
class _Record:
    offset: int
    key: bytes
    value: bytes
    timestamp_ms: int


class _Message:
    """A consumed record, or an error event."""

    def __init__(self, record: _Record | None = None, error: KafkaError | None = None) -> None:
        self._record = record
        self._error = error

    def error(self) -> KafkaError | None:
        return self._error

    def key(self) -> bytes | None:
        return None if self._record is None else self._record.key

    def value(self) -> bytes | None:
        return None if self._record is None else self._record.value

    def timestamp(self) -> tuple[int, int]:
        return (1, 0 if self._record is None else self._record.timestamp_ms)


@dataclass
class _Topic:
    """Partition 0 of one topic as a read_committed reader sees it: its records at their offsets,
    its start (``low``, where retention left it) and last stable offset (``end``; a commit marker
    takes an offset of its own). ``events`` are error events served before the next records;
    ``stuck``: fetches never return anything."""

    name: str
    records: list[_Record] = field(default_factory=list)
    low: int = 0
    end: int = 0
    events: list[KafkaError] = field(default_factory=list)
    end_error: KafkaException | None = None
    stuck: bool = False
    consumers: list[_Consumer] = field(default_factory=list)

    def commit(self, *records: tuple[bytes, bytes, int]) -> None:
        """One transaction of ``records`` (key, value, timestamp ms), then its commit marker."""
        for key, value, timestamp_ms in records:
            self.records.append(_Record(self.end, key, value, timestamp_ms))
            self.end += 1
        self.end += 1

    def consumer(self, config: Mapping[str, Any]) -> _Consumer:
        self.consumers.append(_Consumer(self, dict(config)))
        return self.consumers[-1]


class _Consumer:
    """What ``readers`` asks of a librdkafka consumer, served from a ``_Topic``."""

    def __init__(self, topic: _Topic, config: dict[str, Any]) -> None:
        self.topic = topic
        self.config = config
        self.at = OFFSET_INVALID  # no position before the first fetch
        self.closed = False

    def assign(self, partitions: list[TopicPartition]) -> None:
        [tp] = partitions
        assert (tp.topic, tp.partition, tp.offset) == (self.topic.name, 0, OFFSET_BEGINNING)
        self.start = self.topic.low

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float, cached: bool) -> tuple[int, int]:
        assert not cached, "a cached end would miss what was committed since"
        if self.topic.end_error is not None:
            raise self.topic.end_error
        return self.topic.low, self.topic.end

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        if self.topic.stuck:
            return []
        events = [_Message(error=e) for e in self.topic.events]
        self.topic.events.clear()
        at = self.start if self.at == OFFSET_INVALID else self.at
        records = [r for r in self.topic.records if at <= r.offset][:num_messages]
        if records:
            self.at = records[-1].offset + 1
        elif self.at != OFFSET_INVALID:
            self.at = self.topic.end  # past the commit markers; with nothing ever fetched, no position at all
        return events + [_Message(record=r) for r in records]

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(self.topic.name, 0, self.at)]

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def topic(monkeypatch: pytest.MonkeyPatch) -> _Topic:
    """The topic every reader in the test reads (its consumers are made from ``readers.Consumer``)."""
    log = _Topic("a-failover-topic")
    monkeypatch.setattr(readers, "Consumer", log.consumer)
    return log


def _sync(tp: TargetPartition, start: int, end: int, target: int) -> tuple[bytes, bytes]:
    sync = OffsetSync(tp, "orders", start, end, (SyncRun(start, target, end - start),))
    return sync.encode_key(), sync.encode_value()


def test_a_reader_never_joins_or_commits_its_group_and_starts_at_the_earliest(topic: _Topic) -> None:
    assigned_reader(TARGET, "verb", isolation="read_uncommitted")
    assert topic.consumers[0].config | {"logger": None} == {
        "bootstrap.servers": NEW_PRIMARY,
        "logger": None,
        "client.id": "verb",
        "group.id": "verb-unused",
        "isolation.level": "read_uncommitted",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "auto.offset.reset": "earliest",
    }, "a reader that stays assigned keeps the broker's default fetch wait"


def test_a_reader_of_ranges_has_the_broker_answer_at_once_at_the_end_it_knows(topic: _Topic) -> None:
    assigned_reader(TARGET, "verb", eof=True)
    config = topic.consumers[0].config
    assert (config["enable.partition.eof"], config["fetch.wait.max.ms"], config["isolation.level"]) == (
        True,
        10,
        "read_committed",
    )


def test_only_the_unused_group_s_authorization_error_is_not_the_reader_s() -> None:
    assert unused_group_error(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED))
    assert not unused_group_error(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))


def test_the_sync_reader_reads_only_what_was_committed_since_its_last_call(topic: _Topic) -> None:
    topic.commit((*_sync(T0, 0, 10, 0), 1_000), (*_sync(T1, 0, 5, 0), 1_500))
    reader = OffsetSyncReader(TARGET, topic.name, "verb")
    index = reader.catch_up()
    assert (index.translate(T0, 4), index.translate(T1, 4), reader.records_read) == (4, 4, 2)
    topic.commit((*_sync(T0, 10, 20, 11), 3_000), (*_sync(T0, 20, 25, 22), 2_500))  # a clock behind
    assert reader.catch_up() is index
    assert reader.records_read == 4, "the two syncs read before are not read again"
    assert (index.translate(T0, 15), index.translate(T0, 22)) == (16, 24)
    assert reader.newest_ms == {T0: 3_000, T1: 1_500}, "about when the mirror last committed on each partition"
    reader.close()
    assert topic.consumers[0].closed


def test_a_record_that_is_not_an_offset_sync_is_counted_and_skipped_not_fatal(topic: _Topic) -> None:
    topic.commit((b"junk", b"not a sync", 1), (*_sync(T0, 0, 10, 0), 2))
    reader = OffsetSyncReader(TARGET, topic.name, "verb")
    index = reader.catch_up()
    assert (reader.skipped, reader.records_read, index.translate(T0, 9)) == (1, 2, 9)


def test_the_syncs_below_a_partition_s_floor_are_forgotten(topic: _Topic) -> None:
    topic.commit((*_sync(T0, 0, 10, 0), 1), (*_sync(T0, 10, 20, 11), 2))
    reader = OffsetSyncReader(TARGET, topic.name, "verb")
    reader.floors[T0] = 10
    index = reader.catch_up()
    assert (index.translate(T0, 5), index.translate(T0, 12)) == (None, 13)


def test_a_topic_whose_start_retention_deleted_is_read_from_where_it_now_starts(topic: _Topic) -> None:
    topic.commit((*_sync(T0, 0, 10, 0), 1))
    topic.commit((*_sync(T0, 10, 20, 11), 2))
    topic.records, topic.low = topic.records[1:], 2
    index = OffsetSyncReader(TARGET, topic.name, "verb").catch_up(timeout_s=1)
    assert (index.translate(T0, 5), index.translate(T0, 12)) == (None, 13)


def test_a_topic_retention_emptied_reads_as_empty_at_once_not_as_a_reader_that_never_gets_there(
    topic: _Topic,
) -> None:
    topic.commit((*_sync(T0, 0, 10, 0), 1))
    topic.records, topic.low = [], topic.end  # nothing left to fetch: the consumer's position never moves
    reader = OffsetSyncReader(TARGET, topic.name, "verb")
    assert not reader.catch_up(timeout_s=0.5).partitions
    topic.commit((*_sync(T0, 10, 20, 11), 2))
    assert reader.catch_up(timeout_s=0.5).translate(T0, 12) == 13, "and goes on from there"


def test_the_unused_group_s_authorization_error_is_stepped_over_while_reading(topic: _Topic) -> None:
    topic.commit((*_sync(T0, 0, 10, 0), 1))
    topic.events.append(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED, "no ACL on verb-unused"))
    assert OffsetSyncReader(TARGET, topic.name, "verb").catch_up().translate(T0, 3) == 3


def test_any_other_error_while_reading_is_a_task_failure_naming_the_topic(topic: _Topic) -> None:
    topic.commit((*_sync(T0, 0, 10, 0), 1))
    topic.events.append(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "no READ"))
    with pytest.raises(TaskFailure, match=rf"reading {topic.name} on the target: no READ"):
        OffsetSyncReader(TARGET, topic.name, "verb").catch_up()


def test_an_end_that_cannot_be_read_is_a_task_failure_naming_the_topic(topic: _Topic) -> None:
    topic.end_error = kafka_exception(KafkaError._TRANSPORT, "broker down")
    with pytest.raises(TaskFailure, match=rf"end offset of {topic.name} on the target: broker down"):
        OffsetSyncReader(TARGET, topic.name, "verb").catch_up()


def test_a_read_that_does_not_reach_the_end_in_time_fails_saying_how_far_it_got(topic: _Topic) -> None:
    topic.commit((*_sync(T0, 0, 10, 0), 1))
    topic.stuck = True
    with pytest.raises(TaskFailure, match=rf"reading {topic.name} on the target: at offset 0 of 2 after 0 s"):
        OffsetSyncReader(TARGET, topic.name, "verb").catch_up(timeout_s=0.05)


def test_the_newest_checkpoint_of_each_group_and_partition_is_kept_with_when_it_was_written(topic: _Topic) -> None:
    older, newer, other = Checkpoint("app", T0, 5, 6), Checkpoint("app", T0, 9, 11), Checkpoint("app", T1, 3, 3)
    topic.commit(*((c.encode_key(), c.encode_value(), ts) for c, ts in ((older, 1), (other, 2), (newer, 3))))
    topic.commit((b"mm2", b"unparseable", 4))
    stored = read_checkpoints(TARGET, topic.name, "verb")
    assert {k: (s.checkpoint, s.timestamp_ms) for k, s in stored.items()} == {
        ("app", T0): (newer, 3),
        ("app", T1): (other, 2),
    }
    assert topic.consumers[0].closed


def test_the_newest_group_cut_of_each_group_and_partition_is_kept(topic: _Topic) -> None:
    older, newer = GroupCut("app", T0, "orders", 5, 1), GroupCut("app", T0, "orders", 9, 2)
    topic.commit((older.key(), older.value(), 1), (b"[]", b"{}", 2), (newer.key(), newer.value(), 3))
    assert read_group_cuts(TARGET, topic.name, "verb") == {("app", T0): newer}
    assert topic.consumers[0].closed


def test_only_whole_failovers_are_read_back_one_without_its_summary_is_left_out(topic: _Topic) -> None:
    def failover(failover_id: str) -> FailoverRecord:
        cut = PartitionCut(T0, "orders", 10, 11, 12, 10)
        return FailoverRecord("orders-mirror", failover_id, "planned", "t", "us-east", "e", "w", (cut,), ())

    whole, torn = failover("20260101T000000Z-aaaaaa"), failover("20260102T000000Z-bbbbbb")
    topic.commit(*((k, v, 1) for k, v in whole.records()))
    topic.commit(*((k, v, 2) for k, v in torn.records()[:-1]))  # the summary comes last
    assert read_failovers(TARGET, topic.name, "verb") == {("orders-mirror", whole.failover_id): whole}
    assert topic.consumers[0].closed


def test_a_reader_that_fails_still_closes_its_consumer(topic: _Topic) -> None:
    topic.end_error = kafka_exception(KafkaError._TRANSPORT, "broker down")
    with pytest.raises(TaskFailure):
        read_checkpoints(TARGET, topic.name, "verb")
    assert topic.consumers[0].closed
