"""Read a group's committed offsets with ``require_stable``: never mistake "could not read" for "none".

The group coordinator answers UNSTABLE_OFFSET_COMMIT for a partition while a transaction that
commits its offset is open, and for a moment after it ends (until the markers are written). A new
owner that read past that would restart from an older offset and duplicate the open transaction's
records once it commits, so we wait it out; giving up fails the task rather than guessing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from mirror_sink.errors import TaskFailure

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]

_RETRIABLE = frozenset(
    {
        KafkaError.UNSTABLE_OFFSET_COMMIT,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError._TIMED_OUT,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
    }
)


class _NotYetStable(Exception):
    pass


def read_stable_offsets(
    admin: AdminClient,
    group: str,
    partitions: Iterable[TopicPartitionKey],
    *,
    give_up_after_s: float,
    request_timeout_s: float = 10.0,
) -> dict[TopicPartitionKey, int | None]:
    """The committed offset of each partition (None where the group has none), read stable.

    Retries UNSTABLE_OFFSET_COMMIT, coordinator moves and timeouts with backoff for up to
    ``give_up_after_s`` (set it above the transaction timeout, after which a pending transaction is
    aborted by the broker), then raises TaskFailure naming the group and partitions.
    """
    wanted = sorted(set(partitions))
    if not wanted:
        return {}

    def attempt() -> dict[TopicPartitionKey, int | None]:
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p) for t, p in wanted])
        try:
            result = admin.list_consumer_group_offsets(
                [request], require_stable=True, request_timeout=request_timeout_s
            )[group].result()
        except KafkaException as exc:
            err = exc.args[0]
            if isinstance(err, KafkaError) and err.code() in _RETRIABLE:
                raise _NotYetStable(str(err)) from exc
            raise TaskFailure(f"cannot read offsets of group {group!r}: {err}") from exc
        out: dict[TopicPartitionKey, int | None] = {}
        for tp in result.topic_partitions or []:
            if tp.error is not None:
                if tp.error.code() in _RETRIABLE:
                    raise _NotYetStable(f"{tp.topic}-{tp.partition}: {tp.error}")
                raise TaskFailure(
                    f"cannot read offset of {tp.topic}-{tp.partition} in group {group!r}: {tp.error}"
                )
            out[(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else None
        return out

    retrying = Retrying(
        retry=retry_if_exception_type(_NotYetStable),
        wait=wait_exponential(multiplier=0.05, max=2.0),
        stop=stop_after_delay(give_up_after_s),
        before_sleep=lambda rs: log.debug("group %s offsets not stable yet: %s", group, rs.outcome),
        reraise=True,
    )
    try:
        return retrying(attempt)
    except _NotYetStable as exc:
        raise TaskFailure(
            f"offsets of group {group!r} for {wanted} did not become stable within {give_up_after_s:.0f} s "
            f"(a transaction of another producer is still open on them): {exc}"
        ) from exc
