"""The topic provisioner on the shared clusters: target configs synced or left to the operator, each
target topic's max.message.bytes read into the mappings where raw mode may forward batches, the
coordinators asked for before topics are made, and a task's new partitions held until served."""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from devkafka.endpoints import KafkaEndpoint
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.task.target_leaders import TargetLeaders
from mirror_sink.topics.coordinators import ask_coordinators
from mirror_sink.topics.source_discovery import TopicMapping
from mirror_sink.topics.topic_provisioner import TopicProvisioner
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.topics import TopicFactory, Unique

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
    source: KafkaEndpoint, target: KafkaEndpoint, new_topic: TopicFactory, caplog: pytest.LogCaptureFixture
) -> None:
    topic = new_topic("sync", 1, {"retention.ms": "7200000", "max.message.bytes": "300000"})
    new_topic("source.sync", 1, {"retention.ms": "60000", "max.message.bytes": "5000"}, on=target)  # source.{topic}
    with caplog.at_level(logging.INFO, "mirror_sink.topics.topic_provisioner"):
        mapping = _reconcile(source, target, topic)
    configs = _configs(target, f"source.{topic}")
    assert (configs["retention.ms"], configs["max.message.bytes"]) == ("7200000", "300000")
    assert mapping.target_max_message_bytes == 300_000, "the value config sync just set, not the one it replaced"
    assert f"synced configs of target topic source.{topic}" in caplog.text


def test_without_config_sync_the_operators_limit_is_read_and_a_recompressing_codec_is_named(
    source: KafkaEndpoint, target: KafkaEndpoint, new_topic: TopicFactory, caplog: pytest.LogCaptureFixture
) -> None:
    topic = new_topic("nosync", 1)
    operators = {"compression.type": "gzip", "max.message.bytes": "5000"}
    new_topic("source.nosync", 1, operators, on=target)  # f"source.{topic}": one suffix per test
    with caplog.at_level(logging.WARNING, "mirror_sink.topics.topic_provisioner"):
        mapping = _reconcile(source, target, topic, **{"sync.topic.configs.enabled": "false"})
    assert mapping.target_max_message_bytes == 5000
    assert _configs(target, f"source.{topic}")["compression.type"] == "gzip", "the operator's config is left alone"
    assert f"target topic source.{topic} has compression.type=gzip" in caplog.text


@pytest.mark.parametrize(("mode", "limit"), [("auto", BROKER_DEFAULT), ("raw", BROKER_DEFAULT), ("record", None)])
def test_a_created_target_topic_has_the_broker_default_limit_read_only_where_raw_mode_may_run(
    source: KafkaEndpoint, target: KafkaEndpoint, new_topic: TopicFactory, mode: str, limit: int | None
) -> None:
    topic = new_topic(f"created-{mode}", 2)
    mapping = _reconcile(source, target, topic, **{"mirror.mode": mode})
    assert (mapping.source_partitions, mapping.target_max_message_bytes) == (2, limit)


def test_the_coordinators_of_the_shadow_group_and_the_transactions_are_asked_for_before_any_topic_is_made(
    target: KafkaEndpoint, unique: Unique
) -> None:
    """A target without __consumer_offsets or __transaction_state answers COORDINATOR_NOT_AVAILABLE and
    creates them; asked again, both keys have a coordinator (the shared target may have both already)."""
    group, txn = unique("connect-coordinators"), unique("coordinators-txn")
    props = {"bootstrap.servers": target.bootstrap_servers}
    answers = ask_coordinators(props, "test-coordinators", group, txn)
    assert set(answers) == {group, txn}
    deadline = time.monotonic() + 60
    while not all(a.startswith("node ") for a in answers.values()) and time.monotonic() < deadline:
        assert all(a.startswith("node ") or "COORDINATOR" in a for a in answers.values()), answers
        time.sleep(0.5)
        answers = ask_coordinators(props, "test-coordinators", group, txn)
    assert all(a.startswith("node ") for a in answers.values()), answers
    assert list(ask_coordinators(props, "test-coordinators", group, None)) == [group], "no transactions: no txn key"


def test_a_tasks_new_target_partitions_are_held_until_their_own_leader_serves_them(
    target: KafkaEndpoint, unique: Unique, caplog: pytest.LogCaptureFixture
) -> None:
    """TargetLeaders on the real target: a topic's partitions created a moment ago wait until each
    answers a ListOffsets, then go, without the task's loop ever blocking on the check; a partition
    that does not exist waits until the limit and is then released, said once."""
    topic = unique("leaders")
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 20, 1)])[topic].result(30)
    log = logging.getLogger("test.target_leaders")
    leaders = TargetLeaders(lambda: AdminClient({"bootstrap.servers": target.bootstrap_servers}), 30.0, log)
    partitions = [TargetPartition(topic, p) for p in range(20)]
    leaders.assign(partitions)
    assert leaders.waiting == frozenset(partitions), "nothing is known served before an answer"
    deadline, polls, longest = time.monotonic() + 30, 0, 0.0
    while leaders.waiting and time.monotonic() < deadline:
        began = time.monotonic()
        leaders.poll()
        longest = max(longest, time.monotonic() - began)
        polls += 1
        time.sleep(0.01)
    assert not leaders.waiting, f"still waiting after 30 s: {sorted(leaders.waiting)[:3]}"
    assert polls > 1 and longest < 1.0, f"a poll blocked for {longest:.2f} s"
    leaders.assign(partitions[:5])
    assert not leaders.waiting, "a partition once served is not asked about again"

    missing = TargetPartition(unique("never-created"), 0)
    impatient = TargetLeaders(lambda: AdminClient({"bootstrap.servers": target.bootstrap_servers}), 2.0, log)
    impatient.assign([missing, *partitions[:2]])
    assert impatient.waiting == {missing, *partitions[:2]}
    with caplog.at_level(logging.WARNING, "test.target_leaders"):
        while missing in impatient.waiting and time.monotonic() < deadline + 10:
            impatient.poll()
            time.sleep(0.05)
    assert not impatient.waiting
    assert f"1 assigned target partitions (e.g. {missing}) have no serving leader after 2 s" in caplog.text
