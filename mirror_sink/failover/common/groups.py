"""Consumer groups on either cluster: list them, read their committed offsets, commit translated ones.

Offsets are read and committed through a consumer that carries the group's id but never joins it
(librdkafka's AdminClient offset calls crash the process when a coordinator moves; see
``mirror_sink.core.clients.stable_offsets``). A commit without membership is refused by the broker while the
group has active members (UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION), so a group that becomes active
between our check and our commit is still never moved under its consumers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.clients.clients import LIBRDKAFKA_LOG
from mirror_sink.core.clients.stable_offsets import Committed, read_stable_commits

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
    commits = committed_with_metadata(props, group, partitions, client_id, cluster, timeout_s=timeout_s)
    return {tp: c.offset for tp, c in commits.items()}


def committed_with_metadata(
    props: Mapping[str, str],
    group: str,
    partitions: Iterable[tuple[str, int]],
    client_id: str,
    cluster: str,
    *,
    timeout_s: float = 60.0,
) -> dict[tuple[str, int], Committed]:
    """As ``committed_offsets``, with the metadata committed beside each offset."""
    consumer = group_member(props, group, client_id)
    try:
        return _read_commits(consumer, group, partitions, cluster, timeout_s)
    finally:
        consumer.close()


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
        _commit(consumer, group, offsets)
    finally:
        consumer.close()


class GroupMembers:
    """Long-lived non-member consumers of one cluster, one per group, for a reader that comes back
    every few seconds (the checkpoint emitter): a consumer made and closed per group per round
    costs a client's start each time (threads, connections, metadata, a coordinator lookup).

    Reads and commits are the same as ``committed_offsets`` / ``commit_offsets``. A consumer whose
    call failed is closed and made again next time; at most ``keep`` are kept (the groups first
    asked for), any further group is served by a consumer for that call only. Not thread-safe: one
    owner thread, which calls ``close``.
    """

    def __init__(self, props: Mapping[str, str], client_id: str, cluster: str, keep: int = 32) -> None:
        self._props = dict(props)
        self._client_id = client_id
        self._cluster = cluster
        self._keep = keep
        self._members: dict[str, Consumer] = {}

    def committed(
        self, group: str, partitions: Iterable[tuple[str, int]], *, timeout_s: float = 60.0
    ) -> dict[tuple[str, int], int]:
        """As ``committed_offsets``: ``group``'s committed offsets on ``partitions``, read stable."""
        with self._member(group) as consumer:
            commits = _read_commits(consumer, group, partitions, self._cluster, timeout_s)
            return {tp: c.offset for tp, c in commits.items()}

    def commit(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        """As ``commit_offsets``: all of ``offsets`` into ``group`` as a non-member, or none."""
        if not offsets:
            return
        with self._member(group) as consumer:
            _commit(consumer, group, offsets)

    def keep_only(self, groups: Iterable[str]) -> None:
        """Close the consumers of every group not in ``groups`` (gone, or no longer selected)."""
        wanted = set(groups)
        for group in [g for g in self._members if g not in wanted]:
            self._members.pop(group).close()

    def close(self) -> None:
        """Close every consumer kept."""
        members, self._members = self._members, {}
        for consumer in members.values():
            consumer.close()

    @contextlib.contextmanager
    def _member(self, group: str) -> Iterator[Consumer]:
        consumer = self._members.get(group)
        kept = consumer is not None or len(self._members) < self._keep
        if consumer is None:
            consumer = group_member(self._props, group, self._client_id)
            if kept:
                self._members[group] = consumer
        try:
            yield consumer
        except GroupActive:  # the broker's answer about the group, not a fault of the consumer
            if not kept:
                consumer.close()
            raise
        except BaseException:
            if kept:
                self._members.pop(group, None)
            consumer.close()
            raise
        if not kept:
            consumer.close()
            return
        # librdkafka queues its log lines and error events until the client is polled: served
        # here, so that a consumer kept for hours (never subscribed, nothing to fetch) neither
        # holds them back nor piles them up.
        for _ in range(1000):
            if consumer.poll(0) is None:
                break


def _read_commits(
    consumer: Consumer, group: str, partitions: Iterable[tuple[str, int]], cluster: str, timeout_s: float
) -> dict[tuple[str, int], Committed]:
    try:
        commits = read_stable_commits(consumer, partitions, give_up_after_s=timeout_s)
    except TaskFailure as exc:
        raise TaskFailure(f"group {group!r} on the {cluster} cluster: {exc}") from exc
    return {tp: c for tp, c in commits.items() if c is not None}


def _commit(consumer: Consumer, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    try:
        result = consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    except KafkaException as exc:
        err: KafkaError = exc.args[0]
        if err.code() in _ACTIVE_MEMBER_ERRORS:
            raise GroupActive(f"group {group!r} has active members on the target") from exc
        raise TaskFailure(f"cannot commit offsets of group {group!r} on the target: {err.str()}") from exc
    for tp in result or []:
        if tp.error is not None:
            if tp.error.code() in _ACTIVE_MEMBER_ERRORS:
                raise GroupActive(f"group {group!r} has active members on the target")
            raise TaskFailure(f"cannot commit {tp.topic}-{tp.partition} of group {group!r}: {tp.error.str()}")
