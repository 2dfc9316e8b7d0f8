"""A cluster's refusal of an operation, said the way an operator fixes it: operation, resource, principal.

Kafka's errors name only the resource type (TOPIC_AUTHORIZATION_FAILED and so on); the call that
failed knows the operation and the resource, and the client settings tell the principal. A denial is
final for the task (``TaskFailure``): retrying cannot grant an ACL, and a retry storm would only flood
the broker's authorizer log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient
from cryptography import x509

from mirror_sink.core.base.errors import TaskFailure

#: Kafka's authorization error codes -> the resource type each refuses.
AUTHORIZATION_ERRORS = {29: "TOPIC", 30: "GROUP", 31: "CLUSTER", 53: "TRANSACTIONAL_ID"}

_CERTIFICATE_KEYS = ("ssl.certificate.location", "ssl.certificate.pem", "ssl.keystore.location")
_ACL_FLAG = {"TOPIC": "--topic", "GROUP": "--group", "TRANSACTIONAL_ID": "--transactional-id"}


@cache
def _certificate_subject(path: str) -> str | None:
    try:
        return x509.load_pem_x509_certificate(Path(path).read_bytes()).subject.rfc4514_string()
    except (OSError, ValueError):
        return None


def principal_of(props: Mapping[str, str]) -> str:
    """The principal a cluster sees for client settings ``props``, as far as the client can tell.

    SASL: ``User:{sasl.username}``. TLS with a client certificate: the certificate's subject, before
    the broker's ``ssl.principal.mapping.rules`` (which only the broker knows). Otherwise ANONYMOUS.
    """
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol.startswith("SASL"):
        user = props.get("sasl.username")
        return f"User:{user}" if user else "the SASL principal"
    if protocol == "SSL" and any(props.get(k) for k in _CERTIFICATE_KEYS):
        subject = _certificate_subject(props.get("ssl.certificate.location", ""))
        if subject:
            return f"User:{subject} (before the broker's ssl.principal.mapping.rules)"
        return "the certificate's principal"  # a keystore or inline PEM: not read here
    return "User:ANONYMOUS"


class AuthorizationFailure(TaskFailure):
    """``cluster`` refused ``operation`` on a resource to ``principal``: the task ends FAILED, not retried."""

    def __init__(
        self,
        cluster: str,
        operation: str,
        resource_type: str,
        resources: Iterable[str],
        principal: str,
        *,
        cause: str = "",
        implied_by: str | None = None,
    ) -> None:
        names = sorted(set(resources))
        self.cluster, self.operation, self.resource_type = cluster, operation, resource_type
        self.resources, self.principal = names, principal
        shown = ", ".join(f"'{n}'" for n in names) if names else "(the cluster)"
        also = f" (or {implied_by}, which implies it)" if implied_by else ""
        flag = _ACL_FLAG.get(resource_type, "--cluster")
        target = f"{flag} '{names[0]}'" if names and flag != "--cluster" else flag
        hint = (
            f"grant it with kafka-acls.sh --add --allow-principal {principal.split(' ', maxsplit=1)[0]} "
            f"--operation {operation.title().replace('_', '')} {target}"
        )
        super().__init__(
            f"the {cluster} cluster denied {operation}{also} on {resource_type} {shown} to {principal}"
            + (f" ({cause})" if cause else "")
            + f"; {hint}"
        )


def denial(
    code: int,
    cluster: str,
    props: Mapping[str, str],
    operation: str,
    resources: Iterable[str],
    *,
    cause: str = "",
    implied_by: str | None = None,
) -> AuthorizationFailure | None:
    """An ``AuthorizationFailure`` when ``code`` is an authorization error, else None."""
    resource_type = AUTHORIZATION_ERRORS.get(code)
    if resource_type is None:
        return None
    return AuthorizationFailure(
        cluster,
        operation,
        resource_type,
        resources,
        principal_of(props),
        cause=cause,
        implied_by=implied_by,
    )


#: librdkafka sometimes reports a broker's refusal inside another error (a failed transactional
#: offset commit, a fatal init): its text still names the kind of authorization that failed.
_REFUSAL_TEXT = (
    ("transactional id authorization failed", 53),
    ("topic authorization failed", 29),
    ("group authorization failed", 30),
    ("cluster authorization failed", 31),
)


def refusal_code(code: int, text: str) -> int | None:
    """The authorization error behind a client error (its code, or named in its text), else None."""
    if code in AUTHORIZATION_ERRORS:
        return code
    lowered = text.lower()
    return next((c for needle, c in _REFUSAL_TEXT if needle in lowered), None)


@dataclass(frozen=True)
class ClientIdentity:
    """Who a client is on a cluster and which group and transactional.id it uses: what a refusal of
    one of its calls can be about."""

    cluster: str
    props: Mapping[str, str] = field(repr=False)  # holds passwords
    transactional_id: str | None = None
    group_id: str | None = None

    def refused(self, code: int, text: str, topics: Iterable[str], topic_operation: str) -> AuthorizationFailure | None:
        """The denial behind error ``code``/``text`` of a call on ``topics`` (``topic_operation`` on them)."""
        found = refusal_code(code, text)
        if found is None:
            return None
        operation, names = {
            "TOPIC": (topic_operation, list(topics)),
            "GROUP": ("READ", [self.group_id or ""]),
            "TRANSACTIONAL_ID": ("WRITE", [self.transactional_id or ""]),
            "CLUSTER": ("IDEMPOTENT_WRITE", []),
        }[AUTHORIZATION_ERRORS[found]]
        return denial(found, self.cluster, self.props, operation, names, cause=text)


def lacking(admin: AdminClient, topics: Iterable[str], operation: str, timeout_s: float = 10.0) -> list[str]:
    """The ``topics`` on which the admin client's principal lacks ``operation`` (KIP-430's authorized
    operations); topics it cannot even describe count as lacking it. Errors of the check itself
    (a timeout) report nothing: it only sharpens a failure already under way."""
    wanted = AclOperation[operation]
    out = []
    try:
        futures = admin.describe_topics(TopicCollection(sorted(set(topics))), include_authorized_operations=True)
        for topic, future in futures.items():
            try:
                allowed = future.result(timeout_s).authorized_operations or []
            except KafkaException as exc:
                if refusal_code(exc.args[0].code(), exc.args[0].str()) is not None:
                    out.append(topic)
                continue
            if wanted not in allowed and AclOperation.ALL not in allowed:
                out.append(topic)
    except Exception:  # the check is advisory
        return []
    return out
