"""Source records the mirror stepped over on purpose (``offset.gap.policy=skip``), kept on record.

A skipped range is written in the same target transaction that moves the shadow group's offset past
it, in two places:

- an **audit record** on ``mirror-sink-gaps.{source alias}.internal`` (compacted, one partition): one
  key per gap (source topic, partition, topic id, first missing offset), so compaction keeps every
  gap ever skipped. Key and value are JSON, readable with ``kafka-console-consumer``;
- a **gap marker** in the offset syncs (``mirror_sink.core.offset_syncs``, version 1): translation
  and failover never treat the range as mirrored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from mirror_sink.core.partitions import SourcePartition, TargetPartition

#: Why a range is skipped; the one reason today (a recreated topic is never skipped over).
DELETED_BEFORE_MIRRORED = "deleted on the source before it was mirrored (retention or DeleteRecords)"


def gaps_topic(source_alias: str) -> str:
    """The compacted audit topic of skipped ranges on the target, per source cluster alias."""
    return f"mirror-sink-gaps.{source_alias}.internal"


@dataclass(frozen=True)
class SkippedRange:
    """Source offsets ``first_missing .. first_present - 1`` of ``source``, never mirrored."""

    source: SourcePartition
    topic_id: str | None
    first_missing: int
    first_present: int

    @property
    def records(self) -> int:
        """Offsets in the range (records, transaction markers and compacted-away offsets alike)."""
        return self.first_present - self.first_missing

    def describe(self) -> str:
        """``orders-3 offsets 100..149 (50 offsets)``, for logs and errors."""
        return f"{self.source} offsets {self.first_missing}..{self.first_present - 1} ({self.records} offsets)"

    def audit_key(self) -> bytes:
        """One key per gap: compaction keeps every gap ever skipped."""
        key = {
            "topic": self.source.topic,
            "partition": self.source.partition,
            "topic_id": self.topic_id,
            "first_missing": self.first_missing,
        }
        return json.dumps(key, separators=(",", ":")).encode()

    def audit_value(self, *, source_alias: str, target: TargetPartition, connector: str, task: str) -> bytes:
        """The whole story of the gap: where, how many, why, by whom and when."""
        value = {
            "source_cluster": source_alias,
            "topic": self.source.topic,
            "partition": self.source.partition,
            "topic_id": self.topic_id,
            "first_missing": self.first_missing,
            "first_present": self.first_present,
            "offsets": self.records,
            "target_topic": target.topic,
            "target_partition": target.partition,
            "reason": DELETED_BEFORE_MIRRORED,
            "policy": "offset.gap.policy=skip",
            "connector": connector,
            "task": task,
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        }
        return json.dumps(value, separators=(",", ":")).encode()


class AuditRecord(NamedTuple):
    """A record a committer writes inside the cycle's transaction, beside the data and offsets."""

    where: TargetPartition
    key: bytes
    value: bytes
