"""start_connector: which failures of a plugin's start are tried again (a cluster answering late) and
which fail at once, how long it backs off, and what a deadline or a shutdown ends it with.

The interrupt event given to it is one whose waits return at once (``NoWait``): the backoff it asks
for is recorded, not slept.
"""

from __future__ import annotations

import logging
import threading

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.worker import connector_start
from mirror_sink.worker.connector_start import start_connector
from tests.unit.worker.fakes import FakeConnector, props

pytestmark = pytest.mark.unit

LOG = logging.getLogger("test.connector_start")


class NoWait(threading.Event):
    """An interrupt that is never set unless asked, and whose waits return at once, recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return self.is_set()


def _connector(*errors: Exception) -> FakeConnector:
    fake = FakeConnector(props())
    fake.start_errors = list(errors)
    return fake


def test_a_start_that_succeeds_is_made_once() -> None:
    fake, interrupt = _connector(), NoWait()
    start_connector(fake, "fake", LOG, interrupt)
    assert fake.events == ["start"] and fake.active_topics() == ["orders"] and not interrupt.waits


def test_a_cluster_answering_late_is_tried_again_with_backoff_doubling_up_to_fifteen_seconds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    late = [TimeoutError() for _ in range(5)]
    not_yet = KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE, "no leader yet", retriable=True))
    fake, interrupt = _connector(*late, not_yet), NoWait()
    with caplog.at_level(logging.WARNING, LOG.name):
        start_connector(fake, "fake", LOG, interrupt)
    assert fake.events == ["start"] * 7 and fake.active_topics() == ["orders"]
    assert interrupt.waits == [1.0, 2.0, 4.0, 8.0, 15.0, 15.0]
    assert "TimeoutError (no answer in time)" in caplog.text, "an empty TimeoutError still says what it was"


@pytest.mark.parametrize(
    "error",
    [
        TaskFailure("source cluster 'east' is unreachable"),
        ValueError("not a cluster problem"),
        KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "denied")),
    ],
    ids=["task-failure", "other", "kafka-not-retriable"],
)
def test_any_other_failure_of_the_start_is_raised_at_once(error: Exception) -> None:
    fake, interrupt = _connector(error), NoWait()
    with pytest.raises(type(error)) as raised:
        start_connector(fake, "fake", LOG, interrupt)
    assert raised.value is error and fake.events == ["start"] and not interrupt.waits


def test_past_the_deadline_the_cluster_s_own_error_is_raised_not_the_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connector_start, "_START_DEADLINE_S", 0.0)
    late = TimeoutError("describe configs timed out")
    fake = _connector(late, TimeoutError("again"))
    with pytest.raises(TimeoutError) as raised:
        start_connector(fake, "fake", LOG, NoWait())
    assert raised.value is late and fake.events == ["start"]


def test_a_shutdown_while_the_cluster_answers_late_ends_the_start_with_the_cluster_s_error() -> None:
    fake, interrupt = _connector(TimeoutError("first"), TimeoutError("second")), NoWait()
    real_start = fake.start

    def shut_down_then_start() -> None:
        interrupt.set()  # the worker shuts down while the cluster still answers late
        real_start()

    fake.start = shut_down_then_start  # type: ignore[method-assign]
    with pytest.raises(TimeoutError, match="first"):
        start_connector(fake, "fake", LOG, interrupt)
    assert fake.events == ["start"] and not fake.active_topics()
