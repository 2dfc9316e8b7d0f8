"""Each fetched batch into the produce pipeline: forwarded as it is, or re-encoded where the target
would reject it as it is; counted per target partition and per reason.

Forwarding costs raw mode about 150 microseconds of Python per batch (parse, CRC, header rewrite, a
place in a Produce request, its acknowledgement), whatever its size; record mode about 35 per KB of
records, in librdkafka mostly, which also re-batches them. So below about 4 KB a batch record mode is
faster (issue 15's small-transactions shape: batches of 1.7 KB, raw at 0.41x record's MB/s and
2.55x its CPU), and above it raw mode (near-1 MB single-record batches: 1.32x). The first
``SAMPLE_BATCHES`` forwarded batches decide, once; wire bytes (compressed) are counted.
"""

from __future__ import annotations

import struct
import time
from collections import Counter

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.runtime.logs import Log
from mirror_sink.core.telemetry.metrics import CycleStats
from mirror_sink.raw.fetch.fetcher import Fetched
from mirror_sink.raw.produce.producer import ProducePipeline
from mirror_sink.raw.produce.reencode import reencode
from mirror_sink.raw.wire.batches import CODECS, OLD_FORMAT, ReencodeReason, forward_problem
from mirror_sink.raw.wire.memory_budget import MemoryBudget

SMALL_BATCH_BYTES = 4096
SAMPLE_BATCHES = 1000
#: The broker's default max.message.bytes (where a broker's answer leaves a topic's out).
TARGET_MAX_MESSAGE_BYTES = 1024 * 1024 + 12
_INT64 = struct.Struct(">q")


class BatchForwarder:
    """Hands batches to the pipeline, as they are or re-encoded, and keeps the counts of both."""

    def __init__(self, producer: ProducePipeline, budget: MemoryBudget, log: Log) -> None:
        self.producer = producer
        self.budget = budget
        self.log = log
        self.forwarded = 0
        #: Bytes of the batches forwarded as they are (for the batch-size advice).
        self.forwarded_bytes = 0
        self.reencoded: Counter[ReencodeReason] = Counter()
        self._advised = False
        self._stats: dict[TargetPartition, CycleStats] = {}
        self._explained: set[tuple[SourcePartition, ReencodeReason]] = set()
        #: Each target topic's max.message.bytes, from the topic mappings (``DataPath.limit_batches``).
        self.limits: dict[str, int] = {}

    def send(self, tp: SourcePartition, target_tp: TargetPartition, item: Fetched, stop: int | None) -> tuple[int, int]:
        """Put ``item``'s batch into the pipeline for ``target_tp`` (nothing at or past ``stop``);
        the records and bytes it added."""
        assert item.batch is not None
        limit = self._max_message_bytes(target_tp.topic)
        header = item.header
        problem = OLD_FORMAT if header is None else forward_problem(header, item.start, limit, stop)
        if problem is None:
            assert header is not None
            self.producer.send(target_tp, item.batch, header.record_count, item.charge, header.base_offset)
            self.forwarded += 1
            self.forwarded_bytes += len(item.batch)
            self._count(target_tp, item.batch, header.record_count)
            return header.record_count, len(item.batch)
        self.reencoded[problem.reason] += 1
        if (tp, problem.reason) not in self._explained:
            self._explained.add((tp, problem.reason))
            self.log.info(
                "re-encoding a batch of %s-%d (%s); further ones counted in progress logs",
                *tp,
                problem.detail,
                extra={"partition": f"{tp.topic}-{tp.partition}"},
            )
        codec = header.codec if header is not None else int(item.batch[17]) & 0x07
        where = f"source partition {tp} (codec {CODECS.get(codec, codec)})"
        rebuilt = reencode(item.batch, codec, item.start, limit, where, end_offset=stop)
        records = 0
        for i, (built, offsets) in enumerate(rebuilt):
            charge = item.charge if i == len(rebuilt) - 1 else 0
            self.producer.send(target_tp, memoryview(built), len(offsets), charge, offsets)
            self._count(target_tp, built, len(offsets))
            records += len(offsets)
        if not rebuilt:
            self.budget.give_back(item.charge)
        return records, sum(len(r.batch) for r in rebuilt)

    def forget_stats(self) -> None:
        """Drop the counts of a cycle that was rewound."""
        self._stats = {}

    def take_stats(self) -> dict[TargetPartition, CycleStats]:
        """Per target partition: batches' records, bytes and timestamps since the last call."""
        stats, self._stats = self._stats, {}
        return stats

    def batch_counts(self) -> dict[str, int]:
        """Batches forwarded as they are, and re-encoded by reason, since the start."""
        return {"forwarded": self.forwarded, **{f"reencoded_{why}": n for why, n in self.reencoded.items()}}

    def record_mode_advised(self) -> str | None:
        """Why record mode would copy this source faster, once the first batches show it; else None."""
        if self.forwarded < SAMPLE_BATCHES or self._advised:
            return None
        self._advised = True  # decided once, on the first batches
        per_batch = self.forwarded_bytes / self.forwarded
        if per_batch >= SMALL_BATCH_BYTES:
            return None
        return (
            f"the first {self.forwarded} source batches averaged {per_batch:,.0f} bytes (under "
            f"{SMALL_BATCH_BYTES:,}), where re-producing records is faster than forwarding batches"
        )

    def describe(self) -> str:
        """Batches forwarded and re-encoded, for progress logs."""
        fallback = ", ".join(f"{n} {why}" for why, n in sorted(self.reencoded.items())) or "none"
        return f"{self.forwarded} batches forwarded as they are, re-encoded: {fallback}"

    def _count(self, tp: TargetPartition, batch: memoryview | bytearray, records: int) -> None:
        stats = self._stats.get(tp)
        if stats is None:
            stats = self._stats[tp] = CycleStats()
        # v2 header: baseTimestamp at 27, maxTimestamp at 35 (the first and the latest record's).
        first, last = _INT64.unpack_from(batch, 27)[0], _INT64.unpack_from(batch, 35)[0]
        stats.add(records, len(batch), first, last, int(time.time() * 1000))

    def _max_message_bytes(self, topic: str) -> int:
        limit = self.limits.get(topic)
        if limit is None:  # the task gives every mapped topic's limit before it assigns a partition
            raise TaskFailure(f"internal error: no max.message.bytes known for target topic {topic!r}")
        return limit
