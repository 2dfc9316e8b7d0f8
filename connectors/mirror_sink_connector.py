"""MirrorSinkConnector: validates the config, provisions target topics, hands its tasks their topics,
and names the jobs that run beside them (checkpoints, verification, drills, lag).

It is what the runtime knows of MirrorSink, through ``mirror_sink.worker.connector_plugin``'s plain
shapes: the runtime never sees its config model, its topic mappings or its engine. What only MirrorSink
answers (lag, verification, drills, readiness, checkpoints, translation) the REST API reaches through
its extension, ``connectors.rest_extension``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka.admin import AdminClient

from connectors.jobs import JobBoard
from connectors.mirror_sink_task import MirrorSinkTask
from connectors.offsets import ConnectorOffsets
from connectors.readiness import readiness
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.authorization import AuthorizationFailure
from mirror_sink.core.clients.preflight import check_cluster
from mirror_sink.core.clients.runtime_guard import refuse_if_spark_active
from mirror_sink.core.runtime.logs import context_logger
from mirror_sink.core.settings.replication_policy import IdentityReplicationPolicy
from mirror_sink.core.telemetry.metrics import MIRROR
from mirror_sink.failover.rehearsal.readiness import Readiness
from mirror_sink.topics.acl_sync import TopicAclSync
from mirror_sink.topics.coordinators import ask_coordinators
from mirror_sink.topics.source_discovery import TopicMapping
from mirror_sink.topics.topic_provisioner import TopicProvisioner
from mirror_sink.worker.connector_plugin import (
    ConnectorJob,
    ConnectorSettings,
    JobPhase,
    MetricFamily,
    PartitionOffset,
    WatchedCluster,
)

log = logging.getLogger(__name__)


class MirrorSinkConnector:
    """The connector half of KIP-656's design: one per connector, whatever the number of tasks.

    Tasks are subscription-based (the shadow group assigns partitions), so every task gets the same
    topic mappings; ``refresh`` finds new source topics and partitions and provisions them, and
    ``reconfigure_tasks`` hands them to the tasks; ``maintain`` copies the mirrored topics' ACLs on their
    own interval (MM2's topic ACL sync).
    """

    def __init__(self, props: Mapping[str, Any]) -> None:
        self.config = cfg = MirrorSinkConfig.parse(props)
        self.settings = ConnectorSettings(
            name=cfg.name,
            tasks_max=cfg.tasks_max,
            target_bootstrap=cfg.target_bootstrap,
            target_client=dict(cfg.target_admin()),
            clusters=(
                WatchedCluster(
                    "source",
                    cfg.source_alias,
                    cfg.source_bootstrap,
                    cfg.source_unreachable_give_up_ms,
                    _security_protocol(cfg.source_admin()),
                ),
                WatchedCluster(
                    "target",
                    cfg.target_alias,
                    cfg.target_bootstrap,
                    cfg.target_unreachable_give_up_ms,
                    _security_protocol(cfg.target_admin()),
                ),
            ),
            refresh_enabled=cfg.refresh_topics_enabled,
            refresh_interval_s=cfg.refresh_topics_interval_ms / 1000,
            transaction_timeout_ms=cfg.transaction_timeout_ms,
        )
        self.log = context_logger(__name__, cfg.name, connector=cfg.name)
        self.mappings: dict[str, TopicMapping] = {}
        #: The newest task made for each task id: the ones new mappings are handed to.
        self._tasks: dict[int, MirrorSinkTask] = {}
        self._lock = threading.Lock()
        self._provisioner: TopicProvisioner | None = None
        self._acl_sync: TopicAclSync | None = None
        self.jobs_board = JobBoard(cfg, lambda: self.mappings)
        self.offsets_store = ConnectorOffsets(cfg)
        #: Why the last topic refresh (discovery, partitions, config sync) failed; None once one succeeds.
        self.refresh_problem: str | None = None

    @classmethod
    def validate(cls, props: Mapping[str, str]) -> dict[str, list[str]]:
        """Every problem of ``props`` by key (empty when valid): the shape Connect's validate shows."""
        return MirrorSinkConfig.errors(props)

    # -- lifecycle -----------------------------------------------------------------------------
    def check_clusters(self) -> None:
        """A refused certificate or password, said in one line, before anything touches a cluster."""
        check_cluster("source", self.config.source_admin())
        check_cluster("target", self.config.target_admin())

    def preflight(self) -> None:
        """Before every start or resume: the clusters' credentials, and a config for this runtime that
        no Spark query runs now (TaskFailure)."""
        self.check_clusters()
        cfg, name = self.config, self.config.name
        if cfg.runtime != "worker":
            raise TaskFailure(f"connector {name} has runtime={cfg.runtime}: run it with mirror-sink {cfg.runtime}")
        refuse_if_spark_active(clients.admin(cfg.target_admin(), f"{name}-guard"), cfg.shadow_group_id, name)

    def start(self) -> None:
        """Connect to both clusters and provision the target topics."""
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

    def refresh(self) -> bool:
        """Re-discover and provision topics; True when the mappings changed (``reconfigure_tasks`` then
        hands them to the tasks)."""
        if self._provisioner is None:
            raise RuntimeError("refresh() before start()")
        try:
            mappings = self._provisioner.reconcile()
        except (AuthorizationFailure, ConfigError):
            raise  # the runtime fails the connector: no retry fixes these
        except Exception as exc:
            # str() of a TimeoutError from a future is empty: say at least what kind of failure it was
            self.refresh_problem = str(exc) or repr(exc)
            raise
        self.refresh_problem = None
        if mappings == self.mappings:
            return False
        added = sorted(set(mappings) - set(self.mappings))
        self.log.info("topic mappings changed (new target topics: %s)", ", ".join(added) or "none")
        self.mappings = mappings
        return True

    def reconfigure_tasks(self) -> None:
        """Hand every task the current topic mappings (each applies them between cycles)."""
        with self._lock:
            tasks = list(self._tasks.values())
        for task in tasks:
            task.update_topics(self.mappings)

    def active_topics(self) -> list[str]:
        """The source topics mirrored now (Connect's active topics, KIP-558)."""
        return [m.source_topic for m in self.mappings.values()]

    def reset_active_topics(self) -> None:
        """Forget the mappings: they are recomputed at the next refresh."""
        self.mappings = {}

    def target_topics(self) -> list[str]:
        """The target topics written now."""
        return [m.target_topic for m in self.mappings.values()]

    def maintenance_due(self) -> bool:
        """True when ``maintain`` would sync the topic ACLs now."""
        return self._acl_sync is not None and self._acl_sync.due()

    def maintain(self) -> None:
        """Copy the mirrored topics' ACLs to the target when ``sync.topic.acls.interval.seconds`` has
        passed since the last sync (a no-op before ``start``, when disabled, or when not due); never raises."""
        if self._acl_sync is not None:
            self._acl_sync.maybe_sync()

    def topic_acl_problem(self) -> str | None:
        """Why the target's topic ACLs may differ from the source's (None: in step, or not synced)."""
        return self._acl_sync.problem if self._acl_sync is not None else None

    def task(self, task_id: int, worker_id: str) -> MirrorSinkTask:
        """Task ``task_id`` on worker ``worker_id``, with the current topic mappings (not started).

        Every task gets the same mappings: the shadow group assigns the partitions among them."""
        cfg = self.config
        # The metric names this config asks for, before its tasks publish (a new config comes with a
        # new connector).
        if cfg.metrics_aggregate == "topic":
            MIRROR.topic_level.add(cfg.source_alias)
        MIRROR.set_formats(cfg.name, cfg.metric_names)
        with self._lock:
            task = self._tasks[task_id] = MirrorSinkTask(cfg, task_id, worker_id, self.mappings)
        return task

    def jobs(self, phase: JobPhase) -> Sequence[ConnectorJob]:
        """New jobs of ``phase`` (not started): checkpoints, verification and drills beside the tasks,
        the lag monitor while RUNNING or PAUSED."""
        return self.jobs_board.make(phase)

    # -- what MirrorSink answers ---------------------------------------------------------------
    def readiness(self) -> Readiness:
        """The DR readiness score now, with the reasons for every point lost."""
        return readiness(
            self.config,
            self.jobs_board,
            topic_config_problem=self.refresh_problem,
            topic_acl_problem=self.topic_acl_problem(),
        )

    def metrics(self) -> Sequence[MetricFamily]:
        """The DR readiness score, ``mirror_sink_dr_readiness{connector}`` (0-100), and the points of each
        of its components, ``mirror_sink_dr_readiness_points{connector,component}``."""
        name = self.config.name
        try:
            assessed = self.readiness()
        except Exception:  # one connector's inputs must never fail the whole scrape
            log.exception("cannot compute the DR readiness of connector %s for this scrape", name)
            return [_SCORE, _POINTS]
        return [
            MetricFamily(_SCORE.name, _SCORE.documentation, _SCORE.labels, (((name,), assessed.score),)),
            MetricFamily(
                _POINTS.name,
                _POINTS.documentation,
                _POINTS.labels,
                tuple(((name, c.name), c.points) for c in assessed.components),
            ),
        ]

    # -- KIP-875 offsets -----------------------------------------------------------------------
    def offsets(self) -> list[PartitionOffset]:
        """The shadow group's offsets, keyed by the *source* partition, sorted."""
        return self.offsets_store.get()

    def alter_offsets(self, offsets: Sequence[PartitionOffset]) -> None:
        """Set source partitions' next offsets in the shadow group; removing one is not supported."""
        self.offsets_store.alter(offsets)

    def reset_offsets(self) -> None:
        """Delete the shadow group: the start-offset fallback applies at the next start."""
        self.offsets_store.reset()


_SCORE = MetricFamily(
    "mirror_sink_dr_readiness",
    "DR readiness, 0-100: lag and drills' RPO, the newest drill, verification, checkpoints, settings "
    "(GET /connectors/{name}/readiness gives the reasons).",
    ("connector",),
    (),
)
_POINTS = MetricFamily(
    "mirror_sink_dr_readiness_points",
    "The points each component of the DR readiness score gives (of its weight).",
    ("connector", "component"),
    (),
)


def _security_protocol(client_props: Mapping[str, str]) -> str:
    return str(client_props.get("security.protocol", "PLAINTEXT"))


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
