"""Which source topics a connector mirrors, and under which target names.

The topic filter, the replication policy and MirrorMaker 2's cycle rule decide it from the source
cluster's topic list alone: failover, the ACL listing and the Spark planner need this without
touching the target, which ``TopicProvisioner`` then reconciles.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.clients.authorization import AuthorizationFailure, denial
from mirror_sink.core.settings.replication_policy import is_cycle, returns_home

log = logging.getLogger(__name__)

#: A ``topics`` entry that can only be one topic's name (no regex beyond the dot in names).
_LITERAL_NAME = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class TopicMapping:
    """One mirrored topic: its source name and partition count, and its target name."""

    source_topic: str
    target_topic: str
    source_partitions: int
    #: The target topic's max.message.bytes, where raw mode may forward batches to it: a larger
    #: batch is re-encoded into smaller ones (``TopicProvisioner`` reads it; None: not read).
    target_max_message_bytes: int | None = None


def list_topics(admin: AdminClient, cluster: str, bootstrap: str, timeout_s: float) -> dict[str, int]:
    """Topic name -> partition count of every topic ``admin``'s cluster lets this principal see."""
    try:
        md = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise TaskFailure(f"{cluster} cluster at {bootstrap} did not answer a metadata request: {exc}") from exc
    out = {}
    for name, topic in md.topics.items():
        if topic.error is None:
            out[name] = len(topic.partitions)
    return out


class SourceDiscovery:
    """Lists the source cluster's topics and maps those the connector mirrors to their target names."""

    def __init__(self, config: MirrorSinkConfig, source_admin: AdminClient) -> None:
        self.config = config
        self.source_admin = source_admin
        self.topic_filter = config.topic_filter()
        self.policy = config.replication_policy()
        self.timeout_s = 30.0
        self._cycles_told: set[str] = set()

    def discover(self) -> dict[str, TopicMapping]:
        """The source topics that pass the filter, keyed by target topic name."""
        source = list_topics(self.source_admin, "source", self.config.source_bootstrap, self.timeout_s)
        self._check_hidden(source)
        mappings: dict[str, TopicMapping] = {}
        for topic, partitions in sorted(source.items()):
            if not self.topic_filter.accepts(topic):
                continue
            if is_cycle(self.policy, topic, self.config.target_alias) and not returns_home(self.policy, topic):
                if topic not in self._cycles_told:  # said once per topic, not at every refresh
                    self._cycles_told.add(topic)
                    log.info(
                        "not mirroring %s: it came from the target cluster %r (a cycle; MirrorMaker 2's isCycle)",
                        topic,
                        self.config.target_alias,
                    )
                continue
            target = self.policy.format_remote_topic(self.config.source_alias, topic)
            if target in mappings:
                raise TaskFailure(
                    f"source topics {mappings[target].source_topic!r} and {topic!r} both map to {target!r}"
                )
            mappings[target] = TopicMapping(topic, target, partitions)
        return mappings

    def _check_hidden(self, visible: dict[str, int]) -> None:
        """Fail when a topic named literally in ``topics`` is hidden by a missing ACL, not just absent.

        A principal without DESCRIBE on a topic does not see it in metadata listings, which would
        otherwise look like a topic not created yet: the mirror would run and copy nothing.
        """
        named = [t.strip() for t in self.config.topics.split(",")]
        hidden = [t for t in named if _LITERAL_NAME.fullmatch(t) and t not in visible and self.topic_filter.accepts(t)]
        if not hidden:
            return
        for topic, future in self.source_admin.describe_topics(TopicCollection(hidden)).items():
            try:
                future.result(self.timeout_s)
            except KafkaException as exc:
                denied = self._denied(exc, "DESCRIBE", [topic], implied_by="READ")
                if denied is not None:
                    raise denied from exc

    def _denied(
        self, exc: KafkaException, operation: str, names: Iterable[str], implied_by: str | None = None
    ) -> AuthorizationFailure | None:
        err = exc.args[0] if exc.args else None
        code = err.code() if isinstance(err, KafkaError) else -1
        return denial(code, "source", self.config.source_admin(), operation, names, implied_by=implied_by)
