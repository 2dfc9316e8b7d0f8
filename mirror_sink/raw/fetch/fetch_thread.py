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

from mirror_sink.raw.fetch.fetcher import RawFetcher
from mirror_sink.raw.wire.wire import WireClient

log = logging.getLogger(__name__)

#: The longest the thread sleeps in the network poll before looking at its work again; a response,
#: a nudge or ``stop`` ends the sleep sooner.
_POLL_S = 0.1


class TaskWakeup:
    """Ends the task thread's wait in its target connections' poll (for acknowledgements) when the
    fetch thread has news for it: data queued, or its own failure.

    Once per take: after a wakeup, further ones are redundant until the task thread takes what is
    queued (a response is collected every few milliseconds while streaming, and each wakeup is a
    system call on both sides).
    """

    def __init__(self, target: WireClient) -> None:
        self._target = target
        #: The task thread was woken and has not taken data since.
        self._woken = False

    def data_arrived(self) -> None:
        """The fetch thread queued data (or failed): end the task thread's wait, once per take."""
        if not self._woken:
            self._woken = True
            self._target.wakeup()

    def taking(self) -> None:
        """The task thread is about to take what is queued: data queued from now on wakes its next wait."""
        self._woken = False


class FetchThread:
    """Drives a ``RawFetcher``'s Fetch requests and responses until stopped or failed; ``wakeup`` is
    told when they bring the task thread news."""

    def __init__(self, fetcher: RawFetcher, wakeup: TaskWakeup, name: str) -> None:
        self.fetcher = fetcher
        self._wakeup = wakeup
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
                    self._wakeup.data_arrived()
        except BaseException as exc:  # handed to the task thread, which fails or recovers as it would
            self.failure = exc
            self._wakeup.data_arrived()
