"""``python -m bench.round_trip``: the DR round trip (failover, then failback), MirrorMaker 2 against mirror-sink.

The command line of ``bench.scenarios.round_trip`` (see there, or ``--help``, for what it measures).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.common.console import log
from bench.common.paths import RESULTS
from bench.scenarios import round_trip
from devkafka.pair import DevClusters


def main() -> int:
    """Parse arguments, start local clusters, run both sides, print and save the results."""
    parser = argparse.ArgumentParser(
        description=round_trip.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=60_000, help="records written on A before the disaster")
    parser.add_argument("--diverged", type=int, default=600, help="records written on A after the link stopped")
    parser.add_argument("--new-on-b", type=int, default=3_000, help="records written on B after the failover")
    parser.add_argument("--tools", default=",".join(round_trip.TOOLS), help="comma-separated: ms (mirror-sink), mm2")
    parser.add_argument("--settle", type=float, default=70.0, help="MM2: seconds a synced group must stay unchanged")
    parser.add_argument("--sync-timeout", type=float, default=180.0, help="MM2: max seconds from caught up to synced")
    parser.add_argument("--mirror-timeout", type=float, default=600.0, help="max seconds for a link to catch up")
    parser.add_argument("--quick", action="store_true", help="smoke run: 6k records, MM2's first full sync is final")
    parser.add_argument("--workdir", type=Path, help="logs, configs and clusters (default: bench/results/round-trip-*)")
    args = parser.parse_args()
    if args.quick:
        args.records, args.settle = 6_000, 0.0
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    if unknown := set(args.tools) - set(round_trip.TOOLS):
        parser.error(f"unknown tools {sorted(unknown)}; known: {', '.join(round_trip.TOOLS)}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    args.workdir = args.workdir or RESULTS / f"round-trip-{stamp}"
    args.workdir.mkdir(parents=True, exist_ok=True)
    args.run_id = f"rt{time.time_ns() // 1_000_000}"
    started = time.monotonic()
    clusters = DevClusters(args.workdir / "clusters")
    log("starting local clusters: A (source, the old primary) and B (target, the new primary)...")
    clusters.up()
    try:
        results = round_trip.run(args, clusters.source.bootstrap_servers, clusters.target.bootstrap_servers)
    finally:
        clusters.discard()
    results["wall_s"] = time.monotonic() - started
    path = RESULTS / f"round-trip-{stamp}.json"
    RESULTS.mkdir(parents=True, exist_ok=True)  # a --workdir elsewhere leaves it uncreated
    path.write_text(json.dumps(results, indent=2) + "\n")
    print()
    print("\n".join(round_trip.results_tables(results)))
    print(f"\nwrote {path} ({results['wall_s']:.0f} s in all)")
    return 0 if all(s["status"] == "ok" for s in results["sides"]) else 1


if __name__ == "__main__":
    sys.exit(main())
