"""Source and target partitions as distinct types: passing one where the other belongs is a mypy error.

Owning target partition ``T-p`` means mirroring source partition ``S-p`` (partition numbers map 1:1),
so the two are easy to swap by accident; these types make the swap visible to the type checker.
Both are named tuples, so ``topic, partition = tp`` and use as dict keys work as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple


class SourcePartition(NamedTuple):
    """A partition of a topic on the source cluster."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class TargetPartition(NamedTuple):
    """A partition of a topic on the target cluster."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def fmt_partitions(partitions: Iterable[SourcePartition | TargetPartition]) -> str:
    """``t-0, t-1`` for logs and messages (``none`` when empty)."""
    return ", ".join(f"{t}-{p}" for t, p in sorted(partitions)) or "none"


def fmt_offsets(offsets: Mapping[SourcePartition, int] | Mapping[TargetPartition, int]) -> str:
    """``t-0@12, t-1@40`` for logs."""
    return ", ".join(f"{t}-{p}@{o}" for (t, p), o in sorted(offsets.items()))
