"""``python -m bench.compare``: mirror-sink against MirrorMaker 2 and the target broker's own ingest limit.

The command line of ``bench.scenarios.compare`` (see there, or ``--help``): it runs the comparison, saves
its results as ``<out>/data/benchmarks.json`` and renders ``<out>/benchmarks.md`` with ``bench.report``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.common.paths import DOCS, RESULTS, data_dir
from bench.mirror_throughput import MODES
from bench.report import write_report
from bench.scenarios import compare
from bench.scenarios.compare import csv_list
from devkafka.pair import given_or_local_pair


def _resolve(args: argparse.Namespace) -> None:
    """Fill the options left unset with the full run's defaults, or --quick's."""
    quick = args.quick
    if quick:
        args.gb, args.codecs = 0.005, "lz4"
    if args.latency_rate is not None:  # the single-rate option of earlier versions
        args.latency_rates = args.latency_rates or str(args.latency_rate)
    args.latency_rates = args.latency_rates or ("500,5000" if quick else compare.DEFAULT_LATENCY_RATES)
    args.latency_seconds = args.latency_seconds or (3.0 if quick else 20.0)
    args.latency_drain_seconds = args.latency_drain_seconds or (60.0 if quick else 180.0)
    if args.latency_warmup_seconds is None:
        args.latency_warmup_seconds = 0.0 if quick else 10.0
    args.scaling = (not quick) if args.scaling is None else args.scaling
    args.scaling_gb = args.scaling_gb or (0.01 if quick else 2.0)


def main() -> int:
    """Parse arguments, bring up clusters if none are given, run, write the report."""
    mirrors = compare.MIRRORS
    parser = argparse.ArgumentParser(description=compare.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=0.5, help="uncompressed GB of 1 KB records per codec")
    parser.add_argument(
        "--codecs", default=",".join(compare.CODECS), help="comma-separated: none, gzip, snappy, lz4, zstd"
    )
    parser.add_argument("--mirrors", default=",".join(mirrors), help=f"comma-separated, of {', '.join(mirrors)}")
    parser.add_argument(
        "--latency-rates",
        help="comma-separated records/s, one latency run per mirror at each "
        f"(default {compare.DEFAULT_LATENCY_RATES}; --quick: 500,5000)",
    )
    parser.add_argument("--latency-rate", type=int, help="a single latency rate (same as --latency-rates RATE)")
    parser.add_argument(
        "--latency-mirrors",
        default=",".join(compare.LATENCY_MIRRORS),
        help="comma-separated mirrors for the latency runs (default %(default)s; mm2-alo too if wanted)",
    )
    parser.add_argument(
        "--latency-seconds", type=float, help="length of each latency run's produce phase (default 20, --quick 3)"
    )
    parser.add_argument(
        "--latency-warmup-seconds",
        type=float,
        help="a latency run of the first mirror at the first rate before the measured ones, discarded: the "
        "first run after the clusters start is slow whatever the mirror (default 10, --quick 0: none)",
    )
    parser.add_argument(
        "--latency-drain-seconds",
        type=float,
        help="how long a latency run waits after producing for the last records to arrive (default 180, --quick 60)",
    )
    parser.add_argument(
        "--scaling",
        action=argparse.BooleanOptionalAction,
        help="the task-scaling step (default: on, off with --quick)",
    )
    parser.add_argument(
        "--scaling-gb", type=float, help="uncompressed GB for the scaling topic (default 2, --quick 0.01)"
    )
    parser.add_argument(
        "--scaling-mirrors",
        default="raw-eos,record-eos",
        help="comma-separated mirror-sink modes (default %(default)s)",
    )
    parser.add_argument(
        "--scaling-tasks", default="1,2,4", help="comma-separated tasks.max values (default %(default)s)"
    )
    parser.add_argument("--scaling-partitions", type=int, default=24, help="partitions of the scaling topic")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 5 MB of lz4, 3-second latency runs at 500 and 5,000/s"
    )
    parser.add_argument("--source", help="source bootstrap servers (default: local clusters started here)")
    parser.add_argument("--target", help="target bootstrap servers")
    parser.add_argument(
        "--out", type=Path, default=DOCS, help="where benchmarks.md goes, and its .json and PNGs in data/ beside it"
    )
    parser.add_argument("--workdir", type=Path, default=RESULTS, help="logs and local clusters")
    args = parser.parse_args()
    _resolve(args)
    unknown = set(csv_list(args.scaling_mirrors)) - set(MODES)
    if args.scaling and unknown:
        parser.error(
            f"--scaling-mirrors takes mirror-sink modes ({', '.join(MODES)}), not {', '.join(sorted(unknown))}"
        )
    if bool(args.source) != bool(args.target):
        parser.error("give both --source and --target, or neither")
    with given_or_local_pair(args.workdir, args.source, args.target) as brokers:
        results = compare.run(args, brokers)
    data = data_dir(args.out)
    data.mkdir(parents=True, exist_ok=True)
    (data / compare.COMPARE_RESULTS).write_text(json.dumps(results, indent=2) + "\n")
    for path in write_report(results, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
