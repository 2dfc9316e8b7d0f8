"""read_stable_offsets and read_stable_commits against a fake read_committed consumer: a partition
with no commit is None, a partition that could not be read never is; unstable offsets, coordinator
moves and timeouts are retried until the deadline and then fail the task recoverably; any other error
fails it at once. Results keep the caller's partition type. The retry policy is the real one, with its
first backoff shortened to a millisecond."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import pytest
from confluent_kafka import OFFSET_INVALID, Consumer, KafkaError, KafkaException, TopicPartition

from mirror_sink.core.base.errors import RecoverableTaskFailure, TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.clients import stable_offsets
from mirror_sink.core.clients.stable_offsets import Committed, read_stable_commits, read_stable_offsets
from mirror_sink.core.runtime.retry import retry_call

pytestmark = pytest.mark.unit

T = TypeVar("T")
A, B = TargetPartition("orders", 0), TargetPartition("orders", 1)

RETRIABLE = [
    KafkaError.UNSTABLE_OFFSET_COMMIT,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
    KafkaError._TIMED_OUT,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._WAIT_COORD,
]


def _name(code: int) -> str:
    return str(KafkaError(code).name())


@dataclass
class _Unreadable:
    """A partition ``Consumer.committed`` answers with an error (TopicPartition's ``error`` is read-only)."""

    topic: str
    partition: int
    error: KafkaError
    offset: int = OFFSET_INVALID
    metadata: str | None = None


#: One partition's answer: (offset, metadata) committed, None for no commit, or the error it came with.
Answer = tuple[int, str | None] | None | KafkaError
#: One call's answers by partition, or the exception the whole call raises.
Round = dict[tuple[str, int], Answer] | KafkaException


class _Consumer:
    """``Consumer.committed`` answering from ``rounds``, one per call (the last one repeats)."""

    def __init__(self, *rounds: Round) -> None:
        self.rounds = list(rounds)
        self.calls: list[tuple[list[tuple[str, int]], float]] = []

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[Any]:
        self.calls.append(([(tp.topic, tp.partition) for tp in partitions], timeout))
        answers = self.rounds[min(len(self.calls), len(self.rounds)) - 1]
        if isinstance(answers, KafkaException):
            raise answers
        out: list[Any] = []
        for tp in partitions:
            answer = answers[(tp.topic, tp.partition)]
            if isinstance(answer, KafkaError):
                out.append(_Unreadable(tp.topic, tp.partition, answer))
            elif answer is None:
                out.append(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID))
            elif answer[1] is None:
                out.append(TopicPartition(tp.topic, tp.partition, answer[0]))
            else:
                out.append(TopicPartition(tp.topic, tp.partition, answer[0], answer[1]))
        return out

    def as_consumer(self) -> Consumer:
        return cast(Consumer, self)


@pytest.fixture(autouse=True)
def deadlines(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The real retry policy with millisecond backoffs; the deadlines it was given."""
    given: list[float] = []

    def quick(fn: Callable[[], T], what: str, *, deadline_s: float, **_: Any) -> T:
        given.append(deadline_s)
        return retry_call(fn, what, deadline_s=deadline_s, first_delay_s=0.001, max_delay_s=0.002)

    monkeypatch.setattr(stable_offsets, "retry_call", quick)
    return given


def _unstable(code: int = KafkaError.UNSTABLE_OFFSET_COMMIT) -> KafkaError:
    return KafkaError(code, "transaction still open")


def test_committed_offsets_come_back_under_the_callers_keys_and_no_commit_is_none() -> None:
    consumer = _Consumer({("orders", 0): (42, "meta"), ("orders", 1): None})
    offsets = read_stable_offsets(consumer.as_consumer(), [B, A], give_up_after_s=5)
    assert offsets == {A: 42, B: None}
    assert all(type(key) is TargetPartition for key in offsets)


def test_commits_carry_their_metadata_and_a_commit_without_metadata_has_an_empty_string() -> None:
    consumer = _Consumer({("orders", 0): (42, "epoch=3"), ("orders", 1): (7, None)})
    commits = read_stable_commits(consumer.as_consumer(), [A, B], give_up_after_s=5)
    assert commits == {A: Committed(42, "epoch=3"), B: Committed(7, "")}


def test_source_partitions_keep_their_type_too() -> None:
    source = SourcePartition("orders", 0)
    offsets = read_stable_offsets(_Consumer({("orders", 0): (3, None)}).as_consumer(), [source], give_up_after_s=5)
    [key] = offsets
    assert type(key) is SourcePartition and offsets[key] == 3


def test_nothing_asked_reads_nothing() -> None:
    consumer = _Consumer()
    assert read_stable_commits(consumer.as_consumer(), [], give_up_after_s=5) == {}
    assert consumer.calls == []


def test_each_partition_is_asked_once_in_order_within_the_request_timeout() -> None:
    consumer = _Consumer({("orders", 0): (1, None), ("orders", 1): (2, None)})
    read_stable_offsets(consumer.as_consumer(), [B, A, B], give_up_after_s=5, request_timeout_s=3)
    [(asked, timeout)] = consumer.calls
    assert asked == [("orders", 0), ("orders", 1)]
    assert 0 < timeout <= 3


@pytest.mark.parametrize("code", RETRIABLE, ids=_name)
def test_a_partition_that_could_not_be_read_is_read_again_never_taken_for_no_commit(code: int) -> None:
    consumer = _Consumer(
        {("orders", 0): (42, None), ("orders", 1): _unstable(code)},
        {("orders", 0): (42, None), ("orders", 1): (9, None)},
    )
    assert read_stable_offsets(consumer.as_consumer(), [A, B], give_up_after_s=5) == {A: 42, B: 9}
    assert len(consumer.calls) == 2


@pytest.mark.parametrize("code", RETRIABLE, ids=_name)
def test_a_whole_call_that_fails_retriably_is_made_again(code: int) -> None:
    consumer = _Consumer(KafkaException(KafkaError(code, "coordinator moving")), {("orders", 0): (5, None)})
    assert read_stable_offsets(consumer.as_consumer(), [A], give_up_after_s=5) == {A: 5}
    assert len(consumer.calls) == 2


def test_offsets_still_unstable_at_the_deadline_fail_the_task_recoverably_naming_the_partitions(
    deadlines: list[float],
) -> None:
    consumer = _Consumer({("orders", 0): (1, None), ("orders", 1): _unstable()})
    started = time.monotonic()
    never = r"orders-0, orders-1 did not become stable within \d+ s"
    with pytest.raises(RecoverableTaskFailure, match=never) as failed:
        read_stable_offsets(consumer.as_consumer(), [A, B], give_up_after_s=0.03)
    assert time.monotonic() - started >= 0.03, "it does not give up before its deadline"
    assert len(consumer.calls) > 1, "it retried until then"
    assert deadlines == [0.03]
    assert "transaction still open" in str(failed.value)


@pytest.mark.parametrize("code", [KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.UNKNOWN_TOPIC_OR_PART], ids=_name)
def test_any_other_partition_error_fails_the_task_at_once(code: int) -> None:
    consumer = _Consumer({("orders", 0): (1, None), ("orders", 1): KafkaError(code, "refused")})
    with pytest.raises(TaskFailure, match="cannot read committed offset of orders-1: refused") as failed:
        read_stable_offsets(consumer.as_consumer(), [A, B], give_up_after_s=5)
    assert not isinstance(failed.value, RecoverableTaskFailure), "fresh clients would be refused again"
    assert len(consumer.calls) == 1


def test_any_other_failure_of_the_whole_call_fails_the_task_at_once() -> None:
    consumer = _Consumer(KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED, "not allowed")))
    with pytest.raises(TaskFailure, match="cannot read committed offsets of orders-0, orders-1: not allowed") as failed:
        read_stable_commits(consumer.as_consumer(), [A, B], give_up_after_s=5)
    assert not isinstance(failed.value, RecoverableTaskFailure)
    assert len(consumer.calls) == 1
