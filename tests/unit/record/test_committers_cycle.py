"""Record mode's committers keep the cycle's own order: the task's cycle begins it, the data path only
enlists its writes, and a begun cycle with nothing in it costs librdkafka one local call."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirror_sink.core.base.errors import AbortCycle, TaskFailure
from mirror_sink.core.formats.group_metadata import GroupMetadata
from mirror_sink.record.committers import AtLeastOnceCommitter, DeliveryTracker, TransactionalCommitter

pytestmark = pytest.mark.unit

METADATA = GroupMetadata(3, "m-1", None, b"librdkafka's form")


class _Producer:
    """Accepts every call and records the transaction calls in order."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def send_offsets_to_transaction(self, offsets: list[Any], metadata: Any, timeout: float) -> None:
        self.calls.append("offsets")

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit")

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append("abort")

    def flush(self, timeout: float) -> int:
        return 0


def _is_open(committer: TransactionalCommitter | AtLeastOnceCommitter) -> bool:
    """The committer's ``open``, read afresh (an assert on the property would narrow it for mypy)."""
    return committer.open


def test_a_transaction_is_begun_once_per_cycle_and_opened_only_by_a_write() -> None:
    producer = _Producer()
    committer = TransactionalCommitter(producer, DeliveryTracker(track_offsets=False), 5.0)  # type: ignore[arg-type]
    with pytest.raises(TaskFailure, match=r"^internal error: the data path wrote before the cycle began$"):
        committer.enlist()
    committer.begin()
    committer.begin()  # every copy of an idle cycle asks again
    assert producer.calls == ["begin"] and not _is_open(committer)
    committer.abort()
    assert producer.calls == ["begin"], "nothing written: the empty transaction waits for the next write"
    committer.enlist()
    assert _is_open(committer)
    committer.commit([TopicPartition("t", 0, 5)], member=None, metadata=METADATA)  # type: ignore[arg-type]
    assert producer.calls == ["begin", "offsets", "commit"] and not _is_open(committer)
    committer.begin()
    committer.enlist()
    committer.abort()
    assert producer.calls[3:] == ["begin", "abort"] and not _is_open(committer)


def test_without_transactions_the_cycle_is_still_begun_before_a_write() -> None:
    committer = AtLeastOnceCommitter(_Producer(), DeliveryTracker(track_offsets=False), 5.0)  # type: ignore[arg-type]
    with pytest.raises(TaskFailure, match="before the cycle began"):
        committer.enlist()
    committer.begin()
    assert not _is_open(committer)
    committer.enlist()
    assert _is_open(committer)
    committer.abort()
    assert not _is_open(committer)
    with pytest.raises(TaskFailure, match="before the cycle began"):
        committer.enlist()


class _AbortableCommit(_Producer):
    """Its commit_transaction fails as one that must be aborted."""

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit")
        raise KafkaException(KafkaError(KafkaError._STATE, "failed in the background", txn_requires_abort=True))


def test_a_failed_commit_of_offsets_alone_is_aborted() -> None:
    """A commit that writes only offsets (a start offset to save, positions moved past markers) puts
    them in the transaction: when it fails, the abort must end the transaction, or the next cycle's
    writes would meet librdkafka's error state."""
    producer = _AbortableCommit()
    committer = TransactionalCommitter(producer, DeliveryTracker(track_offsets=False), 5.0)  # type: ignore[arg-type]
    committer.begin()
    with pytest.raises(AbortCycle):
        committer.commit([TopicPartition("t", 0, 5)], member=None, metadata=METADATA)  # type: ignore[arg-type]
    committer.abort()
    assert producer.calls == ["begin", "offsets", "commit", "abort"] and not _is_open(committer)


class _Initialized(_AbortableCommit):
    """Also initializes transactions (a new producer's first call: a new epoch)."""

    def init_transactions(self, timeout: float) -> None:
        self.calls.append("init")


def test_after_an_aborted_transaction_the_next_one_starts_on_a_new_producer_and_epoch() -> None:
    """librdkafka keeps its epoch through an abort (it speaks transactions version 1): a late write of
    the aborted transaction could join the next one on the same epoch, so the next begins on a new
    producer whose init_transactions takes a new epoch and fences the old one."""
    first, renewed = _Initialized(), [_Initialized()]

    def renew() -> Any:
        return renewed[-1]

    committer = TransactionalCommitter(
        first,  # type: ignore[arg-type]
        DeliveryTracker(track_offsets=False),
        5.0,
        renew=renew,
    )
    committer.begin()
    committer.enlist()
    with pytest.raises(AbortCycle):
        committer.commit([TopicPartition("t", 0, 5)], member=None, metadata=METADATA)  # type: ignore[arg-type]
    committer.abort()
    committer.begin()
    assert first.calls == ["begin", "offsets", "commit", "abort"], "the old producer writes nothing more"
    assert renewed[0].calls == ["init", "begin"]
    assert id(committer.producer) == id(renewed[0]), "the committer writes with the new producer"
    committer.abort()  # nothing written: no abort, and no renewal either
    committer.begin()
    assert renewed[0].calls == ["init", "begin"]
