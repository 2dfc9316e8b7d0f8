"""MirrorSinkConfig: parsing, per-key errors, client property splitting and the flat round trip."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from mirror_sink.config.mirror_sink_config import (
    MirrorSinkConfig,
    OffsetFallback,
    OffsetGapPolicy,
    TopicRecreationPolicy,
)
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.settings.replication_policy import DefaultReplicationPolicy, IdentityReplicationPolicy
from mirror_sink.core.settings.secrets import MASK

BASE: dict[str, str] = {
    "name": "mirror",
    "source.cluster.bootstrap.servers": "src:9092",
    "target.cluster.bootstrap.servers": "tgt:9092",
}


def _props(**overrides: str) -> dict[str, str]:
    """BASE with Connect keys given as keyword arguments, ``_`` standing for ``.``."""
    return {**BASE, **{k.replace("_", "."): v for k, v in overrides.items()}}


def _parse_error(props: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        MirrorSinkConfig.parse(props)
    return info.value


# -- parsing and defaults ----------------------------------------------------------------------


def test_minimal_config_gets_defaults() -> None:
    cfg = MirrorSinkConfig.parse(BASE)
    assert cfg.name == "mirror"
    assert cfg.connector_class == "MirrorSinkConnector"
    assert cfg.connector_type == "sink"
    assert (cfg.source_alias, cfg.target_alias) == ("source", "target")
    assert cfg.tasks_max == 1
    assert cfg.transaction_producer is True
    assert cfg.offset_fallback is OffsetFallback.EARLIEST
    assert cfg.client_props == {}
    assert MirrorSinkConfig.errors(BASE) == {}


def test_typed_values_are_converted() -> None:
    cfg = MirrorSinkConfig.parse(
        {
            **BASE,
            "tasks.max": "8",
            "transaction.producer": "false",
            "offset.fallback": "source-group",
            "replication.factor": "3",
            "source.cluster.alias": "us-east",
        }
    )
    assert cfg.tasks_max == 8
    assert cfg.transaction_producer is False
    assert cfg.offset_fallback is OffsetFallback.SOURCE_GROUP
    assert cfg.replication_factor == 3
    assert cfg.source_alias == "us-east"


@pytest.mark.parametrize("cls", ["MirrorSinkConnector", "org.apache.kafka.connect.mirror.MirrorSinkConnector"])
def test_connector_class_aliases_accepted(cls: str) -> None:
    assert MirrorSinkConfig.parse({**BASE, "connector.class": cls}).connector_class == cls


def test_ignored_and_unknown_keys_do_not_fail() -> None:
    props = {**BASE, "key.converter": "x", "errors.tolerance": "all", "no.such.key": "1"}
    cfg = MirrorSinkConfig.parse(props)
    assert cfg.client_props == {}
    assert "no.such.key" not in cfg.to_props()


def test_config_is_immutable() -> None:
    cfg = MirrorSinkConfig.parse(BASE)
    with pytest.raises(ValueError):
        cfg.tasks_max = 2


def test_derived_topic_filter_and_policy() -> None:
    cfg = MirrorSinkConfig.parse({**BASE, "topics": "orders, pay.*", "replication.policy.separator": "_"})
    assert cfg.topic_filter().accepts("orders")
    assert cfg.topic_filter().accepts("payments")
    assert not cfg.topic_filter().accepts("orders2")
    assert cfg.replication_policy() == DefaultReplicationPolicy("_")
    identity = MirrorSinkConfig.parse({**BASE, "replication.policy.class": "IdentityReplicationPolicy"})
    assert isinstance(identity.replication_policy(), IdentityReplicationPolicy)


# -- group ids ---------------------------------------------------------------------------------


def test_group_ids_default_to_connect_name() -> None:
    cfg = MirrorSinkConfig.parse(BASE)
    assert cfg.shadow_group_id == "connect-mirror"
    assert cfg.source_group_id == "connect-mirror"
    assert cfg.offset_fallback_group_id == "connect-mirror"


def test_group_ids_can_be_set() -> None:
    cfg = MirrorSinkConfig.parse(
        {**BASE, "shadow.group.id": "shadow", "source.group.id": "src", "offset.fallback.group.id": "legacy"}
    )
    assert (cfg.shadow_group_id, cfg.source_group_id, cfg.offset_fallback_group_id) == (
        "shadow",
        "src",
        "legacy",
    )


def test_offset_fallback_group_follows_source_group() -> None:
    cfg = MirrorSinkConfig.parse({**BASE, "source.group.id": "src"})
    assert cfg.shadow_group_id == "connect-mirror"
    assert cfg.offset_fallback_group_id == "src"


# -- client property splitting -----------------------------------------------------------------

CLIENT_PROPS: dict[str, str] = {
    "source.cluster.security.protocol": "SASL_SSL",
    "source.cluster.fetch.min.bytes": "1",
    "consumer.fetch.min.bytes": "3",
    "source.cluster.consumer.fetch.min.bytes": "5",
    "source.cluster.admin.request.timeout.ms": "7",
    "source.cluster.producer.acks": "all",
    "target.cluster.sasl.username": "u",
    "target.cluster.linger.ms": "1",
    "producer.linger.ms": "5",
    "target.cluster.producer.linger.ms": "9",
    "target.cluster.consumer.isolation.level": "read_committed",
    "target.cluster.admin.retries": "2",
}


def _clients() -> MirrorSinkConfig:
    return MirrorSinkConfig.parse({**BASE, **CLIENT_PROPS})


def test_client_props_are_collected() -> None:
    assert _clients().client_props == CLIENT_PROPS


def test_source_consumer() -> None:
    """Role-specific beats the ``consumer.`` shorthand, which beats the cluster-wide setting."""
    assert _clients().source_consumer() == {
        "bootstrap.servers": "src:9092",
        "security.protocol": "SASL_SSL",
        "fetch.min.bytes": "5",
    }


def test_source_consumer_shorthand_beats_cluster_wide() -> None:
    cfg = MirrorSinkConfig.parse({**BASE, "source.cluster.fetch.min.bytes": "1", "consumer.fetch.min.bytes": "3"})
    assert cfg.source_consumer()["fetch.min.bytes"] == "3"
    assert cfg.source_admin()["fetch.min.bytes"] == "1"


def test_source_admin() -> None:
    assert _clients().source_admin() == {
        "bootstrap.servers": "src:9092",
        "security.protocol": "SASL_SSL",
        "fetch.min.bytes": "1",
        "request.timeout.ms": "7",
    }


def test_target_producer() -> None:
    assert _clients().target_producer() == {
        "bootstrap.servers": "tgt:9092",
        "sasl.username": "u",
        "linger.ms": "9",
    }


def test_target_producer_shorthand_beats_cluster_wide() -> None:
    cfg = MirrorSinkConfig.parse({**BASE, "target.cluster.linger.ms": "1", "producer.linger.ms": "5"})
    assert cfg.target_producer()["linger.ms"] == "5"
    assert cfg.target_consumer()["linger.ms"] == "1"


def test_target_consumer() -> None:
    assert _clients().target_consumer() == {
        "bootstrap.servers": "tgt:9092",
        "sasl.username": "u",
        "linger.ms": "1",
        "isolation.level": "read_committed",
    }


def test_target_admin() -> None:
    assert _clients().target_admin() == {
        "bootstrap.servers": "tgt:9092",
        "sasl.username": "u",
        "linger.ms": "1",
        "retries": "2",
    }


def test_client_settings_never_cross_clusters() -> None:
    cfg = MirrorSinkConfig.parse(
        {**BASE, "source.cluster.sasl.password": "s-secret", "target.cluster.sasl.password": "t-secret"}
    )
    for client in (cfg.source_consumer(), cfg.source_admin()):
        assert client["sasl.password"] == "s-secret"
    for client in (cfg.target_producer(), cfg.target_consumer(), cfg.target_admin()):
        assert client["sasl.password"] == "t-secret"


def test_client_values_become_strings() -> None:
    cfg = MirrorSinkConfig.parse({**BASE, "source.cluster.fetch.min.bytes": 5})
    assert cfg.source_consumer()["fetch.min.bytes"] == "5"


# -- to_props round trip -----------------------------------------------------------------------


def test_round_trip_of_defaults() -> None:
    cfg = MirrorSinkConfig.parse(BASE)
    props = cfg.to_props()
    assert all(isinstance(v, str) for v in props.values())
    assert props["transaction.producer"] == "true"
    assert props["offset.fallback"] == "earliest"
    assert "shadow.group.id" not in props, "unset optional keys stay unset"
    assert MirrorSinkConfig.parse(props) == cfg


def test_round_trip_of_everything() -> None:
    cfg = MirrorSinkConfig.parse(
        {
            **BASE,
            **CLIENT_PROPS,
            "connector.class": "org.apache.kafka.connect.mirror.MirrorSinkConnector",
            "source.cluster.alias": "east",
            "target.cluster.alias": "west",
            "topics": "orders, pay.*",
            "topics.exclude": "",
            "replication.policy.class": "IdentityReplicationPolicy",
            "replication.policy.separator": "_",
            "tasks.max": "12",
            "transaction.producer": "false",
            "shadow.group.id": "shadow",
            "source.group.id": "src",
            "source.group.commit.interval.ms": "0",
            "offset.fallback": "source-group",
            "offset.fallback.group.id": "legacy",
            "transaction.boundary.interval.ms": "250",
            "transaction.max.bytes": "2048",
            "transaction.timeout.ms": "30000",
            "refresh.topics.enabled": "false",
            "refresh.topics.interval.ms": "5000",
            "sync.topic.configs.enabled": "false",
            "replication.factor": "3",
        }
    )
    props = cfg.to_props()
    assert props["tasks.max"] == "12"
    assert props["refresh.topics.enabled"] == "false"
    assert props["offset.fallback"] == "source-group"
    assert props["target.cluster.admin.retries"] == "2"
    assert MirrorSinkConfig.parse(props) == cfg


_CLIENT_KEYS = st.sampled_from(
    [
        "source.cluster.security.protocol",
        "source.cluster.consumer.fetch.max.bytes",
        "source.cluster.admin.request.timeout.ms",
        "consumer.max.poll.interval.ms",
        "target.cluster.sasl.password",
        "target.cluster.producer.linger.ms",
        "target.cluster.consumer.isolation.level",
        "target.cluster.admin.retries",
        "producer.compression.type",
    ]
)


@given(
    tasks_max=st.integers(1, 1000),
    transaction_producer=st.booleans(),
    offset_fallback=st.sampled_from(list(OffsetFallback)),
    shadow=st.none() | st.from_regex(r"[a-z0-9\-]{1,12}", fullmatch=True),
    interval=st.integers(10, 10**7),
    replication_factor=st.integers(-1, 5),
    client=st.dictionaries(_CLIENT_KEYS, st.text(max_size=10)),
)
def test_round_trip_property(
    *,
    tasks_max: int,
    transaction_producer: bool,
    offset_fallback: OffsetFallback,
    shadow: str | None,
    interval: int,
    replication_factor: int,
    client: dict[str, str],
) -> None:
    props: dict[str, Any] = {
        **BASE,
        **client,
        "tasks.max": tasks_max,
        "transaction.producer": transaction_producer,
        "offset.fallback": offset_fallback.value,
        "transaction.boundary.interval.ms": interval,
        "replication.factor": replication_factor,
    }
    if shadow is not None:
        props["shadow.group.id"] = shadow
    cfg = MirrorSinkConfig.parse(props)
    assert MirrorSinkConfig.parse(cfg.to_props()) == cfg


# -- errors name the key -----------------------------------------------------------------------


def test_bad_tasks_max_names_the_key() -> None:
    props = _props(tasks_max="abc")
    errors = MirrorSinkConfig.errors(props)
    assert list(errors) == ["tasks.max"]
    assert "'abc'" in errors["tasks.max"][0]
    exc = _parse_error(props)
    assert exc.key == "tasks.max"
    assert str(exc).startswith("tasks.max:")
    assert "abc" in exc.message


@pytest.mark.parametrize("value", ["0", "1001", "-1", "1.5", ""])
def test_tasks_max_out_of_range(value: str) -> None:
    assert _parse_error(_props(tasks_max=value)).key == "tasks.max"


@pytest.mark.parametrize("missing", ["target.cluster.bootstrap.servers", "source.cluster.bootstrap.servers", "name"])
def test_missing_required_key_is_named(missing: str) -> None:
    props = {k: v for k, v in BASE.items() if k != missing}
    assert MirrorSinkConfig.errors(props) == {missing: ["is required"]}
    exc = _parse_error(props)
    assert exc.key == missing
    assert "is required" in exc.message


def test_empty_bootstrap_is_refused() -> None:
    assert _parse_error({**BASE, "target.cluster.bootstrap.servers": ""}).key == ("target.cluster.bootstrap.servers")


@pytest.mark.parametrize("cls", ["MirrorSourceConnector", "FileStreamSink", "mirrorsinkconnector"])
def test_bad_connector_class_is_named(cls: str) -> None:
    exc = _parse_error({**BASE, "connector.class": cls})
    assert exc.key == "connector.class"
    assert cls in exc.message


def test_source_connector_type_is_refused() -> None:
    exc = _parse_error(_props(connector_type="source"))
    assert exc.key == "connector.type"
    assert "source" in exc.message


@pytest.mark.parametrize("name", ["", "has space", "a/b", "m1\n"])
def test_bad_name_is_refused(name: str) -> None:
    assert _parse_error({**BASE, "name": name}).key == "name"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("transaction.producer", "maybe"),
        ("offset.fallback", "middle"),
        ("transaction.max.bytes", "10"),
        ("transaction.boundary.interval.ms", "1"),
        ("source.cluster.alias", ""),
    ],
)
def test_other_bad_values_are_named(key: str, value: str) -> None:
    assert _parse_error({**BASE, key: value}).key == key


def test_bad_topics_regex_names_topics() -> None:
    props = _props(topics="orders, (")
    errors = MirrorSinkConfig.errors(props)
    assert list(errors) == ["topics"]
    assert "invalid regular expression" in errors["topics"][0]
    assert _parse_error(props).key == "topics"


def test_bad_topics_exclude_regex_names_topics_exclude() -> None:
    assert _parse_error(_props(topics_exclude="[")).key == "topics.exclude"


def test_unknown_replication_policy_names_its_key() -> None:
    exc = _parse_error(_props(replication_policy_class="com.example.MyPolicy"))
    assert exc.key == "replication.policy.class"
    assert "com.example.MyPolicy" in exc.message


def test_empty_separator_is_refused() -> None:
    assert _parse_error(_props(replication_policy_separator="")).key == "replication.policy.separator"


def test_parse_lists_every_pydantic_problem() -> None:
    exc = _parse_error({**BASE, "tasks.max": "abc", "connector.type": "source"})
    assert "all problems:" in exc.message
    assert "tasks.max" in exc.message
    assert "connector.type" in exc.message


def test_errors_reports_topics_and_topics_exclude_together() -> None:
    """SUSPECTED BUG: errors() promises every problem, but a bad ``topics`` hides a bad ``topics.exclude``."""
    errors = MirrorSinkConfig.errors(_props(topics="(", topics_exclude="["))
    assert set(errors) == {"topics", "topics.exclude"}


def test_errors_reports_field_and_regex_problems_together() -> None:
    """SUSPECTED BUG: errors() promises every problem, but any field error hides the regex/policy checks."""
    errors = MirrorSinkConfig.errors(_props(tasks_max="abc", topics="(", replication_policy_class="Nope"))
    assert set(errors) == {"tasks.max", "topics", "replication.policy.class"}


# -- secrets stay out of error messages --------------------------------------------------------


def test_secrets_do_not_leak_into_errors() -> None:
    props = {
        **BASE,
        "tasks.max": "abc",
        "source.cluster.sasl.password": "hunter2",
        "target.cluster.producer.ssl.keystore.password": "hunter3",
        "source.cluster.sasl.jaas.config": "PlainLoginModule required password=hunter4;",
    }
    errors = MirrorSinkConfig.errors(props)
    exc = _parse_error(props)
    for secret in ("hunter2", "hunter3", "hunter4"):
        assert secret not in str(errors)
        assert secret not in str(exc)


class _ConfigWithSecretField(MirrorSinkConfig):
    """No built-in typed key is a secret, so a subclass adds one to reach errors()'s masking."""

    key_password: int = Field(0, alias="ssl.key.password")


def test_bad_secret_value_is_shown_masked() -> None:
    errors = _ConfigWithSecretField.errors({**BASE, "ssl.key.password": "hunter2"})
    assert list(errors) == ["ssl.key.password"]
    assert "hunter2" not in str(errors)
    assert MASK in errors["ssl.key.password"][0]
    with pytest.raises(ConfigError) as info:
        _ConfigWithSecretField.parse({**BASE, "ssl.key.password": "hunter2"})
    assert info.value.key == "ssl.key.password"
    assert "hunter2" not in str(info.value)


def test_bad_plain_value_is_shown() -> None:
    assert "'abc'" in MirrorSinkConfig.errors(_props(tasks_max="abc"))["tasks.max"][0]


def test_an_unknown_key_one_typo_from_a_known_one_is_warned_about_with_the_key_it_resembles(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING"):
        MirrorSinkConfig.parse({**BASE, "tasks.maxx": "4", "no.such.key": "1"})
    assert "ignoring unknown config key 'tasks.maxx' (did you mean 'tasks.max'?)" in caplog.text
    assert "ignoring unknown config key 'no.such.key'\n" in caplog.text + "\n"


@pytest.mark.parametrize("topics", ["", " ", ",", " , "])
def test_an_empty_topic_set_is_refused_naming_the_key(topics: str) -> None:
    with pytest.raises(ConfigError) as err:
        MirrorSinkConfig.parse({**BASE, "topics": topics})
    assert err.value.key == "topics"


def test_the_gap_policy_fails_by_default_and_skip_names_its_audit_topic() -> None:
    assert MirrorSinkConfig.parse(BASE).offset_gap_policy is OffsetGapPolicy.FAIL
    assert MirrorSinkConfig.parse(BASE).gaps_partition is None
    skip = MirrorSinkConfig.parse(_props(offset_gap_policy="skip", source_cluster_alias="east"))
    assert skip.gaps_partition == ("mirror-sink-gaps.east.internal", 0)
    assert MirrorSinkConfig.parse(skip.to_props()) == skip


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"transaction.producer": "false"}, "needs transaction.producer=true"),
        ({"runtime": "spark"}, "worker runtime only"),
        ({}, None),
    ],
)
def test_skip_is_refused_where_the_range_could_not_be_recorded(extra: dict[str, str], says: str | None) -> None:
    errors = MirrorSinkConfig.errors({**BASE, "offset.gap.policy": "skip", **extra})
    if says is None:
        assert errors == {}
    else:
        assert list(errors) == ["offset.gap.policy"] and says in errors["offset.gap.policy"][0]


def test_an_unknown_gap_policy_names_the_key() -> None:
    assert _parse_error(_props(offset_gap_policy="ignore")).key == "offset.gap.policy"


def test_the_recreation_policy_fails_by_default_and_continue_records_in_the_audit_topic() -> None:
    assert MirrorSinkConfig.parse(BASE).topic_recreation_policy is TopicRecreationPolicy.FAIL
    go_on = MirrorSinkConfig.parse(_props(topic_recreation_policy="continue", source_cluster_alias="east"))
    assert go_on.topic_recreation_policy is TopicRecreationPolicy.CONTINUE
    assert go_on.gaps_partition == ("mirror-sink-gaps.east.internal", 0)
    assert MirrorSinkConfig.parse(go_on.to_props()) == go_on
    assert _parse_error(_props(topic_recreation_policy="reset")).key == "topic.recreation.policy"


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"transaction.producer": "false"}, "needs transaction.producer=true"),
        ({"runtime": "spark"}, "worker runtime only"),
        ({}, None),
    ],
)
def test_continue_is_refused_where_a_recreation_cannot_be_recorded(extra: dict[str, str], says: str | None) -> None:
    errors = MirrorSinkConfig.errors({**BASE, "topic.recreation.policy": "continue", **extra})
    if says is None:
        assert errors == {}
    else:
        assert list(errors) == ["topic.recreation.policy"] and says in errors["topic.recreation.policy"][0]


@pytest.mark.parametrize(
    ("extra", "refused"),
    [
        ({"emit.offset-syncs.enabled": "false"}, True),
        ({"transaction.producer": "false"}, True),
        ({}, False),
    ],
)
def test_background_verification_needs_the_offset_syncs(extra: dict[str, str], refused: bool) -> None:
    errors = MirrorSinkConfig.errors({**BASE, "verify.enabled": "true", **extra})
    if refused:
        assert list(errors) == ["verify.enabled"] and "emit.offset-syncs.enabled=true" in errors["verify.enabled"][0]
    else:
        assert errors == {}
        parsed = MirrorSinkConfig.parse({**BASE, "verify.enabled": "true"})
        assert (parsed.verify_interval_s, parsed.verify_max_bytes_per_second) == (60.0, 4 * 1024 * 1024)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"transaction.producer": "false"}, "needs transaction.producer=true"),
        ({"runtime": "spark"}, "worker runtime only"),
    ],
)
def test_whole_source_transactions_are_refused_where_they_cannot_hold(extra: dict[str, str], says: str) -> None:
    """The Spark runtime copies each partition's range in a transaction of its own, and at least once
    has no target transaction: neither can keep a source transaction whole, so neither accepts it."""
    error = _parse_error({**BASE, "source.transactions.whole": "true", **extra})
    assert error.key == "source.transactions.whole" and says in error.message
    assert MirrorSinkConfig.parse({**BASE, "source.transactions.whole": "true"}).source_transactions_whole
