"""A Spark Structured Streaming query fails over through its translated checkpoint, exactly (issue 45).

The query reads Kafka with Spark's own Kafka source, so its positions live in its checkpoint, not in
a consumer group, and no failover of groups moves it. It reads part of a topic on the source and
stops; the source gets more; the mirror copies all of it. ``mirror-sink translate --spark-checkpoint``
rewrites a copy of the checkpoint for the target, and the same query, pointed at the target cluster
and its topic, reads exactly what remained: every committed source record once over the two runs,
in order per partition, none read twice, none missed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from devkafka.data import read_all
from devkafka.endpoints import KafkaEndpoint
from devkafka.jars import SparkKafkaJars
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import shadow_caught_up
from tests.integration.harness.processes import run_translate
from tests.integration.harness.records import TransactionalLoad
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

APP = Path(__file__).parent / "spark_apps" / "kafka_reader.py"


class KafkaReader:
    """The Structured Streaming application of ``spark_apps/kafka_reader.py``, one query at a time."""

    def __init__(self, proc: subprocess.Popen[str], log: Path) -> None:
        self.proc, self.log = proc, log

    def read(self, bootstrap: str, topic: str, checkpoint: Path, out: Path) -> list[list[int | str]]:
        """Run one available-now query; every record it read, batch by batch."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        job = {"bootstrap": bootstrap, "topic": topic, "checkpoint": str(checkpoint), "out": str(out)}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line.strip() == "done", self.log.read_text()[-5000:]
        batches = sorted(out.glob("batch-*.json"), key=lambda p: int(p.stem.split("-")[1]))
        return [record for batch in batches for record in json.loads(batch.read_text())]


@pytest.fixture
def spark_kafka_reader(tmp_path: Path) -> Iterator[KafkaReader]:
    """A local Spark session with Spark's Kafka connector (fetched from Maven Central once)."""
    jars = SparkKafkaJars.ensure()
    log = tmp_path / "spark-reader.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(APP), "--jars", jars.jars],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env={**os.environ, "SPARK_LOCAL_DIRS": str(tmp_path / "spark-scratch")},
        )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", log.read_text()[-5000:]
        yield KafkaReader(proc, log)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_a_structured_streaming_query_resumes_on_the_target_from_its_translated_checkpoint(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    spark_kafka_reader: KafkaReader,
    tmp_path: Path,
) -> None:
    topic, name = new_topic("sparkcp", 2), unique("sparkcp")
    # Transactions, every fifth aborted: the source's offsets hold markers and aborted records, and the
    # target's hold the mirror's own markers, so no offset is the same on both sides.
    TransactionalLoad(source.bootstrap_servers, topic, 2, 600, per_txn=40, txn_id=unique("first")).start().join(120)
    checkpoint = tmp_path / "checkpoint"
    before = spark_kafka_reader.read(source.bootstrap_servers, topic, checkpoint, tmp_path / "out-source")
    assert len(before) == 600

    TransactionalLoad(source.bootstrap_servers, topic, 2, 400, per_txn=40, txn_id=unique("more")).start().join(120)
    config = mirror_config(name, source, target, topic)
    proc = mirror(config).start()
    try:
        caught_up = lambda: shadow_caught_up(source, topic, target, f"source.{topic}", f"connect-{name}")  # noqa: E731
        wait_until(caught_up, 90, "the mirror caught up", detail=proc.log_tail)
    finally:
        assert proc.stop() == 0, proc.log_tail()

    moved = tmp_path / "checkpoint-target"
    refused = run_translate(config, tmp_path, "--spark-checkpoint", str(checkpoint))
    assert refused.returncode == 2 and "--out DIR" in refused.stdout, refused.stdout + refused.stderr
    result = run_translate(config, tmp_path, "--spark-checkpoint", str(checkpoint), "--out", str(moved))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"subscribe=source.{topic}" in result.stdout, result.stdout

    after = spark_kafka_reader.read(target.bootstrap_servers, f"source.{topic}", moved, tmp_path / "out-target")
    committed = read_all(source.bootstrap_servers, topic)
    for p in (0, 1):
        want = [(r.value or b"").decode() for r in committed[p]]
        got = [v for part, _, v in before if part == p] + [v for part, _, v in after if part == p]
        assert got == want, f"partition {p}: read {len(got)} records over both clusters, {len(want)} committed"
    assert len(after) == 400
