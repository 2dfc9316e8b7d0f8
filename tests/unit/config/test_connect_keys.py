"""connect_keys: how a flat Connect config map splits into typed keys, client settings passed through
(as strings), Connect's own keys accepted silently and unknown keys; and the "did you mean" hint for a
key one typo away from a typed one."""

from __future__ import annotations

from typing import Any

import pytest

from mirror_sink.config.connect_keys import did_you_mean, split_keys

pytestmark = pytest.mark.unit

NAMES = {"name", "topics", "tasks.max", "source.cluster.bootstrap.servers", "target.cluster.bootstrap.servers"}


def test_typed_keys_keep_their_values_even_where_they_carry_a_client_prefix() -> None:
    props: dict[str, Any] = {"tasks.max": 4, "topics": "orders", "source.cluster.bootstrap.servers": "east:9092"}
    known, client, unknown = split_keys(props, NAMES)
    assert known == props, "typed values are not stringified, and a typed key is never a client setting"
    assert client == {} and unknown == []


def test_every_client_prefix_is_passed_through_as_a_string() -> None:
    props: dict[str, Any] = {
        "source.cluster.security.protocol": "SSL",
        "target.cluster.producer.linger.ms": 5,
        "consumer.fetch.max.bytes": 1048576,
        "producer.enable.idempotence": True,
    }
    known, client, unknown = split_keys(props, NAMES)
    assert client == {
        "source.cluster.security.protocol": "SSL",
        "target.cluster.producer.linger.ms": "5",
        "consumer.fetch.max.bytes": "1048576",
        "producer.enable.idempotence": "True",
    }
    assert known == {} and unknown == []


def test_connects_converter_and_error_keys_are_accepted_silently() -> None:
    props = {
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "header.converter": "x",
        "errors.tolerance": "none",
        "errors.log.enable": "true",
    }
    assert split_keys(props, NAMES) == ({}, {}, [])


def test_any_other_key_is_unknown_in_the_order_given() -> None:
    props = {"task.max": "2", "topics": "orders", "sourc.cluster.alias": "east", "errors.deadletterqueue": "x"}
    known, client, unknown = split_keys(props, NAMES)
    assert unknown == ["task.max", "sourc.cluster.alias", "errors.deadletterqueue"]
    assert known == {"topics": "orders"} and client == {}


def test_a_key_one_typo_away_gets_the_typed_key_it_probably_meant() -> None:
    assert did_you_mean("task.max", NAMES) == " (did you mean 'tasks.max'?)"
    assert did_you_mean("source.cluster.bootstrap.server", NAMES) == (
        " (did you mean 'source.cluster.bootstrap.servers'?)"
    )


def test_a_key_far_from_every_typed_key_gets_no_hint() -> None:
    assert did_you_mean("offset.gap.policy", NAMES) == ""
    assert did_you_mean("tasks.max", []) == ""
