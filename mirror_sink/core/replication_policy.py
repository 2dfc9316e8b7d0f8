"""Target topic naming, as MM2's ReplicationPolicy: Default (``{alias}{sep}{topic}``) or Identity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mirror_sink.core.errors import ConfigError

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


def replication_policy(class_name: str, separator: str) -> ReplicationPolicy:
    """The policy named by ``replication.policy.class`` (short or MM2's fully qualified name)."""
    short = class_name.removeprefix(_PACKAGE)
    if short == "DefaultReplicationPolicy":
        if not separator:
            raise ConfigError("replication.policy.separator", "must not be empty")
        return DefaultReplicationPolicy(separator)
    if short == "IdentityReplicationPolicy":
        return IdentityReplicationPolicy()
    raise ConfigError(
        "replication.policy.class",
        f"unknown policy {class_name!r}; use DefaultReplicationPolicy or IdentityReplicationPolicy",
    )
