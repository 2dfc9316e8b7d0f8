"""runtime_guard: one connector never runs in the worker and on Spark at once. Each runtime refuses
while the other's group has members, and only the other's: the worker's own tasks never count
against the worker, the Spark driver's lease never against Spark. The Spark lease holds its
membership without fetching and ends it when released. Fakes stand at the admin's
``describe_consumer_groups`` (real ``ConsumerGroupDescription`` answers in real futures) and at the
lease's coordination consumer."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, cast

import pytest
from confluent_kafka import ConsumerGroupState, KafkaError, KafkaException, Node, TopicPartition
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription, MemberAssignment, MemberDescription

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.runtime_guard import (
    SPARK_SUFFIX,
    SparkLease,
    active_members,
    refuse_if_spark_active,
    refuse_if_worker_active,
)

pytestmark = pytest.mark.unit

SHADOW = "mirror-sink.orders-mirror.shadow"
SPARK = SHADOW + SPARK_SUFFIX


def _group(group: str, members: int) -> ConsumerGroupDescription:
    state = ConsumerGroupState.STABLE if members else ConsumerGroupState.EMPTY
    return ConsumerGroupDescription(
        group,
        False,
        [MemberDescription(f"member-{i}", "task", "/10.0.0.1", MemberAssignment([])) for i in range(members)],
        "range",
        state,
        Node(1, "west", 9092),
    )


class _Admin:
    """``describe_consumer_groups`` answering from ``groups`` (name -> members); a group not in it is
    unknown (GROUP_ID_NOT_FOUND, as Kafka 4 answers)."""

    def __init__(self, groups: dict[str, int]) -> None:
        self.groups = groups
        self.asked: list[str] = []

    def describe_consumer_groups(self, group_ids: list[str], request_timeout: float) -> dict[str, Future[Any]]:
        out: dict[str, Future[Any]] = {}
        for group in group_ids:
            self.asked.append(group)
            future: Future[Any] = Future()
            if group in self.groups:
                future.set_result(_group(group, self.groups[group]))
            else:
                future.set_exception(KafkaException(KafkaError(KafkaError.GROUP_ID_NOT_FOUND, f"{group} not found")))
            out[group] = future
        return out

    def as_admin(self) -> AdminClient:
        return cast(AdminClient, self)


def test_a_groups_members_are_counted_and_an_empty_or_unknown_group_has_none() -> None:
    admin = _Admin({"busy": 3, "idle": 0})
    assert active_members(admin.as_admin(), "busy") == 3
    assert active_members(admin.as_admin(), "idle") == 0
    assert active_members(admin.as_admin(), "never-seen") == 0
    assert admin.asked == ["busy", "idle", "never-seen"]


def test_the_worker_refuses_while_a_spark_query_holds_the_connector() -> None:
    admin = _Admin({SPARK: 1})
    with pytest.raises(TaskFailure, match=r"orders-mirror is running on Spark .*\.spark-runtime is active"):
        refuse_if_spark_active(admin.as_admin(), SHADOW, "orders-mirror")
    assert admin.asked == [SPARK]


def test_the_workers_own_tasks_do_not_stop_the_worker() -> None:
    admin = _Admin({SHADOW: 4, SPARK: 0})
    refuse_if_spark_active(admin.as_admin(), SHADOW, "orders-mirror")
    assert admin.asked == [SPARK], "the shadow group's members are the worker's own tasks"


def test_spark_refuses_while_worker_tasks_run_the_connector_saying_how_many_and_how_to_stop_them() -> None:
    admin = _Admin({SHADOW: 2})
    with pytest.raises(TaskFailure, match=r"running in the worker runtime \(2 members in shadow group") as refused:
        refuse_if_worker_active(admin.as_admin(), SHADOW, "orders-mirror")
    assert "PUT /connectors/orders-mirror/stop" in str(refused.value)
    assert admin.asked == [SHADOW]


def test_the_spark_drivers_own_lease_does_not_stop_spark() -> None:
    admin = _Admin({SHADOW: 0, SPARK: 1})
    refuse_if_worker_active(admin.as_admin(), SHADOW, "orders-mirror")
    assert admin.asked == [SHADOW]


def test_neither_runtime_refuses_a_connector_that_never_ran() -> None:
    admin = _Admin({})
    refuse_if_spark_active(admin.as_admin(), SHADOW, "orders-mirror")
    refuse_if_worker_active(admin.as_admin(), SHADOW, "orders-mirror")
    assert admin.asked == [SPARK, SHADOW]


class _LeaseConsumer:
    """The lease's coordination consumer: a journal of its calls; ``poll`` waits a millisecond."""

    def __init__(self) -> None:
        self.journal: list[str] = []
        self.subscribed: list[str] = []
        self.on_assign: Any = None
        self.polled = threading.Event()
        self.assigned: list[TopicPartition] = []
        self.paused: list[TopicPartition] = []

    def subscribe(self, topics: list[str], on_assign: Any = None) -> None:
        self.subscribed, self.on_assign = topics, on_assign

    def poll(self, timeout: float) -> None:
        self.journal.append("poll")
        self.polled.set()
        threading.Event().wait(min(timeout, 0.001))
        self.journal.append("polled")

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = list(partitions)

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused = list(partitions)

    def close(self) -> None:
        self.journal.append("close")


@pytest.fixture
def lease_consumer(monkeypatch: pytest.MonkeyPatch) -> tuple[_LeaseConsumer, list[tuple[dict[str, str], str, str]]]:
    """The fake consumer every lease gets, and what each ``coordination_consumer`` call asked for."""
    consumer = _LeaseConsumer()
    made: list[tuple[dict[str, str], str, str]] = []

    def coordination_consumer(user: dict[str, str], group_id: str, client_id: str) -> _LeaseConsumer:
        made.append((user, group_id, client_id))
        return consumer

    monkeypatch.setattr(clients, "coordination_consumer", coordination_consumer)
    return consumer, made


def test_the_lease_is_a_member_of_the_spark_group_kept_alive_by_polling_until_released(
    lease_consumer: tuple[_LeaseConsumer, list[tuple[dict[str, str], str, str]]],
) -> None:
    consumer, made = lease_consumer
    target = {"bootstrap.servers": "west:9092"}
    lease = SparkLease(target, SHADOW, "orders")
    try:
        assert made == [(target, SPARK, "spark-lease")]
        assert consumer.subscribed == ["orders"]
        assert consumer.polled.wait(1.0), "the lease polls to keep its membership"
    finally:
        lease.release()
    assert consumer.journal[-2:] == ["polled", "close"], "closed once its last poll has returned, not during it"
    assert consumer.journal.count("close") == 1
    entries = len(consumer.journal)
    threading.Event().wait(0.005)
    assert len(consumer.journal) == entries, "no poll after the release"


def test_the_lease_takes_its_partitions_paused_it_never_fetches(
    lease_consumer: tuple[_LeaseConsumer, list[tuple[dict[str, str], str, str]]],
) -> None:
    consumer, _ = lease_consumer
    lease = SparkLease({"bootstrap.servers": "west:9092"}, SHADOW, "orders")
    try:
        partitions = [TopicPartition("orders", 0), TopicPartition("orders", 1)]
        consumer.on_assign(consumer, partitions)
        assert consumer.assigned == partitions and consumer.paused == partitions
        consumer.paused = []
        consumer.on_assign(consumer, [])
        assert consumer.assigned == [] and consumer.paused == [], "an empty assignment has nothing to pause"
    finally:
        lease.release()
