"""Where the mirror went past a break in the source on purpose, kept on record.

Two breaks may be gone past, each only when the operator says so:

- a **skipped range** (``offset.gap.policy=skip``): source records deleted before they were mirrored;
- a **recreation** (``topic.recreation.policy=continue``): a source topic deleted and created again
  under its name, whose new incarnation is mirrored from its start into the same target topic.

Either is written in the same target transaction that moves the shadow group's offset past it, in
two places:

- an **audit record** on ``mirror-sink-gaps.{source alias}.internal`` (compacted, one partition): one
  key per event (source topic, partition, topic id, and the first missing offset or the topic id
  before), so compaction keeps every one. Key and value are JSON, readable with
  ``kafka-console-consumer``;
- a marker in the offset syncs (``mirror_sink.core.formats.offset_syncs``): a gap (version 1), which
  translation and failover never treat as mirrored, or a new incarnation (version 2), from which on
  nothing known of the old topic translates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from mirror_sink.core.base.partitions import SourcePartition, TargetPartition

#: Why a range is skipped; the one reason (a recreated topic is continued, never skipped over).
DELETED_BEFORE_MIRRORED = "deleted on the source before it was mirrored (retention or DeleteRecords)"


def gaps_topic(source_alias: str) -> str:
    """The compacted audit topic of skipped ranges and recreations on the target, per source cluster alias."""
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


@dataclass(frozen=True)
class Recreation:
    """``source``'s topic was deleted and created again: mirrored up to ``mirrored_to`` under the old
    id, its new incarnation (``new_topic_id``) is mirrored from offset 0 into the same target partition."""

    source: SourcePartition
    old_topic_id: str
    new_topic_id: str
    mirrored_to: int

    def describe(self) -> str:
        """``orders-3 (topic id A, mirrored up to 2102, is now B)``, for logs."""
        return (
            f"{self.source} (topic id {self.old_topic_id}, mirrored up to offset {self.mirrored_to}, "
            f"is now {self.new_topic_id})"
        )

    def audit_key(self) -> bytes:
        """One key per recreation of a partition: compaction keeps every one."""
        key = {
            "topic": self.source.topic,
            "partition": self.source.partition,
            "topic_id": self.new_topic_id,
            "previous_topic_id": self.old_topic_id,
        }
        return json.dumps(key, separators=(",", ":")).encode()

    def audit_value(self, *, source_alias: str, target: TargetPartition, connector: str, task: str) -> bytes:
        """The whole story: which incarnation ended where, which one goes on, where to, by whom and when."""
        value = {
            "source_cluster": source_alias,
            "topic": self.source.topic,
            "partition": self.source.partition,
            "event": "topic deleted and created again",
            "previous_topic_id": self.old_topic_id,
            "previous_mirrored_to": self.mirrored_to,
            "topic_id": self.new_topic_id,
            "continued_from": 0,
            "target_topic": target.topic,
            "target_partition": target.partition,
            "policy": "topic.recreation.policy=continue",
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
