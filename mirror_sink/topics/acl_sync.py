"""MirrorMaker 2's topic ACL sync (``sync.topic.acls.enabled``): the mirrored topics' ACLs, copied to
their target topics.

The rules are ``MirrorSourceConnector.syncTopicAcls`` (Kafka's connect/mirror module):

- list the source cluster's ACL bindings of TOPIC resources, any name, any pattern type;
- keep LITERAL patterns only: a PREFIXED pattern is dropped (it names no single topic);
- drop ALLOW WRITE (only the mirror writes the target topic); every other binding is kept, DENY ones
  included, so a source DENY that narrows an ALLOW still narrows it on the target;
- keep a binding only if its name passes the connector's topic filter and is not a cycle. The name
  is not checked against the source's topics: a literal ``*`` (Kafka's wildcard) is treated as a name
  like any other, so with the default ``topics=.*`` it passes and becomes ``{alias}.*`` (a literal
  that matches nothing) under DefaultReplicationPolicy, and stays the wildcard ``*`` under
  IdentityReplicationPolicy;
- rename the resource with the replication policy and downgrade ALLOW ALL to ALLOW READ;
- create the result on the target. CreateAcls is idempotent; nothing is ever deleted.

Failures never fail the connector or a task, as in MM2: a cluster without an authorizer switches the
sync off (one INFO line), a missing right is one WARNING naming it and is retried at the next interval.

librdkafka (2.16) drops DescribeAcls' top-level error: a denied request (CLUSTER_AUTHORIZATION_FAILED)
and a broker without an authorizer (SECURITY_DISABLED) both come back as an empty list. An empty answer
is therefore checked (``_why_empty``): DescribeCluster's authorized operations tell a principal without
DESCRIBE on the cluster, and the broker's ``authorizer.class.name`` tells a cluster without authorizer.
CreateAcls reports both errors per binding, as the protocol does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Literal

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    ResourcePatternType,
    ResourceType,
)

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.clients.authorization import principal_of
from mirror_sink.core.runtime.logs import Log
from mirror_sink.core.settings.replication_policy import is_cycle

#: MM2's ANY_TOPIC_ACL: every TOPIC binding, whatever its name, pattern type, principal or operation.
#: (None is the filter's documented "any"; the stubs type these arguments as str only.)
ANY_TOPIC_ACL = AclBindingFilter(
    ResourceType.TOPIC,
    None,  # type: ignore[arg-type]
    ResourcePatternType.ANY,
    None,  # type: ignore[arg-type]
    None,  # type: ignore[arg-type]
    AclOperation.ANY,
    AclPermissionType.ANY,
)

Cluster = Literal["source", "target"]
#: Why DescribeAcls came back empty: the principal may not list ACLs, the cluster has no authorizer,
#: or there really are no topic ACLs.
Emptiness = Literal["denied", "no-authorizer", "none"]
#: Cluster operations that include DESCRIBE (Kafka's implication rules).
_DESCRIBING = (AclOperation.DESCRIBE, AclOperation.ALTER, AclOperation.ALL)


def should_replicate_acl(binding: AclBinding) -> bool:
    """MM2's ``shouldReplicateAcl``: everything but ALLOW WRITE (only the mirror writes a target topic)."""
    return not (binding.permission_type == AclPermissionType.ALLOW and binding.operation == AclOperation.WRITE)


def target_acl_bindings(source: Iterable[AclBinding], config: MirrorSinkConfig) -> list[AclBinding]:
    """The target bindings MM2 would create for the source cluster's TOPIC bindings ``source``.

    Pure (no broker): filter, rename, downgrade, as in the module docstring. Sorted and without
    duplicates (an ALLOW ALL downgraded to READ can coincide with an ALLOW READ of the same principal).
    """
    topic_filter, policy = config.topic_filter(), config.replication_policy()
    out: set[AclBinding] = set()
    for b in source:
        if b.restype != ResourceType.TOPIC or b.resource_pattern_type != ResourcePatternType.LITERAL:
            continue
        if not should_replicate_acl(b):
            continue
        if not topic_filter.accepts(b.name) or is_cycle(policy, b.name, config.target_alias):
            continue
        allow_all = b.permission_type == AclPermissionType.ALLOW and b.operation == AclOperation.ALL
        out.add(
            AclBinding(
                ResourceType.TOPIC,
                policy.format_remote_topic(config.source_alias, b.name),
                ResourcePatternType.LITERAL,
                b.principal,
                b.host,
                AclOperation.READ if allow_all else b.operation,
                b.permission_type,
            )
        )
    return sorted(out)


def _error(exc: BaseException) -> KafkaError | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


class TopicAclSync:
    """Runs the sync on start and then at most every ``sync.topic.acls.interval.seconds``.

    Holds the connector's admin clients (a destroyed AdminClient fails its pending futures).
    ``maybe_sync`` never raises: ACL sync is a convenience, never a reason to stop mirroring.
    """

    def __init__(
        self,
        config: MirrorSinkConfig,
        source_admin: AdminClient,
        target_admin: AdminClient,
        log: Log,
        *,
        timeout_s: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.source_admin = source_admin
        self.target_admin = target_admin
        self.log = log
        self.timeout_s = timeout_s
        self._clock = clock
        self._lock = threading.Lock()  # start (transition thread) and tick (herder thread) never overlap
        self._next_run = 0.0
        #: Set when a cluster has no authorizer: there are no ACLs to sync until it is restarted with one.
        self.off = not config.sync_topic_acls_enabled
        self.synced: int | None = None
        self._warned: str | None = None
        #: Bindings of the last sync the target refused one by one (drift that stays).
        self._not_synced = 0

    @property
    def problem(self) -> str | None:
        """Why the target's topic ACLs may differ from the source's now (None: the last sync put
        every one in place, or there is nothing to sync): the DR readiness score's measured drift."""
        if self._warned is not None:
            return self._warned
        if self._not_synced:
            return f"{self._not_synced} topic ACL bindings could not be created on {self.config.target_alias}"
        return None

    def due(self) -> bool:
        """True when enabled and the interval has passed."""
        return not self.off and self._clock() >= self._next_run

    def maybe_sync(self) -> None:
        """Sync when enabled and due; log, never raise, on failure."""
        with self._lock:
            if self.off or self._clock() < self._next_run:
                return
            self._next_run = self._clock() + self.config.sync_topic_acls_interval_s
            try:
                self._sync()
            except Exception as exc:  # a convenience feature must not take the mirror down
                self._warn_once(
                    f"topic ACL sync failed ({exc}); mirroring goes on, next try in "
                    f"{self.config.sync_topic_acls_interval_s:g} s"
                )

    def _sync(self) -> None:
        listed: Future[list[AclBinding]]
        listed = self.source_admin.describe_acls(ANY_TOPIC_ACL, request_timeout=self.timeout_s)
        try:
            source = listed.result(self.timeout_s)
        except KafkaException as exc:
            if self._refused(_error(exc), "source", "DescribeAcls", "DESCRIBE"):
                return
            raise
        if not source:
            why = self._why_empty()
            if why != "none":
                code = (
                    KafkaError.SECURITY_DISABLED if why == "no-authorizer" else KafkaError.CLUSTER_AUTHORIZATION_FAILED
                )
                self._refused(KafkaError(code), "source", "DescribeAcls", "DESCRIBE")
                return
        bindings = target_acl_bindings(source, self.config)
        created = 0
        if bindings:
            futures = self.target_admin.create_acls(bindings, request_timeout=self.timeout_s)
            for binding, future in futures.items():
                try:
                    future.result(self.timeout_s)
                    created += 1
                except KafkaException as exc:
                    if self._refused(_error(exc), "target", "CreateAcls", "ALTER"):
                        return  # the same answer for every binding of the request
                    self.log.warning("could not sync ACL %s of target topic %s: %s", binding, binding.name, exc)
        self._not_synced = len(bindings) - created
        self._warned = None
        if created != self.synced:
            self.log.info(
                "topic ACL sync: %d ACL bindings of mirrored topics in place on %s (from %d topic ACLs on %s)",
                created,
                self.config.target_alias,
                len(source),
                self.config.source_alias,
            )
            self.synced = created

    def _why_empty(self) -> Emptiness:
        """Why the source listed no topic ACLs (see the module docstring: librdkafka hides the reason)."""
        cluster = self.source_admin.describe_cluster(include_authorized_operations=True, request_timeout=self.timeout_s)
        described = cluster.result(self.timeout_s)
        allowed = described.authorized_operations or []
        if not any(op in allowed for op in _DESCRIBING):
            return "denied"  # DescribeAcls needs DESCRIBE on the cluster; Kafka reports no operations then
        if not described.nodes:
            return "none"
        broker = ConfigResource(ConfigResource.Type.BROKER, str(described.nodes[0].id))
        try:
            configs = self.source_admin.describe_configs([broker], request_timeout=self.timeout_s)[broker]
            entry = configs.result(self.timeout_s).get("authorizer.class.name")
        except KafkaException:
            return "none"  # not allowed to read broker configs: access control is on, so an authorizer is
        return "none" if entry is not None and entry.value else "no-authorizer"

    def _refused(self, err: KafkaError | None, cluster: Cluster, request: str, operation: str) -> bool:
        """Handle the two answers that are about the cluster, not the request; True when handled."""
        if err is None:
            return False
        if err.code() == KafkaError.SECURITY_DISABLED:
            self.off = True
            self.log.info(
                "topic ACL sync is off: the %s cluster has no authorizer, so it has no ACLs to %s "
                "(set sync.topic.acls.enabled=false to skip the check)",
                cluster,
                "copy" if cluster == "source" else "receive",
            )
            return True
        if err.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
            settings = self.config.source_admin() if cluster == "source" else self.config.target_admin()
            self._warn_once(
                f"topic ACL sync skipped: {request} was denied on the {cluster} cluster; "
                f"{principal_of(settings)} needs {operation} on CLUSTER 'kafka-cluster' there. "
                f"Mirroring goes on; next try in {self.config.sync_topic_acls_interval_s:g} s "
                "(or set sync.topic.acls.enabled=false)"
            )
            return True
        return False

    def _warn_once(self, message: str) -> None:
        """One WARNING per distinct problem; repeats at DEBUG until a sync succeeds."""
        if message == self._warned:
            self.log.debug("%s", message)
        else:
            self.log.warning("%s", message)
            self._warned = message
