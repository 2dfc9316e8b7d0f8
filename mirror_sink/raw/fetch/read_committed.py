"""read_committed filtering of fetched batches, as the Java consumer does it (CompletedFetch).

A read_committed fetch returns everything below the last stable offset, aborted transactions
included, plus the list of (producer id, first offset) of the aborted transactions in the range.
Walking the batches in order: an aborted transaction becomes *active* once a batch reaches its
first offset; transactional batches of an active producer are skipped; the producer's ABORT marker
ends it. Control batches are never forwarded (a client may not write them).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from mirror_sink.raw.wire.batches import CONTROL_ABORT, BatchHeader


class Verdict(Enum):
    """What to do with a fetched batch."""

    FORWARD = "forward"
    SKIP_CONTROL = "control"
    SKIP_ABORTED = "aborted"


class ReadCommittedFilter:
    """Classifies the batches of one partition's fetch response, in order."""

    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        """``aborted``: (producer id, first offset) pairs from the fetch response."""
        self._pending = sorted(aborted, key=lambda a: a[1], reverse=True)  # pop() takes the lowest
        self._active: set[int] = set()

    def verdict(self, header: BatchHeader, control_type: int | None) -> Verdict:
        """``control_type`` is the marker type of a control batch (None for data batches)."""
        while self._pending and self._pending[-1][1] <= header.last_offset:
            self._active.add(self._pending.pop()[0])
        if header.is_control:
            if control_type == CONTROL_ABORT:
                self._active.discard(header.producer_id)
            return Verdict.SKIP_CONTROL
        if header.is_transactional and header.producer_id in self._active:
            return Verdict.SKIP_ABORTED
        return Verdict.FORWARD
