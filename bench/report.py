"""docs/benchmarks.md from saved results: the comparison's page, then each scenario's section from the
registry ``SECTIONS``, then the hand-kept notes.

    .venv/bin/python -m bench.report docs/data/benchmarks.json docs

reads ``bench.compare``'s saved results and writes ``benchmarks.md`` into the output directory and the
plots into its ``data/`` directory. Each section of ``SECTIONS`` whose saved results are in that
``data/`` directory follows the comparison, with its plots; ``benchmarks-notes.md`` beside the page,
when there is one, ends it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.common.paths import data_dir
from bench.common.section import Section
from bench.scenarios import compare, evidence, runtimes, scale, shapes, tls_throughput, wan

#: The page's first part, from the results file given (``bench.compare``'s).
PAGE = compare.SECTION
#: The sections after it, in page order; each is rendered when its saved results are in the data directory.
SECTIONS: tuple[Section, ...] = (
    tls_throughput.SECTION,
    shapes.SECTION,
    runtimes.SECTION,
    wan.SECTION,
    scale.SECTION,
    evidence.SECTION,
)
#: Hand-kept sections appended to the page as they are (one-off measurements with no results file).
NOTES = "benchmarks-notes.md"


def write_report(results: Mapping[str, Any], out_dir: Path, *, markdown_name: str = "benchmarks.md") -> list[Path]:
    """Write the page into ``out_dir`` and its plots into ``out_dir/data`` (both created if needed).

    The page is the comparison's (``results``), then every section of ``SECTIONS`` whose saved results
    are in ``out_dir/data``, then ``out_dir/benchmarks-notes.md`` when there is one. Returns the paths
    written, the page first, then the plots (a plot with no data says so rather than being skipped).
    """
    data = data_dir(out_dir)
    data.mkdir(parents=True, exist_ok=True)
    page = out_dir / markdown_name
    pngs = PAGE.plot(results, data)
    text = PAGE.render(results)
    for section in SECTIONS:
        saved = data / section.results
        if saved.exists():
            section_results = json.loads(saved.read_text(encoding="utf-8"))
            text += "\n" + section.render(section_results)
            pngs += section.plot(section_results, data)
    notes = out_dir / NOTES
    if notes.exists():  # sections measured by small one-off commands, kept by hand
        text += "\n" + notes.read_text(encoding="utf-8")
    page.write_text(text, encoding="utf-8")
    return [page, *pngs]


def save_section(out_dir: Path, name: str, results: Mapping[str, Any]) -> list[Path]:
    """Save a scenario's results as ``out_dir/data/name`` and re-render the page from them and from
    bench.compare's ``benchmarks.json`` there (when there is one); the paths written."""
    data = data_dir(out_dir)
    data.mkdir(parents=True, exist_ok=True)
    (data / name).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    written = [data / name]
    main_results = data / PAGE.results  # the page's other sections
    if main_results.exists():
        written += write_report(json.loads(main_results.read_text(encoding="utf-8")), out_dir)
    return written


def publish_section(out_dir: Path, name: str, results: Mapping[str, Any], rendered: str) -> None:
    """A scenario command's last step: print its section, save its results in the page's data directory
    and re-render the page (``save_section``), and say which files were written."""
    print(rendered)
    for path in save_section(out_dir, name, results):
        print(f"wrote {path}")


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate the docs from a saved results JSON file: ``python -m bench.report results.json out_dir``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.report", description="Regenerate the benchmark docs from a saved results file."
    )
    parser.add_argument(
        "results", type=Path, help="results JSON file written by the benchmark (docs/data/benchmarks.json)"
    )
    parser.add_argument("out_dir", type=Path, help="directory for the Markdown page; its data/ gets the PNGs")
    parser.add_argument("--markdown-name", default="benchmarks.md", help="file name of the page (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        results = json.loads(args.results.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        parser.error(f"cannot read {args.results}: {exc}")
    if not isinstance(results, dict):
        parser.error(f"{args.results} does not hold a JSON object")
    for path in write_report(results, args.out_dir, markdown_name=args.markdown_name):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
