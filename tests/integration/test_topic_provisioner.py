"""The topic provisioner on the shared clusters: target configs synced or left to the operator, and each
target topic's max.message.bytes read into the mappings where raw mode may forward batches."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from devkafka.backends import KafkaEndpoint
from devkafka.data import create_topic
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.topics.source_discovery import TopicMapping
from mirror_sink.topics.topic_provisioner import TopicProvisioner
from tests.integration.conftest import TopicFactory
from tests.integration.harness import Unique, mirror_config

#: A broker's max.message.bytes where nothing sets one (Kafka's default).
BROKER_DEFAULT = 1024 * 1024 + 12


def _reconcile(source: KafkaEndpoint, target: KafkaEndpoint, topic: str, **settings: str) -> TopicMapping:
    config = MirrorSinkConfig.parse(mirror_config("provisioner", source, target, topic, **settings))
    admins = (AdminClient({"bootstrap.servers": e.bootstrap_servers}) for e in (source, target))
    mappings = TopicProvisioner(config, *admins).reconcile()
    assert list(mappings) == [f"source.{topic}"], mappings
    return mappings[f"source.{topic}"]


def _configs(target: KafkaEndpoint, topic: str) -> dict[str, str]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})  # kept until the answer is in
    entries = admin.describe_configs([resource])[resource].result(30)
    return {k: e.value for k, e in entries.items()}


def test_config_sync_sets_the_source_topics_configs_and_the_mapping_carries_the_limit_in_effect(
    source: KafkaEndpoint, target: KafkaEndpoint, source_topic: TopicFactory, caplog: pytest.LogCaptureFixture
) -> None:
    topic = source_topic("sync", 1, {"retention.ms": "7200000", "max.message.bytes": "300000"})
    create_topic(target.bootstrap_servers, f"source.{topic}", 1, {"retention.ms": "60000", "max.message.bytes": "5000"})
    with caplog.at_level(logging.INFO, "mirror_sink.topics.topic_provisioner"):
        mapping = _reconcile(source, target, topic)
    configs = _configs(target, f"source.{topic}")
    assert (configs["retention.ms"], configs["max.message.bytes"]) == ("7200000", "300000")
    assert mapping.target_max_message_bytes == 300_000, "the value config sync just set, not the one it replaced"
    assert f"synced configs of target topic source.{topic}" in caplog.text


def test_without_config_sync_the_operators_limit_is_read_and_a_recompressing_codec_is_named(
    source: KafkaEndpoint, target: KafkaEndpoint, source_topic: TopicFactory, caplog: pytest.LogCaptureFixture
) -> None:
    topic = source_topic("nosync", 1)
    operators = {"compression.type": "gzip", "max.message.bytes": "5000"}
    create_topic(target.bootstrap_servers, f"source.{topic}", 1, operators)
    with caplog.at_level(logging.WARNING, "mirror_sink.topics.topic_provisioner"):
        mapping = _reconcile(source, target, topic, **{"sync.topic.configs.enabled": "false"})
    assert mapping.target_max_message_bytes == 5000
    assert _configs(target, f"source.{topic}")["compression.type"] == "gzip", "the operator's config is left alone"
    assert f"target topic source.{topic} has compression.type=gzip" in caplog.text


@pytest.mark.parametrize(("mode", "limit"), [("auto", BROKER_DEFAULT), ("raw", BROKER_DEFAULT), ("record", None)])
def test_a_created_target_topic_has_the_broker_default_limit_read_only_where_raw_mode_may_run(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, mode: str, limit: int | None
) -> None:
    topic = unique(f"created-{mode}")
    create_topic(source.bootstrap_servers, topic, 2)
    mapping = _reconcile(source, target, topic, **{"mirror.mode": mode})
    assert (mapping.source_partitions, mapping.target_max_message_bytes) == (2, limit)
