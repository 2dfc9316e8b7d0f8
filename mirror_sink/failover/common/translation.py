"""Source groups' committed offsets translated exactly into target offsets, with the offset syncs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.checkpoints import Checkpoint
from mirror_sink.core.formats.offset_syncs import OffsetIndex


@dataclass(frozen=True)
class Translation:
    """One group's position on one partition: on the source and (if known) on the target."""

    group: str
    source_topic: str
    target: TargetPartition
    source_offset: int
    target_offset: int | None  # None: the mirror has not passed source_offset (or its syncs expired)

    def checkpoint(self) -> Checkpoint:
        """The MirrorMaker 2 checkpoint of an exact translation."""
        assert self.target_offset is not None
        return Checkpoint(self.group, self.target, self.source_offset, self.target_offset)


class TranslationFallback(Protocol):
    """A strategy for the positions the offset syncs and the checkpoints cannot translate: the
    failover's planner asks it for each one still unknown (a failback's ``ThroughForwardLink``)."""

    def translate(self, t: Translation, index: OffsetIndex) -> int | None:
        """The target offset of ``t`` (its ``target_offset`` is None), with ``index`` the offset syncs
        read; None when this strategy cannot tell either."""
        ...


def source_partitions(index: OffsetIndex) -> dict[tuple[str, int], TargetPartition]:
    """Every source partition the syncs know, with its target partition."""
    return {(index.source_topics[tp], tp.partition): tp for tp in index.partitions}


def translate_group(group: str, committed: Mapping[tuple[str, int], int], index: OffsetIndex) -> list[Translation]:
    """``group``'s committed source offsets, each translated exactly (or None where not yet possible)."""
    targets = source_partitions(index)
    out = []
    for (topic, partition), offset in sorted(committed.items()):
        target = targets.get((topic, partition))
        if target is None:
            continue  # not a mirrored partition
        out.append(Translation(group, topic, target, offset, index.translate(target, offset)))
    return out
