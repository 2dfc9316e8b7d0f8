"""Mirroring secured clusters: SASL_SSL (SCRAM-SHA-512) and mTLS in both modes, with exactly the ACLs
docs/security.md lists; each required ACL missing fails the task clearly; bad credentials and certificates
fail fast with a one-line reason and write nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12

from devkafka.data import Rec, committed_offsets, produce, read_all
from devkafka.pair import DevClusters
from devkafka.security import MIRROR_USER
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.failover.common.failover_record import failovers_topic
from mirror_sink.topics.required_acls import RequiredAcl, source_fence_acls, verify_and_drill_acls
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.clusters import commit_group_offsets
from tests.integration.harness.configs import FAST_SETTINGS
from tests.integration.harness.exactness import assert_exact_mirror, shadow_caught_up
from tests.integration.harness.processes import WorkerProcess, run_drill, run_failover, run_verify
from tests.integration.harness.records import TransactionalLoad
from tests.integration.harness.topics import TopicFactory
from tests.integration.harness.waiting import wait_until
from tests.integration.secured import acls_for, create_bindings, grant, secured_config

pytestmark = pytest.mark.timeout(600)


def _load(new_topic: TopicFactory, pair: DevClusters, base: str, partitions: int, total: int, txn: str) -> str:
    topic = new_topic(base, partitions, on=pair.source)
    TransactionalLoad(pair.source.client_config, topic, partitions, total, per_txn=50, txn_id=txn).start().join(120)
    return topic


@pytest.mark.parametrize(
    ("mode", "how", "expected_mode"),
    [("raw", "sasl", "raw"), ("record", "sasl", "record"), ("auto", "sasl", "raw"), ("raw", "mtls", "raw")],
)
def test_mirrors_exactly_over_tls_with_only_the_listed_acls(
    secured_pair: DevClusters,
    mirror: MirrorFactory,
    unique: Callable[[str], str],
    new_topic: TopicFactory,
    mode: str,
    how: str,
    expected_mode: str,
) -> None:
    name = unique(f"sec-{mode}-{how}")
    topic = _load(new_topic, secured_pair, f"sec-{mode}-{how}", 3, 600, unique("load"))
    config = secured_config(name, secured_pair, topic, how, mirror__mode=mode)
    grant(secured_pair, acls_for(config, [topic]))
    process = mirror(config).start()
    target_topic = f"source.{topic}"
    src, tgt = secured_pair.source, secured_pair.target
    wait_until(
        lambda: not process.alive() or shadow_caught_up(src, topic, tgt, target_topic, f"connect-{name}"),
        120,
        f"the mirror to catch up over {how} in {mode} mode",
    )
    assert process.alive(), process.log_tail()
    assert_exact_mirror(src, topic, tgt, target_topic, f"connect-{name}")
    process.stop()
    assert f"starting in {expected_mode} mode" in process.log_text()
    assert "transactions version 1" in process.log_text(), "this target keeps transaction.version=1"
    assert "falls back" not in process.log_text()


def test_verify_and_drill_run_with_only_the_listed_acls(
    secured_pair: DevClusters,
    mirror: MirrorFactory,
    unique: Callable[[str], str],
    new_topic: TopicFactory,
    tmp_path: Path,
) -> None:
    """``mirror-sink acls`` lists what verify and drill need besides mirroring: with exactly those,
    both run as the mirror's principal, and the drill deletes its groups."""
    name, group = unique("sec-drill"), unique("sec-drill-app")
    topic = _load(new_topic, secured_pair, "sec-drill", 2, 300, unique("load"))
    commit_group_offsets(secured_pair.source.client_config, group, {(topic, 0): 10, (topic, 1): 20})
    config = secured_config(name, secured_pair, topic, "sasl", mirror__mode="record")
    parsed = MirrorSinkConfig.parse(config)
    grant(secured_pair, acls_for(config, [topic]) + verify_and_drill_acls(parsed))
    process = mirror(config).start()
    src, tgt = secured_pair.source, secured_pair.target
    try:
        caught_up = partial(shadow_caught_up, src, topic, tgt, f"source.{topic}", f"connect-{name}")
        wait_until(lambda: not process.alive() or caught_up(), 120, "the mirror to catch up", detail=process.log_tail)
    finally:
        assert process.stop() == 0, process.log_tail()
    verified = run_verify(config, tmp_path)
    assert verified.returncode == 0 and "verified 300 records" in verified.stdout, verified.stdout + verified.stderr
    drilled = run_drill(config, tmp_path, "--groups", group, "--canary", "3")
    assert drilled.returncode == 0 and ": PASSED" in drilled.stdout, drilled.stdout + drilled.stderr
    assert "deleted 1 drill groups" in drilled.stdout


_REQUIRED = [
    acl
    for acl in acls_for(
        {
            "name": "n",
            "source.cluster.bootstrap.servers": "s:9092",
            "target.cluster.bootstrap.servers": "t:9092",
            **FAST_SETTINGS,
            "emit.checkpoints.enabled": "true",  # its topic is created at start: CREATE is required
            "topics": "t",
        },
        ["t"],
    )
    if acl.required
]


@pytest.mark.parametrize("mode", ["raw", "record"])
@pytest.mark.parametrize(
    "missing",
    range(len(_REQUIRED)),
    ids=[f"{a.cluster}-{a.operation}-{a.resource_type}-{a.resource_name}" for a in _REQUIRED],
)
def test_each_missing_acl_fails_the_task_naming_operation_resource_and_principal(
    secured_pair: DevClusters,
    mirror: MirrorFactory,
    unique: Callable[[str], str],
    new_topic: TopicFactory,
    missing: int,
    mode: str,
) -> None:
    # A fresh alias makes every target-side name (topic, offset-syncs topic) new, so CREATE matters.
    name, alias = unique("acl"), unique("src")
    topic = new_topic("acl", 2, on=secured_pair.source)
    produce(secured_pair.source.client_config, topic, [Rec(b"k", b"v%d" % i, partition=i % 2) for i in range(200)])
    # Topic ACL sync off: it would copy the mirror's own source ACLs to the target topic and so
    # re-grant READ and DESCRIBE_CONFIGS there (tests/integration/test_acl_sync.py covers it).
    config = secured_config(
        name,
        secured_pair,
        topic,
        source__cluster__alias=alias,
        sync__topic__acls__enabled="false",
        mirror__mode=mode,
        emit__checkpoints__enabled="true",
    )
    acls = acls_for(config, [topic])
    denied = [a for a in acls if a.required][missing]
    grant(secured_pair, [a for a in acls if a != denied])
    process = mirror(config).start()
    # A liveness allowance, returned as soon as the mirror fails: in cc42 the first case started in the
    # suite's busiest minute (three lanes starting their JVMs) and its connector start was still
    # waiting on the target's controller at 90 s.
    code = process.wait(180)
    log = process.log_text()
    assert code == 1, log
    failure = next(line for line in log.splitlines() if "task FAILED" in line or "connector FAILED" in line)
    assert denied.operation in failure, failure
    assert denied.resource_name.rstrip("-") in failure, failure
    assert "User:mirror" in failure, failure
    # Nothing committed on the target: no mirrored record visible, no stored source offset.
    target_topic = f"{alias}.{topic}"
    target = secured_pair.target.client_config
    if target_topic in AdminClient(target).list_topics(timeout=10).topics:
        # (an aborted transaction may leave its marker: offsets, but no record)
        assert not any(read_all(target, target_topic).values())
        stored = committed_offsets(target, f"connect-{name}", [(target_topic, 0), (target_topic, 1)])
        # (0 is the start position a task may store before its first transaction; never beyond it.)
        assert all(offset <= 0 for offset in stored.values()), stored
    # No retry storm: the denial is final, reported once. FAILED as a state, not inside an error code
    # such as TOPIC_AUTHORIZATION_FAILED, which the failed task's logged trace repeats.
    assert len(re.findall(r"\bFAILED\b", log)) <= 3, log


def _bad(pair: DevClusters, case: str) -> tuple[str, dict[str, str], str]:
    """(which cluster, its overriding connector keys, what the one-line reason must say)."""
    source, target = pair.source, pair.target
    assert source.security is not None and target.security is not None
    if case == "wrong-password":
        return (
            "target",
            {"target.cluster.sasl.password": "not-the-password"},
            "refused the credentials of user 'mirror'",
        )
    if case == "unknown-user":
        return "source", {"source.cluster.sasl.username": "nobody"}, "refused the credentials of user 'nobody'"
    if case == "untrusted-certificate":
        ca = str(target.security.untrusted_ca_file)
        return "target", {"target.cluster.ssl.ca.location": ca}, "unable to get local issuer certificate"
    if case == "expired-certificate":
        return "source", {"source.cluster.bootstrap.servers": source.listener("EXPIRED")}, "certificate has expired"
    assert case == "wrong-host-name"
    return (
        "target",
        {"target.cluster.bootstrap.servers": target.listener("WRONGHOST")},
        "mismatch, certificate is not valid for '127.0.0.1'",
    )


@pytest.mark.parametrize(
    "case", ["wrong-password", "unknown-user", "untrusted-certificate", "expired-certificate", "wrong-host-name"]
)
def test_bad_credentials_and_certificates_fail_at_once_with_a_one_line_reason(
    secured_pair: DevClusters, mirror: MirrorFactory, unique: Callable[[str], str], new_topic: TopicFactory, case: str
) -> None:
    topic, name = new_topic("bad", 1, on=secured_pair.source), unique("bad")
    produce(secured_pair.source.client_config, topic, [Rec(b"k", b"v%d" % i) for i in range(50)])
    config = secured_config(name, secured_pair, topic)
    grant(secured_pair, acls_for(config, [topic]))
    cluster, override, reason = _bad(secured_pair, case)
    process = mirror({**config, **override}).start()
    assert process.wait(60) == 1, process.log_tail()
    failed = [line for line in process.log_text().splitlines() if "FAILED: " in line]
    assert failed, process.log_tail()
    line = failed[0].split("FAILED: ", 1)[1]
    assert line.startswith(f"{cluster} cluster") and reason in line, line
    assert "password" not in line.lower() or case != "wrong-password", line
    assert "not-the-password" not in process.log_text()
    # Nothing was written: the connector stopped before creating the target topic.
    target_topics = AdminClient(secured_pair.target.client_config).list_topics(timeout=10).topics
    assert f"source.{topic}" not in target_topics


def test_auto_falls_back_to_record_mode_only_for_what_raw_mode_cannot_take_and_says_why(
    secured_pair: DevClusters,
    mirror: MirrorFactory,
    unique: Callable[[str], str],
    new_topic: TopicFactory,
    tmp_path: Path,
) -> None:
    # mTLS from a PKCS#12 keystore: librdkafka reads it, raw mode's client (Python's ssl) does not.
    source, target = secured_pair.source, secured_pair.target
    assert target.security is not None
    cert = target.security.client_certificate(MIRROR_USER)
    keystore = tmp_path / "mirror.p12"
    key = serialization.load_pem_private_key(cert.key.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)  # trustme's default key type
    leaf = x509.load_pem_x509_certificate(cert.cert.read_bytes())
    keystore.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"mirror",
            key,
            leaf,
            None,
            serialization.BestAvailableEncryption(b"keystore-pass"),
        )
    )
    name = unique("p12")
    topic = _load(new_topic, secured_pair, "p12", 2, 300, unique("load"))
    config = {
        **secured_config(name, secured_pair, topic),
        "target.cluster.bootstrap.servers": target.listener("MTLS"),
        "target.cluster.security.protocol": "SSL",
        "target.cluster.ssl.ca.location": str(target.security.ca_file),
        "target.cluster.ssl.keystore.location": str(keystore),
        "target.cluster.ssl.keystore.password": "keystore-pass",
    }
    for key_name in ("sasl.mechanism", "sasl.username", "sasl.password"):
        config.pop(f"target.cluster.{key_name}")
    grant(secured_pair, acls_for(config, [topic]))
    process = mirror(config).start()
    wait_until(
        lambda: not process.alive() or shadow_caught_up(source, topic, target, f"source.{topic}", f"connect-{name}"),
        120,
        "the record-mode fallback to catch up",
    )
    assert process.alive(), process.log_tail()
    assert_exact_mirror(source, topic, target, f"source.{topic}", f"connect-{name}")
    process.stop()
    log = process.log_text()
    assert "mirror.mode=auto falls back to record mode" in log and "ssl.keystore.location (a PKCS#12 keystore" in log
    # The takeover fence's client cannot read the keystore either: said once, and not tried (trying
    # held the task 30 s per assignment, and once the shadow group's session expired meanwhile).
    assert "the fence's client cannot honour ssl.keystore.location" in log, log
    assert "Unable to bootstrap" not in log, log
    assert "keystore-pass" not in log


def test_a_worker_keeps_its_connector_configs_on_a_secured_cluster(
    secured_pair: DevClusters, unique: Callable[[str], str], tmp_path: Path
) -> None:
    # Workers share state through Kafka, not through each other: their own clients take the
    # worker's security settings, like Connect's worker.properties.
    target = secured_pair.target
    topic, name = unique("worker-configs"), unique("stored")
    settings = target.client_config
    properties = tmp_path / "worker.properties"
    properties.write_text(
        "config.storage=kafka\n"
        f"config.storage.topic={topic}\n" + "".join(f"{key}={value}\n" for key, value in settings.items())
    )
    worker = WorkerProcess(tmp_path, str(properties)).start()
    try:
        created = httpx.post(
            f"{worker.url}/connectors",
            json={"name": name, "config": secured_config(name, secured_pair, "orders"), "initial_state": "STOPPED"},
            timeout=30,
        )
        assert created.status_code == 201, created.text
        # GET / names the worker's cluster, read with the worker's own security settings.
        assert httpx.get(f"{worker.url}/", timeout=30).json()["kafka_cluster_id"]
        stored = read_all(settings, topic)
        assert any(name.encode() in (r.key or b"") + (r.value or b"") for rs in stored.values() for r in rs), stored
        log = worker.log_text()
        assert settings["sasl.password"] not in log
    finally:
        worker.stop()


def test_get_root_reads_a_secured_targets_cluster_id_with_the_connectors_settings(
    secured_pair: DevClusters, unique: Callable[[str], str], tmp_path: Path
) -> None:
    worker = WorkerProcess(tmp_path).start()  # no cluster of its own: GET / asks the first connector's target
    try:
        name = unique("root")
        config = secured_config(name, secured_pair, "orders")
        body = {"name": name, "config": config, "initial_state": "STOPPED"}
        assert httpx.post(f"{worker.url}/connectors", json=body, timeout=30).status_code == 201
        wait_until(
            lambda: bool(httpx.get(f"{worker.url}/", timeout=30).json()["kafka_cluster_id"]),
            30,
            "GET / to show the secured target's cluster id",
        )
    finally:
        worker.stop()


def test_a_fenced_planned_failover_denies_every_writer_of_the_source_until_lifted(
    secured_pair: DevClusters,
    mirror: MirrorFactory,
    unique: Callable[[str], str],
    new_topic: TopicFactory,
    tmp_path: Path,
) -> None:
    """``failover --fence-source`` on a source with an authorizer: an application's idempotent producer,
    allowed to write, is stopped by a DENY WRITE for every principal; no record lands after the cut;
    ``--lift-source-fence`` (what the failback does) gives the topic back to it."""
    name, group = unique("fence"), unique("fence-app")
    src = secured_pair.source
    assert src.security is not None
    topic = new_topic("fence", 1, on=src)
    produce(src.client_config, topic, [Rec(b"k", b"v%d" % i) for i in range(50)])
    commit_group_offsets(src.client_config, group, {(topic, 0): 5})
    config = secured_config(name, secured_pair, topic, "sasl", mirror__mode="raw")
    parsed = MirrorSinkConfig.parse(config)
    record = failovers_topic(parsed.source_alias)
    failover = [
        RequiredAcl("target", "READ", "GROUP", group, "LITERAL", "failover: commit the moved group"),
        RequiredAcl("target", "CREATE", "TOPIC", record, "LITERAL", "failover: the failovers topic"),
        RequiredAcl("target", "WRITE", "TOPIC", record, "LITERAL", "failover: its record"),
    ]
    grant(secured_pair, [*acls_for(config, [topic]), *verify_and_drill_acls(parsed), *source_fence_acls(), *failover])
    app_principal = unique("app")
    create_bindings(src, [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, f"User:{app_principal}",
                                     "*", AclOperation.WRITE, AclPermissionType.ALLOW)])  # fmt: skip
    app = Producer({**src.security.mtls(src.listener("MTLS"), app_principal), "enable.idempotence": True})
    failed: list[str] = []

    def write(value: bytes) -> None:
        app.produce(topic, value, on_delivery=lambda err, _: failed.append(err.str()) if err else None)
        app.flush(30)

    write(b"before")
    assert not failed, failed
    proc = mirror(config).start()
    try:
        caught_up = partial(shadow_caught_up, src, topic, secured_pair.target, f"source.{topic}", f"connect-{name}")
        wait_until(caught_up, 90, "mirrored", detail=proc.log_tail)
        result = run_failover(config, tmp_path, "--groups", group, "--fence-source", "--wait-caught-up", "60")
    finally:
        assert proc.stop() == 0, proc.log_tail()
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"denied WRITE to User:* on {topic} (lifted by the failback)" in result.stdout, result.stdout
    assert "records written on the source after the cut: none" in result.stdout
    write(b"after the fence")
    assert failed and "authoriz" in failed[0].lower(), failed
    lifted = run_failover(config, tmp_path, "--lift-source-fence")
    assert lifted.returncode == 0 and f"lifted 1 DENY WRITE ACLs on {topic}" in lifted.stdout, lifted.stdout
    failed.clear()
    write(b"after the lift")
    assert not failed, failed
