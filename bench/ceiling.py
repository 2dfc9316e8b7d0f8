"""The ceiling: how fast the target broker ingests the source's own batches with no mirror in between.

Every committed batch of the source topic is fetched into memory first; then, timed alone, they are
produced to a fresh target topic as they are (idempotent, acks=all, five requests in flight per
connection, one batch per partition per request: raw mode's own producer without its transaction).
No mirror can write those batches faster than this, so it bounds every mirror's MB/s from above.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from bench.common.cpu import BusyTimeline, ProcessCpu
from devkafka.data import Address, client_settings, create_topic
from devkafka.raw_batches import read_committed_batches
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.writer import RawWriter


@dataclass
class Ceiling:
    """Target ingest of the source's batches."""

    seconds: float
    batches: int
    records: int
    #: Cores busy on the whole machine during the timed ingest (the target broker, mostly).
    machine_cores_busy: float | None = None
    #: The target broker's own process CPU-seconds over the timed ingest (None: no pid, a remote cluster).
    broker_cpu_seconds: float | None = None


def target_ingest(
    source: Address,
    target: Address,
    topic: str,
    *,
    partitions: int,
    target_topic: str,
    on_progress: Callable[[int, int], None] | None = None,
    target_pid: int | None = None,
) -> Ceiling:
    """Produce ``topic``'s batches, fetched beforehand, to ``target_topic`` as fast as the target takes them.

    ``source`` and ``target`` are addresses, or client settings with a secured cluster's SASL/TLS keys.
    With ``target_pid`` (the target broker's process on this machine) the broker's own CPU over the
    timed ingest is measured too: what the target pays to take those bytes in, whatever else runs.
    """
    batches = {
        p: [(item.batch, item.header.record_count) for item in items if item.batch is not None and item.header]
        for p, items in read_committed_batches(source, topic, range(partitions)).items()
    }
    create_topic(target, target_topic, partitions, {"compression.type": "producer"})
    writer = RawWriter.open(
        client_settings(target),
        client_id="bench-ceiling-produce",
        # The batches are in memory before the clock starts and are sent with no charge: the budget stays at 0.
        budget=MemoryBudget(0),
        transactional_id=None,
        transaction_timeout_ms=60_000,
        group_id="unused",
        request_max_bytes=16 << 20,
    )
    wire, producer = writer.wire, writer.pipeline
    total = sum(count for items in batches.values() for _, count in items)
    try:
        writer.committer.start()  # an idempotent producer id
        while any(wire.leader(target_topic, p) is None for p in range(partitions)):  # metadata: not timed
            wire.poll(0.1)
        records = 0
        started = time.monotonic()
        machine = BusyTimeline()
        broker = ProcessCpu(target_pid)
        for p, items in batches.items():
            for batch, count in items:
                producer.send(TargetPartition(target_topic, p), batch, count, 0, 0)
                records += count
        while producer.backlog:
            producer.pump()
            wire.poll(0.005)
            producer.reap()
            if on_progress is not None:
                on_progress(producer.acked_records, total)
        seconds = time.monotonic() - started
        broker_cpu = broker.seconds()
        machine.sample()
        return Ceiling(
            seconds, sum(len(b) for b in batches.values()), records, machine.cores_busy(None, None), broker_cpu
        )
    finally:
        writer.close()
