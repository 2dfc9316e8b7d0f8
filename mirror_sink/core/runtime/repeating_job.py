"""A named job repeated on a thread of its own: the loop that a connector's background jobs share
(checkpoints, verification, drill reports, lag, the cluster watch).

Kafka's ``Scheduler`` (as ``MirrorCheckpointTask`` uses it) runs named repeating jobs on one thread.
Here each job has a thread of its own, so a long round (a verification pass, a probe that waits on
a silent cluster) never delays another job's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from mirror_sink.core.runtime.logs import Log


class Stopped(Exception):
    """Raised by a round that saw its job asked to stop (``RepeatingJob.check_stop``): the thread
    ends quietly."""


class RepeatingJob:
    """Runs ``run_round`` at once and then every ``every_s`` seconds, start to start, until stopped.

    A round that raises is logged as ``{failure}: {error}`` and the next round tries again:
    ``failure_level`` the first time, DEBUG while it keeps failing the same way (a missing ACL fails
    every round, and once is news enough). ``every_s`` may be a function, asked after each round.
    ``finish`` runs on the job's thread when it ends, so clients are released by the thread that used
    them, never under a call still running in them.
    """

    def __init__(
        self,
        name: str,
        run_round: Callable[[], object],
        every_s: float | Callable[[], float],
        log: Log,
        *,
        failure: str,
        failure_level: int = logging.WARNING,
        finish: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self._round = run_round
        self._every_s = every_s if callable(every_s) else (lambda: every_s)
        self._log = log
        self._failure = failure
        self._failure_level = failure_level
        self._finish = finish
        #: Set once the job is asked to stop; a round that waits or reads long checks it.
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Begin: the first round runs at once."""
        self._thread.start()

    def request_stop(self) -> None:
        """Ask the job to end after its current round (or at the round's next ``check_stop``)."""
        self.stopping.set()

    def stop(self, timeout_s: float) -> bool:
        """``request_stop``, then wait up to ``timeout_s`` for the thread; True once it has ended."""
        self.request_stop()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def is_alive(self) -> bool:
        """True while the job's thread runs."""
        return self._thread.is_alive()

    def check_stop(self) -> None:
        """Raise ``Stopped`` once the job was asked to stop (for a round's long steps)."""
        if self.stopping.is_set():
            raise Stopped

    def _run(self) -> None:
        last_failure = ""
        try:
            while not self.stopping.is_set():
                started = time.monotonic()
                try:
                    self._round()
                except Stopped:
                    break
                except Exception as exc:  # a cluster away for a while, a missing ACL: the next round tries again
                    said = str(exc) or repr(exc)
                    level = logging.DEBUG if said == last_failure else self._failure_level
                    self._log.log(level, "%s: %s", self._failure, said)
                    last_failure = said
                else:
                    last_failure = ""
                self.stopping.wait(max(0.0, self._every_s() - (time.monotonic() - started)))
        finally:
            if self._finish is not None:
                self._finish()
