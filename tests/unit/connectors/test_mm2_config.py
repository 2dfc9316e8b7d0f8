"""MirrorMaker 2 dedicated-mode files (KIP-382) turned into MirrorSinkConnector configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.mm2_config import connectors_from_mm2, load_mm2_file
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.settings.config_files import parse_properties

REALISTIC = """\
# MirrorMaker 2 dedicated mode, primary -> backup, run by mirror-sink
clusters = primary, backup

primary.bootstrap.servers = primary-1:9092,primary-2:9092
primary.security.protocol = SASL_SSL
primary.sasl.mechanism = SCRAM-SHA-512
primary.sasl.username = mirror
primary.sasl.password = primary-secret
primary.consumer.fetch.min.bytes = 1000

backup.bootstrap.servers = backup-1:9092
backup.security.protocol = SASL_SSL
backup.sasl.mechanism = PLAIN
backup.sasl.username = mirror
backup.sasl.password = backup-secret
backup.producer.linger.ms = 50

primary->backup.enabled = true
primary->backup.topics = orders.*
backup->primary.enabled = false

connector.type = sink
transaction.producer = true
tasks.max = 4
replication.factor = 3

# MM2-only settings, meaningless to a sink connector
emit.heartbeats.enabled = false
sync.group.offsets.enabled = true
checkpoints.topic.replication.factor = 3
"""

# The smallest valid two-cluster file with flow A->B enabled.
BASE: dict[str, str] = {
    "clusters": "A, B",
    "A.bootstrap.servers": "a:9092",
    "B.bootstrap.servers": "b:9092",
    "A->B.enabled": "true",
    "connector.type": "sink",
}


def _only(props: dict[str, str]) -> dict[str, str]:
    """The single connector config ``props`` yields."""
    configs = connectors_from_mm2(props)
    assert len(configs) == 1
    return configs[0]


def _error(props: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        connectors_from_mm2(props)
    return info.value


# -- a realistic file ----------------------------------------------------------------------------


def test_realistic_file_maps_every_key() -> None:
    configs = connectors_from_mm2(parse_properties(REALISTIC))
    assert configs == [
        {
            "name": "primary-to-backup",
            "connector.class": "MirrorSinkConnector",
            "connector.type": "sink",
            "source.cluster.alias": "primary",
            "target.cluster.alias": "backup",
            "source.cluster.bootstrap.servers": "primary-1:9092,primary-2:9092",
            "target.cluster.bootstrap.servers": "backup-1:9092",
            "transaction.producer": "true",
            "tasks.max": "4",
            "replication.factor": "3",
            "source.cluster.security.protocol": "SASL_SSL",
            "source.cluster.sasl.mechanism": "SCRAM-SHA-512",
            "source.cluster.sasl.username": "mirror",
            "source.cluster.sasl.password": "primary-secret",
            "source.cluster.consumer.fetch.min.bytes": "1000",
            "target.cluster.security.protocol": "SASL_SSL",
            "target.cluster.sasl.mechanism": "PLAIN",
            "target.cluster.sasl.username": "mirror",
            "target.cluster.sasl.password": "backup-secret",
            "target.cluster.producer.linger.ms": "50",
            "topics": "orders.*",
        }
    ]


def test_realistic_file_gives_the_clients_their_settings() -> None:
    cfg = MirrorSinkConfig.parse(connectors_from_mm2(parse_properties(REALISTIC))[0])
    assert cfg.name == "primary-to-backup"
    assert (cfg.source_alias, cfg.target_alias) == ("primary", "backup")
    assert cfg.tasks_max == 4
    assert cfg.transaction_producer is True
    assert cfg.replication_factor == 3
    assert cfg.topic_filter().accepts("orders.eu")
    assert not cfg.topic_filter().accepts("payments")
    assert cfg.source_consumer() == {
        "bootstrap.servers": "primary-1:9092,primary-2:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "mirror",
        "sasl.password": "primary-secret",
        "fetch.min.bytes": "1000",
    }
    assert cfg.target_producer() == {
        "bootstrap.servers": "backup-1:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "mirror",
        "sasl.password": "backup-secret",
        "linger.ms": "50",
    }
    assert "linger.ms" not in cfg.target_consumer()
    assert "fetch.min.bytes" not in cfg.source_admin()


# -- flows ---------------------------------------------------------------------------------------


def test_two_flows_with_per_flow_overrides() -> None:
    props = {
        **BASE,
        "B->A.enabled": "true",
        "topics": "orders",
        "tasks.max": "2",
        "A->B.tasks.max": "8",
        "B->A.topics": "payments, refunds",
        "B->A.replication.policy.separator": "_",
        "B->A.offset.fallback": "latest",
        "A.consumer.fetch.min.bytes": "1000",
        "A.producer.linger.ms": "20",
        "B.consumer.fetch.min.bytes": "2000",
        "B.producer.linger.ms": "50",
    }
    a_to_b, b_to_a = connectors_from_mm2(props)
    assert a_to_b["name"] == "A-to-B"
    assert (a_to_b["source.cluster.alias"], a_to_b["target.cluster.alias"]) == ("A", "B")
    assert a_to_b["source.cluster.bootstrap.servers"] == "a:9092"
    assert a_to_b["target.cluster.bootstrap.servers"] == "b:9092"
    assert a_to_b["tasks.max"] == "8"
    assert a_to_b["topics"] == "orders"
    assert "replication.policy.separator" not in a_to_b
    assert "offset.fallback" not in a_to_b
    assert a_to_b["source.cluster.consumer.fetch.min.bytes"] == "1000"
    assert a_to_b["target.cluster.producer.linger.ms"] == "50"
    assert not any(k.startswith(("source.cluster.producer.", "target.cluster.consumer.")) for k in a_to_b)

    assert b_to_a["name"] == "B-to-A"
    assert (b_to_a["source.cluster.alias"], b_to_a["target.cluster.alias"]) == ("B", "A")
    assert b_to_a["source.cluster.bootstrap.servers"] == "b:9092"
    assert b_to_a["target.cluster.bootstrap.servers"] == "a:9092"
    assert b_to_a["tasks.max"] == "2"
    assert b_to_a["topics"] == "payments, refunds"
    assert b_to_a["replication.policy.separator"] == "_"
    assert b_to_a["offset.fallback"] == "latest"
    assert b_to_a["source.cluster.consumer.fetch.min.bytes"] == "2000"
    assert b_to_a["target.cluster.producer.linger.ms"] == "20"
    assert MirrorSinkConfig.parse(b_to_a).replication_policy().format_remote_topic("B", "payments") == ("B_payments")


def test_flows_follow_the_order_of_clusters() -> None:
    props = {**BASE, "clusters": "C, B, A", "C.bootstrap.servers": "c:9092", "C->A.enabled": "true"}
    props |= {"B->C.enabled": "true"}
    assert [c["name"] for c in connectors_from_mm2(props)] == ["C-to-A", "B-to-C", "A-to-B"]


@pytest.mark.parametrize("value", ["false", "", "yes", "1", "on"])
def test_flows_not_explicitly_true_are_skipped(value: str) -> None:
    props = {**BASE, "A->B.enabled": value, "B->A.topics": "x"}
    assert connectors_from_mm2(props) == []


def test_flow_without_enabled_is_skipped_and_case_is_ignored() -> None:
    props = {**BASE, "A->B.topics": "orders", "B->A.enabled": "TRUE"}
    del props["A->B.enabled"]
    assert [c["name"] for c in connectors_from_mm2(props)] == ["B-to-A"]


def test_settings_of_disabled_flows_are_not_validated() -> None:
    props = {**BASE, "B->A.enabled": "false", "B->A.tasks.max": "0", "B->A.connector.type": "source"}
    assert _only(props)["name"] == "A-to-B"


def test_cluster_needs_no_bootstrap_servers_when_no_enabled_flow_uses_it() -> None:
    props = {**BASE, "clusters": "A, B, C"}
    assert _only(props)["name"] == "A-to-B"


def test_flow_to_itself_is_refused() -> None:
    err = _error({**BASE, "A->A.enabled": "true"})
    assert err.key == "A->A.enabled"
    assert "two different clusters" in err.message


def test_connector_names_that_collide_are_refused() -> None:
    props = {
        "clusters": "a, b-to-c, a-to-b, c",
        **{f"{alias}.bootstrap.servers": f"{alias}:9092" for alias in ("a", "b-to-c", "a-to-b", "c")},
        "a->b-to-c.enabled": "true",
        "a-to-b->c.enabled": "true",
        "connector.type": "sink",
    }
    err = _error(props)
    assert err.key == "a-to-b->c.enabled"
    assert "a->b-to-c" in err.message


def test_aliases_with_dots_match_the_longest_alias() -> None:
    props = {
        "clusters": "us, us.east",
        "us.bootstrap.servers": "us:9092",
        "us.east.bootstrap.servers": "east:9092",
        "us.east.security.protocol": "SSL",
        "us.east->us.enabled": "true",
        "us.east->us.topics": "orders",
        "connector.type": "sink",
    }
    config = _only(props)
    assert config["name"] == "us.east-to-us"
    assert config["source.cluster.bootstrap.servers"] == "east:9092"
    assert config["source.cluster.security.protocol"] == "SSL"
    assert config["target.cluster.bootstrap.servers"] == "us:9092"
    assert "target.cluster.security.protocol" not in config
    assert config["topics"] == "orders"


# -- client settings -----------------------------------------------------------------------------


def test_cluster_admin_settings_follow_the_cluster_role() -> None:
    props = {**BASE, "A.admin.request.timeout.ms": "1000", "B.admin.request.timeout.ms": "2000"}
    config = _only(props)
    assert config["source.cluster.admin.request.timeout.ms"] == "1000"
    assert config["target.cluster.admin.request.timeout.ms"] == "2000"


def test_global_client_shorthands_go_to_their_clients() -> None:
    props = {
        **BASE,
        "consumer.max.poll.records": "500",
        "producer.batch.size": "65536",
        "admin.request.timeout.ms": "3000",
    }
    config = _only(props)
    assert config["source.cluster.consumer.max.poll.records"] == "500"
    assert config["target.cluster.producer.batch.size"] == "65536"
    assert config["source.cluster.admin.request.timeout.ms"] == "3000"
    assert config["target.cluster.admin.request.timeout.ms"] == "3000"
    assert not any(k.startswith(("consumer.", "producer.", "admin.")) for k in config)


def test_flow_settings_beat_cluster_settings_which_beat_global_ones() -> None:
    props = {
        **BASE,
        "B->A.enabled": "true",
        "producer.linger.ms": "1",
        "B.producer.linger.ms": "2",
        "A->B.producer.linger.ms": "3",
        "consumer.fetch.min.bytes": "10",
        "A.consumer.fetch.min.bytes": "20",
    }
    a_to_b, b_to_a = connectors_from_mm2(props)
    assert a_to_b["target.cluster.producer.linger.ms"] == "3"
    assert a_to_b["source.cluster.consumer.fetch.min.bytes"] == "20"
    assert b_to_a["target.cluster.producer.linger.ms"] == "1"
    assert b_to_a["source.cluster.consumer.fetch.min.bytes"] == "10"


def test_cluster_settings_are_not_plain_keys() -> None:
    config = _only({**BASE, "A.security.protocol": "SSL"})
    assert config["source.cluster.security.protocol"] == "SSL"
    assert not any(k.startswith(("A.", "B.", "A->B")) or k in {"clusters", "enabled"} for k in config)


# -- connector.type ------------------------------------------------------------------------------


def test_source_connector_type_is_refused() -> None:
    err = _error({**BASE, "connector.type": "source"})
    assert err.key == "connector.type"
    assert "connector.type=sink" in err.message
    assert "transaction.producer=true" in err.message
    assert "KIP-656" in err.message
    assert "A->B" in err.message


def test_missing_connector_type_is_refused() -> None:
    props = dict(BASE)
    del props["connector.type"]
    err = _error(props)
    assert err.key == "connector.type"
    assert "connector.type=sink" in err.message
    assert "MirrorSourceConnector" in err.message
    assert "A->B" in err.message


def test_unknown_connector_type_is_refused() -> None:
    err = _error({**BASE, "connector.type": "checkpoint"})
    assert err.key == "connector.type"
    assert "'checkpoint'" in err.message
    assert "connector.type=sink" in err.message


def test_per_flow_connector_type_wins() -> None:
    props = {**BASE, "connector.type": "source", "A->B.connector.type": "sink"}
    assert _only(props)["connector.type"] == "sink"
    props = {**BASE, "B->A.enabled": "true", "B->A.connector.type": "source"}
    err = _error(props)
    assert err.key == "connector.type"
    assert "B->A" in err.message


# -- missing and unknown clusters ----------------------------------------------------------------


@pytest.mark.parametrize("clusters", [None, "", " , "])
def test_clusters_is_required(clusters: str | None) -> None:
    props = dict(BASE)
    if clusters is None:
        del props["clusters"]
    else:
        props["clusters"] = clusters
    assert _error(props).key == "clusters"


def test_invalid_alias_is_refused() -> None:
    err = _error({**BASE, "clusters": "A, B, bad alias"})
    assert err.key == "clusters"
    assert "'bad alias'" in err.message


@pytest.mark.parametrize("missing", ["A", "B"])
def test_bootstrap_servers_are_required(missing: str) -> None:
    props = dict(BASE)
    del props[f"{missing}.bootstrap.servers"]
    err = _error(props)
    assert err.key == f"{missing}.bootstrap.servers"
    assert "A->B" in err.message


def test_empty_bootstrap_servers_are_refused() -> None:
    assert _error({**BASE, "B.bootstrap.servers": ""}).key == "B.bootstrap.servers"


@pytest.mark.parametrize(
    ("key", "unknown"),
    [("A->C.enabled", "'C'"), ("C->A.enabled", "'C'"), ("C->B.topics", "'C'"), ("A->BB.tasks.max", "'BB'")],
)
def test_flow_with_unknown_alias_is_refused(key: str, unknown: str) -> None:
    err = _error({**BASE, key: "true"})
    assert err.key == key
    assert unknown in err.message
    assert "A, B" in err.message


@pytest.mark.parametrize("key", ["A->B", "A->B."])
def test_malformed_flow_key_is_refused(key: str) -> None:
    assert _error({**BASE, key: "true"}).key == key


# -- keys the file must not set ------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "name",
        "source.cluster.alias",
        "target.cluster.alias",
        "source.cluster.bootstrap.servers",
        "target.cluster.bootstrap.servers",
    ],
)
def test_keys_derived_from_the_flow_are_refused(key: str) -> None:
    assert _error({**BASE, key: "x"}).key == key
    assert _error({**BASE, f"A->B.{key}": "x"}).key == f"A->B.{key}"


def test_sink_connector_class_is_accepted_and_others_refused() -> None:
    java_name = "org.apache.kafka.connect.mirror.MirrorSinkConnector"
    assert _only({**BASE, "connector.class": java_name})["connector.class"] == "MirrorSinkConnector"
    source_class = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
    assert _error({**BASE, "A->B.connector.class": source_class}).key == "A->B.connector.class"


# -- MM2-only keys -------------------------------------------------------------------------------

MM2_ONLY = [
    "emit.heartbeats.enabled",
    "emit.heartbeats.interval.seconds",
    "emit.checkpoints.enabled",
    "emit.checkpoints.interval.seconds",
    "sync.group.offsets.enabled",
    "sync.group.offsets.interval.seconds",
    "refresh.groups.enabled",
    "refresh.groups.interval.seconds",
    "groups",
    "groups.exclude",
    "offset-syncs.topic.replication.factor",
    "heartbeats.topic.replication.factor",
    "checkpoints.topic.replication.factor",
    "offset.storage.replication.factor",
    "status.storage.replication.factor",
    "config.storage.replication.factor",
    "dedicated.mode.enable.internal.rest",
    "some.other.topic.replication.factor",
]


@pytest.mark.parametrize("key", MM2_ONLY)
def test_mm2_only_keys_are_dropped(key: str) -> None:
    config = _only({**BASE, key: "1", f"A->B.{key}": "2"})
    assert not any(k.endswith(key) for k in config)


def test_mm2_only_keys_of_clusters_and_worker_settings_are_dropped() -> None:
    props = {
        **BASE,
        "B.offset.storage.replication.factor": "1",
        "B.config.storage.topic": "mm2-configs",
        "config.providers": "file",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
    }
    config = _only(props)
    assert not any("storage" in k or k.startswith("config.providers") for k in config)


def test_plain_replication_factor_is_kept() -> None:
    config = _only({**BASE, "replication.factor": "3", "A->B.replication.factor": "2"})
    assert config["replication.factor"] == "2"


def test_other_connector_keys_pass_through() -> None:
    props = {
        **BASE,
        "offset.fallback": "source-group",
        "refresh.topics.interval.ms": "30000",
        "replication.policy.class": "IdentityReplicationPolicy",
        "transaction.producer": "false",
        "A->B.topics.exclude": "tmp.*",
        # The sink connector syncs topic ACLs itself, so an mm2.properties that turns it off is obeyed.
        "sync.topic.acls.enabled": "false",
        "A->B.sync.topic.acls.interval.seconds": "60",
    }
    config = _only(props)
    for key, value in props.items():
        if key not in BASE:
            assert config[key.removeprefix("A->B.")] == value


# -- values MirrorSinkConfig refuses -------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "reported"),
    [
        ("A->B.tasks.max", "0", "tasks.max"),
        ("tasks.max", "many", "tasks.max"),
        ("offset.fallback", "somewhere", "offset.fallback"),
        ("A->B.topics", "orders(", "topics"),
    ],
)
def test_bad_values_are_reported_with_their_connector_key(key: str, value: str, reported: str) -> None:
    err = _error({**BASE, key: value})
    assert err.key == reported
    assert any("A->B" in note for note in err.__notes__)


# -- files ---------------------------------------------------------------------------------------


def test_load_mm2_file(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(
        "# dedicated mode\n"
        "! another comment\n"
        "clusters = A, B\n"
        "A.bootstrap.servers = a-1:9092,\\\n"
        "    a-2:9092\n"
        "B.bootstrap.servers: b:9092\n"
        "A->B.enabled = true\n"
        "A->B.topics = orders, \\\n"
        "   payments\n"
        "connector.type = sink\n"
        "transaction.producer = true\n"
    )
    assert load_mm2_file(path) == [
        {
            "name": "A-to-B",
            "connector.class": "MirrorSinkConnector",
            "connector.type": "sink",
            "source.cluster.alias": "A",
            "target.cluster.alias": "B",
            "source.cluster.bootstrap.servers": "a-1:9092,a-2:9092",
            "target.cluster.bootstrap.servers": "b:9092",
            "transaction.producer": "true",
            "topics": "orders, payments",
        }
    ]


def test_load_mm2_file_realistic(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(REALISTIC)
    assert load_mm2_file(path) == connectors_from_mm2(parse_properties(REALISTIC))


def test_unreadable_mm2_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_mm2_file(tmp_path / "absent.properties")
    assert info.value.key == "mm2 file"
    assert "absent.properties" in info.value.message


def test_mm2_file_that_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "binary.properties"
    path.write_bytes(b"clusters = \xff\xfe\n")
    with pytest.raises(ConfigError) as info:
        load_mm2_file(path)
    assert info.value.key == "mm2 file"
    assert "UTF-8" in info.value.message


def test_errors_in_the_file_keep_their_keys(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text("clusters = A, B\nA.bootstrap.servers = a:9092\nA->B.enabled = true\nconnector.type = sink\n")
    with pytest.raises(ConfigError) as info:
        load_mm2_file(path)
    assert info.value.key == "B.bootstrap.servers"
