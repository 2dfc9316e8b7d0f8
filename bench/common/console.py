"""Console output of a long benchmark: progress lines, and the tail of a child's log when it fails."""

from __future__ import annotations

import time
from pathlib import Path


def log(message: str) -> None:
    """One progress line on stdout, flushed at once (the run's output is often piped to a file)."""
    print(message, flush=True)


class Progress:
    """One line every couple of seconds for a long step: share, MB and rate so far.

    ``unit_bytes`` is what one unit of progress stands for (default: one of the 1 KB records most
    benchmarks write; a source offset of a mixed topic counts its records' average size).
    """

    def __init__(self, label: str, unit_bytes: float = 1024) -> None:
        self.label = label
        self.unit_bytes = unit_bytes
        self.started = time.monotonic()
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        """The callback the runners call with (done, total), in records or source offsets."""
        now = time.monotonic()
        if now - self._last < 2.0 and done < total:
            return
        self._last = now
        mb = done * self.unit_bytes / 1e6
        rate = mb / max(now - self.started, 1e-6)
        share = done / total if total else 1.0
        print(
            f"    {self.label}: {share:4.0%}  {mb:8.1f} of {total * self.unit_bytes / 1e6:.1f} MB  {rate:6.1f} MB/s",
            flush=True,
        )


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log file ("" if there is none), for an error message."""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""
