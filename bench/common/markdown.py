"""Table cells and tables of the generated Markdown pages."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

#: A missing figure, in a table cell.
DASH = "-"


def fmt(value: float | None, decimals: int | None = None) -> str:
    """A table cell: "-" for missing, else about three significant figures unless ``decimals`` is given."""
    if value is None:
        return DASH
    if decimals is None:
        decimals = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return f"{value:,.{decimals}f}"


def share(fraction: float | None) -> str:
    """A fraction as a percentage with two significant figures below 10% ("0.0062%", "1.5%", "37%")."""
    if fraction is None:
        return DASH
    pct = fraction * 100
    if pct == 0:
        return "0%"
    if abs(pct) >= 9.95:
        return f"{pct:.0f}%"
    decimals = max(1, 1 - math.floor(math.log10(abs(pct))))
    return f"{pct:.{decimals}f}%"


def row(cells: Iterable[str]) -> str:
    """One Markdown table row."""
    # A "|" inside a cell (e.g. in a mirror name) would split the Markdown column.
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], right_from: int = 1) -> list[str]:
    """A Markdown table, numeric columns (index >= ``right_from``) right-aligned."""
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    return [row(header), row(align), *(row(r) for r in rows)]


def cell(value: float | None, spec: str = ",.1f", suffix: str = "") -> str:
    """``value`` formatted with ``spec``, then ``suffix``; "-" when missing or NaN."""
    if value is None or math.isnan(value):
        return DASH
    return f"{value:{spec}}{suffix}"
