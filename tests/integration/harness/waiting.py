"""Waiting in integration tests: poll a condition, or fail saying what did not happen."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(
    predicate: Callable[[], bool],
    timeout: float,
    what: str,
    interval: float = 0.25,
    detail: Callable[[], str] | None = None,
) -> None:
    """Poll ``predicate`` until true, or fail the test saying ``what`` did not happen (and, when given,
    what ``detail`` says of the state then, such as a mirror's log tail)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            said = f"\n{detail()}" if detail is not None else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{said}")
        time.sleep(interval)
