"""``python -m bench.failover``: consumer-group failover accuracy, MirrorMaker 2 against mirror-sink.

The command line of ``bench.scenarios.failover`` (see there, or ``--help``, for what it measures).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.common.console import log
from bench.common.paths import RESULTS
from bench.scenarios import failover
from devkafka.pair import DevClusters


def main() -> int:
    """Parse arguments, bring up clusters if none are given, run, print and save the results."""
    parser = argparse.ArgumentParser(description=failover.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000, help="records written to the source topic")
    parser.add_argument("--mid-fraction", type=float, default=0.4, help="where the mid group stops in each partition")
    parser.add_argument("--linger-ms", type=int, default=50, help="source producer linger.ms")
    parser.add_argument("--batch-bytes", type=int, default=256 * 1024, help="source producer batch.size")
    parser.add_argument(
        "--mirrors", default=",".join(failover.MIRRORS), help="comma-separated: mm2 (MirrorMaker 2), ms"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=70.0,
        help="MM2: seconds the synced groups must stay unchanged (> 60 s interval)",
    )
    parser.add_argument("--sync-timeout", type=float, default=180.0, help="MM2: max seconds from caught-up to synced")
    parser.add_argument("--mirror-timeout", type=float, default=900.0, help="max seconds for a mirror to catch up")
    parser.add_argument("--quick", action="store_true", help="smoke run: 20k records, stop at MM2's first full sync")
    parser.add_argument("--source", help="source bootstrap servers (default: local clusters started here)")
    parser.add_argument("--target", help="target bootstrap servers")
    parser.add_argument("--workdir", type=Path, default=RESULTS, help="logs, configs, results, local clusters")
    args = parser.parse_args()
    if args.quick:
        args.records, args.settle = 20_000, 0.0
    if bool(args.source) != bool(args.target):
        parser.error("give both --source and --target, or neither")
    args.mirrors = [m.strip() for m in args.mirrors.split(",") if m.strip()]
    if unknown := set(args.mirrors) - set(failover.MIRRORS):
        parser.error(f"unknown mirrors {sorted(unknown)}; known: {', '.join(failover.MIRRORS)}")
    args.run_id = f"fo{time.time_ns() // 1_000_000}"
    clusters = None
    if args.source:
        src, tgt = args.source, args.target
    else:
        clusters = DevClusters(args.workdir / "failover-clusters")
        log("starting local source and target clusters...")
        clusters.up()
        src, tgt = clusters.source.bootstrap_servers, clusters.target.bootstrap_servers
    try:
        results = failover.run(args, src, tgt)
    finally:
        if clusters is not None:
            clusters.discard()
    path = args.workdir / f"failover-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print()
    print("\n".join(failover.results_table(results)))
    print(f"\nwrote {path}")
    return 0 if all(m["status"] == "ok" or m["status"].startswith("not available") for m in results["mirrors"]) else 1


if __name__ == "__main__":
    sys.exit(main())
