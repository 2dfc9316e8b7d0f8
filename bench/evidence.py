"""``python -m bench.evidence``: what ``mirror-sink verify`` costs per GB, and what a ``mirror-sink drill`` takes.

The command line of ``bench.scenarios.evidence`` (see there, or ``--help``). Its last step puts the scenario's
section into docs/benchmarks.md in place, and its results into docs/data/ where ``bench.report`` reads them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.common.console import log
from bench.common.paths import DOCS, RESULTS, data_dir
from bench.scenarios import evidence

PAGE = DOCS / "benchmarks.md"


def publish(results: Mapping[str, Any]) -> None:
    """Save the results in the page's data directory and put the section in the page: in place of its last
    version, or at the end."""
    saved = data_dir(DOCS) / evidence.EVIDENCE_RESULTS
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    section = evidence.render(results)
    text = PAGE.read_text(encoding="utf-8")
    at = text.find(evidence.HEADING)
    if at < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        after = text.find("\n## ", at + len(evidence.HEADING))
        text = text[:at] + section + ("" if after < 0 else text[after:])
    PAGE.write_text(text, encoding="utf-8")
    log(f"wrote {saved} and the section {evidence.HEADING!r} of {PAGE}")


def main() -> int:
    """Run the benchmark (or, ``--page``, only publish saved results)."""
    parser = argparse.ArgumentParser(description=evidence.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0, help="uncompressed GB of 1 KB records (default 1)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 0.1 GB, docs left alone")
    parser.add_argument("--reps", type=int, default=2, help="runs of verify and of the floor each (default 2)")
    parser.add_argument("--no-docs", action="store_true", help="leave docs/ alone")
    parser.add_argument("--page", type=Path, metavar="RESULTS", help="only publish saved results to the docs")
    args = parser.parse_args()
    if args.page is not None:
        publish(json.loads(args.page.read_text()))
        return 0
    if args.quick:
        args.gb = 0.1
    args.stamp = time.strftime("%Y%m%d-%H%M%S")
    results = evidence.run(args)
    path = RESULTS / f"evidence-{args.stamp}.json"  # beside its work directory, evidence-<stamp>/
    path.write_text(json.dumps(results, indent=2) + "\n")
    print()
    print("\n".join(evidence.tables(results)))
    print(f"\nwrote {path} ({results['total_seconds']:.0f} s in all)")
    if not (args.quick or args.no_docs):
        publish(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
