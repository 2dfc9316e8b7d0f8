"""A task's static membership of the shadow group: who it is, and how it leaves.

By default (``shadow.group.static.membership``) a worker's task joins the shadow group as a static
member (KIP-345) under its slot, the same stable name as its transactional id. A task SIGKILLed and
started again within the 45 s session takes its partitions back at once, and a coordinator that
moves or starves for seconds costs no rebalance. The takeover fence's reasoning still holds: the
coordinator hands a returning static member only the partitions it held, which no live member was
given in between.

A static member does not leave when its consumer closes, so ``leave`` removes it, as Kafka's
``kafka-consumer-groups --delete ... --members`` would (LeaveGroup v3+ naming the instance, KIP-345).
Without it a stopped task's partitions would stay with nobody until its session ends, and a stopped
connector's group would not be empty when an operator resets its offsets (KIP-875).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping

from kafka import KafkaAdminClient, errors
from kafka.admin import MemberToRemove

from mirror_sink.core.runtime.bounded import call_bounded
from mirror_sink.core.runtime.logs import Log
from mirror_sink.raw.wire.capabilities import client_options, unsupported

_REQUEST_TIMEOUT_MS = 10_000
_ILLEGAL = re.compile(r"[^a-zA-Z0-9._-]")
_MAX_LENGTH = 249
_LEAVE_LIMIT_S = 15.0


def instance_id(target_admin: Mapping[str, str], slot: str) -> str | None:
    """The task's ``group.instance.id``: its slot as the broker accepts it (only ``[a-zA-Z0-9._-]``,
    at most 249 characters, as a topic name; a worker id is ``host:port``), when the leave's client
    can reach the target.

    None (a dynamic member that leaves by itself) where that client cannot honour the target's
    security settings (``raw.capabilities.unsupported``): a static member that cannot be removed
    would hold its partitions for a whole session after every stop.
    """
    if unsupported(target_admin):
        return None
    legal = _ILLEGAL.sub("_", slot)
    if len(legal) > _MAX_LENGTH:  # still one per slot: the slot's own digest ends it
        legal = f"{legal[: _MAX_LENGTH - 17]}-{hashlib.sha256(slot.encode()).hexdigest()[:16]}"
    return legal


def leave(target_admin: Mapping[str, str], group: str, member: str, log: Log) -> None:
    """Remove the static member ``member`` from ``group`` now; on failure say what it costs.

    By instance id alone, as ``kafka-consumer-groups`` does: a member closed in the middle of a
    rebalance may have been given a new member id it never heard of, and naming the old one would be
    refused (FENCED_INSTANCE_ID) and leave it in the group for its session. A zombie whose slot runs
    again elsewhere may so remove its successor: that costs one rebalance, never data (the
    successor joins again, and the eager protocol ends its cycle first).
    """

    def remove() -> None:
        # Closed in here too: kafka-python's close joins its IO thread without a limit.
        admin = KafkaAdminClient(
            **client_options(target_admin), client_id=f"{member}-leave", request_timeout_ms=_REQUEST_TIMEOUT_MS
        )
        try:
            result = admin.remove_group_members(group, [MemberToRemove(group_instance_id=member)])
        except errors.UnknownMemberIdError:
            return  # already gone: its session ended, or it never joined
        finally:
            admin.close()
        fine = (errors.NoError, errors.UnknownMemberIdError)
        failed = [e.__name__ for e in result.values() if e not in fine]
        if failed:
            raise RuntimeError(", ".join(failed))

    started = time.monotonic()
    try:
        call_bounded(f"leaving the shadow group {group}", remove, _LEAVE_LIMIT_S)
        log.debug("left the shadow group %s as static member %s (%.2f s)", group, member, time.monotonic() - started)
    except Exception as exc:
        log.warning(
            "could not leave the shadow group %s as static member %s (%s): its partitions move when its "
            "session.timeout.ms ends",
            group,
            member,
            exc,
        )
