"""What the raw fetcher holds per source partition: its fetch state, and its queue of fetched items
(the Java client's ``FetchBuffer``, per partition) that the task thread takes them from."""

from __future__ import annotations

import uuid
from collections import deque
from dataclasses import dataclass, field

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.raw.wire.batches import BatchHeader


@dataclass(slots=True)
class Fetched:
    """One source batch in offset order, or a run of offsets with nothing to forward.

    ``batch`` is a writable view of the batch (None for control batches, aborted or empty ones);
    ``start`` is the first offset still to mirror when it was fetched (earlier records of the
    batch were mirrored already); ``next_offset`` is where the partition continues after it.
    """

    batch: memoryview | None
    header: BatchHeader | None  # None for the old v0/v1 format
    start: int
    next_offset: int
    #: Bytes of the same buffer that nothing forwards (control and aborted batches, a partial
    #: tail) but that stay in memory as long as this batch's view does: charged with it.
    extra: int = 0
    #: False for a view of a response's frame: the frame is charged whole, until it is freed.
    charged: bool = True
    #: The source leader epoch the batch was written in (-1: not known, the old v0/v1 format).
    leader_epoch: int = -1

    @property
    def size(self) -> int:
        """Bytes of the batch (and of what it keeps in memory), for the partition's queue limit."""
        return (len(self.batch) if self.batch is not None else 0) + self.extra

    @property
    def charge(self) -> int:
        """Bytes held against the memory budget, given back by whoever ends the item's life."""
        return self.size if self.charged else 0


@dataclass
class PartitionState:
    """One assigned partition: where its fetching stands, and its fetched items waiting to be taken."""

    position: int  # next offset to fetch
    epoch: int  # new on every assign and seek: a response to an older fetch is dropped
    queue: deque[Fetched] = field(default_factory=deque)
    queued_bytes: int = 0  # sizes of the queued items
    queued_charge: int = 0  # their charges to the memory budget
    #: Its queue reached the partition's byte limit: not fetched (forgotten by its leader's
    #: session) until the queue is down to half of it.
    held: bool = False
    retry_at: float = 0.0  # after a partition error, not fetched again before this
    #: The source's last stable offset in the latest response that named this partition (-1: none
    #: yet); a session's responses leave out partitions with nothing new, and it stays as it was.
    stable_end: int = -1
    #: The id of the topic the mirrored offsets belong to (Fetch v13 asks by it; None: not known yet).
    topic_id: uuid.UUID | None = None
    #: Leader epoch of the last batch fetched (KIP-320's last_fetched_epoch; -1 after a seek).
    last_epoch: int = -1
    #: The source no longer has ``position`` (deleted by retention, the topic created again, the log
    #: truncated): not fetched again until a seek or reassignment, and raised in the task thread by
    #: ``RawFetcher.check_gone``.
    gone: TaskFailure | None = None

    @property
    def at_stable_end(self) -> bool:
        """Fetched up to the last stable offset the latest response gave: nothing more was readable then."""
        return 0 <= self.stable_end <= self.position
