"""py-spy samples of a running mirror's Python stacks, and where they went: by place (``BUCKETS``)
and by thread. ``bench.profile`` (a copy) and ``bench.scale --profile-idle`` (an idle mirror) use it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

#: Where a sample's time goes, by the frame on top of its stack (the first match wins; the start-up
#: bucket looks at the whole stack). py-spy without --native shows a C call as the Python line making it.
#: Raw mode's files are matched with or without their room (``raw/wire/``...): stacks recorded before
#: the rooms existed still fall in the same buckets.
BUCKETS: list[tuple[str, re.Pattern[str]]] = [
    ("start-up (imports)", re.compile(r"<module>|_find_and_load")),
    ("socket send (sendmsg)", re.compile(r"^_sock_send\w*\b")),
    ("socket receive (recv_into)", re.compile(r"^_sock_recv\b")),
    # The frame pool was raw/frames.py, then raw/wire/frames.py; now it is in raw/wire/receive.py, whose
    # other functions are not allocation: matched there by class and function name.
    (
        "frame allocation",
        re.compile(
            r"\((kafka/protocol/frame\.py|.*raw/(?:\w+/)?frames\.py)|^_feed\b"
            r"|^(?:(?:FramePool|PooledFrame)\.\w+|capacity|_unexported) \(.*raw/(?:\w+/)?receive\.py"
        ),
    ),
    # py-spy cannot always tell a thread parked in epoll from a busy one: kept apart from the work.
    ("in select (waiting, mostly)", re.compile(r"^EpollSelector\.select\b")),
    ("thread wake-ups", re.compile(r"\(.*threading\.py|\.wakeup \(|^(nudge|_wake)\b")),
    ("batch rewrite and CRC", re.compile(r"\(.*raw/(?:\w+/)?(batches|forwarder|reencode)\.py|crc", re.IGNORECASE)),
]


def stacks_sampler(pid: int, out: Path, duration_s: float | None = None) -> subprocess.Popen[bytes]:
    """py-spy sampling ``pid``'s threads (without pausing it) into ``out`` (collapsed stacks, the
    thread first) until it exits, or for ``duration_s``."""
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if spy is None:
        raise RuntimeError("py-spy is not installed: pip install 'mirror-sink[bench]'")
    argv = [spy, "record", "--pid", str(pid), "--format", "raw", "--rate", "200", "--nonblocking", "--threads"]
    if duration_s is not None:
        argv += ["--duration", str(max(1, round(duration_s)))]
    return subprocess.Popen([*argv, "--output", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def read_stacks(path: Path) -> Counter[tuple[str, ...]]:
    """py-spy's collapsed stacks (``frame;frame;... count``), the thread name first when recorded."""
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[tuple(stack.split(";"))] += int(count)
    return stacks


def shares(stacks: Counter[tuple[str, ...]]) -> tuple[int, dict[str, float], list[tuple[str, float]]]:
    """Total samples, the share of each bucket (and "other"), and the 12 commonest top frames."""
    total = sum(stacks.values())
    buckets: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    startup = BUCKETS[0][1]
    for stack, n in stacks.items():
        leaf = stack[-1]
        leaves[leaf] += n
        if any(startup.search(f) for f in stack):
            buckets[BUCKETS[0][0]] += n
            continue
        name = next((b for b, pattern in BUCKETS[1:] if pattern.search(leaf)), "other")
        buckets[name] += n
    total = max(total, 1)
    by_bucket = {b: buckets[b] / total for b, _ in BUCKETS} | {"other": buckets["other"] / total}
    return total, by_bucket, [(leaf, n / total) for leaf, n in leaves.most_common(12)]


def by_thread(stacks: Counter[tuple[str, ...]]) -> list[tuple[str, float]]:
    """Each thread's share of the samples, largest first (py-spy's first frame names the thread)."""
    threads: Counter[str] = Counter()
    for stack, n in stacks.items():
        threads[_THREAD.sub("", stack[0]) if stack else "?"] += n
    total = max(sum(threads.values()), 1)
    return [(name, n / total) for name, n in threads.most_common()]


#: py-spy's thread frame: ``thread (0x7F...)`` or ``thread (4865):``, then the thread's name if it has one.
_THREAD = re.compile(r"^thread \((?:0x[0-9A-Fa-f]+|\d+)\):?\s*")
