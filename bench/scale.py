"""``python -m bench.scale``: mirrors at scale and on small records (1,000 and 10,000 partitions, 100-byte records).

The command line of ``bench.scenarios.scale`` (see there, or ``--help``): it saves its results as
``<out>/data/benchmarks-scale.json`` and re-renders ``<out>/benchmarks.md`` with ``bench.report``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.common.paths import DOCS, RESULTS, data_dir
from bench.report import publish_section
from bench.scenarios import scale
from devkafka.pair import given_or_local


def main() -> int:
    """Bring up local clusters (or use given ones), run the scenarios, write the results and the page."""
    runs = scale.RUNS
    parser = argparse.ArgumentParser(description=scale.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default=",".join(runs), help=f"comma-separated, of {', '.join(runs)}")
    parser.add_argument(
        "--runs", help="only these runs of the scenarios, comma-separated mirror:tasks (e.g. raw-eos:1,mm2-eos:1)"
    )
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the amount of data (not partitions)")
    parser.add_argument("--codec", default="lz4")
    parser.add_argument("--source", help="source bootstrap servers (default: local clusters started here)")
    parser.add_argument("--target", help="target bootstrap servers")
    parser.add_argument(
        "--out", type=Path, default=DOCS, help=f"where benchmarks.md goes, and data/{scale.SCALE_RESULTS} beside it"
    )
    parser.add_argument("--workdir", type=Path, default=RESULTS / "scale")
    parser.add_argument(
        "--profile-idle",
        action="store_true",
        help="sample each mirror-sink run's Python stacks with py-spy while it idles, and print where they went",
    )
    args = parser.parse_args()
    scenarios = args.scenarios.split(",")
    if unknown := sorted(set(scenarios) - set(runs)):
        parser.error(f"unknown scenarios {', '.join(unknown)}: choose from {', '.join(runs)}")
    args.workdir.mkdir(parents=True, exist_ok=True)
    # A broker's purgatory keeps each parked Fetch under every partition it names until about
    # 1,000 have completed, about 190 bytes a partition: MirrorMaker 2's consumer parks Fetches of
    # all 10,000 partitions, up to 1.9 GB held on the source broker before a purge (mirror-sink
    # ran a 768 MB one out of heap that way before it stopped parking above 1,000 a leader).
    heap = "3g" if "10000-partitions" in scenarios else "768m"
    with given_or_local(args.workdir, args.source, args.target, heap=heap) as (src, tgt):
        only = set(args.runs.split(",")) if args.runs else None
        results = scale.run(
            src, tgt, args.workdir, scenarios, scale=args.scale, codec=args.codec, only=only,
            profile_idle=args.profile_idle,
        )  # fmt: skip
    results = scale.keep_other_scenarios(data_dir(args.out) / scale.SCALE_RESULTS, results)
    publish_section(args.out, scale.SCALE_RESULTS, results, scale.render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
