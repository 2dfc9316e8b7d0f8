"""Bound librdkafka calls that can block past their own timeout.

Some librdkafka calls hang when a coordinator disappears at the wrong moment (for example
``send_offsets_to_transaction``, librdkafka issues #5456 and #5511). A C call cannot be interrupted
from Python, so it runs in a helper thread and the caller stops waiting at the limit; the client is
then treated as wedged and replaced, and the helper thread is left to finish (or not) on its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from mirror_sink.core.base.errors import ClientWedged

T = TypeVar("T")


def call_bounded(what: str, fn: Callable[[], T], limit_s: float) -> T:
    """``fn()``, or ClientWedged if it has not returned after ``limit_s`` seconds."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=run, name=f"bounded-{what}", daemon=True)
    worker.start()
    worker.join(limit_s)
    if worker.is_alive():
        raise ClientWedged(f"{what} did not return within {limit_s:.0f} s (a librdkafka hang); replacing the client")
    if failure:
        raise failure[0]
    return outcome[0]
