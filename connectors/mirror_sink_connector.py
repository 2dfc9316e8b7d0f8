"""MirrorSinkConnector: validates the config, provisions target topics, and hands tasks their topics."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka.admin import AdminClient

from connectors.mirror_sink_task import MirrorSinkTask
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.preflight import check_cluster
from mirror_sink.core.runtime.logs import context_logger
from mirror_sink.core.settings.replication_policy import IdentityReplicationPolicy
from mirror_sink.topics.acl_sync import TopicAclSync
from mirror_sink.topics.coordinators import ask_coordinators
from mirror_sink.topics.source_discovery import TopicMapping
from mirror_sink.topics.topic_provisioner import TopicProvisioner

log = logging.getLogger(__name__)


class MirrorSinkConnector:
    """The connector half of KIP-656's design: one per connector, whatever the number of tasks.

    Tasks are subscription-based (the shadow group assigns partitions), so every task gets the same
    topic mappings; ``refresh`` finds new source topics and partitions and provisions them, and
    ``sync_topic_acls`` copies the mirrored topics' ACLs on their own interval (MM2's topic ACL sync).
    """

    def __init__(self, props: Mapping[str, Any]) -> None:
        self.config = MirrorSinkConfig.parse(props)
        self.log = context_logger(__name__, self.config.name, connector=self.config.name)
        self.mappings: dict[str, TopicMapping] = {}
        self._provisioner: TopicProvisioner | None = None
        self._acl_sync: TopicAclSync | None = None

    def check_clusters(self) -> None:
        """A refused certificate or password, said in one line, before anything touches a cluster."""
        check_cluster("source", self.config.source_admin())
        check_cluster("target", self.config.target_admin())

    def start(self) -> dict[str, TopicMapping]:
        """Connect to both clusters and provision the target topics; returns the mappings."""
        cfg = self.config
        source_admin = clients.admin(cfg.source_admin(), client_id=f"{cfg.name}-connector-source")
        target_admin = clients.admin(cfg.target_admin(), client_id=f"{cfg.name}-connector-target")
        _refuse_mirroring_onto_itself(cfg, source_admin, target_admin)
        # Before CreateTopics: a target that has no __consumer_offsets or __transaction_state yet
        # creates and loads them while the topics are made, not after (mirror_sink.topics.coordinators).
        ask_coordinators(
            cfg.target_admin(),
            f"{cfg.name}-connector-coordinators",
            cfg.shadow_group_id,
            f"{cfg.name}-connector" if cfg.transaction_producer else None,
        )
        # The tasks hold back each partition until its own leader serves it: a short wait for them all here.
        self._provisioner = TopicProvisioner(cfg, source_admin, target_admin, tasks_wait_for_leaders=True)
        self._acl_sync = TopicAclSync(cfg, source_admin, target_admin, self.log)
        self._provisioner.create_internal_topics()
        self.mappings = self._provisioner.reconcile()
        self._acl_sync.maybe_sync()  # after the target topics exist, as MM2 orders it
        self.log.info(
            "mirroring %d topics from %s to %s: %s",
            len(self.mappings),
            cfg.source_alias,
            cfg.target_alias,
            ", ".join(f"{m.source_topic}->{m.target_topic}" for m in self.mappings.values()) or "none yet",
        )
        return self.mappings

    def refresh(self) -> bool:
        """Re-discover and provision topics; True when the mappings changed."""
        if self._provisioner is None:
            raise RuntimeError("refresh() before start()")
        mappings = self._provisioner.reconcile()
        if mappings == self.mappings:
            return False
        added = sorted(set(mappings) - set(self.mappings))
        self.log.info("topic mappings changed (new target topics: %s)", ", ".join(added) or "none")
        self.mappings = mappings
        return True

    def topic_acls_due(self) -> bool:
        """True when ``sync_topic_acls`` would sync now."""
        return self._acl_sync is not None and self._acl_sync.due()

    def topic_acl_problem(self) -> str | None:
        """Why the target's topic ACLs may differ from the source's (None: in step, or not synced)."""
        return self._acl_sync.problem if self._acl_sync is not None else None

    def task(self, task_id: int, worker_id: str) -> MirrorSinkTask:
        """Task ``task_id`` on worker ``worker_id``, with the current topic mappings (not started).

        Every task gets the same mappings: the shadow group assigns the partitions among them."""
        return MirrorSinkTask(self.config, task_id, worker_id, self.mappings)

    def sync_topic_acls(self) -> None:
        """Copy the mirrored topics' ACLs to the target when ``sync.topic.acls.interval.seconds`` has
        passed since the last sync (a no-op before ``start``, when disabled, or when not due); never raises."""
        if self._acl_sync is not None:
            self._acl_sync.maybe_sync()


def _refuse_mirroring_onto_itself(cfg: MirrorSinkConfig, source: AdminClient, target: AdminClient) -> None:
    """With the Identity policy, a source and target that are one cluster (two addresses of it, say)
    would mirror every topic onto itself: each record written again after itself, for ever."""
    if not isinstance(cfg.replication_policy(), IdentityReplicationPolicy):
        return
    source_id = source.describe_cluster(request_timeout=30).result(35).cluster_id
    target_id = target.describe_cluster(request_timeout=30).result(35).cluster_id
    if source_id == target_id:
        raise ConfigError(
            "replication.policy.class",
            f"source.cluster.bootstrap.servers ({cfg.source_bootstrap}) and target.cluster.bootstrap.servers "
            f"({cfg.target_bootstrap}) reach the same cluster (id {source_id}): with IdentityReplicationPolicy "
            "every topic would be mirrored onto itself. Use DefaultReplicationPolicy to copy topics within one "
            "cluster",
        )
