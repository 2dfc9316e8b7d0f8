"""A planned failover that fences the old primary (issue 45, item 1), on a source without an authorizer.

A transactional producer left with a transaction open on the source is fenced before the cut: its
transaction is aborted and it can never commit. An idempotent producer writing all along cannot be
fenced without an authorizer: the failover names it, and reports the records it wrote after the cut
with their offsets (never lost: a failback keeps them). The secured clusters' test covers the DENY
WRITE ACL and the failback lifting it.
"""

from __future__ import annotations

import re
import threading
from functools import partial
from pathlib import Path

from confluent_kafka import Producer

from devkafka.data import Rec, end_offsets, produce, read_all
from devkafka.endpoints import KafkaEndpoint
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.clusters import assert_refused_alike, commit_group_offsets
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import shadow_caught_up
from tests.integration.harness.processes import run_failover
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

ISOLATIONS = ("read_committed", "read_uncommitted")


def test_a_fenced_planned_failover_aborts_an_open_transaction_and_names_late_records(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    tmp_path: Path,
) -> None:
    name, group, txn_id = unique("fence"), unique("fence-app"), unique("fence-txn")
    topic = new_topic("fence", 2)
    produce(source.bootstrap_servers, topic, [Rec(b"k", b"v%d" % i, partition=i % 2) for i in range(100)])
    commit_group_offsets(source.bootstrap_servers, group, {(topic, 0): 10, (topic, 1): 10})
    config = mirror_config(name, source, target, topic)
    proc = mirror(config).start()
    stop = threading.Event()
    try:
        wait_until(
            partial(shadow_caught_up, source, topic, target, f"source.{topic}", f"connect-{name}"), 60, "mirrored"
        )
        # A transactional producer forgotten with a transaction open, and an idempotent one writing all along.
        # Its transaction would outlive the test: only the fence can end it.
        txn = Producer(
            {
                "bootstrap.servers": source.bootstrap_servers,
                "transactional.id": txn_id,
                "transaction.timeout.ms": 600_000,
            }
        )
        txn.init_transactions(30)
        txn.begin_transaction()
        txn.produce(topic, b"never-committed", partition=0)
        txn.flush(30)
        # A refusal that needs no cut comes before the fence: nothing is written on the source (the
        # open transaction would get its abort marker), and the dry run refuses alike.
        token = topic.rsplit("-", 1)[-1]
        assert_refused_alike(
            run_failover, config, tmp_path, "--groups", "no-such-group-.*", "--fence-source",
            says="no consumer group on the source matches", clusters=[source], token=token,
            besides=[f"connect-{name}"],  # the running mirror's own lag group on the source
        )  # fmt: skip
        writer = Producer({"bootstrap.servers": source.bootstrap_servers, "enable.idempotence": True})

        def write() -> None:
            i = 0
            while not stop.wait(0.5):  # slow enough for --wait-caught-up to find the mirror level with it
                writer.produce(topic, b"late-%d" % i, partition=1)
                writer.poll(0)
                i += 1
            writer.flush(30)

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        args = ("--groups", group, "--fence-source", "--wait-caught-up", "60")
        dry = run_failover(config, tmp_path, *args, "--dry-run")
        assert dry.returncode == 0, dry.stdout + dry.stderr
        assert f"would fence transactional id {txn_id}" in dry.stdout and "dry run: nothing committed" in dry.stdout
        result = run_failover(config, tmp_path, *args)
    finally:
        stop.set()
        assert proc.stop() == 0, proc.log_tail()
        txn.flush(0)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"fenced transactional id {txn_id} (its epoch bumped, its open transaction aborted)" in out
    assert "has no transactional id and the source no authorizer" in out
    assert "the source has no authorizer: no ACL can stop its other producers" in out
    assert "failover done: 1 groups moved (planned mode)" in out
    # The forgotten transaction was aborted: nothing is open on its partition any more, none of it is visible.
    stable, high = (end_offsets(source.bootstrap_servers, topic, isolation=i)[0] for i in ISOLATIONS)
    assert stable == high, "a transaction is still open on partition 0"
    committed = read_all(source.bootstrap_servers, topic)
    assert b"never-committed" not in [r.value for r in committed[0]]
    # The idempotent producer's records after the cut are named with their offsets, and are there.
    late = re.search(rf"late: {re.escape(topic)}-1: offsets (\d+)\.\.(\d+)", out)
    assert late is not None, out
    first, last = int(late[1]), int(late[2])
    after_cut = [r.value or b"" for r in committed[1] if first <= r.offset <= last]
    assert after_cut and all(v.startswith(b"late-") for v in after_cut), after_cut[:5]
    assert "records written on the source after the cut: on 1 partitions (not lost:" in out
