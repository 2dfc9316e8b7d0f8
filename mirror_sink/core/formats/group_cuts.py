"""Source groups' positions at a cut of the source's transactions, committed with the data they match.

An exactly-once application on the source (a Kafka Streams app, a consume-transform-produce loop)
commits its outputs and its input position in one transaction. A checkpoint of its group, read at
any moment, may be ahead of or behind the outputs the target holds: after a failover it would skip
inputs whose outputs were never mirrored, or produce some outputs twice. With
``source.transactions.whole`` the task reads the selected source groups' committed offsets inside a
snapshot that is a cut (``mirror_sink.task.transaction_cuts``), and writes them, when it commits at
that very cut, in the same target transaction: a read_committed reader sees a group's position
exactly when it sees the outputs that position goes with.

The topic, ``mirror-sink-group-cuts.{source alias}.internal`` on the target, is compacted, one key
per (group, target partition); key and value are JSON. The source offsets are translated at
failover through the offset syncs, as a planned failover's are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from mirror_sink.core.base.partitions import TargetPartition


def group_cuts_topic(source_alias: str) -> str:
    """The compacted topic of group positions at cuts, on the target, per source cluster alias."""
    return f"mirror-sink-group-cuts.{source_alias}.internal"


@dataclass(frozen=True)
class GroupCut:
    """One source group's committed offset on one mirrored partition, at a cut."""

    group: str
    target: TargetPartition
    source_topic: str
    source_offset: int
    time_ms: int

    def key(self) -> bytes:
        """One key per group and target partition: compaction keeps the newest."""
        return json.dumps([self.group, self.target.topic, self.target.partition], separators=(",", ":")).encode()

    def value(self) -> bytes:
        """The source side and when the cut was taken."""
        body = {"source_topic": self.source_topic, "source_offset": self.source_offset, "time_ms": self.time_ms}
        return json.dumps(body, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> GroupCut:
        """ValueError for a record of another shape."""
        try:
            group, topic, partition = json.loads(key)
            body = json.loads(value)
            return cls(
                str(group),
                TargetPartition(str(topic), int(partition)),
                str(body["source_topic"]),
                int(body["source_offset"]),
                int(body["time_ms"]),
            )
        except (TypeError, KeyError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a group cut: {exc}") from exc
