"""Before mirroring: can this client reach the cluster, over TLS and SASL, as itself? One line if not.

librdkafka and kafka-python report a refused certificate or password as a transport failure and
retry for ever. An operator needs the reason: an expired certificate, a certificate for another host,
a CA that is not trusted, a wrong password or an unknown user. This check finds it once, at start,
and fails with it (``TaskFailure``: no retry fixes a credential); an unreachable cluster is left to
the clients, which wait and retry as before.
"""

from __future__ import annotations

import os
import re
import socket
import ssl
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.clients.reachability import bootstrap_addresses

_TLS = ("SSL", "SASL_SSL")
# librdkafka's error text starts with the broker's name and ends with the time and state.
_BROKER_PREFIX = re.compile(r"^\S+://\S+?/(?:bootstrap|\d+): ")
_AFTER = re.compile(r" \(after \d+ms in state \w+\)$")


#: TLS settings Python's ssl module cannot reproduce here: with any of them the handshake is left
#: to the client itself, whose refusal still surfaces (as librdkafka's SSL error) below.
_OPAQUE_TLS = ("ssl.ca.pem", "ssl.keystore.location", "ssl.certificate.pem", "ssl.key.pem", "ssl.engine.location")


def _tls_context(props: Mapping[str, str]) -> ssl.SSLContext:
    ca = props.get("ssl.ca.location")
    if ca and ca != "probe" and os.path.isdir(ca):
        context = ssl.create_default_context(capath=ca)
    else:
        context = ssl.create_default_context(cafile=None if ca in (None, "probe") else ca)
    context.check_hostname = props.get("ssl.endpoint.identification.algorithm", "https").lower() == "https"
    if props.get("ssl.certificate.location"):
        context.load_cert_chain(
            props["ssl.certificate.location"], props.get("ssl.key.location"), props.get("ssl.key.password")
        )
    return context


def _check_tls(cluster: str, props: Mapping[str, str], deadline: Deadline) -> None:
    """A TLS handshake with the first bootstrap server that accepts a connection."""
    if any(key in props for key in _OPAQUE_TLS):
        return
    if props.get("enable.ssl.certificate.verification", "true").lower() == "false":
        return
    try:
        context = _tls_context(props)
    except (OSError, ssl.SSLError) as exc:  # unreadable CA file, certificate or key
        raise TaskFailure(f"{cluster} cluster: cannot load the TLS settings: {exc}") from exc
    for host, port in bootstrap_addresses(props["bootstrap.servers"]):
        if deadline.passed:
            return
        remaining = deadline.left()
        try:
            raw = socket.create_connection((host, port), timeout=min(remaining, 5.0))
        except OSError:
            continue  # not reachable: the clients say so, and retry
        with raw:
            try:
                with context.wrap_socket(raw, server_hostname=host):
                    return
            except ssl.SSLCertVerificationError as exc:
                reason = exc.verify_message or str(exc)
                trusted = props.get("ssl.ca.location", "the system's CA store")
                raise TaskFailure(
                    f"{cluster} cluster: TLS handshake with {host}:{port} failed: the broker's certificate was "
                    f"refused: {reason} (trusting {trusted})"
                ) from exc
            except TimeoutError:
                # A slow broker is not a refused credential (cc32: a loaded machine took over 5 s):
                # leave it to the clients, whose SASL or TLS refusal is still reported below.
                continue
            except (ssl.SSLError, OSError) as exc:
                raise TaskFailure(f"{cluster} cluster: TLS handshake with {host}:{port} failed: {exc}") from exc


def _one_line(err: KafkaError) -> str:
    return _AFTER.sub("", _BROKER_PREFIX.sub("", err.str()))


def check_cluster(cluster: str, props: Mapping[str, str], timeout_s: float = 10.0) -> None:
    """Fail with one clear line when ``props`` are refused by ``cluster`` (TLS or SASL); no-op over
    PLAINTEXT. An unreachable cluster is not this check's business: it returns, and the clients wait
    and retry as they always do."""
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol == "PLAINTEXT":
        return
    deadline = Deadline(timeout_s)
    if protocol in _TLS:
        _check_tls(cluster, props, deadline)
    errors: list[KafkaError] = []
    # Quiet: librdkafka would log each of its reconnection attempts; the one reason is reported here.
    settings: dict[str, Any] = {**props, "error_cb": errors.append, "log_level": 0}
    admin = AdminClient({**settings, "client.id": f"mirror-sink-preflight-{cluster}"})
    while not deadline.passed:
        try:
            # DescribeCluster: small whatever the topic count, and it needs no ACL. One request at a
            # time, with room to be answered: with 1 s timeouts on a loaded machine, late answers to
            # requests already timed out piled up, and one of them aborted the process inside
            # librdkafka (cc21: "rd_kafka_admin_response_parse: Assertion `rko_result' failed").
            left = deadline.left(1.0)
            admin.describe_cluster(request_timeout=min(5.0, left)).result(min(6.0, left + 1.0))
            return
        except Exception as exc:
            admin.poll(0.2)  # serve error_cb: the reason arrives as an error event
            _raise_refusal(cluster, props, errors, exc)


def _raise_refusal(cluster: str, props: Mapping[str, str], errors: list[KafkaError], exc: Exception) -> None:
    """Raise ``TaskFailure`` when an error event says the cluster refused the credentials or TLS."""
    for err in errors:
        if err.code() == KafkaError._AUTHENTICATION:
            user = props.get("sasl.username", "")
            reason = _one_line(err)
            raise TaskFailure(f"{cluster} cluster refused the credentials of user '{user}': {reason}") from exc
        if err.code() == KafkaError._SSL:
            raise TaskFailure(f"{cluster} cluster: TLS failed: {_one_line(err)}") from exc
