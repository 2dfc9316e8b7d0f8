"""``python -m bench.offset_sync_overhead``: what offset syncs cost a mirror; ``--page`` renders
docs/failover-benchmarks.md (``bench.failover_report``) from saved results.

The command line of ``bench.scenarios.offset_sync_overhead`` (see there, or ``--help``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.common.console import log
from bench.common.paths import RESULTS, ROOT
from bench.failover_report import PAGE, newest, write_page
from bench.scenarios import offset_sync_overhead


def main() -> int:
    """Run the benchmark, or (``--page``) render the docs page from saved results."""
    parser = argparse.ArgumentParser(
        description=offset_sync_overhead.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gb", type=float, default=0.5, help="uncompressed GB of 1 KB records (default 0.5)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 0.01 GB")
    parser.add_argument("--reps", type=int, default=2, help="raw-eos OFF/ON pairs (default 2)")
    parser.add_argument("--record-reps", type=int, default=1, help="record-eos OFF/ON pairs (default 1)")
    parser.add_argument("--page", action="store_true", help=f"only write {PAGE.relative_to(ROOT)} from saved results")
    parser.add_argument(
        "--overhead", type=Path, nargs="+", help="--page: overhead JSONs, the first in full (default: the newest)"
    )
    parser.add_argument("--failover", type=Path, help="--page: bench.failover JSON (default: newest failover-*.json)")
    parser.add_argument(
        "--round-trip", type=Path, help="--page: bench.round_trip JSON (default: newest round-trip-*.json)"
    )
    parser.add_argument("--out", type=Path, default=PAGE, help="--page: where to write the page")
    args = parser.parse_args()
    if args.page:
        overhead_paths: list[Path] = args.overhead or [newest("offset-syncs-*.json")]
        failover_path = args.failover or newest("failover-*.json")
        trip_path = args.round_trip or newest("round-trip-*.json")
        overheads = [json.loads(p.read_text()) for p in overhead_paths]
        write_page(overheads, json.loads(failover_path.read_text()), args.out, json.loads(trip_path.read_text()))
        log(f"wrote {args.out} from {', '.join(map(str, overhead_paths))}, {failover_path} and {trip_path}")
        return 0
    if args.quick:
        args.gb = 0.01
    results = offset_sync_overhead.run(args)
    path = RESULTS / f"offset-syncs-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print()
    print("\n".join(offset_sync_overhead.summary_table(results)))
    print()
    print("\n".join(offset_sync_overhead.runs_table(results)))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
