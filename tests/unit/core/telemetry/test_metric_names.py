"""KIP-1280's metric names beside MirrorMaker 2's legacy ones, and ``metric.names.formats`` as Kafka 4.3 takes it."""

from __future__ import annotations

import pytest

from connectors.mm2_config import connectors_from_mm2
from mirror_sink.config.mirror_sink_config import KEY_DOCS, MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.telemetry.metric_names import (
    MM2,
    MM2_ATTRIBUTES,
    MM2_LABELS,
    MM2_NEW,
    MM2_NEW_LABELS,
    MetricNamesFormat,
    new_metric_name,
    parse_metric_names_formats,
)

LEGACY, NEW = MetricNamesFormat.LEGACY, MetricNamesFormat.NEW
BASE: dict[str, str] = {
    "name": "mirror",
    "source.cluster.bootstrap.servers": "src:9092",
    "target.cluster.bootstrap.servers": "tgt:9092",
}

# -- the names -----------------------------------------------------------------------------------


def test_every_legacy_series_has_its_new_name() -> None:
    """MirrorSourceConnector's attributes under the plugin-metrics MBean (kafka.connect:type=plugins,...),
    named by domain, type and attribute as the legacy ones are."""
    expected = {
        "record_count",
        "byte_count",
        "record_rate",
        "byte_rate",
        "replication_latency_ms",
        "replication_latency_ms_min",
        "replication_latency_ms_max",
        "replication_latency_ms_avg",
        "record_age_ms",
        "record_age_ms_avg",
    }
    assert {name for name, _ in MM2_ATTRIBUTES} == expected
    assert MM2 == "kafka_connect_mirror_mirrorsourceconnector_" and MM2_NEW == "kafka_connect_plugins_"
    for name in expected:
        assert new_metric_name(MM2 + name) == "kafka_connect_plugins_" + name
    assert new_metric_name("kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max") == (
        "kafka_connect_plugins_replication_latency_ms_max"
    )


def test_the_new_labels_are_the_tasks_tags_then_the_legacy_ones() -> None:
    assert MM2_LABELS == ("source", "target", "topic", "partition")
    assert MM2_NEW_LABELS == ("connector", "task", "source", "target", "topic", "partition")


@pytest.mark.parametrize(
    "name", ["kafka_connect_sink_task_metrics_partition_count", "mirror_sink_replication_lag_records", "record_count"]
)
def test_only_mirror_source_series_have_a_new_name(name: str) -> None:
    with pytest.raises(ValueError, match="not a MirrorSourceConnector series"):
        new_metric_name(name)


# -- metric.names.formats, as Kafka 4.3.1's ConfigDef parses it (results taken from the jar) ----------


@pytest.mark.parametrize(
    ("value", "formats"),
    [
        ("legacy", (LEGACY,)),
        ("new", (NEW,)),
        ("legacy,new", (LEGACY, NEW)),
        ("new , legacy", (NEW, LEGACY)),
        (" legacy ", (LEGACY,)),
        ("\tnew\n", (NEW,)),
        ("legacy,legacy", (LEGACY,)),  # Kafka drops repeats, with a warning
        ("new,legacy,new", (NEW, LEGACY)),
    ],
)
def test_accepted_values(value: str, formats: tuple[MetricNamesFormat, ...]) -> None:
    assert parse_metric_names_formats(value) == formats


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("", "must not be empty. Valid values include: [legacy, new]"),
        ("  ", "must not be empty. Valid values include: [legacy, new]"),
        ("legacy,", "values must not be empty"),
        (",new", "values must not be empty"),
        ("legacy,,new", "values must not be empty"),
        ("old", "String must be one of: legacy, new (not 'old')"),
        ("Legacy", "String must be one of: legacy, new (not 'Legacy')"),  # case matters, as in Kafka
        ("legacy new", "String must be one of: legacy, new (not 'legacy new')"),
        ("legacy;new", "String must be one of: legacy, new (not 'legacy;new')"),
        ("both", "String must be one of: legacy, new (not 'both')"),
    ],
)
def test_refused_values(value: str, says: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_metric_names_formats(value)
    assert str(info.value) == says


def test_a_repeated_format_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    parse_metric_names_formats("new,new")
    assert "metric.names.formats 'new,new' contains duplicate values" in caplog.text


# -- the connector config key ----------------------------------------------------------------------


def test_legacy_is_the_default() -> None:
    cfg = MirrorSinkConfig.parse(BASE)
    assert cfg.metric_names == (LEGACY,)
    assert cfg.to_props()["metric.names.formats"] == "legacy"


@pytest.mark.parametrize(
    ("value", "formats", "kept"),
    [("new", (NEW,), "new"), ("legacy, new", (LEGACY, NEW), "legacy,new"), ("new,new", (NEW,), "new")],
)
def test_the_key_takes_kafkas_values_and_round_trips(
    value: str, formats: tuple[MetricNamesFormat, ...], kept: str
) -> None:
    cfg = MirrorSinkConfig.parse({**BASE, "metric.names.formats": value})
    assert cfg.metric_names == formats
    props = cfg.to_props()
    assert props["metric.names.formats"] == kept
    assert MirrorSinkConfig.parse(props) == cfg


@pytest.mark.parametrize("value", ["", "old", "legacy,", "Legacy", "legacy;new", "legacy,new,all"])
def test_a_bad_value_is_refused_naming_the_key(value: str) -> None:
    errors = MirrorSinkConfig.errors({**BASE, "metric.names.formats": value})
    assert list(errors) == ["metric.names.formats"]
    assert errors["metric.names.formats"][0].startswith(f"invalid value {value!r}: ")
    with pytest.raises(ConfigError) as info:
        MirrorSinkConfig.parse({**BASE, "metric.names.formats": value})
    assert info.value.key == "metric.names.formats"
    assert str(info.value).startswith("metric.names.formats:")


def test_a_bad_value_is_reported_with_the_other_problems() -> None:
    errors = MirrorSinkConfig.errors({**BASE, "metric.names.formats": "old", "tasks.max": "0"})
    assert set(errors) == {"metric.names.formats", "tasks.max"}


def test_the_key_is_documented_with_both_prefixes() -> None:
    doc = KEY_DOCS["metric.names.formats"]
    assert "metric.names.formats" in MirrorSinkConfig.known_keys()
    assert MM2 in doc and MM2_NEW in doc and "legacy,new" in doc


def test_an_mm2_file_sets_the_key_globally_or_per_flow() -> None:
    """As MirrorMaker 2 reads it: a plain key for every flow, ``A->B.metric.names.formats`` for one."""
    props = {
        "clusters": "east, west",
        "east.bootstrap.servers": "east:9092",
        "west.bootstrap.servers": "west:9092",
        "east->west.enabled": "true",
        "west->east.enabled": "true",
        "connector.type": "sink",
        "metric.names.formats": "legacy,new",
        "west->east.metric.names.formats": "new",
    }
    configs = {c["name"]: MirrorSinkConfig.parse(c) for c in connectors_from_mm2(props)}
    assert configs["east-to-west"].metric_names == (LEGACY, NEW)
    assert configs["west-to-east"].metric_names == (NEW,)
    with pytest.raises(ConfigError) as info:
        connectors_from_mm2({**props, "west->east.metric.names.formats": "newest"})
    assert info.value.key == "metric.names.formats"
