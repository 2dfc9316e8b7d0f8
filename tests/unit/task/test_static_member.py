"""A task's static membership: the instance id the broker accepts, and who gets none."""

from __future__ import annotations

import re

import pytest

from mirror_sink.core.clients import clients
from mirror_sink.task.static_member import instance_id

pytestmark = pytest.mark.unit

PLAIN = {"bootstrap.servers": "127.0.0.1:9092"}


def test_the_slot_is_the_instance_id_with_a_worker_ids_colon_made_legal() -> None:
    assert instance_id(PLAIN, "orders-mirror-host.example:8083-0") == "orders-mirror-host.example_8083-0"
    assert instance_id(PLAIN, "orders-mirror-w1-2") == "orders-mirror-w1-2"


def test_a_slot_too_long_for_the_broker_is_cut_and_ended_by_its_own_digest() -> None:
    one, two = instance_id(PLAIN, "c" * 300 + "-w1-0"), instance_id(PLAIN, "c" * 300 + "-w1-1")
    assert one is not None and two is not None
    assert len(one) == len(two) == 249 and one != two
    assert re.fullmatch(r"[a-zA-Z0-9._-]+", one)


def test_a_target_the_leave_client_cannot_reach_keeps_a_dynamic_member() -> None:
    pkcs12 = {**PLAIN, "security.protocol": "SSL", "ssl.keystore.location": "/k.p12"}
    assert instance_id(pkcs12, "orders-mirror-w1-0") is None


def test_a_static_member_has_connects_45_s_session_and_a_dynamic_one_10_s() -> None:
    static = clients.coordination_settings(PLAIN, "g", "c", "orders-mirror-w1-0")
    assert (static["group.instance.id"], static["session.timeout.ms"]) == ("orders-mirror-w1-0", 45_000)
    dynamic = clients.coordination_settings(PLAIN, "g", "c")
    assert "group.instance.id" not in dynamic and dynamic["session.timeout.ms"] == 10_000
    # The user's session wins (the tests' 6 s); the instance id is never the user's.
    user = clients.coordination_settings(
        {**PLAIN, "session.timeout.ms": "6000", "group.instance.id": "x"}, "g", "c", "i"
    )
    assert (user["session.timeout.ms"], user["group.instance.id"]) == ("6000", "i")


def test_a_lower_max_poll_interval_shortens_the_static_session_instead_of_being_refused() -> None:
    # librdkafka refuses a session longer than max.poll.interval.ms: a config that set 30 s before
    # static membership was the default keeps working.
    short = clients.coordination_settings({**PLAIN, "max.poll.interval.ms": "30000"}, "g", "c", "i")
    assert short["session.timeout.ms"] == 30_000
    both = clients.coordination_settings(
        {**PLAIN, "max.poll.interval.ms": "30000", "session.timeout.ms": "20000"}, "g", "c", "i"
    )
    assert both["session.timeout.ms"] == "20000"
