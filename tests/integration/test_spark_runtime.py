"""The Spark runtime (local Spark + the real clusters): same exactly-once guarantee as the worker."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

from devkafka.data import ProduceSpec, Rec, produce
from devkafka.endpoints import KafkaEndpoint
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import assert_exact_mirror, shadow_caught_up
from tests.integration.harness.processes import ChildProcess
from tests.integration.harness.records import TransactionalLoad, tricky_records
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until


class SparkRun(ChildProcess):
    """``mirror-sink spark`` on local Spark for one connector config."""

    def __init__(
        self, config: dict[str, str], workdir: Path, *, master: str = "local[2]", extra: tuple[str, ...] = ()
    ) -> None:
        super().__init__(f"spark-{config['name']}", workdir)
        self.config = config
        self.master = master
        self.extra = extra
        self.checkpoint = workdir / f"checkpoint-{config['name']}"
        self.env["SPARK_LOCAL_DIRS"] = str(workdir / "spark-scratch")  # not /tmp: a killed JVM leaves it

    def argv(self) -> list[str]:
        """``spark <config> --master ... --checkpoint ...`` (available-now: it stops when caught up)."""
        path = self.workdir / f"{self.label}.json"
        path.write_text(json.dumps({"name": self.config["name"], "config": self.config}))
        return ["spark", str(path), "--master", self.master, "--checkpoint", str(self.checkpoint), *self.extra]

    def run(self, timeout: float = 300) -> int:
        """Start and wait for the exit code."""
        self.start()
        return self.wait(timeout)


class SparkFactory(Protocol):
    """Makes an unstarted local Spark run of a connector config."""

    def __call__(
        self, config: dict[str, str], workdir: Path | None = None, *, master: str = ..., extra: tuple[str, ...] = ()
    ) -> SparkRun: ...


@pytest.fixture
def spark_local(tmp_path: Path) -> Iterator[SparkFactory]:
    """``spark_local(config)`` -> an unstarted ``mirror-sink spark`` on local Spark (in ``tmp_path``
    unless given a directory), killed at teardown if still running. Its JVM is the test's own, so the
    test is in the ``clusters`` tier."""
    made: list[SparkRun] = []

    def make(
        config: dict[str, str], workdir: Path | None = None, *, master: str = "local[2]", extra: tuple[str, ...] = ()
    ) -> SparkRun:
        run = SparkRun(config, workdir or tmp_path, master=master, extra=extra)
        made.append(run)
        return run

    yield make
    for run in made:
        if run.alive():
            run.kill()


def spark_config(name: str, source: KafkaEndpoint, target: KafkaEndpoint, topic: str) -> dict[str, str]:
    """A connector config with runtime=spark."""
    return mirror_config(name, source, target, topic, runtime="spark")


def seeded(new_topic: TopicFactory, source: KafkaEndpoint, unique: Unique, base: str, records: int = 3000) -> str:
    """A topic of 3 partitions on ``source``, named from ``base``, with ``records`` committed records in
    transactions, a fifth of them aborted; its name."""
    topic = new_topic(base, 3)
    load = TransactionalLoad(source.bootstrap_servers, topic, 3, records, compression="zstd", txn_id=unique("sp"))
    load.start().join(300)
    return topic


@pytest.mark.parametrize("mode", ["raw", "record"])
def test_spark_mirrors_exactly_once_with_aborted_source_transactions(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    spark_local: SparkFactory,
    mode: str,
) -> None:
    name = unique("spark")
    topic = seeded(new_topic, source, unique, "spark")
    run = spark_local({**spark_config(name, source, target, topic), "mirror.mode": mode})
    assert run.run() == 0, run.log_tail()
    assert f"records mirrored in {mode} mode" in run.log_text(), run.log_tail()
    assert assert_exact_mirror(source, topic, target, f"source.{topic}", f"connect-{name}") == 3000


def test_raw_ranges_that_end_inside_a_batch_are_cut_there(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, spark_local: SparkFactory
) -> None:
    # 500 offsets per micro-batch over 3 partitions: range ends fall inside the producer's batches
    # (one per partition per flush, hundreds of records), whose records past the end belong to the
    # next range (raw mode re-encodes the crossing batch).
    name, topic = unique("spark-cut"), new_topic("spark-cut", 3)
    produce(source.bootstrap_servers, topic, tricky_records(3, 3000), ProduceSpec(compression="zstd", linger_ms=200))
    config = {**spark_config(name, source, target, topic), "mirror.mode": "raw"}
    run = spark_local(config, extra=("--max-records-per-trigger", "500"))
    assert run.run() == 0, run.log_tail()
    assert "past the range end" in run.log_text(), run.log_tail()
    assert "records mirrored in raw mode" in run.log_text(), run.log_tail()
    assert assert_exact_mirror(source, topic, target, f"source.{topic}", f"connect-{name}") == 3000


def test_max_bytes_per_trigger_bounds_each_micro_batch_by_the_sources_log_sizes(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, spark_local: SparkFactory
) -> None:
    # 300 records of 20 KB over 3 partitions (6 MB); a 1.5 MB budget is about 25 records per
    # partition per micro-batch, so the copy runs in several micro-batches of bounded size.
    name, topic = unique("spark-bytes"), new_topic("spark-bytes", 3)
    now = int(time.time() * 1000) - 300
    records = (Rec(f"k{i}".encode(), os.urandom(20_000), (), now + i, i % 3) for i in range(300))
    produce(source.bootstrap_servers, topic, records, ProduceSpec(linger_ms=50))
    run = spark_local(spark_config(name, source, target, topic), extra=("--max-bytes-per-trigger", "1500000"))
    assert run.run() == 0, run.log_tail()
    ranges = [
        int(end) - int(start) for start, end in re.findall(r"\[(\d+), (\d+)\): \d+ records mirrored", run.log_text())
    ]
    assert len(ranges) >= 12, f"{len(ranges)} ranges: the budget did not split the copy\n{run.log_tail()}"
    assert max(ranges) <= 26, f"a range of {max(ranges)} records of 20 KB exceeds a third of 1.5 MB"
    assert assert_exact_mirror(source, topic, target, f"source.{topic}", f"connect-{name}") == 300


def test_a_writer_failing_between_produce_and_commit_is_retried_without_duplicates(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    tmp_path: Path,
    spark_local: SparkFactory,
) -> None:
    name = unique("spark-fault")
    topic = seeded(new_topic, source, unique, "spark-fault")
    marker = tmp_path / "fail-once"
    marker.touch()
    run = spark_local(spark_config(name, source, target, topic), master="local[2,4]")  # 4 task attempts
    # A test-only sitecustomize on the executors' PYTHONPATH fails their first commit once.
    faults = Path(__file__).parent / "spark_faults"
    run.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(faults), os.environ.get("PYTHONPATH")]))
    run.env["MIRROR_SINK_FAULT_AFTER_PRODUCE"] = str(marker)
    assert run.run() == 0, run.log_tail()
    assert not marker.exists(), "the fault was injected"
    assert "injected fault after producing" in run.log_text()
    assert_exact_mirror(source, topic, target, f"source.{topic}", f"connect-{name}")


def test_deleting_the_checkpoint_between_runs_stays_exact(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, spark_local: SparkFactory
) -> None:
    name = unique("spark-ckpt")
    topic = seeded(new_topic, source, unique, "spark-ckpt", 1500)
    run = spark_local(spark_config(name, source, target, topic))
    assert run.run() == 0, run.log_tail()
    produce(source.bootstrap_servers, topic, tricky_records(3, 300))
    shutil.rmtree(run.checkpoint)  # the shadow group on the target stays the source of truth
    assert run.run() == 0, run.log_tail()
    assert_exact_mirror(source, topic, target, f"source.{topic}", f"connect-{name}")


def test_handoff_between_the_worker_and_spark_runtimes(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    tmp_path: Path,
    spark_local: SparkFactory,
    mirror: MirrorFactory,
) -> None:
    name = unique("handoff")
    topic = seeded(new_topic, source, unique, "handoff", 1200)
    group, target_topic = f"connect-{name}", f"source.{topic}"
    worker_config = mirror_config(name, source, target, topic)

    worker = mirror(worker_config).start()
    wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 90, "the worker runtime")
    # While the worker runs the connector, Spark refuses to.
    refused = spark_local(spark_config(name, source, target, topic), tmp_path / "refused")
    assert refused.run() == 1
    assert "running in the worker runtime" in refused.log_text(), refused.log_tail()
    assert worker.stop() == 0, worker.log_tail()

    produce(source.bootstrap_servers, topic, tricky_records(3, 300))
    spark = spark_local(spark_config(name, source, target, topic))
    assert spark.run() == 0, spark.log_tail()
    assert_exact_mirror(source, topic, target, target_topic, group, offset_syncs=False)  # half without syncs

    # A connector configured for Spark is refused by the worker runtime, and back to worker it resumes.
    wrong = mirror({**worker_config, "runtime": "spark"}, "w2").start()
    assert wrong.wait(60) == 1 and "run it with mirror-sink spark" in wrong.log_text(), wrong.log_tail()
    produce(source.bootstrap_servers, topic, tricky_records(3, 150))
    worker.start()
    wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 90, "the worker after Spark")
    assert worker.stop() == 0, worker.log_tail()
    assert_exact_mirror(source, topic, target, target_topic, group, offset_syncs=False)  # a hole where Spark ran


def test_sigterm_stops_a_continuous_spark_query_promptly_and_exactly(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, spark_local: SparkFactory
) -> None:
    name = unique("spark-term")
    topic = seeded(new_topic, source, unique, "spark-term", 1200)
    run = spark_local(spark_config(name, source, target, topic), extra=("--trigger", "processing-time:1 second"))
    run.start()
    wait_until(
        lambda: shadow_caught_up(source, topic, target, f"source.{topic}", f"connect-{name}"),
        180,
        "the continuous query to catch up",
        detail=run.log_tail,
    )
    run.signal(signal.SIGTERM)
    started = time.monotonic()
    assert run.wait(30) == 0, run.log_tail()
    took = time.monotonic() - started
    assert took < 15, f"the driver took {took:.1f} s to stop after SIGTERM"
    assert "SIGTERM received: stopping the query" in run.log_text(), run.log_tail()
    assert_exact_mirror(source, topic, target, f"source.{topic}", f"connect-{name}")
    print(f"stopped {took:.1f} s after SIGTERM")
