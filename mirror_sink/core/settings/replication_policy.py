"""Target topic naming, as MM2's ReplicationPolicy: Default (``{alias}{sep}{topic}``) or Identity, and
the failback link's policy, which brings topics that came from the target cluster home by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mirror_sink.core.base.errors import ConfigError

_PACKAGE = "org.apache.kafka.connect.mirror."


class ReplicationPolicy(Protocol):
    """Maps a source topic to its target topic name and recognises topics that came from a cluster."""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """The target topic that mirrors ``topic`` of the cluster named ``source_alias``."""
        ...

    def topic_source(self, topic: str) -> str | None:
        """The alias of the cluster ``topic`` was mirrored from, or None for a local topic."""
        ...

    def upstream_topic(self, topic: str) -> str | None:
        """The name ``topic`` had on the cluster it was mirrored from, or None for a local topic."""
        ...


@dataclass(frozen=True)
class DefaultReplicationPolicy:
    """``us-east.orders`` mirrors ``orders`` of cluster ``us-east`` (MM2's default)."""

    separator: str = "."

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """Prefix the topic with the source alias and the separator."""
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """The prefix before the first separator, if any."""
        alias, sep, _ = topic.partition(self.separator)
        return alias if sep and alias else None

    def upstream_topic(self, topic: str) -> str | None:
        """What follows the first separator, for a remote topic."""
        source = self.topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator) :]


@dataclass(frozen=True)
class IdentityReplicationPolicy:
    """Target topics keep the source names (migrations); cycles cannot be detected."""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """The topic name, unchanged."""
        return topic

    def topic_source(self, topic: str) -> str | None:
        """Unknown: identity-mirrored topics carry no trace of their origin."""
        return None

    def upstream_topic(self, topic: str) -> str | None:
        """Unknown, as its source."""
        return None


@dataclass(frozen=True)
class FailbackReplicationPolicy(DefaultReplicationPolicy):
    """A failback's reverse link: ``us-east.orders`` on the new primary returns to ``orders`` on the
    old primary ``us-east`` (``home``), the one narrow exception to the cycle rule. Every other topic
    is named as by the Default policy."""

    home: str = ""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """The upstream name for a topic that came from ``home``; the Default name otherwise."""
        if self.returns_home(topic):
            return topic[len(self.home) + len(self.separator) :]
        return super().format_remote_topic(source_alias, topic)

    def returns_home(self, topic: str) -> bool:
        """``topic`` came from ``home`` (one hop): this link brings it back under its own name."""
        return bool(self.home) and self.topic_source(topic) == self.home


def returns_home(policy: ReplicationPolicy, topic: str) -> bool:
    """True only on a failback's reverse link, for a topic it brings home: not a cycle there."""
    return isinstance(policy, FailbackReplicationPolicy) and policy.returns_home(topic)


def is_cycle(policy: ReplicationPolicy, topic: str, target_alias: str) -> bool:
    """True when ``topic`` came from ``target_alias`` at any hop: mirroring it there would loop.

    MirrorMaker 2's ``MirrorSourceConnector.isCycle``: follow the topic's upstream chain
    (``b.a.orders`` -> ``a.orders`` -> ``orders``) and stop at a local topic.
    """
    while (source := policy.topic_source(topic)) is not None:
        if source == target_alias:
            return True
        upstream = policy.upstream_topic(topic)
        if upstream is None or upstream == topic:  # a policy that cannot tell (Identity-like)
            return False
        topic = upstream
    return False


def replication_policy(class_name: str, separator: str, target_alias: str = "") -> ReplicationPolicy:
    """The policy named by ``replication.policy.class`` (short or MM2's fully qualified name);
    ``FailbackReplicationPolicy`` brings home the topics that came from ``target_alias``."""
    short = class_name.removeprefix(_PACKAGE)
    if short in ("DefaultReplicationPolicy", "FailbackReplicationPolicy") and not separator:
        raise ConfigError("replication.policy.separator", "must not be empty")
    if short == "DefaultReplicationPolicy":
        return DefaultReplicationPolicy(separator)
    if short == "FailbackReplicationPolicy":
        return FailbackReplicationPolicy(separator, target_alias)
    if short == "IdentityReplicationPolicy":
        return IdentityReplicationPolicy()
    raise ConfigError(
        "replication.policy.class",
        f"unknown policy {class_name!r}; use DefaultReplicationPolicy or IdentityReplicationPolicy "
        "(FailbackReplicationPolicy: a failback's reverse link)",
    )
