"""When an open cycle is due to commit: one rule for worker tasks and Spark's range copies.

A cycle commits when it holds ``transaction.max.bytes`` or when its interval has passed
(``transaction.interval.ms``, stretched by the caller while a backlog is copied). A worker task's
``Cycle`` and a Spark executor's ``copy_range`` both ask this object, so the two runtimes bound their
transactions alike.
"""

from __future__ import annotations

import time

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig


class CycleBounds:
    """The bytes the open cycle holds and the time its commit is due."""

    def __init__(self, max_bytes: int, interval_s: float) -> None:
        self.max_bytes = max_bytes
        self.interval_s = interval_s
        #: Bytes copied into the open cycle.
        self.bytes = 0
        #: When the commit is due (monotonic clock); 0: at once.
        self.due_at = 0.0

    @classmethod
    def of(cls, config: MirrorSinkConfig) -> CycleBounds:
        """The bounds ``config`` sets: ``transaction.max.bytes`` and ``transaction.interval.ms``."""
        return cls(config.transaction_max_bytes, config.transaction_interval_ms / 1000)

    def add(self, copied_bytes: int) -> None:
        """Count bytes copied into the open cycle."""
        self.bytes += copied_bytes

    def full(self) -> bool:
        """True when the open cycle holds ``transaction.max.bytes`` or more."""
        return self.bytes >= self.max_bytes

    def due(self, now: float | None = None) -> bool:
        """True when the open cycle should commit now: full, or its time has come."""
        return self.full() or (time.monotonic() if now is None else now) >= self.due_at

    def due_now(self) -> None:
        """Make the next commit due at once (something waits to be saved)."""
        self.due_at = 0.0

    def schedule(self, interval_s: float | None = None, *, now: float | None = None) -> None:
        """The next commit is due one interval from ``now``: ``interval_s``, or the configured one."""
        start = time.monotonic() if now is None else now
        self.due_at = start + (self.interval_s if interval_s is None else interval_s)

    def take(self) -> int:
        """The open cycle's byte count, cleared: it was committed or aborted."""
        copied, self.bytes = self.bytes, 0
        return copied
