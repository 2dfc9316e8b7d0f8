"""Target topic naming: DefaultReplicationPolicy and IdentityReplicationPolicy."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.settings.replication_policy import (
    DefaultReplicationPolicy,
    FailbackReplicationPolicy,
    IdentityReplicationPolicy,
    is_cycle,
    replication_policy,
    returns_home,
)

FQCN = "org.apache.kafka.connect.mirror."


def test_default_prefixes_alias_and_separator() -> None:
    policy = replication_policy("DefaultReplicationPolicy", ".")
    assert policy.format_remote_topic("us-east", "orders") == "us-east.orders"
    assert policy.topic_source("us-east.orders") == "us-east"


@pytest.mark.parametrize(
    ("separator", "remote"),
    [(".", "src.orders.v1"), ("_", "src_orders.v1"), ("-", "src-orders.v1"), ("::", "src::orders.v1")],
)
def test_default_with_custom_separator(separator: str, remote: str) -> None:
    policy = replication_policy("DefaultReplicationPolicy", separator)
    assert policy == DefaultReplicationPolicy(separator)
    assert policy.format_remote_topic("src", "orders.v1") == remote
    assert policy.topic_source(remote) == "src"


def test_default_topic_source_of_local_topics_is_none() -> None:
    policy = DefaultReplicationPolicy()
    assert policy.topic_source("orders") is None
    assert policy.topic_source(".orders") is None, "an empty prefix is not an alias"
    assert DefaultReplicationPolicy("_").topic_source("us-east.orders") is None


def test_default_topic_source_is_the_first_segment() -> None:
    """``a.b.orders`` was mirrored from ``a`` (the outermost hop), as in MM2."""
    assert DefaultReplicationPolicy().topic_source("a.b.orders") == "a"


def test_identity_keeps_names_and_knows_no_source() -> None:
    policy = replication_policy("IdentityReplicationPolicy", ".")
    assert isinstance(policy, IdentityReplicationPolicy)
    assert policy.format_remote_topic("us-east", "orders") == "orders"
    assert policy.topic_source("us-east.orders") is None


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("DefaultReplicationPolicy", DefaultReplicationPolicy),
        (FQCN + "DefaultReplicationPolicy", DefaultReplicationPolicy),
        ("IdentityReplicationPolicy", IdentityReplicationPolicy),
        (FQCN + "IdentityReplicationPolicy", IdentityReplicationPolicy),
    ],
)
def test_short_and_fully_qualified_names_are_accepted(name: str, kind: type) -> None:
    assert isinstance(replication_policy(name, "."), kind)


def test_fqcn_default_policy_uses_the_separator() -> None:
    policy = replication_policy(FQCN + "DefaultReplicationPolicy", "_")
    assert policy.format_remote_topic("src", "orders") == "src_orders"


@pytest.mark.parametrize(
    "name",
    ["Foo", "defaultreplicationpolicy", "com.example.DefaultReplicationPolicy", FQCN + "Foo", ""],
)
def test_unknown_policy_names_replication_policy_class(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        replication_policy(name, ".")
    assert info.value.key == "replication.policy.class"
    assert str(info.value).startswith("replication.policy.class:")


def test_empty_separator_is_refused_for_default_policy() -> None:
    with pytest.raises(ConfigError) as info:
        replication_policy("DefaultReplicationPolicy", "")
    assert info.value.key == "replication.policy.separator"


def test_identity_policy_ignores_the_separator() -> None:
    assert isinstance(replication_policy("IdentityReplicationPolicy", ""), IdentityReplicationPolicy)


@given(
    separator=st.sampled_from([".", "_", "-", "#"]),
    alias=st.text(min_size=1),
    topic=st.text(),
)
def test_default_topic_source_inverts_format(separator: str, alias: str, topic: str) -> None:
    assume(separator not in alias)
    policy = DefaultReplicationPolicy(separator)
    assert policy.topic_source(policy.format_remote_topic(alias, topic)) == alias


@given(
    separator=st.text(min_size=1, max_size=3),
    alias=st.text(min_size=1),
    topic=st.text(),
)
def test_default_topic_source_inverts_format_multichar_separator(separator: str, alias: str, topic: str) -> None:
    """With a multi-character separator the alias must also not end in a prefix of it.

    e.g. alias ``a-`` with separator ``--`` gives ``a---x``, whose first separator starts inside the alias.
    """
    assume(separator not in alias + separator[:-1])
    policy = DefaultReplicationPolicy(separator)
    assert policy.topic_source(policy.format_remote_topic(alias, topic)) == alias


def test_multichar_separator_overlapping_the_alias_is_ambiguous() -> None:
    """Same as MM2 (``topic.split(separator)[0]``): the first occurrence wins."""
    policy = DefaultReplicationPolicy("--")
    assert policy.topic_source(policy.format_remote_topic("a-", "x")) == "a"


def _mm2_topic_source(topic: str, separator: str) -> str | None:
    """MirrorMaker 2's DefaultReplicationPolicy.topicSource, with Java's ``Pattern.split`` semantics
    (trailing empty strings dropped; a leading one kept)."""
    parts = topic.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts[0] if len(parts) >= 2 else None


def _mm2_is_cycle(topic: str, separator: str, target: str) -> bool:
    """MirrorSourceConnector.isCycle, recursive as in MirrorMaker 2."""
    source = _mm2_topic_source(topic, separator)
    if source is None:
        return False
    if source == target:
        return True
    upstream = topic[len(source) + len(separator) :]
    if upstream == topic:
        return False
    return _mm2_is_cycle(upstream, separator, target)


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("orders", False),
        ("us-east.orders", True),  # came straight from the target
        ("us-west.orders", False),
        ("us-west.us-east.orders", True),  # from the target two hops ago: MM2 follows the chain
        ("eu.us-west.us-east.orders", True),
        ("eu.us-west.orders", False),
        ("us-west.orders.us-east", False),  # the alias appears, but not as a hop
    ],
)
def test_cycle_detection_follows_the_upstream_chain_like_mm2(topic: str, expected: bool) -> None:
    policy = DefaultReplicationPolicy()
    assert is_cycle(policy, topic, "us-east") is expected
    assert _mm2_is_cycle(topic, ".", "us-east") is expected


@given(
    separator=st.sampled_from([".", "_", "-", "::"]),
    hops=st.lists(st.sampled_from(["a", "b", "c", "us-east", "dc1"]), max_size=4),
    local=st.sampled_from(["orders", "x", "orders.v1", "a_b"]),
    target=st.sampled_from(["a", "b", "us-east"]),
)
def test_cycle_detection_agrees_with_mm2(separator: str, hops: list[str], local: str, target: str) -> None:
    """For every topic built by mirroring through a chain of clusters, both say the same."""
    policy = DefaultReplicationPolicy(separator)
    topic = local
    for alias in hops:
        topic = policy.format_remote_topic(alias, topic)
    assert is_cycle(policy, topic, target) == _mm2_is_cycle(topic, separator, target)


def test_identity_policy_detects_no_cycle_as_mm2() -> None:
    """MM2 stops where the upstream topic is unknown or the same: identity-mirrored topics never loop-check."""
    assert not is_cycle(IdentityReplicationPolicy(), "us-east.orders", "us-east")


def test_the_failback_link_brings_topics_home_by_name_and_names_others_by_default() -> None:
    policy = replication_policy("FailbackReplicationPolicy", ".", "us-east")
    assert isinstance(policy, FailbackReplicationPolicy)
    assert policy.format_remote_topic("us-west", "us-east.orders") == "orders", "home under its own name"
    assert policy.format_remote_topic("us-west", "payments") == "us-west.payments", "a local topic: Default"
    assert policy.format_remote_topic("us-west", "eu.orders") == "us-west.eu.orders", "from a third cluster"


def test_only_the_failback_link_and_only_for_topics_it_brings_home_is_excepted_from_the_cycle_rule() -> None:
    home = replication_policy("FailbackReplicationPolicy", ".", "us-east")
    default = replication_policy("DefaultReplicationPolicy", ".", "us-east")
    assert is_cycle(home, "us-east.orders", "us-east") and returns_home(home, "us-east.orders")
    assert is_cycle(default, "us-east.orders", "us-east") and not returns_home(default, "us-east.orders")
    # Two hops from home: the reverse link's own copy of a topic that went round; never brought back.
    assert is_cycle(home, "us-west.us-east.orders", "us-east") and not returns_home(home, "us-west.us-east.orders")
    assert not returns_home(home, "orders")
