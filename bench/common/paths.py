"""Where benchmarks keep their work and where the pages they generate, and those pages' data, go.

A generated page (docs/benchmarks.md, docs/soak.md, ...) stays in its directory; the results it is
rendered from and its plots go in ``data/`` beside it (docs/data/), and the page links them there.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: Logs, configs, throwaway clusters and raw results of the runs (not in git).
RESULTS = ROOT / "bench" / "results"
#: The subdirectory of a page's directory that holds its generated JSON and PNG files.
DATA = "data"


def data_dir(page_dir: Path) -> Path:
    """The directory for the generated data of the pages in ``page_dir``."""
    return page_dir / DATA
