"""The raw path's source I/O on a thread of its own, so fetching never waits for the cycle.

The task thread rewrites and produces batches and commits transactions; a commit waits for every
acknowledgement and three coordinator round trips. Were fetching driven by that thread too (as it
was), every such wait would also stop the source: no Fetch is sent and no response is read until
the commit returns, and the pipeline restarts empty. Here the fetch thread keeps a Fetch in flight
per source leader whenever the memory budget and the queues have room; it owns the source connections
(kafka-python's client is driven by one thread) and meets the task thread only in ``RawFetcher``'s
queues, under its lock, and in the ``MemoryBudget``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mirror_sink.raw.fetch.fetcher import RawFetcher

log = logging.getLogger(__name__)

#: The longest the thread sleeps in the network poll before looking at its work again; a response,
#: a nudge or ``stop`` ends the sleep sooner.
_POLL_S = 0.1


class FetchThread:
    """Drives a ``RawFetcher``'s Fetch requests and responses until stopped or failed."""

    def __init__(self, fetcher: RawFetcher, on_data: Callable[[], None], name: str) -> None:
        self.fetcher = fetcher
        self._on_data = on_data
        self._stopping = threading.Event()
        #: A nudge woke the thread and it has not looked at its work since: further nudges are
        #: redundant (each wakeup is a system call on both sides, once per acknowledgement otherwise).
        self._nudged = False
        #: What ended the thread other than ``stop``; raised in the task thread by ``check``.
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start fetching (the fetcher's assigned partitions; assignments may change at any time)."""
        self._thread.start()

    @property
    def alive(self) -> bool:
        """True while the thread runs (it alone drives the source connections then)."""
        return self._thread.is_alive()

    def nudge(self) -> None:
        """Memory was freed or items were taken: let the thread send what the budget now allows."""
        if self.fetcher.held_back and not self._nudged:
            self._nudged = True
            self.fetcher.wire.wakeup()

    def check(self) -> None:
        """Raise, in the calling thread, what stopped the fetch thread (a TaskFailure, say: its class
        decides whether the task fails or recovers, so the object itself is raised)."""
        if self.failure is not None:
            raise self.failure
        self.fetcher.check_gone()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the thread and wait for it (its poll ends at once)."""
        self._stopping.set()
        if self._thread.is_alive():
            self.fetcher.wire.wakeup()
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                log.warning("the fetch thread %s did not stop within %.0f s", self._thread.name, timeout_s)

    def _run(self) -> None:
        fetcher = self.fetcher
        try:
            while not self._stopping.is_set():
                self._nudged = False  # before fill: a nudge after this point is acted on
                fetcher.fill()
                fetcher.wire.poll(_POLL_S)
                if fetcher.collect():
                    self._on_data()
        except BaseException as exc:  # handed to the task thread, which fails or recovers as it would
            self.failure = exc
            self._on_data()
