"""Record mode's wait for a just-added target partition: a target away is not a shrunk topic."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirror_sink.core.base.errors import RecoverableTaskFailure, TaskFailure
from mirror_sink.record.record_copier import RecordCopier

pytestmark = pytest.mark.unit


class _Producer:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def list_topics(self, topic: str, timeout: float) -> Any:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_a_target_that_does_not_answer_is_recoverable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mirror_sink.record.record_copier._PARTITION_WAIT_S", 0.2)
    timed_out = KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get metadata: Local: Timed out"))
    copier = RecordCopier(_Producer(timed_out))  # type: ignore[arg-type]
    with pytest.raises(RecoverableTaskFailure, match=r"did not answer for the metadata of orders\.copy"):
        copier._await_partition("orders.copy", 3)


def test_a_partition_the_target_does_not_have_fails_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mirror_sink.record.record_copier._PARTITION_WAIT_S", 0.2)
    metadata = SimpleNamespace(topics={"orders.copy": SimpleNamespace(partitions={0: None, 1: None})})
    copier = RecordCopier(_Producer(metadata))  # type: ignore[arg-type]
    with pytest.raises(TaskFailure, match=r"target partition orders.copy-3 does not exist") as raised:
        copier._await_partition("orders.copy", 3)
    assert type(raised.value) is TaskFailure
