"""The source fence's report and ACLs, and the failover record that keeps what it denied."""

from __future__ import annotations

import time

from confluent_kafka.admin import AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.failover.common.failover_record import FailoverRecord, PartitionCut, read_records
from mirror_sink.failover.switch.source_fence import SourceFenceReport, SourceProducer, deny_bindings


def _producer(pid: int, txn: str | None) -> SourceProducer:
    return SourceProducer(pid, 3, ("orders-0",), int(time.time() * 1000) - 5000, txn, txn is not None)


def test_a_dry_run_says_what_it_would_do_and_a_run_what_it_did() -> None:
    report = SourceFenceReport([_producer(7, "billing-1"), _producer(8, None)], ["billing-1"], dry_run=True)
    report.denied_topics, report.authorizer = ["orders"], True
    lines = report.lines()
    assert lines[0] == "source fence: 2 producers wrote to the mirrored topics lately"
    assert lines[1].startswith("  producer 7 (epoch 3, transactional id billing-1) on orders-0, last write 5 s ago")
    assert lines[1].endswith(", a transaction open")
    assert "  would fence transactional id billing-1 (its epoch bumped, its open transaction aborted)" in lines
    assert "  would deny WRITE to User:* on orders (lifted by the failback)" in lines
    report.dry_run = False
    assert "  denied WRITE to User:* on orders (lifted by the failback)" in report.lines()
    bare = SourceFenceReport([_producer(8, None)], not_fenced=["producer 8 on orders-0 has no transactional id"])
    assert bare.lines()[-1].startswith("  the source has no authorizer: no ACL can stop its other producers")


def test_the_fence_denies_writes_to_every_principal_on_each_topic_once() -> None:
    bindings = deny_bindings(["orders", "payments", "orders"])
    assert [(b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type)
            for b in bindings] == [
        (ResourceType.TOPIC, t, ResourcePatternType.LITERAL, "User:*", "*", AclOperation.WRITE, AclPermissionType.DENY)
        for t in ("orders", "payments")
    ]  # fmt: skip


def test_the_failover_record_keeps_the_denied_topics_for_the_failback() -> None:
    cut = PartitionCut(TargetPartition("us.orders", 0), "orders", 10, 12, 13, 10)
    record = FailoverRecord("m", "f1", "planned", "t", "us", "a", "b", (cut,), (), ("orders",))
    (read,) = read_records(record.records()).values()
    assert read.write_denied == ("orders",)
    older = FailoverRecord("m", "f0", "planned", "t", "us", "a", "b", (cut,), ())
    (plain,) = read_records(older.records()).values()
    assert plain.write_denied == ()
