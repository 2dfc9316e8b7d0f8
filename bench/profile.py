"""Where raw mode's CPU goes while it copies: py-spy profiles of the mirror, this checkout against another.

    .venv/bin/python -m bench.profile --gb 1 --codec none --baseline HEAD~3 --pairs 2

Starts local clusters, writes the source topic once, then mirrors it with ``raw-eos`` in interleaved
pairs: the ``--baseline`` commit (from a worktree of it) and this checkout, each sampled by py-spy
(200 Hz, without pausing the mirror). Prints, per run, the copy's MB/s and CPU-s/GB (as
``bench.mirror_throughput`` measures them) and the share of the samples in each place the per-byte
work goes, and the functions most often on top of the stack. The collapsed stacks stay in
bench/results/profile/ (flame graphs: ``flamegraph.pl`` or speedscope read them). Not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.common.machine import cores_and_memory
from bench.common.markdown import table
from bench.mirror_throughput import RECORD_BYTES, RESULTS, mirror_once, write_source
from devkafka.pair import DevClusters

OUT = RESULTS / "profile"
REPO = Path(__file__).resolve().parent.parent

#: Where a sample's time goes, by the frame on top of its stack (the first match wins; the start-up
#: bucket looks at the whole stack). py-spy without --native shows a C call as the Python line making it.
BUCKETS: list[tuple[str, re.Pattern[str]]] = [
    ("start-up (imports)", re.compile(r"<module>|_find_and_load")),
    ("socket send (sendmsg)", re.compile(r"^_sock_send\w*\b")),
    ("socket receive (recv_into)", re.compile(r"^_sock_recv\b")),
    ("frame allocation", re.compile(r"\((kafka/protocol/frame\.py|.*raw/frames\.py)|^_feed\b")),
    # py-spy cannot always tell a thread parked in epoll from a busy one: kept apart from the work.
    ("in select (waiting, mostly)", re.compile(r"^EpollSelector\.select\b")),
    ("thread wake-ups", re.compile(r"\(.*threading\.py|\.wakeup \(|^(nudge|_wake)\b")),
    ("batch rewrite and CRC", re.compile(r"\(.*raw/(batches|forwarder|reencode)\.py|crc", re.IGNORECASE)),
]


@dataclass
class Profile:
    """One profiled run: the copy's figures and where its samples were."""

    side: str
    rev: str
    mb_per_s: float
    copy_cpu_s_per_gb: float | None
    samples: int
    shares: dict[str, float]
    top: list[tuple[str, float]] = field(default_factory=list)


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


def worktree(rev: str) -> Path:
    """A detached worktree of ``rev`` (made once, reused), outside this checkout so that no linter or
    test collection walks into it."""
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=REPO, check=True, capture_output=True, text=True)
    path = Path(tempfile.gettempdir()) / "mirror-sink-bench-checkouts" / sha.stdout.strip()
    if not path.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), rev], cwd=REPO, check=True)
    return path


def main() -> int:
    """Run the profiles and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0, help="uncompressed GB of 1 KB records")
    parser.add_argument("--codec", default="none", help="the source's codec: none, gzip, snappy, lz4, zstd")
    parser.add_argument("--baseline", help="a commit to profile beside this checkout, in interleaved pairs")
    parser.add_argument("--pairs", type=int, default=1, help="runs per side")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    sides: list[tuple[str, str, Path | None]] = [("this checkout", "working tree", None)]
    if args.baseline:
        sides.insert(0, ("baseline", args.baseline, worktree(args.baseline)))
    clusters = DevClusters(RESULTS / "clusters")
    print("starting local clusters...", flush=True)
    clusters.up()
    src, tgt = clusters.source.bootstrap_servers, clusters.target.bootstrap_servers
    records = int(args.gb * 1e9 / RECORD_BYTES)
    profiles: list[Profile] = []
    try:
        topic = f"profile-{args.codec}-{int(time.time())}"
        print(f"writing {args.gb} GB ({records:,} records, {args.codec}) to {topic}", flush=True)
        write_source(src, topic, records, args.codec)
        for pair in range(args.pairs):
            for side, rev, checkout in sides:
                out = OUT / f"{topic}-{pair}-{'baseline' if checkout else 'current'}.txt"
                print(f"pair {pair + 1}: {side} ({rev})...", flush=True)
                r = mirror_once(
                    "raw-eos", args.codec, src, tgt, topic, records=records, workdir=RESULTS, checkout=checkout,
                    profile_to=out,
                )  # fmt: skip
                total, by_bucket, top = shares(read_stacks(out))
                profiles.append(Profile(side, rev, r.mb_per_s, r.copy_cpu_s_per_gb, total, by_bucket, top))
                print(f"  {r.mb_per_s:.1f} MB/s, copy {r.copy_cpu_s_per_gb or 0:.2f} CPU-s/GB, {total} samples")
    finally:
        clusters.discard()
    (OUT / "profile.json").write_text(
        json.dumps({"machine": cores_and_memory(), "profiles": [asdict(p) for p in profiles]}, indent=2)
    )
    _print(profiles, args)
    return 0


def _print(profiles: Iterable[Profile], args: argparse.Namespace) -> None:
    profiles = list(profiles)
    print(f"\n({cores_and_memory()}; raw-eos, {args.gb} GB of 1 KB records, {args.codec})")
    buckets = [b for b, _ in BUCKETS] + ["other"]
    rows = [
        [
            f"{p.side} ({p.rev})",
            f"{p.mb_per_s:.1f}",
            f"{p.copy_cpu_s_per_gb:.2f}" if p.copy_cpu_s_per_gb is not None else "-",
            *(f"{p.shares[b]:.1%}" for b in buckets),
        ]
        for p in profiles
    ]
    print("\n".join(table(["run", "MB/s", "copy CPU-s/GB", *buckets], rows)))
    for p in profiles:
        print(f"\ntop of the stack, {p.side} ({p.rev}):")
        for leaf, share in p.top:
            print(f"  {share:6.1%}  {leaf}")


if __name__ == "__main__":
    sys.exit(main())
