"""A start offset's watermarks are read through a source broker's failover, not failed on it."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import RecoverableTaskFailure
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.task.start_offsets import StartOffsetResolver

pytestmark = pytest.mark.unit

CONFIG = MirrorSinkConfig.parse(
    {"name": "m", "source.cluster.bootstrap.servers": "s:9092", "target.cluster.bootstrap.servers": "t:9092"}
)


class _Source:
    """A source consumer whose broker is away for ``failures`` calls: offsets and metadata time out."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.metadata_asked = 0

    def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
        if self.failures:
            self.failures -= 1
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get watermark offsets"))
        return 3, 42

    def list_topics(self, topic: str, timeout: float) -> None:
        self.metadata_asked += 1
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get metadata: Local: Timed out"))


def _resolver(source: _Source) -> StartOffsetResolver:
    return StartOffsetResolver(
        CONFIG,
        shadow=None,  # type: ignore[arg-type]
        source=source,  # type: ignore[arg-type]
        client_id="t",
        log=logging.getLogger("test"),
    )


def test_a_metadata_request_that_times_out_too_is_retried_with_the_offsets() -> None:
    source = _Source(failures=2)
    assert _resolver(source).watermarks(SourcePartition("orders", 0)) == (3, 42)
    assert source.metadata_asked == 2, "each failed read asks for fresh metadata, a hint that may fail"


def test_a_source_away_past_the_deadline_is_recoverable_not_a_task_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mirror_sink.task.start_offsets._WATERMARK_DEADLINE_S", 0.3)
    with pytest.raises(RecoverableTaskFailure, match=r"^cannot read the offsets of source partition orders-0"):
        _resolver(_Source(failures=10**6)).watermarks(SourcePartition("orders", 0))
