"""CPU time: of the whole machine, of one process (a broker), and of a process tree (a mirror).

Every mirror (mirror-sink in raw and record mode, MirrorMaker 2, the Spark runtimes) and every measured
command is sampled with the one ``ProcessTree``, so their CPU-seconds count alike; a broker, a single
JVM, with ``ProcessCpu``.

A mirror's own CPU-s/GB leaves out the two brokers it drives. On a small machine the brokers and the
mirror share the cores, so a mirror that is slower than the target broker's ingest alone may simply
have no core left: the machine's busy cores (``BusyTimeline``) show whether it was saturated during a copy.
"""

from __future__ import annotations

import bisect
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import psutil


def busy_cpu_seconds() -> float:
    """CPU-seconds the whole machine has spent busy (neither idle nor waiting for I/O) since boot."""
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
        self._busy.append(busy_cpu_seconds())

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

    Each process in the tree counts its own user + system CPU and that of the children it has reaped
    (psutil's ``children_user`` and ``children_system``), so a helper that started and ended between two
    samples still counts. A process that has gone counts through those figures of its parent when the
    parent is still in the tree (it reaped it), and with the figures it was last seen with otherwise:
    nothing counts twice.

    ``extra_roots`` adds processes that belong to the run without descending from ``pid`` (a Spark
    standalone cluster's executors, which its worker daemons start), with their descendants.
    """

    def __init__(self, pid: int, extra_roots: Callable[[], Iterable[psutil.Process]] | None = None) -> None:
        self._root = psutil.Process(pid)
        self._extra_roots = extra_roots
        #: pid -> (its CPU-seconds, reaped children's included; its parent's pid), as last sampled.
        self._live: dict[int, tuple[float, int]] = {}
        self._gone = 0.0  # CPU-seconds of processes gone that no parent in the tree accounts for
        self._times: list[float] = []
        self._cpu: list[float] = []
        self.peak_rss_bytes = 0

    def _processes(self) -> list[psutil.Process]:
        roots = [self._root, *(self._extra_roots() if self._extra_roots is not None else ())]
        found: list[psutil.Process] = []
        for root in roots:
            try:
                found += [root, *root.children(recursive=True)]
            except psutil.Error:
                continue  # this root has gone; the others are still measured
        return found

    def sample(self) -> None:
        """Record the tree's CPU-seconds now (wall-clock Unix time) and its resident memory."""
        live: dict[int, tuple[float, int]] = {}
        rss = 0
        for p in self._processes():
            try:
                with p.oneshot():
                    times = p.cpu_times()
                    parent = p.ppid()
                    rss += p.memory_info().rss
            except psutil.Error:
                # It ended while being read: keep its last figures; the next sample sees it gone.
                if p.pid in self._live:
                    live[p.pid] = self._live[p.pid]
                continue
            live[p.pid] = (times.user + times.system + times.children_user + times.children_system, parent)
        if not live:
            return  # the whole tree has gone: its last sample stands
        for pid, (cpu, parent) in self._live.items():
            if pid not in live and parent not in live:
                self._gone += cpu
        self._live = live
        self.peak_rss_bytes = max(self.peak_rss_bytes, rss)
        self._times.append(time.time())
        self._cpu.append(self.cpu_seconds())

    def cpu_seconds(self) -> float:
        """CPU-seconds the tree had used at the last sample."""
        return self._gone + sum(cpu for cpu, _ in self._live.values())

    def cpu_at(self, when: float) -> float:
        """CPU-seconds the tree had used at ``when``, linearly between the samples around it (0 before the first)."""
        i = bisect.bisect_right(self._times, when)
        if i == 0:
            return 0.0
        if i == len(self._times):
            return self._cpu[-1]
        t0, t1, c0, c1 = self._times[i - 1], self._times[i], self._cpu[i - 1], self._cpu[i]
        return c0 + (c1 - c0) * (when - t0) / (t1 - t0)

    def idle(self, seconds: float, settle_s: float = 0.0) -> float:
        """CPU-seconds the tree uses over the ``seconds`` after ``settle_s`` (a caught-up mirror's standing
        cost; the settling lets the last commit's markers and lag readings end first)."""
        time.sleep(settle_s)
        self.sample()
        busy = self.cpu_seconds()
        time.sleep(seconds)
        self.sample()
        return self.cpu_seconds() - busy


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """CPU-seconds so far of ``pid``'s threads, summed by thread name with digits folded to ``#``
    (librdkafka names its threads ``rdk:main``, ``rdk:broker12``; a JVM its own; CPython 3.11 leaves
    its threads the process's name, so they count together). Empty when the process has gone."""
    out: dict[str, float] = {}
    try:
        threads = psutil.Process(pid).threads()
    except psutil.Error:
        return out
    for t in threads:
        try:
            name = Path(f"/proc/{pid}/task/{t.id}/comm").read_text().strip()
        except OSError:
            name = "?"
        key = re.sub(r"\d+", "#", name)
        out[key] = out.get(key, 0.0) + t.user_time + t.system_time
    return out


def thread_cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU-seconds each thread group used between two ``thread_cpu_seconds`` readings, most first."""
    delta = {k: after[k] - before.get(k, 0.0) for k in after}
    return dict(sorted(((k, v) for k, v in delta.items() if v > 0), key=lambda kv: -kv[1]))
