"""Which errors a connector start waits out (a cluster answering late) and which fail it at once."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirror_sink.core.base.errors import AbortCycle, RecoverableTaskFailure, Retriable, TaskFailure
from mirror_sink.core.clients.clients import classify, transient


def _kafka(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


@pytest.mark.parametrize(
    "error",
    [
        TimeoutError(),  # a future not answered in time
        _kafka(KafkaError._TIMED_OUT),
        _kafka(KafkaError.LEADER_NOT_AVAILABLE),
        _kafka(KafkaError.COORDINATOR_LOAD_IN_PROGRESS),
    ],
)
def test_late_answers_are_transient(error: BaseException) -> None:
    assert transient(error)


@pytest.mark.parametrize(
    "error",
    [
        _kafka(KafkaError.TOPIC_AUTHORIZATION_FAILED),
        _kafka(KafkaError.POLICY_VIOLATION),
        _kafka(KafkaError.INVALID_CONFIG),
        _kafka(KafkaError._TRANSPORT),  # nothing answers at all: fail at once, naming the address
        ValueError("bad"),
        TaskFailure("connector has runtime=spark"),
    ],
)
def test_refusals_are_not(error: BaseException) -> None:
    assert not transient(error)


def test_a_wrapped_timeout_is_transient() -> None:
    try:
        try:
            raise TimeoutError("describe_configs")
        except TimeoutError as inner:
            raise RuntimeError("provisioning failed") from inner
    except RuntimeError as outer:
        assert transient(outer)


def test_a_classified_failure_stands_whatever_caused_it() -> None:
    try:
        try:
            raise TimeoutError("metadata")
        except TimeoutError as inner:
            raise TaskFailure("source cluster at 127.0.0.1:1 did not answer a metadata request") from inner
    except TaskFailure as outer:
        assert not transient(outer)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        # The error that puts a producer in librdkafka's fatal state carries the fatal flag ...
        (KafkaError(KafkaError._FENCED, fatal=True), RecoverableTaskFailure),
        # ... each call on it afterwards fails with _FATAL and no flag (a producer fenced by the task
        # that took over its partitions while its session had lapsed, then given them back): still
        # a producer to replace, not a task to fail.
        (KafkaError(KafkaError._FATAL), RecoverableTaskFailure),
        (KafkaError(KafkaError._FENCED), RecoverableTaskFailure),
        (KafkaError(KafkaError._STATE, txn_requires_abort=True), AbortCycle),
        (KafkaError(KafkaError._TIMED_OUT, retriable=True), Retriable),
        (KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), TaskFailure),
    ],
)
def test_classify_decides_what_happens_next(error: KafkaError, kind: type[Exception]) -> None:
    assert type(classify("commit_transaction", error)) is kind
