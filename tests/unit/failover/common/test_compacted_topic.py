"""create_compacted: the verbs' record topics are made once, one compacted partition; an existing
topic is no error, any other refusal is."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.failover.common.compacted_topic import create_compacted
from tests.unit.failover.fakes import NEW_PRIMARY, FakeAdmin, kafka_exception

pytestmark = pytest.mark.unit

TOPIC = "mirror-sink-failovers.us-east.internal"


def test_a_missing_record_topic_is_created_with_one_compacted_partition_at_the_replication_asked() -> None:
    admin = FakeAdmin(NEW_PRIMARY)
    create_compacted(admin, TOPIC, 3)  # type: ignore[arg-type]
    [made] = admin.created
    assert (made.topic, made.num_partitions, made.replication_factor) == (TOPIC, 1, 3)
    assert made.config == {"cleanup.policy": "compact"}, "compaction keeps every failover's newest records"


def test_a_record_topic_that_exists_already_is_taken_as_it_is() -> None:
    admin = FakeAdmin(NEW_PRIMARY, create_error=kafka_exception(KafkaError.TOPIC_ALREADY_EXISTS, "exists"))
    create_compacted(admin, TOPIC, 3)  # type: ignore[arg-type]
    assert len(admin.created) == 1


def test_any_other_refusal_to_create_it_is_a_task_failure_naming_the_topic() -> None:
    admin = FakeAdmin(NEW_PRIMARY, create_error=kafka_exception(KafkaError.TOPIC_AUTHORIZATION_FAILED, "denied"))
    with pytest.raises(TaskFailure, match=rf"cannot create '{TOPIC}' on the target: denied"):
        create_compacted(admin, TOPIC, 3)  # type: ignore[arg-type]
