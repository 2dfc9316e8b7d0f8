"""One byte budget for everything fetched and not yet acknowledged by the target (KIP-283's lesson).

Memory then depends on this one number, not on the partition count times the fetch sizes: the
fetcher reserves what a response can cost (its ``max_bytes`` times the network layer's copies)
before sending the request and waits when the budget is spent; fetched bytes return to the budget
when the target acknowledges them (or they are dropped).
"""

from __future__ import annotations

import threading
from typing import Protocol


class GiveBackListener(Protocol):
    """Told when bytes come back to the budget (``fetch.fetch_thread.FetchThread``: it may then send
    what waited for memory)."""

    def nudge(self) -> None:
        """Bytes were given back."""


class MemoryBudget:
    """Bytes in use against a limit, shared by the fetch thread (which takes, and gives back what it
    drops) and the task thread (which gives back as the target acknowledges)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0
        self._lock = threading.Lock()
        #: Told after bytes are given back (``notify_on_give_back``).
        self._listener: GiveBackListener | None = None

    def notify_on_give_back(self, listener: GiveBackListener) -> None:
        """From now on, call ``listener.nudge`` after each give-back of bytes."""
        self._listener = listener

    @property
    def available(self) -> int:
        """Bytes that may still be reserved."""
        return max(self.limit - self.used, 0)

    def take(self, n: int) -> None:
        """Account ``n`` more bytes (a response may exceed its reservation by one batch; that is
        counted here too, so the next fetch waits longer)."""
        with self._lock:
            self.used += n
            self.peak = max(self.peak, self.used)

    def give_back(self, n: int) -> None:
        """Return ``n`` bytes."""
        with self._lock:
            self.used -= n
        if self._listener is not None and n > 0:
            self._listener.nudge()
