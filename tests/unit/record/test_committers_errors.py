"""How the record-mode committer reads a produce call refused by librdkafka's transaction state.

librdkafka refuses ``produce`` with ``_STATE`` once the transaction failed in the background (the
broker would not add a partition to it, say). That is a reason to abort the cycle, or to fail
naming the refusal, never a bare "Erroneous state" failure (cc30: a denied WRITE on the offset
syncs topic was reported that way). The integration proof is test_security's missing-ACL matrix.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirror_sink.core.base.errors import AbortCycle, RecoverableTaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.group_metadata import GroupMetadata
from mirror_sink.core.formats.offset_syncs import SyncSpan
from mirror_sink.core.interfaces.data_path import OFFSETS_PER_REQUEST
from mirror_sink.record.committers import DeliveryTracker, TransactionalCommitter

pytestmark = pytest.mark.unit


class _RefusingProducer:
    """Accepts the transaction calls and refuses every produce with ``error``."""

    def __init__(self, error: KafkaError) -> None:
        self.error = error

    def begin_transaction(self) -> None:
        pass

    def flush(self, timeout: float) -> int:
        return 0

    def poll(self, timeout: float) -> int:
        return 0

    def produce(self, *args: Any, **kwargs: Any) -> None:
        raise KafkaException(self.error)


def _commit_syncs(error: KafkaError) -> None:
    tracker = DeliveryTracker(track_offsets=True)
    committer = TransactionalCommitter(_RefusingProducer(error), tracker, 5.0, sync_topic="syncs")  # type: ignore[arg-type]
    assert tracker.sources is not None
    tracker.sources[("t", 0)] = [0]
    tracker(None, _Delivered("t", 0, 0))
    committer.commit([], member=None, metadata=None, spans=[SyncSpan(TargetPartition("t", 0), "s", 0, 1)])  # type: ignore[arg-type]


class _Delivered:
    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self._where = (topic, partition, offset)

    def topic(self) -> str:
        return self._where[0]

    def partition(self) -> int:
        return self._where[1]

    def offset(self) -> int:
        return self._where[2]


def test_a_produce_refused_for_the_transactions_error_state_aborts_the_cycle() -> None:
    with pytest.raises(AbortCycle, match="Erroneous state"):
        _commit_syncs(KafkaError(KafkaError._STATE, "Unable to produce message: Local: Erroneous state"))


def test_a_produce_refused_for_a_fatal_error_replaces_the_producer() -> None:
    with pytest.raises(RecoverableTaskFailure, match="fenced"):
        _commit_syncs(KafkaError(KafkaError._FENCED, "fenced by a newer instance", fatal=True))


class _CountingProducer(_RefusingProducer):
    """Accepts everything; records the size of each send_offsets_to_transaction."""

    def __init__(self) -> None:
        super().__init__(KafkaError(KafkaError._STATE))
        self.parts: list[int] = []

    def send_offsets_to_transaction(self, offsets: list[Any], metadata: Any, timeout: float) -> None:
        self.parts.append(len(offsets))

    def commit_transaction(self, timeout: float) -> None:
        pass


def test_offsets_go_to_the_transaction_in_parts_the_offsets_topic_accepts() -> None:
    """One TxnOffsetCommit of 10,000 partitions is a 1.2 MB batch, over __consumer_offsets' 1 MB."""
    producer = _CountingProducer()
    committer = TransactionalCommitter(producer, DeliveryTracker(track_offsets=False), 5.0)  # type: ignore[arg-type]
    offsets = [TopicPartition("t", p, 1) for p in range(2 * OFFSETS_PER_REQUEST + 500)]
    metadata = GroupMetadata(3, "m-1", None, b"librdkafka's form")
    committer.commit(offsets, member=None, metadata=metadata)  # type: ignore[arg-type]
    assert producer.parts == [OFFSETS_PER_REQUEST, OFFSETS_PER_REQUEST, 500]
