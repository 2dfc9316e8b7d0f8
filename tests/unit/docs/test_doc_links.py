"""Every relative link in the README and the docs resolves: to a file of the checkout, and where it
names a section, to a heading of that page (GitHub's anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("deploy/**/*.md")])
#: [text](target) outside code; images too. Targets with a scheme or a mail address are not ours.
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^(```|~~~)")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def _prose(page: Path, *, inline_code: bool = False) -> str:
    """The page without its fenced code blocks and, unless ``inline_code``, its inline code: links
    there are examples, not links (a heading's anchor keeps its code's text)."""
    kept, fenced = [], False
    for line in page.read_text().splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(line if inline_code else re.sub(r"`[^`]*`", "", line))
    return "\n".join(kept)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of every heading of ``page``, GitHub's ``-1``, ``-2`` suffixes for repeats included."""
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(page, inline_code=True).splitlines():
        if m := re.match(r"^#{1,6}\s+(.*)$", line):
            base = anchor(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(page: Path) -> list[str]:
    """Each relative link of ``page`` that names no file of the checkout, or no heading of its page."""
    broken = []
    for target in _LINK.findall(_prose(page)):
        if _EXTERNAL.match(target):
            continue
        path, _, section = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif section and where.suffix == ".md" and section not in anchors(where):
            broken.append(f"{target}: no heading #{section} in {where.name}")
    return broken


def test_the_pages_are_found() -> None:
    assert ROOT / "README.md" in PAGES and len(PAGES) > 20


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_and_a_missing_heading_are_found(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A page\n\n## Its `first` section\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md) [ok](there.md#its-first-section) [gone](nowhere.md) [bad](there.md#no-such)\n"
        "```\n[example](not-a-link.md)\n```\n[web](https://kafka.apache.org)\n"
    )
    assert [b.split(":")[0] for b in broken_links(page)] == ["nowhere.md", "there.md#no-such"]
