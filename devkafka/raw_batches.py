"""Read a topic's committed record batches as raw mode fetches them, for byte-identity checks and benchmarks."""

from __future__ import annotations

import time
from collections.abc import Iterable

from devkafka.data import Address, client_settings, end_offsets
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.raw.fetch.fetcher import Fetched, RawFetcher
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.wire import WireClient


def read_committed_batches(
    bootstrap: Address, topic: str, partitions: Iterable[int], timeout_s: float = 120.0
) -> dict[int, list[Fetched]]:
    """Every committed data batch of ``partitions``, up to their current end, as raw mode fetches them.

    For inspection (byte identity checks) and benchmarks: everything is held in memory at once.
    """
    ends = end_offsets(bootstrap, topic)
    wanted = {p: ends[p] for p in partitions}
    wire = WireClient(client_settings(bootstrap), "inspected", "mirror-sink-raw-reader", 1 << 30)
    fetcher = RawFetcher(
        wire, MemoryBudget(1 << 40), fetch_max_bytes=64 << 20, partition_max_bytes=16 << 20, max_wait_ms=100
    )
    fetcher.assign({SourcePartition(topic, p): 0 for p in wanted})
    found: dict[int, list[Fetched]] = {p: [] for p in wanted}
    positions = dict.fromkeys(wanted, 0)
    deadline = time.monotonic() + timeout_s
    try:
        while any(positions[p] < end for p, end in wanted.items()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"raw read of {topic} stopped at {positions} of {wanted}")
            fetcher.fill()
            wire.poll(0.1)
            fetcher.collect()
            for p in wanted:
                while (item := fetcher.pop(SourcePartition(topic, p))) is not None:
                    if item.batch is not None:
                        found[p].append(item)
                    positions[p] = item.next_offset
    finally:
        fetcher.close()
    return found
