"""Ask the target where the shadow group and the tasks' transactions will be coordinated, before
the connector creates its topics.

On a target that has never had a consumer group or a transaction, the first FindCoordinator makes
the broker create ``__consumer_offsets`` or ``__transaction_state`` (50 partitions each), whose
leaders must then load them before any OffsetFetch or InitProducerId is answered. Asked by the task,
after the connector's CreateTopics, that creation queued behind the new topics' partitions: at
10,000 partitions the task's InitProducerId waited 26-29 s on COORDINATOR_LOAD_IN_PROGRESS and its
first OffsetFetch 11-25 s. Asked here first, both internal topics are created, and loaded, while the
target topics are created and their leaders awaited. On a target that has both already, this is two
small requests.

Best effort: nothing waits for the answers, and a failure (an ACL, a client that cannot honour the
settings) only costs the wait it was meant to spare, so it is logged and never raised.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kafka.protocol.metadata import FindCoordinatorRequest

from mirror_sink.core.base.error_codes import KafkaErrorCode
from mirror_sink.raw.wire.capabilities import unsupported
from mirror_sink.raw.wire.wire import COORDINATOR_GROUP, COORDINATOR_TRANSACTION, WireClient, error_name

log = logging.getLogger(__name__)

#: The answer of one FindCoordinator, as this module reports it: "node N" or the error's name.
Answer = str


def ask_coordinators(
    target: Mapping[str, str], client_id: str, group_id: str, transactional_id: str | None
) -> dict[str, Answer]:
    """Send FindCoordinator for ``group_id`` and, when given, ``transactional_id`` (one request each)
    to the target; returns each key's answer ("node N", an error's name, or why it was not asked).

    A missing internal topic answers COORDINATOR_NOT_AVAILABLE, and the broker then creates it."""
    keys = {group_id: COORDINATOR_GROUP}
    if transactional_id is not None:
        keys[transactional_id] = COORDINATOR_TRANSACTION
    cannot = unsupported(target)
    if cannot:
        return dict.fromkeys(keys, f"not asked: the client cannot honour {', '.join(cannot)}")
    answers: dict[str, Answer] = {}
    try:
        wire = WireClient(target, "target", client_id, max_response_bytes=1 << 20, request_timeout_ms=10_000)
    except Exception as exc:  # the task reports an unreachable target; this only spares it a wait
        log.debug("could not ask the target's coordinators: %s", exc)
        return dict.fromkeys(keys, f"not asked: {exc}")
    try:
        for key, key_type in keys.items():
            try:
                request = FindCoordinatorRequest(version=4, key_type=key_type, coordinator_keys=[key])
                found = wire.call(wire.any_node(), request, f"finding the coordinator of {key!r}", 10.0).coordinators[0]
            except Exception as exc:
                answers[key] = f"no answer: {exc}"
                continue
            code = int(found.error_code)
            answers[key] = f"node {found.node_id}" if code == KafkaErrorCode.NONE else error_name(code)
    finally:
        wire.close()
    log.debug("coordinators on the target before provisioning: %s", answers)
    return answers
