"""An exactly-once application fails over at a moment nobody chose, and its outputs stay exact (issue 43).

A consume-transform-produce loop (confluent-kafka) reads ``in``, writes one output per input to
``out`` (same partition) and commits its input position in the same source transaction, as Kafka
Streams does. The mirror runs with ``source.transactions.whole=true``. At a random point of the
app's work the source is lost: the app and the mirror die together (the mirror by SIGKILL). A
disaster failover places the app's group on the target; the app resumes there on the mirrored
topics. Its outputs on the target must then be exactly those of one uninterrupted run over the
inputs the target holds: one output per input, in order, none twice, none missing.

A checkpoint read at any moment can be ahead of or behind the outputs that were mirrored; the
position the task read at a cut of the source's transactions, committed with the outputs it goes
with, is neither.
"""

from __future__ import annotations

import random
import threading
import time
from functools import partial
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer

from devkafka.data import end_offsets, read_all
from devkafka.endpoints import KafkaEndpoint
from mirror_sink.core.formats.group_cuts import GroupCut, group_cuts_topic
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import committed_on_target
from tests.integration.harness.processes import run_failover
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

INPUTS = 1200


def _output(value: bytes) -> bytes:
    return b"out:" + value


class EosApp(threading.Thread):
    """Reads ``source`` with ``group`` (read_committed), writes ``_output`` of each record to the same
    partition of ``sink`` and commits its position in the same transaction; ends when ``stop`` is
    set (mid-work: what it had not committed is aborted by the next owner or the broker) or, with
    ``until_end``, once it has read everything that was there when it started."""

    def __init__(
        self, bootstrap: str, source: str, sink: str, group: str, txn_id: str, *, until_end: bool = False
    ) -> None:
        super().__init__(name=f"app-{txn_id}", daemon=True)
        self.bootstrap, self.source, self.sink, self.group, self.txn_id = bootstrap, source, sink, group, txn_id
        self.until_end = until_end
        self.stop = threading.Event()
        self.processed = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self.error = exc

    def _run(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
            }
        )
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": self.txn_id, "linger.ms": 0})
        producer.init_transactions(30)
        consumer.subscribe([self.source])
        at_end: set[int] = set()
        try:
            while not self.stop.is_set():
                batch = consumer.consume(10, 0.2)
                records = []
                for msg in batch:
                    err = msg.error()
                    if err is not None:
                        assert err.code() == KafkaError._PARTITION_EOF, err.str()
                        at_end.add(msg.partition() or 0)
                        continue
                    at_end.discard(msg.partition() or 0)
                    records.append(msg)
                assigned = {tp.partition for tp in consumer.assignment()}
                if self.until_end and assigned and assigned <= at_end and not records:
                    return
                if not records:
                    continue
                producer.begin_transaction()
                for msg in records:
                    producer.produce(self.sink, _output(msg.value() or b""), msg.key(), partition=msg.partition() or 0)
                positions = consumer.position(consumer.assignment())
                producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
                producer.commit_transaction(30)
                self.processed += len(records)
                time.sleep(0.05)
        finally:
            consumer.close()


def test_an_exactly_once_app_fails_over_at_a_random_moment_and_its_outputs_stay_exact(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    tmp_path: Path,
) -> None:
    name, alias, group = unique("eosapp"), unique("eossrc"), unique("eos-app")
    inputs, outputs = new_topic("eos-in", 2), new_topic("eos-out", 2)
    config = mirror_config(
        name,
        source,
        target,
        f"{inputs}|{outputs}",
        **{
            "source.cluster.alias": alias,
            "source.transactions.whole": "true",
            "emit.checkpoints.enabled": "true",
            "emit.checkpoints.interval.seconds": "1",
        },
    )
    proc = mirror(config).start()

    def write_inputs() -> None:
        producer = Producer({"bootstrap.servers": source.bootstrap_servers, "linger.ms": 0})
        for i in range(INPUTS):
            producer.produce(inputs, b"in-%d" % i, b"k", partition=i % 2)
            producer.poll(0)
            time.sleep(0.005)
        producer.flush(30)

    writer = threading.Thread(target=write_inputs, daemon=True)
    app = EosApp(source.bootstrap_servers, inputs, outputs, group, unique("eos-app-txn"))
    writer.start()
    mirrored = partial(committed_on_target, target, f"{alias}.{inputs}")
    wait_until(lambda: mirrored() >= 100, 60, "the mirror to copy its first inputs", detail=proc.log_tail)
    app.start()
    # The source is lost at a random point of the app's work, the app and the mirror with it.
    lost_at = random.randint(INPUTS * 3 // 10, INPUTS * 7 // 10)
    wait_until(lambda: app.processed >= lost_at or app.error is not None, 120, f"the app to process {lost_at}")

    # And once the mirror has kept a position of the app's group at a cut on both input partitions:
    # before that, the failover rightly places the group from its checkpoint. On the loaded CI machine
    # the app's dense transactions (its offsets unstable most of the time) once left no cut with the
    # group's positions in the few seconds before the kill.
    def cut_positions() -> set[int]:
        stored = read_all(target.bootstrap_servers, group_cuts_topic(alias)).get(0, [])
        cuts = [GroupCut.decode(r.key or b"", r.value or b"") for r in stored]
        return {c.target.partition for c in cuts if c.group == group}

    wait_until(lambda: cut_positions() == {0, 1}, 90, "the app's positions kept at a cut", detail=proc.log_tail)
    app.stop.set()
    proc.kill()
    app.join(30)
    assert app.error is None, app.error
    writer.join(60)

    gone = {**config, "source.cluster.bootstrap.servers": "127.0.0.1:1"}
    moved = run_failover(gone, tmp_path, "--groups", group)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert f"placed at a cut of the source's transactions, with the outputs they match: {group}" in moved.stdout, (
        moved.stdout
    )

    # The mirror died mid-transaction more often than not: the failover aborted that transaction, or
    # its open outputs would hide the resumed app's new ones from read_committed readers until the
    # broker's timeout (what this test once took for a group placed past its outputs).
    target_in, target_out = f"{alias}.{inputs}", f"{alias}.{outputs}"
    for topic in (target_in, target_out):
        stable = end_offsets(target.bootstrap_servers, topic)
        assert stable == end_offsets(target.bootstrap_servers, topic, isolation="read_uncommitted"), (
            f"a transaction is still open on {topic} after the failover: {moved.stdout}"
        )

    # The app resumes on the target, on the mirrored topics, with its group where the failover put it.
    resumed = EosApp(target.bootstrap_servers, target_in, target_out, group, unique("eos-app-dr"), until_end=True)
    resumed.start()
    resumed.join(120)
    assert resumed.error is None, resumed.error
    assert not resumed.is_alive(), "the resumed app did not reach the end of its input"

    # One output per input the target holds, in order, none twice, none missing: as one uninterrupted run.
    held_in = read_all(target.bootstrap_servers, target_in)
    held_out = read_all(target.bootstrap_servers, target_out)
    assert sum(len(v) for v in held_in.values()) >= lost_at // 2, "the mirror had copied too little to say anything"
    for p in range(2):
        want = [_output(r.value or b"") for r in held_in.get(p, [])]
        got = [r.value for r in held_out.get(p, [])]
        assert got == want, (
            f"partition {p}: {len(got)} outputs for {len(want)} inputs; first difference at "
            f"{next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))}"
        )
