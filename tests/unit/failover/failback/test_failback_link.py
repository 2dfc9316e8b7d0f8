"""The failback's reverse link config: the forward one turned around, for the moved topics only."""

from __future__ import annotations

from pathlib import Path

from connectors.cli.failback import finish_command
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.settings.replication_policy import FailbackReplicationPolicy, IdentityReplicationPolicy
from mirror_sink.failover.common.failover_record import FailoverRecord, PartitionCut
from mirror_sink.failover.failback.failback_link import reverse_config

FORWARD = {
    "name": "orders-mirror",
    "source.cluster.alias": "us-east",
    "target.cluster.alias": "us-west",
    "source.cluster.bootstrap.servers": "east:9092",
    "target.cluster.bootstrap.servers": "west:9092",
    "source.cluster.security.protocol": "SASL_SSL",
    "target.cluster.consumer.session.timeout.ms": "10000",
    "shadow.group.id": "forward-shadow",
    "topics": "orders|pay.*",
    "tasks.max": "3",
}


def _record() -> FailoverRecord:
    cuts = tuple(
        PartitionCut(TargetPartition(t, p), t.removeprefix("us-east."), 10, 12, 13, None)
        for t in ("us-east.orders", "us-east.pay.v2")
        for p in (0, 1)
    )
    return FailoverRecord("orders-mirror", "20261126T000000Z-aaaaaa", "disaster", "t", "us-east", None, "w", cuts, ())


def test_the_reverse_link_swaps_clusters_and_their_settings_and_takes_only_the_moved_topics() -> None:
    props = reverse_config(MirrorSinkConfig.parse(FORWARD), _record())
    reverse = MirrorSinkConfig.parse(props)
    assert (reverse.name, reverse.source_alias, reverse.target_alias) == (
        "orders-mirror-failback",
        "us-west",
        "us-east",
    )
    assert (reverse.source_bootstrap, reverse.target_bootstrap) == ("west:9092", "east:9092")
    assert props["target.cluster.security.protocol"] == "SASL_SSL" and "source.cluster.security.protocol" not in props
    assert props["source.cluster.consumer.session.timeout.ms"] == "10000"
    assert reverse.shadow_group_id == "connect-orders-mirror-failback", "its own group, not the forward one's"
    assert reverse.tasks_max == 3
    policy = reverse.replication_policy()
    assert isinstance(policy, FailbackReplicationPolicy)
    assert reverse.topic_filter().accepts("us-east.pay.v2") and not reverse.topic_filter().accepts("us-east.payXv2")
    assert not reverse.topic_filter().accepts("us-west.orders")
    assert [policy.format_remote_topic("us-west", t) for t in ("us-east.orders", "us-east.pay.v2")] == [
        "orders",
        "pay.v2",
    ]


def test_identity_named_setups_come_back_under_the_same_names() -> None:
    forward = MirrorSinkConfig.parse({**FORWARD, "replication.policy.class": "IdentityReplicationPolicy"})
    assert isinstance(
        MirrorSinkConfig.parse(reverse_config(forward, _record())).replication_policy(), IdentityReplicationPolicy
    )


def test_the_reverse_link_keeps_the_forward_links_group_filters() -> None:
    """The groups that fail back are the ones that failed over, by the same names: a finish without
    --groups must not move a group the forward link excluded."""
    forward = MirrorSinkConfig.parse({**FORWARD, "groups": "billing-.*|ledger", "groups.exclude": "billing-test.*"})
    reverse = MirrorSinkConfig.parse(reverse_config(forward, _record()))
    moves = reverse.group_filter().accepts
    assert (reverse.groups, reverse.groups_exclude) == ("billing-.*|ledger", "billing-test.*")
    assert moves("billing-eu") and moves("ledger")
    assert not moves("billing-test-1") and not moves("audit")


def test_the_finish_hint_is_a_complete_command() -> None:
    """The command printed after a failback names the reverse config as written and which groups move."""
    forward = MirrorSinkConfig.parse({**FORWARD, "groups": "billing-.*", "groups.exclude": "billing-test.*"})
    hint = finish_command(Path("my mirror.json"), Path("/etc/ms/orders-mirror-failback.json"), forward)
    assert hint.startswith(
        "mirror-sink failback 'my mirror.json' --finish --reverse-config /etc/ms/orders-mirror-failback.json "
        "--wait-caught-up 300"
    ), hint
    assert "'billing-.*'" in hint and "'billing-test.*'" in hint, hint
