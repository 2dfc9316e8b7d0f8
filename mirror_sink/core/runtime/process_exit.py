"""Leaving a process whose threads still wait on a cluster.

Python's normal exit finalises every object, and a librdkafka client left in a thread that is still
waiting on a cluster that does not answer blocks there: its close waits to leave its group or to
deliver. Measured: a mirror whose target hung stopped its connector in 8 s, then took 28 s more to
exit. When a stop had to leave threads behind (their transactions are safe: never visible, aborted
by the next owner's fence or the broker's timeout), the process ends at once instead.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn

log = logging.getLogger(__name__)


def exit_now(code: int, left: str) -> NoReturn:
    """Flush the logs and exit with ``code`` without finalising ``left`` (what is still running)."""
    log.warning("exiting now, without waiting for %s", left)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)
