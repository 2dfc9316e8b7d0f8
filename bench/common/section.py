"""A scenario's part of a generated page: the reports iterate a registry of these."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Results = Mapping[str, Any]


def no_plots(_results: Results, _data_dir: Path) -> list[Path]:
    """The plots of a section that has none."""
    return []


@dataclass(frozen=True)
class Section:
    """How a page shows one scenario's saved results.

    ``results`` is the file name of the saved results in the page's data directory; ``render`` turns
    them into the section's Markdown; ``plot`` writes the section's PNGs into the data directory and
    returns their paths.
    """

    results: str
    render: Callable[[Results], str]
    plot: Callable[[Results, Path], list[Path]] = no_plots
