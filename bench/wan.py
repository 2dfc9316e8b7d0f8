"""``python -m bench.wan``: mirrors across distance, the source cluster behind an emulated WAN link.

The command line of ``bench.scenarios.wan`` (see there, or ``--help``): it saves its results as
``<out>/data/benchmarks-wan.json`` and re-renders ``<out>/benchmarks.md`` with ``bench.report``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.common.paths import DOCS, RESULTS
from bench.report import publish_section
from bench.scenarios import wan


def main() -> int:
    """Parse the arguments, run each mirror at each round trip, write the results and the page."""
    mirrors = wan.MIRRORS
    parser = argparse.ArgumentParser(description=wan.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0, help="uncompressed GB of 1 KB records")
    parser.add_argument("--rtts", default="0,50,100", help="round trips to emulate, in ms, comma-separated")
    parser.add_argument("--mirrors", default=",".join(mirrors), help=f"comma-separated, of {', '.join(mirrors)}")
    parser.add_argument("--codec", default="lz4")
    parser.add_argument(
        "--out", type=Path, default=DOCS, help=f"where benchmarks.md goes, and data/{wan.WAN_RESULTS} beside it"
    )
    parser.add_argument("--workdir", type=Path, default=RESULTS / "wan")
    args = parser.parse_args()
    unknown = sorted(set(args.mirrors.split(",")) - set(mirrors))
    if unknown:
        parser.error(f"unknown mirrors {', '.join(unknown)}: choose from {', '.join(mirrors)}")
    results = wan.run(args)
    publish_section(args.out, wan.WAN_RESULTS, results, wan.render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
