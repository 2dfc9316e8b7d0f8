"""The ``mirror-sink`` PySpark data source: a planning stream reader and a copying stream writer.

The reader only plans. Its offsets are ``{"topic:partition": next source offset}``; each micro-batch
row is a range descriptor ``(topic, partition, start, end)``, so no record data passes through the
JVM. The writer, on executors, copies each range with the worker's record copier inside one target
transaction that also commits the range end to the shadow group (``range_copier``).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TopicPartition
from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from connectors.mirror_sink_config import MirrorSinkConfig
from connectors.start_offsets import StartOffsetResolver
from connectors.topic_provisioner import TopicMapping, TopicProvisioner
from mirror_sink.core import clients
from mirror_sink.core.partitions import SourcePartition, TargetPartition
from mirror_sink.spark.range_copier import copy_range

log = logging.getLogger(__name__)

SCHEMA = "topic string, partition int, start long, end long"


def _config(options: dict[str, str]) -> MirrorSinkConfig:
    return MirrorSinkConfig.parse(json.loads(options["config"]))


@dataclass
class RangePartition(InputPartition):
    """One source partition's planned range."""

    topic: str
    partition: int
    start: int
    end: int


class MirrorSinkStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans ranges: start = what the shadow group holds, end = the source's last stable offset."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.config = _config(options)
        self.max_records = int(options.get("maxRecordsPerTrigger", "0"))
        self.stop_at: dict[str, int] | None = None

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: mirror up to the source end offsets of this moment, then stop."""
        mappings = self._mappings()
        partitions = [(m.source_topic, p) for m in mappings.values() for p in range(m.source_partitions)]
        self.stop_at = self._ends(partitions)

    def _mappings(self) -> dict[str, TopicMapping]:
        cfg = self.config
        provisioner = TopicProvisioner(
            cfg,
            clients.admin(cfg.source_admin(), f"{cfg.name}-spark-planner"),
            clients.admin(cfg.target_admin(), f"{cfg.name}-spark-planner"),
        )
        return provisioner.reconcile()

    def _ends(self, partitions: list[tuple[str, int]]) -> dict[str, int]:
        reader = clients.source_consumer(self.config.source_consumer(), self.config.source_group_id, "spark-planner")
        try:
            out = {}
            for topic, p in partitions:
                _, high = reader.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
                out[f"{topic}:{p}"] = int(high)
            return out
        finally:
            reader.close()

    def _starts(self, mappings: dict[str, TopicMapping]) -> dict[str, int]:
        """Start offsets as a worker's task would resolve them (the same module decides)."""
        cfg = self.config
        wanted = {
            TargetPartition(m.target_topic, p): SourcePartition(m.source_topic, p)
            for m in mappings.values()
            for p in range(m.source_partitions)
        }
        shadow = clients.source_consumer(cfg.target_consumer(), cfg.shadow_group_id, "spark-planner")
        source = clients.source_consumer(cfg.source_consumer(), cfg.source_group_id, "spark-planner")
        try:
            resolver = StartOffsetResolver(cfg, shadow=shadow, source=source, client_id="spark-planner", log=log)
            starts = resolver.resolve(wanted)
        finally:
            shadow.close()
            source.close()
        return {f"{tp.topic}:{tp.partition}": offset for tp, offset in starts.offsets.items()}

    def initialOffset(self) -> dict[str, int]:
        """Where the shadow group is (or the fallback where it has nothing)."""
        return self._starts(self._mappings())

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxRecordsPerTrigger`` caps each micro-batch (offsets, across partitions)."""
        return ReadMaxRows(self.max_records) if self.max_records > 0 else ReadAllAvailable()

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        """Source last stable offsets, capped by ``limit``; new partitions start from the shadow group."""
        mappings = self._mappings()
        known = dict(start)
        new = {k: v for k, v in self._starts(mappings).items() if k not in known}
        known.update(new)
        ends = self._ends([(k.rsplit(":", 1)[0], int(k.rsplit(":", 1)[1])) for k in known])
        if self.stop_at is not None:
            ends = {k: min(e, self.stop_at.get(k, known[k])) for k, e in ends.items()}
        if isinstance(limit, ReadMaxRows) and known:
            per_partition = max(1, math.ceil(limit.max_rows / len(known)))
            ends = {k: min(e, known[k] + per_partition) for k, e in ends.items()}
        # A partition seen for the first time ends this batch where it starts: the next batch starts
        # there, so none of its records fall between two plans.
        return {k: max(known[k], e) if k in start else known[k] for k, e in ends.items()}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[RangePartition]:
        """One range per source partition that has something new."""
        out = []
        for key, stop in sorted(end.items()):
            topic, p = key.rsplit(":", 1)
            begin = start.get(key, stop)
            if stop > begin:
                out.append(RangePartition(topic, int(p), begin, stop))
        return out

    def read(self, partition: InputPartition) -> Iterator[tuple[str, int, int, int]]:
        """The range descriptor itself (records never enter the JVM)."""
        assert isinstance(partition, RangePartition)
        yield (partition.topic, partition.partition, partition.start, partition.end)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing: progress lives in the shadow group, committed by the writer's transactions."""


@dataclass
class RangesCopied(WriterCommitMessage):
    """What one writer task copied."""

    records: int
    ranges: int
    skipped: int


class MirrorSinkStreamWriter(DataSourceStreamWriter):
    """Copies each range row on the executor that received it."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> RangesCopied:
        """Copy every range of this task, each in its own target transaction."""
        config = _config(self.options)
        records = ranges = skipped = 0
        for row in iterator:
            result = copy_range(config, row.topic, row.partition, row.start, row.end)
            records += result.copied
            ranges += 1
            skipped += int(result.skipped)
        return RangesCopied(records, ranges, skipped)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - PySpark's name
        """Each range committed itself; nothing is left to do for the batch."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - PySpark's name
        """A failed range's transaction is aborted (or fenced by its retry); nothing to undo."""


class MirrorSinkDataSource(DataSource):
    """``spark.readStream.format("mirror-sink")`` / ``writeStream.format("mirror-sink")``."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "mirror-sink"

    def schema(self) -> str:
        """Range descriptors."""
        return SCHEMA

    def streamReader(self, schema: StructType) -> MirrorSinkStreamReader:
        """The planner."""
        return MirrorSinkStreamReader(dict(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> MirrorSinkStreamWriter:
        """The copier."""
        return MirrorSinkStreamWriter(dict(self.options))
