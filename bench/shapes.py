"""``python -m bench.shapes``: workload shapes where raw mode may lose to record mode.

The command line of ``bench.scenarios.shapes`` (see there, or ``--help``). It writes its results to
``<out>/data/benchmarks-shapes.json``, where ``bench.report`` finds them with ``--out docs``, and its
section to ``<out>/benchmarks-shapes.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.common.paths import RESULTS, data_dir
from bench.scenarios import shapes
from devkafka.pair import given_or_local


def main() -> int:
    """Parse arguments, bring up clusters if none are given, run, write the results and their section."""
    parser = argparse.ArgumentParser(description=shapes.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--shapes", default=",".join(shapes.SHAPES), help=f"comma-separated, of {', '.join(shapes.SHAPES)}"
    )
    parser.add_argument(
        "--mirrors", default=",".join(shapes.DEFAULT_MIRRORS), help=f"comma-separated, of {', '.join(shapes.MIRRORS)}"
    )
    parser.add_argument("--mm2", action="store_true", help="add mm2-eos (MirrorMaker 2; not on the mixed shape)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every amount of data")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: --scale {shapes.QUICK_SCALE}")
    parser.add_argument("--codec", default="lz4", help="source producers' codec: none, gzip, snappy, lz4, zstd")
    parser.add_argument("--source", help="source bootstrap servers (default: local clusters started here)")
    parser.add_argument("--target", help="target bootstrap servers")
    parser.add_argument("--workdir", type=Path, default=RESULTS / "shapes", help="mirror configs, logs, clusters")
    parser.add_argument(
        "--out",
        type=Path,
        help="where benchmarks-shapes.md goes, and data/benchmarks-shapes.json beside it (default: the workdir; "
        "docs for the page)",
    )
    args = parser.parse_args()
    if bool(args.source) != bool(args.target):
        parser.error("give both --source and --target, or neither")
    scale = shapes.QUICK_SCALE if args.quick else args.scale
    names = [s.strip() for s in args.shapes.split(",") if s.strip()]
    mirrors = [m.strip() for m in args.mirrors.split(",") if m.strip()]
    if args.mm2 and "mm2-eos" not in mirrors:
        mirrors.append("mm2-eos")
    bad = [s for s in names if s not in shapes.SHAPES] + [m for m in mirrors if m not in shapes.MIRRORS]
    if bad:
        parser.error(f"unknown: {', '.join(bad)}")
    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    with given_or_local(workdir, args.source, args.target) as (src, tgt):
        results = shapes.run(src, tgt, workdir, names, mirrors, scale, codec=args.codec)
    out: Path = args.out or workdir
    saved = data_dir(out) / shapes.SHAPES_RESULTS
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(results, indent=2) + "\n")
    markdown = shapes.render(results)
    (out / "benchmarks-shapes.md").write_text(markdown)
    print(f"\n{markdown}")
    print(f"wrote {saved} and {out / 'benchmarks-shapes.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
