"""confluent-kafka clients with the settings correctness depends on, over the user's own settings."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.errors import AbortCycle, RecoverableTaskFailure, Retriable, TaskFailure

# librdkafka settings; Any because the 'logger' entry is a logging.Logger.
ClientConfig = dict[str, Any]

#: Where librdkafka's own log lines go (pass as the ``logger`` setting of any client).
LIBRDKAFKA_LOG = logging.getLogger("mirror_sink.librdkafka")


def _with_logger(user: Mapping[str, Any], forced: Mapping[str, Any]) -> ClientConfig:
    return {**user, **forced, "logger": LIBRDKAFKA_LOG}


def source_consumer(user: Mapping[str, str], group_id: str, client_id: str) -> Consumer:
    """The source reader: assign()-based, read_committed, never auto-commits.

    ``group_id`` only names the group that receives informational position commits (lag tooling);
    this consumer never joins it.
    """
    return Consumer(
        _with_logger(
            {
                "client.id": client_id,
                "fetch.wait.max.ms": 100,
                "topic.metadata.refresh.interval.ms": 30_000,
                **user,
            },
            {
                "group.id": group_id,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": False,
                "auto.offset.reset": "error",  # a start offset is always explicit; never guess
            },
        )
    )


def coordination_consumer(
    user: Mapping[str, str], group_id: str, client_id: str, instance_id: str | None = None
) -> Consumer:
    """The shadow-group member on the target: it decides ownership and fences commits; it never fetches.

    With ``instance_id`` it is a static member (KIP-345), as a worker's task is by default
    (``shadow.group.static.membership``): a task restarted within its session takes its
    partitions back at once, with no rebalance, and a coordinator that moves or starves for
    seconds costs no rebalance either. Its session is Kafka's consumer
    default, 45 s, as for a Connect sink task's consumer. A static member does not leave the group
    when closed, so whoever closes it removes it (``mirror_sink.task.static_member``); otherwise a
    stopped connector's group would stay non-empty (KIP-875) and its partitions held for 45 s.

    Without it (``shadow.group.static.membership=false``, and the Spark runtime's lease) it is a
    dynamic member with a 10 s session, and leaves the group when closed.
    """
    return Consumer(coordination_settings(user, group_id, client_id, instance_id))


def coordination_settings(
    user: Mapping[str, str], group_id: str, client_id: str, instance_id: str | None = None
) -> ClientConfig:
    """The settings of ``coordination_consumer``: the user's, under those correctness needs."""
    static: dict[str, object] = {"group.instance.id": instance_id} if instance_id else {}
    session_ms = 45_000 if instance_id else 10_000
    if "max.poll.interval.ms" in user:  # librdkafka refuses a session longer than it
        session_ms = min(session_ms, int(user["max.poll.interval.ms"]))
    return _with_logger(
        {
            "client.id": client_id,
            "topic.metadata.refresh.interval.ms": 30_000,
            "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": 3_000,
            **user,
        },
        {
            # The rebalance callbacks rely on the classic protocol's eager revoke-all/assign-all.
            "group.protocol": "classic",
            "partition.assignment.strategy": "roundrobin",
            "group.id": group_id,
            "isolation.level": "read_committed",
            # Committing this consumer's (meaningless) target positions would overwrite the
            # source offsets the shadow group holds.
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            **static,
        },
    )


def target_producer(
    user: Mapping[str, Any], client_id: str, transactional_id: str | None, transaction_timeout_ms: int
) -> Producer:
    """The target writer: transactional when ``transactional_id`` is set, idempotent always."""
    forced: dict[str, object] = {"enable.idempotence": True}
    if transactional_id is not None:
        forced |= {"transactional.id": transactional_id, "transaction.timeout.ms": transaction_timeout_ms}
    return TargetProducer(
        _with_logger({"client.id": client_id, "linger.ms": 5, "compression.type": "lz4", **user}, forced)
    )


class TargetProducer(Producer):
    """A librdkafka producer whose ``poll`` and ``flush`` report its fatal state as a recoverable failure.

    confluent-kafka raises a fatal error (fenced by a newer instance of the transactional.id, say)
    from whichever ``poll`` or ``flush`` serves it, and the delivery callbacks that same call goes on
    to run then fail: seen as ``SystemError`` with the fatal error as its cause, and without one
    ("returned NULL without setting an exception"). Either way this producer is done for and a new
    one (whose init_transactions fences this one) is the remedy.
    """

    def poll(self, timeout: float = -1) -> int:
        """Serve delivery callbacks (see the class)."""
        try:
            return super().poll(timeout)
        except (KafkaException, SystemError) as exc:
            raise _fatal_state("poll", exc) from exc

    def flush(self, timeout: float = -1) -> int:
        """Wait for every queued record's delivery (see the class)."""
        try:
            return super().flush(timeout)
        except (KafkaException, SystemError) as exc:
            raise _fatal_state("flush", exc) from exc


def _fatal_state(what: str, exc: KafkaException | SystemError) -> RecoverableTaskFailure:
    """What a producer's poll or flush raised, as the failure it means."""
    cause = exc if isinstance(exc, KafkaException) else exc.__cause__ or exc.__context__
    said = cause.args[0].str() if isinstance(cause, KafkaException) else f"{type(exc).__name__}: {exc}"
    return RecoverableTaskFailure(f"{what} of the target producer failed fatally: {said}")


def admin(user: Mapping[str, str], client_id: str) -> AdminClient:
    """An admin client for ``user``'s cluster."""
    return AdminClient(_with_logger({"client.id": client_id, **user}, {}))


def is_fatal(err: KafkaError) -> bool:
    """Whether the client that raised ``err`` is unusable for good.

    A call on a producer already in librdkafka's fatal state (fenced by a newer instance of its
    transactional.id, say) fails with code ``_FATAL`` but without the fatal flag, which only the
    error that caused the state carries.
    """
    return bool(err.fatal()) or err.code() in (KafkaError._FATAL, KafkaError._FENCED)


def classify(what: str, err: KafkaError) -> Exception:
    """A librdkafka error as the error class that decides what happens next (``mirror_sink.core.base.errors``)."""
    if is_fatal(err):
        return RecoverableTaskFailure(f"{what} failed fatally: {err.str()}")
    if err.txn_requires_abort():
        return AbortCycle(f"{what}: {err.str()}")
    if err.retriable():
        return Retriable(f"{what}: {err.str()}")
    return TaskFailure(f"{what} failed: {err.str()}")


#: A request not answered (in time, or at all), or refused only for now: Kafka's retriable errors.
#: Admin results do not always carry librdkafka's retriable flag, so the codes are named.
_NOT_YET = frozenset(
    {
        KafkaError._TIMED_OUT,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError.BROKER_NOT_AVAILABLE,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.NOT_CONTROLLER,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
    }
)


def transient(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) says a reachable cluster answered late or not yet, not
    no: a call not answered in time, or a retriable broker error (no leader yet, coordinator loading).

    A cluster that cannot be reached at all is not transient here: the preflight check has already
    said so as a ``TaskFailure`` naming its address, and that decision stands."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, TaskFailure):
            return False
        if isinstance(seen, TimeoutError):
            return True
        if isinstance(seen, KafkaException) and seen.args and isinstance(seen.args[0], KafkaError):
            err: KafkaError = seen.args[0]
            return bool(err.retriable()) or err.code() in _NOT_YET
        seen = seen.__cause__
    return False


#: Partitions per librdkafka offsets call (``committed``, ``offsets_for_times``). librdkafka matches
#: each answered partition to the request's list one by one, so a call costs O(N²) in its
#: partitions: measured with librdkafka 2.16, one call of 10,000 took 0.41 CPU-s, twenty of 500
#: 0.03. Over 1,000 partitions, ``offsets_for_times`` took 11.7 ms of the calling thread's CPU in
#: one call, 6.1 in parts of 500 and 3.9 in parts of 200, in about the same wall time (10-14 ms);
#: below 200 it gains little. The lag monitor makes such calls every 5 s.
OFFSETS_CALL_PARTITIONS = 200


def in_parts(
    call: Callable[[list[TopicPartition], float], list[TopicPartition]],
    partitions: Sequence[TopicPartition],
    timeout_s: float,
) -> list[TopicPartition]:
    """``call(part, timeout)`` over ``partitions`` in parts of ``OFFSETS_CALL_PARTITIONS``, within
    ``timeout_s`` in all; the answers in order. A part that fails raises, as one call would."""
    deadline = Deadline(timeout_s)
    out: list[TopicPartition] = []
    for start in range(0, len(partitions), OFFSETS_CALL_PARTITIONS):
        out.extend(call(list(partitions[start : start + OFFSETS_CALL_PARTITIONS]), deadline.left(0.001)))
    return out
