"""``python -m bench.runtimes``: the worker runtime against the Spark runtime, raw mode, on the same data.

The command line of ``bench.scenarios.runtimes`` (see there, or ``--help``): it saves its results as
``<out>/data/benchmarks-runtimes.json`` and re-renders ``<out>/benchmarks.md`` with ``bench.report``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.common.paths import DOCS, RESULTS
from bench.report import publish_section
from bench.scenarios import runtimes


def main() -> int:
    """Bring up local clusters, write the source once, mirror it with each runtime, write the page."""
    names = runtimes.RUNTIMES
    parser = argparse.ArgumentParser(description=runtimes.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0, help="uncompressed GB of 1 KB records")
    parser.add_argument("--runtimes", default=",".join(names), help=f"comma-separated, of {', '.join(names)}")
    parser.add_argument(
        "--out",
        type=Path,
        default=DOCS,
        help=f"where benchmarks.md goes, and data/{runtimes.RUNTIME_RESULTS} beside it",
    )
    parser.add_argument("--workdir", type=Path, default=RESULTS / "runtimes")
    args = parser.parse_args()
    saved = runtimes.run(args)
    publish_section(args.out, runtimes.RUNTIME_RESULTS, saved, runtimes.render(saved))
    return 0


if __name__ == "__main__":
    sys.exit(main())
