"""Never run one connector in both runtimes at once: each refuses while the other is active.

The worker runtime is active while the shadow group has members (its tasks). The Spark runtime is
active while its driver holds a member in ``{shadow group}.spark-runtime``. Both are visible to any
client through DescribeGroups, so neither side needs to know where the other runs.
"""

from __future__ import annotations

import threading

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.clients import clients

SPARK_SUFFIX = ".spark-runtime"


def active_members(admin: AdminClient, group: str) -> int:
    """How many members ``group`` has now (0 for an unknown or empty group)."""
    try:
        description = admin.describe_consumer_groups([group], request_timeout=30)[group].result()
    except KafkaException:
        return 0
    return len(description.members or [])


def refuse_if_spark_active(admin: AdminClient, shadow_group: str, connector: str) -> None:
    """For the worker: TaskFailure when a Spark query runs ``connector``."""
    if active_members(admin, shadow_group + SPARK_SUFFIX):
        raise TaskFailure(
            f"connector {connector} is running on Spark (group {shadow_group}{SPARK_SUFFIX} is active); "
            "stop the Spark query first"
        )


def refuse_if_worker_active(admin: AdminClient, shadow_group: str, connector: str) -> None:
    """For Spark: TaskFailure when worker tasks run ``connector``."""
    members = active_members(admin, shadow_group)
    if members:
        raise TaskFailure(
            f"connector {connector} is running in the worker runtime ({members} members in shadow group "
            f"{shadow_group}); stop it there first (PUT /connectors/{connector}/stop, or end mirror-sink run; "
            "a worker killed without a stop keeps its members until their session.timeout.ms ends)"
        )


class SparkLease:
    """The Spark driver's membership in ``{shadow}.spark-runtime`` for as long as the query runs."""

    def __init__(self, target: dict[str, str], shadow_group: str, topic: str) -> None:
        self._consumer: Consumer = clients.coordination_consumer(target, shadow_group + SPARK_SUFFIX, "spark-lease")
        self._consumer.subscribe([topic], on_assign=_hold)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="spark-lease", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            self._consumer.poll(0.5)  # keeps the membership alive (max.poll.interval.ms)

    def release(self) -> None:
        """Leave the group: the worker may run the connector again."""
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()


def _hold(consumer: Consumer, partitions: list[TopicPartition]) -> None:
    consumer.assign(partitions)
    if partitions:
        consumer.pause(partitions)  # membership only: the lease never fetches
