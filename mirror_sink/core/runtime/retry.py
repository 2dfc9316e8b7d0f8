"""The one retry policy: exponential backoff until a deadline, on tenacity.

A retried call raises ``Retriable`` (or a type the caller names) to ask for another attempt; any
other exception ends the retries at once. When the deadline passes, the last ``Retriable`` is raised
as it is, and the caller turns it into the error its layer reports (usually a task failure that
names what never succeeded); or the attempt raises ``TryAgain`` carrying that error itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_delay,
    stop_when_event_set,
    wait_exponential,
)

from mirror_sink.core.base.errors import Retriable
from mirror_sink.core.runtime.logs import Log

log = logging.getLogger(__name__)

T = TypeVar("T")


def backoff(
    what: str,
    *,
    deadline_s: float,
    first_delay_s: float = 0.05,
    max_delay_s: float = 2.0,
    retry_on: type[BaseException] | tuple[type[BaseException], ...] = Retriable,
    logger: Log = log,
    interrupt: threading.Event | None = None,
) -> Retrying:
    """A tenacity ``Retrying`` for ``what``: use as ``for attempt in backoff(...): with attempt: ...``.

    With ``interrupt``, setting that event ends the wait between attempts at once and the retries
    with the last error (a stopping process must not sleep out a backoff)."""

    def note(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        logger.debug("%s: %s; retrying in %.2f s", what, error, wait)

    if interrupt is None:
        return Retrying(
            stop=stop_after_delay(deadline_s),
            wait=wait_exponential(multiplier=first_delay_s, max=max_delay_s),
            retry=retry_if_exception_type(retry_on),
            before_sleep=note,
            reraise=True,
        )
    return Retrying(
        stop=stop_after_delay(deadline_s) | stop_when_event_set(interrupt),
        wait=wait_exponential(multiplier=first_delay_s, max=max_delay_s),
        retry=retry_if_exception_type(retry_on),
        before_sleep=note,
        sleep=lambda seconds: _wait(interrupt, seconds),
        reraise=True,
    )


def _wait(event: threading.Event, seconds: float) -> None:
    event.wait(seconds)  # returns early when set; the stop condition then ends the retries


def retry_call(
    fn: Callable[[], T],
    what: str,
    *,
    deadline_s: float,
    first_delay_s: float = 0.05,
    max_delay_s: float = 2.0,
    interrupt: threading.Event | None = None,
) -> T:
    """``fn()`` under ``backoff``: repeated while it raises ``Retriable``, until ``deadline_s`` (or ``interrupt``)."""
    last: BaseException | None = None
    for attempt in backoff(
        what, deadline_s=deadline_s, first_delay_s=first_delay_s, max_delay_s=max_delay_s, interrupt=interrupt
    ):
        with attempt:
            # tenacity makes one more attempt after an interrupted wait: end with the last error instead.
            if interrupt is not None and interrupt.is_set() and last is not None:
                raise last
            try:
                return fn()
            except BaseException as exc:
                last = exc
                raise
    raise AssertionError("unreachable: tenacity re-raises the last error")


class TryAgain(Retriable):
    """Another attempt may succeed; ``give_up`` is raised instead once the deadline has passed."""

    def __init__(self, reason: str, give_up: Exception) -> None:
        super().__init__(reason)
        self.give_up = give_up


def retry_or_give_up(
    attempt: Callable[[], T],
    what: str,
    *,
    deadline_s: float,
    first_delay_s: float,
    max_delay_s: float,
    interrupt: threading.Event | None = None,
) -> T:
    """``attempt()`` under the one retry policy; past ``deadline_s`` (or once ``interrupt`` is set) the
    last ``TryAgain``'s ``give_up``."""
    try:
        return retry_call(
            attempt,
            what,
            deadline_s=deadline_s,
            first_delay_s=first_delay_s,
            max_delay_s=max_delay_s,
            interrupt=interrupt,
        )
    except TryAgain as exc:
        # The give-up error keeps its own cause (a connection error, say), not this retry wrapper.
        raise exc.give_up from exc.give_up.__cause__
