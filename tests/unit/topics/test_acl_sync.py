"""Topic ACL sync without a broker: MM2's mapping (MirrorSourceConnector.syncTopicAcls), and how the
sync reacts to clusters without an authorizer or without the rights it needs."""

from __future__ import annotations

import logging
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ConfigResource,
    ResourcePatternType,
    ResourceType,
)

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.clients.authorization import principal_of
from mirror_sink.topics.acl_sync import ANY_TOPIC_ACL, TopicAclSync, target_acl_bindings
from mirror_sink.topics.required_acls import RequiredAcl, required_acls

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation


def _config(**overrides: str) -> MirrorSinkConfig:
    return MirrorSinkConfig.parse(
        {
            "name": "m",
            "source.cluster.bootstrap.servers": "s:9092",
            "target.cluster.bootstrap.servers": "t:9092",
            **{k.replace("__", "."): v for k, v in overrides.items()},
        }
    )


def acl(
    topic: str,
    principal: str,
    operation: AclOperation,
    permission: AclPermissionType = ALLOW,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
    restype: ResourceType = ResourceType.TOPIC,
) -> AclBinding:
    return AclBinding(restype, topic, pattern, principal, "*", operation, permission)


def test_write_dropped_all_downgraded_to_read_and_renamed() -> None:
    source = [
        acl("orders", "User:alice", Op.READ),
        acl("orders", "User:bob", Op.WRITE),
        acl("orders", "User:carol", Op.ALL),
        acl("orders", "User:dave", Op.DESCRIBE),
    ]
    assert target_acl_bindings(source, _config()) == sorted(
        [
            acl("source.orders", "User:alice", Op.READ),
            acl("source.orders", "User:carol", Op.READ),
            acl("source.orders", "User:dave", Op.DESCRIBE),
        ]
    )


def test_deny_bindings_are_kept_unchanged_as_mm2_does() -> None:
    # MM2's shouldReplicateAcl drops only ALLOW WRITE and targetAclBinding downgrades only ALLOW ALL:
    # a DENY (even DENY WRITE or DENY ALL) reaches the target as it is, so it keeps narrowing an ALLOW.
    source = [
        acl("orders", "User:mallory", Op.READ, DENY),
        acl("orders", "User:mallory", Op.WRITE, DENY),
        acl("orders", "User:mallory", Op.ALL, DENY),
    ]
    assert target_acl_bindings(source, _config()) == sorted(
        [
            acl("source.orders", "User:mallory", Op.READ, DENY),
            acl("source.orders", "User:mallory", Op.WRITE, DENY),
            acl("source.orders", "User:mallory", Op.ALL, DENY),
        ]
    )


def test_topics_this_connector_does_not_mirror_are_dropped() -> None:
    config = _config(topics="orders.*", topics__exclude="orders-tmp")
    source = [
        acl("orders", "User:a", Op.READ),
        acl("orders-tmp", "User:a", Op.READ),  # excluded
        acl("payments", "User:a", Op.READ),  # not included
        acl("__consumer_offsets", "User:a", Op.READ),  # internal: never mirrored
    ]
    assert target_acl_bindings(source, config) == [acl("source.orders", "User:a", Op.READ)]


def test_cycles_are_dropped() -> None:
    # target.orders came from the target: it is not mirrored back, nor are its ACLs.
    source = [acl("target.orders", "User:a", Op.READ), acl("other.orders", "User:a", Op.READ)]
    assert target_acl_bindings(source, _config()) == [acl("source.other.orders", "User:a", Op.READ)]


def test_prefixed_patterns_are_dropped() -> None:
    source = [acl("orders", "User:a", Op.READ, pattern=ResourcePatternType.PREFIXED)]
    assert target_acl_bindings(source, _config()) == []


def test_the_wildcard_is_a_literal_name_to_mm2() -> None:
    # Kafka's wildcard is LITERAL '*'. MM2 runs it through the topic filter like a name: the default
    # topics=.* lets it through and the policy renames it, as for any topic.
    wildcard = [acl("*", "User:a", Op.ALL)]
    assert target_acl_bindings(wildcard, _config()) == [acl("source.*", "User:a", Op.READ)]
    identity = _config(replication__policy__class="IdentityReplicationPolicy")
    assert target_acl_bindings(wildcard, identity) == [acl("*", "User:a", Op.READ)]
    # A filter of plain names does not match '*': nothing is synced.
    assert target_acl_bindings(wildcard, _config(topics="orders")) == []


def test_renamed_by_the_replication_policy() -> None:
    source = [acl("orders", "User:a", Op.READ)]
    custom = _config(source__cluster__alias="east", replication__policy__separator="_")
    assert target_acl_bindings(source, custom) == [acl("east_orders", "User:a", Op.READ)]
    identity = _config(replication__policy__class="org.apache.kafka.connect.mirror.IdentityReplicationPolicy")
    assert target_acl_bindings(source, identity) == [acl("orders", "User:a", Op.READ)]


def test_principal_and_host_kept_and_duplicates_merged() -> None:
    source = [
        AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:a", "10.0.0.1", Op.ALL, ALLOW),
        AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:a", "10.0.0.1", Op.READ, ALLOW),
    ]
    assert target_acl_bindings(source, _config()) == [
        AclBinding(ResourceType.TOPIC, "source.t", ResourcePatternType.LITERAL, "User:a", "10.0.0.1", Op.READ, ALLOW)
    ]


def test_non_topic_bindings_are_ignored() -> None:
    assert target_acl_bindings([acl("g", "User:a", Op.READ, restype=ResourceType.GROUP)], _config()) == []


def test_principal_of_client_settings() -> None:
    sasl = {"security.protocol": "SASL_SSL", "sasl.username": "mirror"}
    assert principal_of(sasl) == "User:mirror"
    mtls = {"security.protocol": "SSL", "ssl.certificate.location": "/c.pem"}
    assert principal_of(mtls) == "the certificate's principal"
    assert principal_of({}) == "User:ANONYMOUS"


def test_keys_default_to_mm2s() -> None:
    config = _config()
    assert config.sync_topic_acls_enabled is True
    assert config.sync_topic_acls_interval_s == 600
    assert _config(sync__topic__acls__interval__seconds="2").sync_topic_acls_interval_s == 2


def test_required_acls_lists_the_two_optional_cluster_acls() -> None:
    wanted = [
        RequiredAcl("source", "DESCRIBE", "CLUSTER", "kafka-cluster", "LITERAL", "", required=False),
        RequiredAcl("target", "ALTER", "CLUSTER", "kafka-cluster", "LITERAL", "", required=False),
    ]

    def cluster_acls(config: MirrorSinkConfig) -> list[tuple[str, str, bool]]:
        return [
            (a.cluster, a.operation, a.required) for a in required_acls(config, ["t"]) if a.resource_type == "CLUSTER"
        ]

    assert cluster_acls(_config()) == [(a.cluster, a.operation, a.required) for a in wanted]
    assert cluster_acls(_config(sync__topic__acls__enabled="false")) == []
    # Only optional ones: the least-privilege table of what must be granted stays as it was.
    disabled = [a for a in required_acls(_config(sync__topic__acls__enabled="false"), ["t"]) if a.required]
    assert [a for a in required_acls(_config(), ["t"]) if a.required] == disabled


# -- the sync's reaction to refusals (fake admin clients: only what TopicAclSync calls) ------------


def _done(result: Any = None, error: int | None = None) -> Future[Any]:
    future: Future[Any] = Future()
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(KafkaException(KafkaError(error)))
    return future


class FakeAdmin:
    """``describe``: the topic ACLs, or the error the broker answers DescribeAcls with. Like librdkafka
    2.16, DescribeAcls then yields an empty list (``surfaces_errors`` makes it raise, as a fixed client
    would); DescribeCluster and DescribeConfigs answer as Kafka does for that error."""

    def __init__(
        self,
        describe: list[AclBinding] | int | None = None,
        create_error: int | None = None,
        *,
        surfaces_errors: bool = False,
    ) -> None:
        self.describe = describe if describe is not None else []
        self.create_error = create_error
        self.surfaces_errors = surfaces_errors
        self.created: list[AclBinding] = []
        self.calls = 0

    def describe_acls(self, acl_filter: object, **_: Any) -> Future[Any]:
        assert acl_filter == ANY_TOPIC_ACL
        self.calls += 1
        if isinstance(self.describe, int):
            return _done(error=self.describe) if self.surfaces_errors else _done([])
        return _done(list(self.describe))

    def describe_cluster(self, **_: Any) -> Future[Any]:
        denied = self.describe == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        ops = None if denied else [Op.DESCRIBE, Op.ALTER, Op.CLUSTER_ACTION]
        return _done(SimpleNamespace(authorized_operations=ops, nodes=[SimpleNamespace(id=1)]))

    def describe_configs(self, resources: list[ConfigResource], **_: Any) -> dict[ConfigResource, Future[Any]]:
        assert [(r.restype, r.name) for r in resources] == [(ConfigResource.Type.BROKER, "1")]
        no_authorizer = self.describe == KafkaError.SECURITY_DISABLED
        value = "" if no_authorizer else "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        return {resources[0]: _done({"authorizer.class.name": SimpleNamespace(value=value)})}

    def create_acls(self, bindings: list[AclBinding], **_: Any) -> dict[AclBinding, Future[Any]]:
        self.calls += 1
        if self.create_error is None:
            self.created += bindings
        return {b: _done(error=self.create_error) for b in bindings}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _sync(source: FakeAdmin, target: FakeAdmin, clock: Clock, **overrides: str) -> TopicAclSync:
    config = _config(
        source__cluster__security__protocol="SASL_SSL",
        source__cluster__sasl__username="mirror",
        target__cluster__security__protocol="SASL_SSL",
        **overrides,
    )
    log = logging.getLogger("test_acl_sync")
    return TopicAclSync(config, source, target, log, clock=clock)  # type: ignore[arg-type]


def test_syncs_on_start_then_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    source = FakeAdmin([acl("t", "User:a", Op.ALL), acl("t", "User:b", Op.WRITE)])
    target, clock = FakeAdmin(), Clock()
    sync = _sync(source, target, clock, sync__topic__acls__interval__seconds="60")
    sync.maybe_sync()
    assert target.created == [acl("source.t", "User:a", Op.READ)]
    sync.maybe_sync()
    assert source.calls == 1, "not due yet"
    clock.now += 60
    sync.maybe_sync()
    assert source.calls == 2
    # The count is logged when it changes, not at every sync.
    assert sum("1 ACL bindings of mirrored topics" in r.message for r in caplog.records) == 1


SURFACES = pytest.mark.parametrize("surfaces", [False, True], ids=["librdkafka-2.16", "error-surfaced"])


@SURFACES
@pytest.mark.parametrize("cluster", ["source", "target"])
def test_no_authorizer_turns_the_sync_off_with_one_info_line(
    caplog: pytest.LogCaptureFixture, cluster: str, surfaces: bool
) -> None:
    caplog.set_level(logging.DEBUG)
    disabled = KafkaError.SECURITY_DISABLED
    source = FakeAdmin(disabled if cluster == "source" else [acl("t", "User:a", Op.READ)], surfaces_errors=surfaces)
    target, clock = FakeAdmin(create_error=disabled if cluster == "target" else None), Clock()
    sync = _sync(source, target, clock, sync__topic__acls__interval__seconds="1")
    for _ in range(3):
        sync.maybe_sync()
        clock.now += 5
    assert sync.off
    assert source.calls == 1, "stops trying"
    lines = [r for r in caplog.records if "topic ACL sync" in r.message]
    assert [r.levelno for r in lines] == [logging.INFO]
    assert f"the {cluster} cluster has no authorizer" in lines[0].message


@SURFACES
@pytest.mark.parametrize(
    ("cluster", "request_", "operation"), [("source", "DescribeAcls", "DESCRIBE"), ("target", "CreateAcls", "ALTER")]
)
def test_missing_right_is_one_warning_and_retried_each_interval(
    caplog: pytest.LogCaptureFixture, cluster: str, request_: str, operation: str, surfaces: bool
) -> None:
    caplog.set_level(logging.INFO)
    denied = KafkaError.CLUSTER_AUTHORIZATION_FAILED
    source = FakeAdmin(denied if cluster == "source" else [acl("t", "User:a", Op.READ)], surfaces_errors=surfaces)
    target, clock = FakeAdmin(create_error=denied if cluster == "target" else None), Clock()
    sync = _sync(
        source, target, clock, sync__topic__acls__interval__seconds="10", target__cluster__sasl__username="tgt"
    )
    for _ in range(3):
        sync.maybe_sync()
        clock.now += 10
    assert source.calls == 3, "retried at each interval"
    assert not sync.off
    warnings = [r.message for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    principal = "User:mirror" if cluster == "source" else "User:tgt"
    for part in (request_, f"{cluster} cluster", principal, f"{operation} on CLUSTER 'kafka-cluster'"):
        assert part in warnings[0], (part, warnings[0])
    assert "FAILED" not in caplog.text, "a skipped ACL sync must not read like a failed task"
    assert sync.problem == warnings[0], "the readiness score's measured drift"


def test_disabled_never_calls_the_clusters() -> None:
    source, target = FakeAdmin(), FakeAdmin()
    _sync(source, target, Clock(), sync__topic__acls__enabled="false").maybe_sync()
    assert source.calls == target.calls == 0


def test_no_topic_acls_at_all_is_not_mistaken_for_a_refusal(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    source, target, clock = FakeAdmin([]), FakeAdmin(), Clock()
    sync = _sync(source, target, clock, sync__topic__acls__interval__seconds="1")
    for _ in range(3):
        sync.maybe_sync()
        clock.now += 1
    assert not sync.off
    assert source.calls == 3
    assert target.calls == 0, "nothing to create"
    assert [r.levelno for r in caplog.records] == [logging.INFO], "the count once, no warning"


def test_whole_source_transactions_add_the_coordinator_log_and_the_group_cuts_topic_once_each() -> None:
    config = _config(source__transactions__whole="true")
    added = [(a.cluster, a.operation, a.resource_name, a.required) for a in required_acls(config, ["t"])]
    assert added.count(("source", "READ", "__transaction_state", False)) == 1, added
    cuts = config.group_cuts_partition
    assert cuts is not None and cuts.topic == "mirror-sink-group-cuts.source.internal"
    assert ("target", "WRITE", cuts.topic, True) in added and ("target", "CREATE", cuts.topic, True) in added
    assert not [a for a in required_acls(_config(), ["t"]) if a.resource_name in ("__transaction_state", cuts.topic)]


def test_bindings_the_target_refused_are_drift_until_a_sync_places_them() -> None:
    source = FakeAdmin([acl("t", "User:a", Op.READ), acl("t", "User:b", Op.READ)])
    target, clock = FakeAdmin(create_error=KafkaError.INVALID_REQUEST), Clock()
    sync = _sync(source, target, clock, sync__topic__acls__interval__seconds="1")
    sync.maybe_sync()
    assert sync.problem == "2 topic ACL bindings could not be created on target"
    target.create_error = None
    clock.now += 1
    sync.maybe_sync()
    assert sync.problem is None
