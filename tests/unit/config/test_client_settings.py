"""client_settings: which pass-through keys reach one Kafka client, and which of MirrorMaker 2's
prefixes wins when several set the same property (cluster-wide, then the shorthand, then the client's
own prefix), whatever order the keys come in."""

from __future__ import annotations

import pytest

from mirror_sink.config.client_settings import client_settings

pytestmark = pytest.mark.unit


def test_the_bootstrap_given_is_always_set_even_with_no_pass_through_keys() -> None:
    assert client_settings({}, "source", "consumer", "east:9092") == {"bootstrap.servers": "east:9092"}


def test_cluster_wide_keys_reach_every_client_of_that_cluster_and_none_of_the_other() -> None:
    props = {"source.cluster.security.protocol": "SASL_SSL", "target.cluster.security.protocol": "SSL"}
    for role in ("consumer", "producer", "admin"):
        assert client_settings(props, "source", role, "east:9092")["security.protocol"] == "SASL_SSL"
        assert client_settings(props, "target", role, "west:9092")["security.protocol"] == "SSL"


def test_another_clients_own_keys_are_not_taken_for_cluster_wide_ones() -> None:
    props = {
        "source.cluster.producer.acks": "all",
        "source.cluster.admin.request.timeout.ms": "5000",
        "source.cluster.consumer.fetch.max.bytes": "1048576",
    }
    consumer = client_settings(props, "source", "consumer", "east:9092")
    assert consumer == {"bootstrap.servers": "east:9092", "fetch.max.bytes": "1048576"}
    assert "producer.acks" not in consumer and "acks" not in consumer
    admin = client_settings(props, "source", "admin", "east:9092")
    assert admin == {"bootstrap.servers": "east:9092", "request.timeout.ms": "5000"}


def test_the_shorthand_overrides_cluster_wide_keys_and_the_clients_own_prefix_overrides_both() -> None:
    props = {
        "source.cluster.client.rack": "cluster",
        "source.cluster.isolation.level": "cluster",
        "source.cluster.max.poll.interval.ms": "cluster",
        "consumer.isolation.level": "shorthand",
        "consumer.max.poll.interval.ms": "shorthand",
        "source.cluster.consumer.max.poll.interval.ms": "own",
    }
    conf = client_settings(props, "source", "consumer", "east:9092", "consumer.")
    assert conf["client.rack"] == "cluster"
    assert conf["isolation.level"] == "shorthand"
    assert conf["max.poll.interval.ms"] == "own"


def test_the_precedence_does_not_depend_on_the_order_of_the_keys() -> None:
    ordered = {
        "source.cluster.linger.ms": "cluster",
        "producer.linger.ms": "shorthand",
        "target.cluster.producer.linger.ms": "own",
        "target.cluster.linger.ms": "cluster",
    }
    reversed_keys = dict(reversed(list(ordered.items())))
    for props in (ordered, reversed_keys):
        assert client_settings(props, "target", "producer", "west:9092", "producer.")["linger.ms"] == "own"
    without_own = {k: v for k, v in ordered.items() if k != "target.cluster.producer.linger.ms"}
    for props in (without_own, dict(reversed(list(without_own.items())))):
        assert client_settings(props, "target", "producer", "west:9092", "producer.")["linger.ms"] == "shorthand"


def test_without_a_shorthand_the_shorthand_keys_are_not_applied() -> None:
    props = {"consumer.isolation.level": "read_uncommitted", "producer.acks": "1"}
    assert client_settings(props, "target", "consumer", "west:9092") == {"bootstrap.servers": "west:9092"}
    assert client_settings(props, "source", "admin", "east:9092") == {"bootstrap.servers": "east:9092"}
