"""Consumer groups across a failover: commit a source group, watch a group's offsets appear on the
target, and read MirrorMaker 2's checkpoints and offset syncs (mirror-sink writes checkpoints in the
same format). Shared by the failover, round-trip and evidence scenarios.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka import (
    OFFSET_BEGINNING,
    ConsumerGroupState,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from bench.common.console import log
from bench.mm2 import TARGET_ALIAS
from devkafka.data import committed_offsets, drain, reader


def commit_source_group(bootstrap: str, group: str, topic: str, offsets: Mapping[int, int]) -> None:
    """A member of ``group`` consumes ``topic`` up to ``offsets``, commits exactly those offsets and leaves."""
    consumer = reader(bootstrap, group, **{"auto.offset.reset": "earliest"})
    pending = {p for p, o in offsets.items() if o > 0}
    deadline = time.monotonic() + 300
    try:
        consumer.subscribe([topic])
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group}: partitions {sorted(pending)} not consumed up to {dict(offsets)}")
            for msg in consumer.consume(10_000, 0.5):
                err = msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(err)
                    continue
                p = msg.partition() or 0
                if p in pending and (msg.offset() or 0) >= offsets[p] - 1:
                    pending.discard(p)
                    consumer.pause([TopicPartition(topic, p)])
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        consumer.close()
    stored = committed_offsets(bootstrap, group, [(topic, p) for p in offsets])
    if {p: stored[(topic, p)] for p in offsets} != dict(offsets):
        raise AssertionError(f"group {group} committed {stored}, wanted {dict(offsets)}")


def group_states(bootstrap: str, groups: Sequence[str]) -> dict[str, str]:
    """Each group's state name (EMPTY: no members)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out = {}
    for group, future in admin.describe_consumer_groups(list(groups), request_timeout=30).items():
        state = future.result(30).state
        out[group] = state.name if isinstance(state, ConsumerGroupState) else str(state)
    return out


def read_compacted(bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of a small topic, in order; empty if the topic does not exist."""
    consumer = reader(bootstrap, "mirror-sink-bench-failover-inspect")
    out: list[tuple[bytes, bytes]] = []
    try:
        md = consumer.list_topics(topic, timeout=30).topics.get(topic)
        if md is None or md.error is not None or not md.partitions:
            return out
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in md.partitions])
        pending = {p for p in md.partitions if consumer.get_watermark_offsets(TopicPartition(topic, p), 30)[1] > 0}

        def take(msg: Message) -> None:
            key, value = msg.key(), msg.value()
            if key is not None and value is not None:
                out.append((key, value))

        drain(consumer, pending, take, 120, f"reading {topic}")
    finally:
        consumer.close()
    return out


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", buf, pos)
    return buf[pos + 2 : pos + 2 + n].decode(), pos + 2 + n


def mm2_checkpoints(target: str, alias: str, groups: Sequence[str]) -> dict[str, dict[int, tuple[int, int]]]:
    """The last checkpoint per group and partition in ``{alias}.checkpoints.internal``: (upstream, downstream).

    Kafka's Checkpoint record: key = group (int16-length string), topic (string), partition (int32);
    value = version (int16), upstream offset (int64), downstream offset (int64), metadata (string).
    """
    out: dict[str, dict[int, tuple[int, int]]] = {g: {} for g in groups}
    for key, value in read_compacted(target, f"{alias}.checkpoints.internal"):
        group, pos = _string(key, 0)
        _topic, pos = _string(key, pos)
        (partition,) = struct.unpack_from(">i", key, pos)
        upstream, downstream = struct.unpack_from(">qq", value, 2)
        if group in out:
            out[group][partition] = (upstream, downstream)
    return out


def mm2_offset_syncs(source: str, topic: str) -> dict[int, list[tuple[int, int]]]:
    """Every offset sync MM2 wrote for ``topic`` (topic ``mm2-offset-syncs.target.internal`` on the source),
    per partition: (upstream, downstream) in order. Key: topic (string), partition (int32); value:
    upstream (int64), downstream (int64)."""
    out: dict[int, list[tuple[int, int]]] = {}
    for key, value in read_compacted(source, f"mm2-offset-syncs.{TARGET_ALIAS}.internal"):
        name, pos = _string(key, 0)
        if name != topic:
            continue
        (partition,) = struct.unpack_from(">i", key, pos)
        out.setdefault(partition, []).append(struct.unpack_from(">qq", value, 0))
    return out


@dataclass
class SyncWatch:
    """The target groups' committed offsets over time, while MM2 runs."""

    first_full_s: dict[str, float | None]
    last_change_s: dict[str, float | None]
    history: dict[str, list[tuple[float, dict[int, int | None]]]]


def watch_target_groups(
    target: str,
    groups: Sequence[str],
    topic: str,
    partitions: Sequence[int],
    *,
    since: float,
    settle_s: float,
    timeout_s: float,
    alive: Callable[[], bool],
) -> SyncWatch:
    """Poll the groups' offsets on the target until every partition of every group has one and none changed for
    ``settle_s``, or ``timeout_s`` after ``since`` (times in the result count from ``since``)."""
    tps = [(topic, p) for p in partitions]
    watch = SyncWatch(dict.fromkeys(groups), dict.fromkeys(groups), {g: [] for g in groups})
    last: dict[str, dict[int, int | None] | None] = dict.fromkeys(groups)
    last_change = since
    while True:
        now = time.monotonic()
        for g in groups:
            stored = committed_offsets(target, g, tps, timeout=10)
            offsets = {p: (o if (o := stored[(topic, p)]) >= 0 else None) for p in partitions}
            if offsets != last[g]:
                if last[g] is not None or any(o is not None for o in offsets.values()):
                    log(f"    {now - since:6.1f} s  {g} on target: {offsets}")
                    watch.history[g].append((now - since, offsets))
                    watch.last_change_s[g] = now - since
                    last_change = now
                last[g] = offsets
            if watch.first_full_s[g] is None and all(o is not None for o in offsets.values()):
                watch.first_full_s[g] = now - since
        synced = all(v is not None for v in watch.first_full_s.values())
        if synced and now - last_change >= settle_s:
            return watch
        if now - since >= timeout_s:
            log(f"    stopped waiting {timeout_s:.0f} s after the data caught up")
            return watch
        if not alive():
            raise RuntimeError("the mirror exited while its groups were being watched")
        time.sleep(2.0)
