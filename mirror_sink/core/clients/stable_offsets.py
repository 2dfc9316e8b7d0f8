"""Read a group's committed offsets stably: never mistake "could not read" for "none".

The group coordinator answers UNSTABLE_OFFSET_COMMIT for a partition while a transaction that
commits its offset is open, and for a moment after it ends (until the markers are written). A new
owner that read past that would restart from an older offset and duplicate the open transaction's
records once it commits, so we wait it out; giving up fails the task rather than guessing.

The reads go through a read_committed *consumer* (``Consumer.committed``): librdkafka then sets
``require_stable`` and retries unstable partitions itself. Its AdminClient equivalent
(``list_consumer_group_offsets``) crashes the process (NULL group handle in librdkafka 2.x) when the
coordinator answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, as a fresh cluster does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import NamedTuple, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from mirror_sink.core.base.errors import RecoverableTaskFailure, Retriable, TaskFailure
from mirror_sink.core.clients.clients import in_parts
from mirror_sink.core.runtime.retry import retry_call

log = logging.getLogger(__name__)

#: A partition key of either cluster (``SourcePartition`` or ``TargetPartition``); results keep its type.
P = TypeVar("P", bound=tuple[str, int])

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
        KafkaError._WAIT_COORD,
    }
)


class Committed(NamedTuple):
    """A committed offset and the metadata string committed with it."""

    offset: int
    metadata: str


def read_stable_offsets(
    consumer: Consumer,
    partitions: Iterable[P],
    *,
    give_up_after_s: float,
    request_timeout_s: float = 10.0,
) -> dict[P, int | None]:
    """The committed offsets of ``consumer``'s group (None where it has none), read stable.

    ``consumer`` must be configured read_committed. Retries unstable offsets, coordinator moves and
    timeouts with backoff for up to ``give_up_after_s`` (set it above the transaction timeout, after
    which the broker aborts a pending transaction), then raises a task failure naming the partitions.
    """
    commits = read_stable_commits(
        consumer, partitions, give_up_after_s=give_up_after_s, request_timeout_s=request_timeout_s
    )
    return {key: None if commit is None else commit.offset for key, commit in commits.items()}


def read_stable_commits(
    consumer: Consumer,
    partitions: Iterable[P],
    *,
    give_up_after_s: float,
    request_timeout_s: float = 10.0,
) -> dict[P, Committed | None]:
    """As ``read_stable_offsets``, with the metadata committed beside each offset."""
    wanted = {(key[0], key[1]): key for key in sorted(set(partitions))}
    if not wanted:
        return {}

    def attempt() -> dict[P, Committed | None]:
        try:
            result = in_parts(consumer.committed, [TopicPartition(t, p) for t, p in wanted], request_timeout_s)
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if err.code() not in _RETRIABLE:
                raise TaskFailure(f"cannot read committed offsets of {_fmt(wanted)}: {err.str()}") from exc
            raise Retriable(err.str()) from exc
        out: dict[P, Committed | None] = {}
        for tp in result:
            if tp.error is not None:
                if tp.error.code() not in _RETRIABLE:
                    raise TaskFailure(f"cannot read committed offset of {tp.topic}-{tp.partition}: {tp.error.str()}")
                raise Retriable(f"{tp.topic}-{tp.partition}: {tp.error.str()}")
            key = wanted[(tp.topic, tp.partition)]
            out[key] = Committed(tp.offset, tp.metadata or "") if tp.offset >= 0 else None
        return out

    try:
        return retry_call(attempt, f"committed offsets of {_fmt(wanted)}", deadline_s=give_up_after_s)
    except Retriable as exc:
        raise RecoverableTaskFailure(
            f"committed offsets of {_fmt(wanted)} did not become stable within {give_up_after_s:.0f} s "
            f"(a transaction of another producer still open on them?): {exc}"
        ) from exc


def _fmt(partitions: Iterable[tuple[str, int]]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in partitions)
