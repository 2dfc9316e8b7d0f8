"""A time that some work must be done by, on the monotonic clock."""

from __future__ import annotations

import time


class Deadline:
    """``seconds`` from its creation: how long is left, and whether it has passed."""

    __slots__ = ("at",)

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def left(self, at_least: float = 0.0) -> float:
        """Seconds until the deadline, never below ``at_least`` (a wait of 0 s, say, once it passed)."""
        return max(at_least, self.at - time.monotonic())

    @property
    def passed(self) -> bool:
        """True once the deadline is reached."""
        return time.monotonic() >= self.at
