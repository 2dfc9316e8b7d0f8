"""A Structured Streaming application that reads Kafka with Spark's own Kafka source: the consumer
whose checkpoint ``mirror-sink translate --spark-checkpoint`` moves to the target cluster.

One local Spark session runs one query per line of stdin, a JSON object with ``bootstrap``,
``topic``, ``checkpoint`` and ``out``: the query reads ``topic`` (read_committed) from its
checkpoint's position up to the end it finds at start (available-now), writes each micro-batch's
records to ``out/batch-<id>.json`` as ``[partition, offset, value]`` (rewritten whole if Spark
runs a batch again: idempotent per batch, as a foreachBatch sink must be), and prints ``done``.
The session ends at the end of stdin. Run it with ``--jars`` (Spark's Kafka connector).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession


def main() -> None:
    jars = sys.argv[sys.argv.index("--jars") + 1]
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("kafka-reader")
        .config("spark.jars", jars)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    print("ready", flush=True)
    for line in sys.stdin:
        job: dict[str, Any] = json.loads(line)
        out = Path(job["out"])
        out.mkdir(parents=True, exist_ok=True)

        def write(frame: DataFrame, batch_id: int, out: Path = out) -> None:
            rows = frame.selectExpr("partition", "offset", "CAST(value AS STRING) AS value").collect()
            records = sorted([r.partition, r.offset, r.value] for r in rows)
            (out / f"batch-{batch_id}.json").write_text(json.dumps(records))

        query = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", job["bootstrap"])
            .option("subscribe", job["topic"])
            .option("startingOffsets", "earliest")
            .option("kafka.isolation.level", "read_committed")
            .option("maxOffsetsPerTrigger", "250")  # several batches: the checkpoint holds more than one
            .load()
            .writeStream.foreachBatch(write)
            .option("checkpointLocation", job["checkpoint"])
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        print("done", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
