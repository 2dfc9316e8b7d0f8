"""Processes this one starts that must not outlive it: brokers, mirrors, containers' services."""

from __future__ import annotations

import os
import shlex
import subprocess


def reap_with_this_process(*, pid: int | None = None, pattern: str | None = None) -> None:
    """A watchdog that SIGKILLs a process (by ``pid``, or every one whose arguments match ``pattern``)
    once this process is gone, however it ended.

    Brokers run in their own session (so ``dev-kafka up`` outlives its CLI); brokers and mirrors that
    tests start must not outlive a test process that died without teardown (a crash, SIGKILL).
    """
    parent = os.getpid()
    if pattern is not None:  # by arguments: a restarted process (a bounced broker) has a new pid
        script = f"while kill -0 {parent} 2>/dev/null; do sleep 2; done; pkill -9 -f {shlex.quote(pattern)}"
    elif pid is not None:  # ends with the child too, so a pid reused later is never signalled
        script = (
            f"while kill -0 {pid} 2>/dev/null; do "
            f"kill -0 {parent} 2>/dev/null || {{ kill -9 {pid}; break; }}; sleep 2; done"
        )
    else:
        raise ValueError("reap_with_this_process needs pid or pattern")
    subprocess.Popen(
        ["sh", "-c", script],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
