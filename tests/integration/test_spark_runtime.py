"""The Spark runtime (local Spark + the real clusters): same exactly-once guarantee as the worker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from devkafka.backends import KafkaEndpoint
from devkafka.data import create_topic, produce
from mirror_sink.spark.range_copier import FAULT_FILE_ENV
from tests.integration.conftest import MirrorFactory
from tests.integration.harness import (
    ChildProcess,
    TransactionalLoad,
    Unique,
    assert_exact_mirror,
    mirror_config,
    shadow_caught_up,
    wait_until,
)
from tests.integration.test_mirror_task import tricky_records


class SparkRun(ChildProcess):
    """``mirror-sink spark`` on local Spark for one connector config."""

    def __init__(self, config: dict[str, str], workdir: Path, *, master: str = "local[2]") -> None:
        super().__init__(f"spark-{config['name']}", workdir)
        self.config = config
        self.master = master
        self.checkpoint = workdir / f"checkpoint-{config['name']}"

    def argv(self) -> list[str]:
        """``spark <config> --master ... --checkpoint ...`` (available-now: it stops when caught up)."""
        path = self.workdir / f"{self.label}.json"
        path.write_text(json.dumps({"name": self.config["name"], "config": self.config}))
        return ["spark", str(path), "--master", self.master, "--checkpoint", str(self.checkpoint)]

    def run(self, timeout: float = 300) -> int:
        """Start and wait for the exit code."""
        self.start()
        return self.wait(timeout)


def spark_config(name: str, source: KafkaEndpoint, target: KafkaEndpoint, topic: str) -> dict[str, str]:
    """A connector config with runtime=spark."""
    return mirror_config(name, source, target, topic, runtime="spark")


def seeded(source: KafkaEndpoint, unique: Unique, topic: str, records: int = 3000) -> None:
    """``records`` committed records in transactions, a fifth of them aborted, 3 partitions."""
    create_topic(source.bootstrap_servers, topic, 3)
    load = TransactionalLoad(source.bootstrap_servers, topic, 3, records, compression="zstd", txn_id=unique("sp"))
    load.start().join(300)


def test_spark_mirrors_exactly_once_with_aborted_source_transactions(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, tmp_path: Path
) -> None:
    name, topic = unique("spark"), unique("spark")
    seeded(source, unique, topic)
    run = SparkRun(spark_config(name, source, target, topic), tmp_path)
    assert run.run() == 0, run.log_tail()
    assert assert_exact_mirror(source, topic, target, f"source.{topic}", f"connect-{name}") == 3000


def test_a_writer_failing_between_produce_and_commit_is_retried_without_duplicates(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, tmp_path: Path
) -> None:
    name, topic = unique("spark-fault"), unique("spark-fault")
    seeded(source, unique, topic)
    marker = tmp_path / "fail-once"
    marker.touch()
    run = SparkRun(spark_config(name, source, target, topic), tmp_path, master="local[2,4]")  # 4 task attempts
    run.env[FAULT_FILE_ENV] = str(marker)
    assert run.run() == 0, run.log_tail()
    assert not marker.exists(), "the fault was injected"
    assert "injected fault after producing" in run.log_text()
    assert_exact_mirror(source, topic, target, f"source.{topic}", f"connect-{name}")


def test_deleting_the_checkpoint_between_runs_stays_exact(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, tmp_path: Path
) -> None:
    name, topic = unique("spark-ckpt"), unique("spark-ckpt")
    seeded(source, unique, topic, 1500)
    run = SparkRun(spark_config(name, source, target, topic), tmp_path)
    assert run.run() == 0, run.log_tail()
    produce(source.bootstrap_servers, topic, tricky_records(3, 300))
    shutil.rmtree(run.checkpoint)  # the shadow group on the target stays the source of truth
    assert run.run() == 0, run.log_tail()
    assert_exact_mirror(source, topic, target, f"source.{topic}", f"connect-{name}")


def test_handoff_between_the_worker_and_spark_runtimes(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, tmp_path: Path, mirror: MirrorFactory
) -> None:
    name, topic = unique("handoff"), unique("handoff")
    seeded(source, unique, topic, 1200)
    group, target_topic = f"connect-{name}", f"source.{topic}"
    worker_config = mirror_config(name, source, target, topic)

    worker = mirror(worker_config).start()
    wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 90, "the worker runtime")
    # While the worker runs the connector, Spark refuses to.
    refused = SparkRun(spark_config(name, source, target, topic), tmp_path / "refused")
    assert refused.run() == 1
    assert "running in the worker runtime" in refused.log_text(), refused.log_tail()
    assert worker.stop() == 0, worker.log_tail()

    produce(source.bootstrap_servers, topic, tricky_records(3, 300))
    spark = SparkRun(spark_config(name, source, target, topic), tmp_path)
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
