"""``python -m bench.tls_throughput``: what TLS costs a mirror, the same data over PLAINTEXT, SASL_SSL and mTLS.

The command line of ``bench.scenarios.tls_throughput`` (see there, or ``--help``): it saves its results in
``bench/results/`` and as ``<out>/data/benchmarks-tls.json``, and re-renders ``<out>/benchmarks.md`` with
``bench.report``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.common.console import log
from bench.common.paths import DOCS, RESULTS
from bench.report import save_section
from bench.scenarios import tls_throughput as tls


def main() -> int:
    """Run the benchmark, save its results and re-render the docs page with them."""
    parser = argparse.ArgumentParser(description=tls.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=0.5, help="uncompressed GB of 1 KB lz4 records")
    parser.add_argument("--reps", type=int, default=2, help="runs of each configuration, interleaved")
    parser.add_argument(
        "--configs", default=",".join(tls.DEFAULT_CONFIGS), help=f"comma-separated, of {', '.join(tls.CONFIGS)}"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 5 MB, one repetition")
    parser.add_argument(
        "--out", type=Path, default=DOCS, help=f"where benchmarks.md goes, and data/{tls.TLS_RESULTS} beside it"
    )
    parser.add_argument("--workdir", type=Path, default=RESULTS, help="logs, results and the throwaway clusters")
    args = parser.parse_args()
    if args.quick:
        args.gb, args.reps = 0.005, 1
    results = tls.run(args)
    args.workdir.mkdir(parents=True, exist_ok=True)
    saved = args.workdir / f"tls-{time.strftime('%Y%m%d-%H%M%S')}.json"
    text = json.dumps(results, indent=2) + "\n"
    saved.write_text(text)
    print(tls.render(results))
    log(f"wrote {saved}")
    for path in save_section(args.out, tls.TLS_RESULTS, results):
        log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
