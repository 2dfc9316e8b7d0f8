"""Consumer groups on either cluster: list them, read their committed offsets, commit translated ones.

Offsets are read and committed through a consumer that carries the group's id but never joins it
(librdkafka's AdminClient offset calls crash the process when a coordinator moves; see
``mirror_sink.core.stable_offsets``). A commit without membership is refused by the broker while the
group has active members (UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION), so a group that becomes active
between our check and our commit is still never moved under its consumers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirror_sink.core.clients import LIBRDKAFKA_LOG
from mirror_sink.core.errors import TaskFailure
from mirror_sink.core.stable_offsets import read_stable_offsets

#: Group states in which nobody consumes: offsets may be moved.
IDLE_STATES = frozenset({"EMPTY", "DEAD", "UNKNOWN"})
_ACTIVE_MEMBER_ERRORS = frozenset(
    {KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION, KafkaError.REBALANCE_IN_PROGRESS}
)


class GroupActive(Exception):
    """The group has active members on the target: its offsets are left alone."""


class ClusterUnreachable(TaskFailure):
    """No broker of the cluster answered (as opposed to one that answered with an error)."""


_UNREACHABLE = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT})


def list_groups(admin: AdminClient, cluster: str, timeout_s: float = 30.0) -> dict[str, str]:
    """Every consumer group of the ``cluster`` ("source"/"target") and its state (STABLE, EMPTY, ...).

    ClusterUnreachable when no broker answered; TaskFailure for any other error (an ACL, say).
    """
    what = f"cannot list the consumer groups of the {cluster} cluster"
    try:
        result = admin.list_consumer_groups(request_timeout=timeout_s).result(timeout_s + 5)
    except KafkaException as exc:
        err: KafkaError = exc.args[0]
        kind = ClusterUnreachable if err.code() in _UNREACHABLE else TaskFailure
        raise kind(f"{what}: {err.str()}") from exc
    except TimeoutError as exc:
        raise ClusterUnreachable(f"{what}: no answer within {timeout_s:.0f} s") from exc
    if result.errors:  # e.g. every broker unreachable: a partial list must not pass for the whole
        errors = [_as_kafka_error(e) for e in result.errors]
        kind = ClusterUnreachable if all(e is not None and e.code() in _UNREACHABLE for e in errors) else TaskFailure
        raise kind(f"{what}: {'; '.join(e.str() if e is not None else '?' for e in errors)}")
    return {g.group_id: g.state.name if g.state is not None else "UNKNOWN" for g in result.valid}


def _as_kafka_error(error: object) -> KafkaError | None:
    """librdkafka reports these errors as KafkaError, or as a KafkaException wrapping one."""
    if isinstance(error, KafkaError):
        return error
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        return error.args[0]
    return None


def group_member(props: Mapping[str, str], group: str, client_id: str) -> Consumer:
    """A consumer that never joins ``group`` (no subscribe): it reads and commits the group's offsets
    from outside, read_committed, without auto commits."""
    return Consumer(
        {
            **props,
            "logger": LIBRDKAFKA_LOG,
            "client.id": client_id,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )


def committed_offsets(
    props: Mapping[str, str],
    group: str,
    partitions: Iterable[tuple[str, int]],
    client_id: str,
    cluster: str,
    *,
    timeout_s: float = 60.0,
) -> dict[tuple[str, int], int]:
    """``group``'s committed offsets on ``partitions`` of the ``cluster`` (only those it has), read stable."""
    consumer = group_member(props, group, client_id)
    try:
        offsets = read_stable_offsets(consumer, partitions, give_up_after_s=timeout_s)
    except TaskFailure as exc:
        raise TaskFailure(f"group {group!r} on the {cluster} cluster: {exc}") from exc
    finally:
        consumer.close()
    return {tp: o for tp, o in offsets.items() if o is not None}


def commit_offsets(
    props: Mapping[str, str], group: str, offsets: Mapping[tuple[str, int], int], client_id: str
) -> None:
    """Commit ``offsets`` into ``group`` as a non-member: all of them or none.

    Raises GroupActive when the broker refuses because the group has members, TaskFailure otherwise.
    """
    if not offsets:
        return
    consumer = group_member(props, group, client_id)
    try:
        result = consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    except KafkaException as exc:
        err: KafkaError = exc.args[0]
        if err.code() in _ACTIVE_MEMBER_ERRORS:
            raise GroupActive(f"group {group!r} has active members on the target") from exc
        raise TaskFailure(f"cannot commit offsets of group {group!r} on the target: {err.str()}") from exc
    finally:
        consumer.close()
    for tp in result or []:
        if tp.error is not None:
            if tp.error.code() in _ACTIVE_MEMBER_ERRORS:
                raise GroupActive(f"group {group!r} has active members on the target")
            raise TaskFailure(f"cannot commit {tp.topic}-{tp.partition} of group {group!r}: {tp.error.str()}")
