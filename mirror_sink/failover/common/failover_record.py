"""The durable record of a failover: what the switch was, kept on the target for the way back.

A failback may come weeks after the failover, when the offset syncs (``offset-syncs.topic.retention.ms``,
7 days by default) and the shadow group's offsets may be gone. So ``mirror-sink failover`` writes
what the switch was to ``mirror-sink-failovers.{source alias}.internal`` on the target: compacted,
one partition, one transaction per failover (a read_committed reader sees all of a failover or none
of it). Key and value are JSON, readable with ``kafka-console-consumer``. One failover is:

- a **summary**: its mode (planned, or disaster from checkpoints), when, the clusters' ids;
- per **target topic**, each partition's cut: the source offset mirrored up to (the shadow group's
  offset: every source record below it is on the target), the target offset the next mirrored
  record would have taken, the target's and, where it could be read, the source's last stable
  offset;
- per **group moved**, the target offsets committed and, in a disaster failover, each checkpoint's
  age;
- with ``--fence-source``, the source topics it denied writes to (the failback lifts that).

Each key names the connector and the failover id, so compaction keeps every failover ever done.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mirror_sink.core.base.partitions import TargetPartition


def failovers_topic(source_alias: str) -> str:
    """The compacted topic of failover records on the target, per source cluster alias."""
    return f"mirror-sink-failovers.{source_alias}.internal"


@dataclass(frozen=True)
class PartitionCut:
    """Where one mirrored partition stood when the failover ran."""

    target: TargetPartition
    source_topic: str
    #: The shadow group's offset: every source offset below it is on the target (None: no offset stored).
    mirrored_to: int | None
    #: The target offset the next mirrored record would have taken (None: the offset syncs do not say).
    target_offset: int | None
    #: The target partition's last stable offset.
    target_end: int
    #: The source partition's last stable offset (None: the source could not be read, a disaster).
    source_end: int | None

    @property
    def unmirrored(self) -> int | None:
        """Source offsets at the cut the mirror had not copied (None when the source's end is unknown)."""
        if self.source_end is None:
            return None
        return max(0, self.source_end - (self.mirrored_to or 0))


@dataclass(frozen=True)
class GroupMove:
    """The target offsets committed for one group, and the age of each checkpoint they came from."""

    group: str
    offsets: dict[TargetPartition, int]
    checkpoint_age_s: dict[TargetPartition, float] = field(default_factory=dict)


@dataclass(frozen=True)
class FailoverRecord:
    """One failover of one connector."""

    connector: str
    failover_id: str
    mode: str  # "planned" or "disaster"
    time: str
    source_alias: str
    source_cluster_id: str | None
    target_cluster_id: str | None
    cuts: tuple[PartitionCut, ...]
    groups: tuple[GroupMove, ...]
    #: Source topics ``--fence-source`` denied every principal's writes to; the failback lifts it.
    write_denied: tuple[str, ...] = ()

    @staticmethod
    def new_id() -> str:
        """A failover id that sorts by time: ``20261126T081500Z-3f9a1c``."""
        return f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:6]}"

    def records(self) -> list[tuple[bytes, bytes]]:
        """The failover as (key, value) records: one per target topic, one per group, the summary."""
        out = []
        by_topic: dict[str, list[PartitionCut]] = {}
        for cut in self.cuts:
            by_topic.setdefault(cut.target.topic, []).append(cut)
        for topic, cuts in sorted(by_topic.items()):
            partitions = [_cut_json(c) for c in sorted(cuts, key=lambda c: c.target.partition)]
            out.append((self._key(topic=topic), _json({"partitions": partitions})))
        for move in sorted(self.groups, key=lambda m: m.group):
            ages = {tp: round(age, 1) for tp, age in move.checkpoint_age_s.items()}
            moved = {"offsets": _by_partition(move.offsets), "checkpoint_age_s": _by_partition(ages)}
            out.append((self._key(group=move.group), _json(moved)))
        summary = {
            "mode": self.mode,
            "time": self.time,
            "source_cluster": self.source_alias,
            "source_cluster_id": self.source_cluster_id,
            "target_cluster_id": self.target_cluster_id,
            "topics": len(by_topic),
            "partitions": len(self.cuts),
            "groups": sorted(m.group for m in self.groups),
            "source_write_denied": sorted(self.write_denied),
        }
        out.append((self._key(), _json(summary)))  # last: a reader needs it to take the rest
        return out

    def _key(self, **part: str) -> bytes:
        return _json({"connector": self.connector, "failover": self.failover_id, **part})


def read_records(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[tuple[str, str], FailoverRecord]:
    """Every failover in ``records`` (key, value pairs of the failovers topic, in order), by
    (connector, failover id); a failover without its summary is left out. ValueError names a record
    that is not one of these."""
    summaries: dict[tuple[str, str], dict[str, Any]] = {}
    cuts: dict[tuple[str, str], list[PartitionCut]] = {}
    moves: dict[tuple[str, str], list[GroupMove]] = {}
    for raw_key, raw_value in records:
        try:
            key = json.loads(raw_key or b"")
            value = json.loads(raw_value or b"")
            which = (key["connector"], key["failover"])
            if "topic" in key:
                cuts.setdefault(which, []).extend(_cut_of(key["topic"], p) for p in value["partitions"])
            elif "group" in key:
                moves.setdefault(which, []).append(
                    GroupMove(
                        key["group"],
                        _partitions_of(value["offsets"], int),
                        _partitions_of(value.get("checkpoint_age_s", {}), float),
                    )
                )
            else:
                summaries[which] = value
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"not a failover record: {raw_key!r}: {exc}") from exc
    return {
        which: FailoverRecord(
            which[0],
            which[1],
            s["mode"],
            s["time"],
            s["source_cluster"],
            s.get("source_cluster_id"),
            s.get("target_cluster_id"),
            tuple(cuts.get(which, [])),
            tuple(moves.get(which, [])),
            tuple(s.get("source_write_denied", [])),
        )
        for which, s in summaries.items()
    }


def latest(failovers: Mapping[tuple[str, str], FailoverRecord], connector: str) -> FailoverRecord | None:
    """The newest failover of ``connector`` (ids sort by time), or None."""
    mine = [f for (name, _), f in failovers.items() if name == connector]
    return max(mine, key=lambda f: f.failover_id, default=None)


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _cut_json(cut: PartitionCut) -> dict[str, Any]:
    return {
        "partition": cut.target.partition,
        "source_topic": cut.source_topic,
        "mirrored_to": cut.mirrored_to,
        "target_offset": cut.target_offset,
        "target_end": cut.target_end,
        "source_end": cut.source_end,
    }


def _cut_of(topic: str, p: Mapping[str, Any]) -> PartitionCut:
    return PartitionCut(
        TargetPartition(topic, int(p["partition"])),
        str(p["source_topic"]),
        p["mirrored_to"],
        p["target_offset"],
        int(p["target_end"]),
        p["source_end"],
    )


def _by_partition(values: Mapping[TargetPartition, Any]) -> dict[str, Any]:
    """``{"topic": {"3": value}}``: JSON keys are strings."""
    out: dict[str, dict[str, Any]] = {}
    for tp, value in sorted(values.items()):
        out.setdefault(tp.topic, {})[str(tp.partition)] = value
    return out


def _partitions_of(
    values: Mapping[str, Mapping[str, Any]], kind: type[int] | type[float]
) -> dict[TargetPartition, Any]:
    return {TargetPartition(topic, int(p)): kind(v) for topic, ps in values.items() for p, v in ps.items()}
