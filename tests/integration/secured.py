"""Helpers for tests against the secured pair: ACL grants, and connector configs with client security."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
from devkafka.data import retrying_passing_errors
from devkafka.pair import DevClusters
from devkafka.security import MIRROR_USER
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.topics.required_acls import RequiredAcl, required_acls
from tests.integration.harness.configs import FAST_SETTINGS

PRINCIPAL = f"User:{MIRROR_USER}"


def _binding(acl: RequiredAcl, principal: str) -> AclBinding:
    """``acl`` as a binding; librdkafka names Kafka's CLUSTER resource type BROKER (both are 4)."""
    return AclBinding(
        ResourceType.BROKER if acl.resource_type == "CLUSTER" else ResourceType[acl.resource_type],
        "kafka-cluster" if acl.resource_type == "CLUSTER" else acl.resource_name,
        ResourcePatternType[acl.pattern],
        principal,
        "*",
        AclOperation[acl.operation],
        AclPermissionType.ALLOW,
    )


def _filter(acl: RequiredAcl, principal: str) -> AclBindingFilter:
    b = _binding(acl, principal)
    return AclBindingFilter(
        b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type
    )


def _admin(cluster: LocalKafkaCluster) -> AdminClient:
    return AdminClient(cluster.client_config)


def create_bindings(cluster: LocalKafkaCluster, bindings: list[AclBinding]) -> None:
    """Create ``bindings`` on ``cluster`` as the super user.

    Asked again on a passing error: on a loaded CI machine CreateAcls once answered "Failed while
    waiting for controller" (_TIMED_OUT). Creating an ACL that exists is a no-op, so a retry is safe."""
    for attempt in retrying_passing_errors(60):
        with attempt:
            admin = _admin(cluster)  # held until the futures complete: destroying it fails them
            for future in admin.create_acls(bindings, request_timeout=30).values():
                future.result()


def delete_bindings(cluster: LocalKafkaCluster, filters: list[AclBindingFilter]) -> None:
    """Delete what ``filters`` match on ``cluster``; asked again on a passing error (deleting twice is a no-op)."""
    for attempt in retrying_passing_errors(60):
        with attempt:
            admin = _admin(cluster)
            for future in admin.delete_acls(filters, request_timeout=30).values():
                future.result()


def grant(pair: DevClusters, acls: Iterable[RequiredAcl], principal: str = PRINCIPAL) -> None:
    """Create ``acls`` for ``principal`` on the cluster each names."""
    wanted = list(acls)
    for name, cluster in pair.clusters.items():
        if bindings := [_binding(a, principal) for a in wanted if a.cluster == name]:
            create_bindings(cluster, bindings)


def revoke(pair: DevClusters, acls: Iterable[RequiredAcl], principal: str = PRINCIPAL) -> None:
    """Delete ``acls`` of ``principal``."""
    wanted = list(acls)
    for name, cluster in pair.clusters.items():
        if filters := [_filter(a, principal) for a in wanted if a.cluster == name]:
            delete_bindings(cluster, filters)


def client_settings(cluster: LocalKafkaCluster, prefix: str, how: str = "sasl", **extra: str) -> dict[str, str]:
    """``{prefix}.cluster.*`` connector keys for the ``mirror`` principal: SCRAM over TLS, or mTLS."""
    assert cluster.security is not None
    conf: dict[str, Any] = (
        cluster.security.sasl_ssl(cluster.bootstrap_servers, MIRROR_USER)
        if how == "sasl"
        else cluster.security.mtls(cluster.listener("MTLS"), MIRROR_USER)
    )
    conf |= extra
    return {f"{prefix}.cluster.{k}": str(v) for k, v in conf.items()}


def secured_config(name: str, pair: DevClusters, topics: str, how: str = "sasl", **overrides: str) -> dict[str, str]:
    """A connector config over the secured pair as the ``mirror`` principal."""
    return {
        "name": name,
        "connector.class": "MirrorSinkConnector",
        "topics": topics,
        **FAST_SETTINGS,
        **client_settings(pair.source, "source", how),
        **client_settings(pair.target, "target", how),
        **{k.replace("__", "."): v for k, v in overrides.items()},
    }


def acls_for(config: dict[str, str], topics: list[str]) -> list[RequiredAcl]:
    """The ACL table for ``config``."""
    return required_acls(MirrorSinkConfig.parse(config), topics)
