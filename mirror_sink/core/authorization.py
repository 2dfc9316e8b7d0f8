"""A cluster's refusal of an operation, said the way an operator fixes it: operation, resource, principal.

Kafka's errors name only the resource type (TOPIC_AUTHORIZATION_FAILED and so on); the call that
failed knows the operation and the resource, and the client settings tell the principal. A denial is
final for the task (``TaskFailure``): retrying cannot grant an ACL, and a retry storm would only flood
the broker's authorizer log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from cryptography import x509

from mirror_sink.core.errors import TaskFailure

#: Kafka's authorization error codes -> the resource type each refuses.
AUTHORIZATION_ERRORS = {29: "TOPIC", 30: "GROUP", 31: "CLUSTER", 53: "TRANSACTIONAL_ID"}

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
    if protocol.startswith("SASL") and props.get("sasl.username"):
        return f"User:{props['sasl.username']}"
    cert = props.get("ssl.certificate.location")
    if protocol == "SSL" and cert:
        subject = _certificate_subject(cert)
        if subject:
            return f"User:{subject} (before the broker's ssl.principal.mapping.rules)"
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
