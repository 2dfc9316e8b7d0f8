"""How many of the machine's cores were busy over a stretch of a run, whichever process used them.

A mirror's own CPU-s/GB leaves out the two brokers it drives. On a small machine the brokers and the
mirror share the cores, so a mirror that is slower than the target broker's ingest alone may simply
have no core left: this figure shows whether the machine was saturated during a copy.
"""

from __future__ import annotations

import bisect
import time

import psutil


def _busy_seconds() -> float:
    t = psutil.cpu_times()
    # Linux counts guest time inside user already; idle and iowait are the only idle states.
    extra = sum(getattr(t, name, 0.0) for name in ("nice", "irq", "softirq", "steal"))
    return float(t.user + t.system + extra)


class BusyTimeline:
    """Samples of the machine's total busy CPU time, to read the busy cores between two instants later."""

    def __init__(self) -> None:
        self._times: list[float] = []
        self._busy: list[float] = []
        self.sample()

    def sample(self) -> None:
        """Record the machine's busy CPU-seconds now (wall-clock Unix time)."""
        self._times.append(time.time())
        self._busy.append(_busy_seconds())

    def cores_busy(self, start: float | None = None, end: float | None = None) -> float | None:
        """Average cores busy between the samples nearest ``start`` and ``end`` (default: first and last)."""
        i = 0 if start is None else min(bisect.bisect_left(self._times, start), len(self._times) - 1)
        j = len(self._times) - 1 if end is None else min(bisect.bisect_left(self._times, end), len(self._times) - 1)
        wall = self._times[j] - self._times[i]
        if wall <= 0.5:  # too short a window to say anything
            return None
        return (self._busy[j] - self._busy[i]) / wall


def process_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU-seconds ``pid`` has used so far, all its threads; None when unknown or gone.

    For a broker this is its own cost (a JVM: request handlers, log appends, GC), apart from whatever
    else shares the machine's cores.
    """
    if pid is None:
        return None
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return float(times.user + times.system)


class ProcessCpu:
    """One process's CPU-seconds from its construction to :meth:`seconds` (None when unknown or gone)."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self._start = process_cpu_seconds(pid)

    def seconds(self) -> float | None:
        """CPU-seconds the process has used since this object was made."""
        now = process_cpu_seconds(self.pid)
        if now is None or self._start is None:
            return None
        return now - self._start


class ProcessTree:
    """A process and all its descendants, sampled: their CPU-seconds so far, over time, and peak RSS.

    A child that exits keeps the CPU it was last seen with, so a short-lived worker still counts.
    """

    def __init__(self, pid: int) -> None:
        self._root = psutil.Process(pid)
        self._cpu_by_pid: dict[int, float] = {}
        self._times: list[float] = []
        self._cpu: list[float] = []
        self.peak_rss_bytes = 0

    def sample(self) -> None:
        """Record the tree's CPU-seconds now (wall-clock Unix time) and its resident memory."""
        try:
            rss = 0
            for p in [self._root, *self._root.children(recursive=True)]:
                times = p.cpu_times()
                self._cpu_by_pid[p.pid] = times.user + times.system
                rss += p.memory_info().rss
        except psutil.Error:
            return
        self.peak_rss_bytes = max(self.peak_rss_bytes, rss)
        self._times.append(time.time())
        self._cpu.append(sum(self._cpu_by_pid.values()))

    def cpu_seconds(self) -> float:
        """CPU-seconds the tree had used at the last sample."""
        return sum(self._cpu_by_pid.values())

    def cpu_at(self, when: float) -> float:
        """CPU-seconds the tree had used at ``when``, linearly between the samples around it (0 before the first)."""
        i = bisect.bisect_right(self._times, when)
        if i == 0:
            return 0.0
        if i == len(self._times):
            return self._cpu[-1]
        t0, t1, c0, c1 = self._times[i - 1], self._times[i], self._cpu[i - 1], self._cpu[i]
        return c0 + (c1 - c0) * (when - t0) / (t1 - t0)
