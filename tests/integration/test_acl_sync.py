"""Topic ACL sync against the secured pair (StandardAuthorizer on both clusters), run as the
least-privilege ``mirror`` principal: the mirrored topic's ACLs reach its target topic the way MM2
copies them, and a principal without the right to list ACLs still mirrors, with one clear warning.
Against clusters without an authorizer the sync turns itself off with one INFO line."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from devkafka.cluster import LocalKafkaCluster
from devkafka.data import Rec, produce
from devkafka.endpoints import KafkaEndpoint
from devkafka.pair import DevClusters
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import shadow_caught_up
from tests.integration.harness.topics import TopicFactory
from tests.integration.harness.waiting import wait_until
from tests.integration.secured import acls_for, create_bindings, grant, revoke, secured_config

pytestmark = pytest.mark.timeout(180)

Op, ALLOW, DENY = AclOperation, AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
#: (principal, operation, permission) of one ACL; the stubs type the enums as unions with str and int.
Entry = tuple[str, object, object]


def _acl(
    topic: str,
    principal: str,
    op: AclOperation,
    permission: AclPermissionType = ALLOW,
    pattern: ResourcePatternType = LITERAL,
) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, topic, pattern, principal, "*", op, permission)


def _topic_acls(cluster: LocalKafkaCluster, topic: str) -> set[Entry]:
    """(principal, operation, permission) of the literal ACLs on ``topic``, read as the super user."""
    admin = AdminClient(cluster.client_config)
    query = AclBindingFilter(ResourceType.TOPIC, topic, LITERAL, None, None, Op.ANY, AclPermissionType.ANY)  # type: ignore[arg-type]
    bindings: list[AclBinding] = admin.describe_acls(query, request_timeout=30).result()
    return {(b.principal, b.operation, b.permission_type) for b in bindings}


def _start_topic(new_topic: TopicFactory, pair: DevClusters, base: str) -> str:
    topic = new_topic(base, 2, on=pair.source)
    produce(pair.source.client_config, topic, [Rec(b"k", b"v%d" % i, partition=i % 2) for i in range(100)])
    return topic


def test_mirrored_topic_acls_reach_the_target_as_mm2_copies_them(
    secured_pair: DevClusters, mirror: MirrorFactory, unique: Callable[[str], str], new_topic: TopicFactory
) -> None:
    name = unique("acl-sync")
    alice, bob, carol, dave, erin, frank = (
        f"User:{unique(n)}" for n in ("alice", "bob", "carol", "dave", "erin", "frank")
    )
    topic = _start_topic(new_topic, secured_pair, "acl-sync")
    other = new_topic("acl-sync-other", 1, on=secured_pair.source)
    create_bindings(
        secured_pair.source,
        [
            _acl(topic, alice, Op.READ),
            _acl(topic, bob, Op.WRITE),  # only the mirror writes the target topic: not copied
            _acl(topic, carol, Op.ALL),  # copied as READ
            _acl(topic, dave, Op.READ, DENY),  # copied: it keeps narrowing ALLOWs on the target too
            _acl(topic[:-3], erin, Op.READ, pattern=PREFIXED),  # a prefix names no topic: not copied
            _acl(other, alice, Op.READ),  # a topic this connector does not mirror
        ],
    )
    config = secured_config(
        name, secured_pair, topic, sync__topic__acls__enabled="true", sync__topic__acls__interval__seconds="2"
    )
    grant(secured_pair, acls_for(config, [topic]))
    process = mirror(config).start()
    target_topic = f"source.{topic}"
    ours = {alice, bob, carol, dave, erin, frank}
    expected: set[Entry] = {(alice, Op.READ, ALLOW), (carol, Op.READ, ALLOW), (dave, Op.READ, DENY)}

    def synced() -> set[Entry]:
        return {a for a in _topic_acls(secured_pair.target, target_topic) if a[0] in ours}

    wait_until(
        lambda: not process.alive() or synced() == expected,
        60,  # from the process's start: it first connects to both secured clusters and provisions topics
        "the topic ACLs on the target",
        detail=lambda: f"on the target: {synced()}\n{process.log_tail()}",
    )
    assert process.alive(), process.log_tail()
    # A later source ACL arrives at the next interval, without a restart.
    create_bindings(secured_pair.source, [_acl(topic, frank, Op.DESCRIBE)])
    wait_until(
        lambda: (frank, Op.DESCRIBE, ALLOW) in synced(),
        20,
        "a new ACL synced at the next interval",
        detail=lambda: f"on the target: {synced()}\n{process.log_tail()}",
    )
    assert synced() == expected | {(frank, Op.DESCRIBE, ALLOW)}
    assert not _topic_acls(secured_pair.target, f"source.{other}")
    wait_until(
        lambda: shadow_caught_up(secured_pair.source, topic, secured_pair.target, target_topic, f"connect-{name}"),
        60,
        "the mirror to catch up",
    )
    assert process.alive(), process.log_tail()
    process.stop()
    log = process.log_text()
    assert "topic ACL sync: " in log, log
    assert "WARN" not in log, log


@pytest.mark.parametrize(("how", "principal"), [("sasl", "User:mirror"), ("mtls", "User:CN=mirror,")])
def test_without_describe_on_the_source_cluster_it_mirrors_and_warns_once(
    secured_pair: DevClusters,
    mirror: MirrorFactory,
    unique: Callable[[str], str],
    new_topic: TopicFactory,
    how: str,
    principal: str,
) -> None:
    name = unique("acl-sync-denied")
    topic = _start_topic(new_topic, secured_pair, "acl-sync-denied")
    config = secured_config(
        name, secured_pair, topic, how, sync__topic__acls__enabled="true", sync__topic__acls__interval__seconds="1"
    )
    acls = acls_for(config, [topic])
    describe = [a for a in acls if a.cluster == "source" and a.resource_type == "CLUSTER"]
    assert [(a.operation, a.required) for a in describe] == [("DESCRIBE", False)]
    grant(secured_pair, [a for a in acls if a not in describe])
    revoke(secured_pair, describe)  # an earlier test of the session may have granted it
    process = mirror(config).start()
    target_topic = f"source.{topic}"
    wait_until(
        lambda: (
            not process.alive()
            or shadow_caught_up(secured_pair.source, topic, secured_pair.target, target_topic, f"connect-{name}")
        ),
        60,
        "the mirror to catch up without ACL sync",
    )
    assert process.alive(), process.log_tail()
    wait_until(lambda: process.log_text().count("topic ACL sync") >= 1, 10, "the ACL sync warning")
    produce(secured_pair.source.client_config, topic, [Rec(b"k", b"late")])  # several intervals later, still mirroring
    wait_until(
        lambda: shadow_caught_up(secured_pair.source, topic, secured_pair.target, target_topic, f"connect-{name}"),
        30,
        "the mirror to keep mirroring",
    )
    assert process.alive(), process.log_tail()
    process.stop()
    log = process.log_text()
    warnings = [line for line in log.splitlines() if "WARN" in line]
    assert len(warnings) == 1, log
    for part in ("DescribeAcls", "source cluster", principal, "DESCRIBE on CLUSTER 'kafka-cluster'"):
        assert part in warnings[0], (part, warnings[0])
    assert "FAILED" not in log, log


def test_clusters_without_an_authorizer_turn_it_off_with_one_info_line(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    mirror: MirrorFactory,
    unique: Callable[[str], str],
    new_topic: TopicFactory,
) -> None:
    topic, name = new_topic("acl-sync-plain", 1), unique("acl-sync-plain")
    produce(source.bootstrap_servers, topic, [Rec(b"k", b"v%d" % i) for i in range(20)])
    config = mirror_config(
        name, source, target, topic, sync__topic__acls__enabled="true", sync__topic__acls__interval__seconds="1"
    )
    process = mirror(config).start()
    wait_until(
        lambda: not process.alive() or shadow_caught_up(source, topic, target, f"source.{topic}", f"connect-{name}"),
        60,
        "the mirror to catch up",
    )
    wait_until(lambda: "topic ACL sync" in process.log_text(), 10, "the ACL sync's one line")
    produce(source.bootstrap_servers, topic, [Rec(b"k", b"late")])  # a few intervals later
    wait_until(
        lambda: shadow_caught_up(source, topic, target, f"source.{topic}", f"connect-{name}"), 30, "more mirroring"
    )
    assert process.alive(), process.log_tail()
    process.stop()
    log = process.log_text()
    lines = [line for line in log.splitlines() if "topic ACL sync" in line]
    assert len(lines) == 1, log
    assert " INFO " in lines[0] and "the source cluster has no authorizer" in lines[0], lines[0]
    assert "WARN" not in log, log
