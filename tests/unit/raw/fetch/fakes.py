"""Small fakes shared by the unit tests of ``mirror_sink.raw.fetch``.

- ``FakeSourceWire``: the source connection as the fetch modules use it: leaders, leader epochs
  and topic ids from what the test says, each request sent kept with its future for the test to
  answer, and a count of metadata refreshes, wakeups and polls;
- ``v2_batch`` and ``marker``: record batches as a source broker returns them (valid CRC, leader
  epoch set);
- ``answer``: one partition's part of a Fetch response, as kafka-python decodes it.

None of them says anything about how a broker behaves.
"""

from __future__ import annotations

import struct
import uuid
from types import SimpleNamespace
from typing import Any

import crc32c
from kafka.future import Future
from kafka.record.default_records import DefaultRecordBatchBuilder

from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.clients.authorization import AuthorizationFailure
from mirror_sink.raw.wire.batches import CONTROL, TRANSACTIONAL


class FakeSourceWire:
    """The source connection: metadata given by the test, requests kept with their futures."""

    def __init__(self, *, topic_id: uuid.UUID | None = None, leader_epoch: int = 7) -> None:
        self.leaders: dict[SourcePartition, int | None] = {}
        self.topic_ids: dict[str, uuid.UUID | None] = {}
        self.default_topic_id = topic_id
        self.epoch = leader_epoch
        self.not_ready: set[int] = set()
        self.sent: list[tuple[int, Any, Future]] = []
        self.refreshes = self.wakeups = 0
        self.polls: list[float] = []
        self.denial: AuthorizationFailure | None = None

    def leader(self, topic: str, partition: int) -> int | None:
        return self.leaders.get(SourcePartition(topic, partition), 1)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.topic_ids.get(topic, self.default_topic_id)

    def leader_epoch(self, topic: str, partition: int) -> int:
        return self.epoch

    def refresh_metadata(self) -> None:
        self.refreshes += 1

    def ready(self, node: int) -> bool:
        return node not in self.not_ready

    def send(self, node: int, request: Any) -> Future:
        future = Future()
        self.sent.append((node, request, future))
        return future

    def poll(self, timeout_s: float) -> None:
        self.polls.append(timeout_s)

    def wakeup(self) -> None:
        self.wakeups += 1

    def denied(self, code: int, operation: str, resources: Any, implied_by: str | None = None) -> Any:
        return self.denial

    def close(self) -> None:
        pass


def v2_batch(
    base_offset: int,
    count: int = 2,
    *,
    leader_epoch: int = 5,
    value_bytes: int = 10,
    producer: tuple[int, int, int] = (-1, -1, -1),
    attributes: int = 0,
) -> bytearray:
    """A v2 batch of ``count`` records at ``base_offset``, written in ``leader_epoch``, with a valid CRC."""
    builder = DefaultRecordBatchBuilder(2, 0, False, *producer, batch_size=10**7)
    for delta in range(count):
        builder.append(delta, 1000 + delta, b"k", b"v" * value_bytes, [])
    batch = bytearray(builder.build())
    struct.pack_into(">q", batch, 0, base_offset)
    struct.pack_into(">i", batch, 12, leader_epoch)
    if attributes:
        (attrs,) = struct.unpack_from(">h", batch, 21)
        struct.pack_into(">h", batch, 21, attrs | attributes)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(memoryview(batch)[21:]))
    return batch


def marker(pid: int, offset: int, kind: int = 0, *, leader_epoch: int = 5) -> bytearray:
    """A transaction marker as the broker writes it: ABORT (0) or COMMIT (1) for producer ``pid``."""
    builder = DefaultRecordBatchBuilder(2, 0, False, pid, 0, -1, batch_size=10**7)
    builder.append(0, 1000, struct.pack(">hh", 0, kind), b"\0" * 6, [])
    batch = bytearray(builder.build())
    struct.pack_into(">q", batch, 0, offset)
    struct.pack_into(">i", batch, 12, leader_epoch)
    (attrs,) = struct.unpack_from(">h", batch, 21)
    struct.pack_into(">h", batch, 21, attrs | CONTROL | TRANSACTIONAL)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(memoryview(batch)[21:]))
    return batch


def answer(
    records: bytes | memoryview | None = None,
    *,
    error_code: int = 0,
    last_stable_offset: int = -1,
    diverging: tuple[int, int] = (-1, -1),
    aborted: list[tuple[int, int]] | None = None,
    partition: int = 0,
) -> SimpleNamespace:
    """One partition's part of a Fetch response (``diverging``: its diverging epoch and end offset)."""
    return SimpleNamespace(
        partition_index=partition,
        error_code=error_code,
        last_stable_offset=last_stable_offset,
        diverging_epoch=SimpleNamespace(epoch=diverging[0], end_offset=diverging[1]),
        aborted_transactions=[SimpleNamespace(producer_id=p, first_offset=o) for p, o in aborted or []],
        records=records,
    )
