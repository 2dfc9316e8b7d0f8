"""The ``mirror-sink`` PySpark data source: a planning stream reader and a copying stream writer.

The reader only plans. Its offsets are ``{"topic:partition": next source offset}``; each micro-batch
row is a range descriptor ``(topic, partition, start, end, max_message_bytes)`` (the last: the
target topic's, where raw mode may forward batches, else null), so no record data passes through the
JVM. The writer, on executors, copies each range with the worker's data path (raw or record mode, as
``mirror.mode`` says) in target transactions that also commit the range's progress to the shadow
group (``range_copier``).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Collection, Iterator
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
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.clients import clients
from mirror_sink.core.runtime.logs import configure_logging
from mirror_sink.raw.wire.capabilities import unsupported
from mirror_sink.raw.wire.wire import WireClient
from mirror_sink.spark.byte_budget import bytes_per_offset, cap_by_bytes
from mirror_sink.spark.range_copier import copy_range
from mirror_sink.task.start_offsets import StartOffsetResolver
from mirror_sink.topics.source_discovery import TopicMapping
from mirror_sink.topics.topic_provisioner import TopicProvisioner

log = logging.getLogger(__name__)

SCHEMA = "topic string, partition int, start long, end long, max_message_bytes long"


def _config(options: dict[str, str]) -> MirrorSinkConfig:
    return MirrorSinkConfig.parse(json.loads(_option(options, "config", "{}")))


def _option(options: dict[str, str], name: str, default: str) -> str:
    """An option by its documented name: Spark hands them over lower-cased (they are case-insensitive)."""
    return options.get(name, options.get(name.lower(), default))


def _cap(options: dict[str, str], name: str) -> int:
    """A per-trigger cap option: a count >= 0, where 0 means none."""
    text = _option(options, name, "0")
    if not text.isdigit():
        raise ConfigError(name, f"{text!r} is not a whole number >= 0 (0 means no cap)")
    return int(text)


def _key(tp: SourcePartition) -> str:
    return f"{tp.topic}:{tp.partition}"


def _partition(key: str) -> SourcePartition:
    topic, p = key.rsplit(":", 1)
    return SourcePartition(topic, int(p))


@dataclass
class RangePartition(InputPartition):
    """One source partition's planned range."""

    topic: str
    partition: int
    start: int
    end: int
    #: The target topic's max.message.bytes where raw mode may forward batches (None: record mode).
    max_message_bytes: int | None = None


class MirrorSinkStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans ranges: start = what the shadow group holds, end = the source's last stable offset."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.config = _config(options)
        self.max_records = _cap(options, "maxRecordsPerTrigger")
        self.max_bytes = _cap(options, "maxBytesPerTrigger")
        if self.max_bytes and (refused := unsupported(self.config.source_consumer())):
            raise ConfigError(
                "maxBytesPerTrigger",
                "reads the source's log sizes with the raw path's client, which cannot take " + ", ".join(refused),
            )
        self.stop_at: dict[str, int] | None = None
        #: Each source topic's target max.message.bytes, as the latest planning read it.
        self._limits: dict[str, int | None] = {}

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: mirror up to the source end offsets of this moment, then stop."""
        mappings = self._mappings()
        partitions = [SourcePartition(m.source_topic, p) for m in mappings.values() for p in range(m.source_partitions)]
        self.stop_at = {_key(tp): high for tp, (_, high) in self._watermarks(partitions).items()}

    def _mappings(self) -> dict[str, TopicMapping]:
        cfg = self.config
        provisioner = TopicProvisioner(
            cfg,
            clients.admin(cfg.source_admin(), f"{cfg.name}-spark-planner"),
            clients.admin(cfg.target_admin(), f"{cfg.name}-spark-planner"),
        )
        mappings = provisioner.reconcile()
        self._limits = {m.source_topic: m.target_max_message_bytes for m in mappings.values()}
        return mappings

    def _watermarks(self, partitions: list[SourcePartition]) -> dict[SourcePartition, tuple[int, int]]:
        """(log start offset, last stable offset) of each partition."""
        reader = clients.source_consumer(self.config.source_consumer(), self.config.source_group_id, "spark-planner")
        try:
            out = {}
            for tp in partitions:
                low, high = reader.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=30)
                out[tp] = (int(low), int(high))
            return out
        finally:
            reader.close()

    def _bytes_per_offset(self, marks: dict[SourcePartition, tuple[int, int]]) -> dict[SourcePartition, float]:
        """Each partition's average bytes per offset, from its leader's log size (``byte_budget``)."""
        wire = WireClient(self.config.source_consumer(), "source", f"{self.config.name}-spark-planner", 1 << 20)
        try:
            return bytes_per_offset(wire, marks)
        finally:
            wire.close()

    def _starts(self, mappings: dict[str, TopicMapping], known: Collection[str] = ()) -> dict[str, int]:
        """Start offsets as a worker's task would resolve them (the same module decides), of the
        partitions not ``known`` yet: a partition is resolved, and its stored offset checked against
        the source, where its mirroring starts, not at every micro-batch."""
        cfg = self.config
        wanted = {
            TargetPartition(m.target_topic, p): SourcePartition(m.source_topic, p)
            for m in mappings.values()
            for p in range(m.source_partitions)
            if _key(SourcePartition(m.source_topic, p)) not in known
        }
        if not wanted:
            return {}
        shadow = clients.source_consumer(cfg.target_consumer(), cfg.shadow_group_id, "spark-planner")
        source = clients.source_consumer(cfg.source_consumer(), cfg.source_group_id, "spark-planner")
        try:
            resolver = StartOffsetResolver(cfg, shadow=shadow, source=source, client_id="spark-planner", log=log)
            starts = resolver.resolve(wanted)
        finally:
            shadow.close()
            source.close()
        return {_key(tp): offset for tp, offset in starts.offsets.items()}

    def initialOffset(self) -> dict[str, int]:
        """Where the shadow group is (or the fallback where it has nothing)."""
        return self._starts(self._mappings())

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxRecordsPerTrigger`` (offsets) and ``maxBytesPerTrigger`` cap each micro-batch; with both
        set, Spark is told the first and ``latestOffset`` applies both."""
        if self.max_records > 0:
            return ReadMaxRows(self.max_records)
        return ReadMaxBytes(self.max_bytes) if self.max_bytes > 0 else ReadAllAvailable()

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        """Source last stable offsets, capped by ``limit``; new partitions start from the shadow group."""
        mappings = self._mappings()
        known = dict(start)
        new = self._starts(mappings, known)
        known.update(new)
        marks = self._watermarks([_partition(k) for k in known])
        # A partition seen for the first time ends this batch where it starts: the next batch starts
        # there, so none of its records fall between two plans.
        ends = {
            _key(tp): max(known[_key(tp)], high) if _key(tp) in start else known[_key(tp)]
            for tp, (_, high) in marks.items()
        }
        if self.stop_at is not None:
            ends = {k: max(known[k], min(e, self.stop_at.get(k, known[k]))) for k, e in ends.items()}
        # Trigger.AvailableNow passes ReadAllAvailable: the caps still apply, as Spark's Kafka source
        # keeps maxOffsetsPerTrigger there (the available data is then copied in several batches).
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.max_records
        if max_rows > 0 and known:
            per_partition = max(1, math.ceil(max_rows / len(known)))
            ends = {k: min(e, known[k] + per_partition) for k, e in ends.items()}
        max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else self.max_bytes
        if max_bytes > 0 and any(e > known[k] for k, e in ends.items()):
            tps = {k: _partition(k) for k in ends}
            sizes = self._bytes_per_offset({tp: marks[tp] for tp in tps.values()})
            capped = cap_by_bytes(
                {tp: known[k] for k, tp in tps.items()}, {tp: ends[k] for k, tp in tps.items()}, sizes, max_bytes
            )
            ends = {_key(tp): end for tp, end in capped.items()}
        return ends

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[RangePartition]:
        """One range per source partition that has something new."""
        out = []
        for key, stop in sorted(end.items()):
            topic, p = key.rsplit(":", 1)
            begin = start.get(key, stop)
            if stop > begin:
                if topic not in self._limits:  # a batch replanned from the checkpoint after a restart
                    self._mappings()
                out.append(RangePartition(topic, int(p), begin, stop, self._limits.get(topic)))
        return out

    def read(self, partition: InputPartition) -> Iterator[tuple[str, int, int, int, int | None]]:
        """The range descriptor itself (records never enter the JVM)."""
        assert isinstance(partition, RangePartition)
        yield (partition.topic, partition.partition, partition.start, partition.end, partition.max_message_bytes)

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
        if not logging.getLogger().handlers:  # a fresh Python worker: its lines go to the executor's stderr
            configure_logging()
        config = _config(self.options)
        records = ranges = skipped = 0
        for row in iterator:
            result = copy_range(
                config, row.topic, row.partition, row.start, row.end, max_message_bytes=row.max_message_bytes
            )
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
