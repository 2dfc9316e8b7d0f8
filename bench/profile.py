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
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.common.machine import cores_and_memory
from bench.common.markdown import table
from bench.common.stacks import BUCKETS, read_stacks, shares
from bench.mirror_throughput import RECORD_BYTES, RESULTS, mirror_once, write_source
from devkafka.pair import DevClusters

OUT = RESULTS / "profile"
REPO = Path(__file__).resolve().parent.parent


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
