"""Which build runs: the source commit beside ``mirror_sink.__version__``, for REST ``GET /``."""

from __future__ import annotations

import os
from pathlib import Path

#: Set in the image from its build (deploy/image/Containerfile's REVISION).
COMMIT_ENV = "MIRROR_SINK_COMMIT"
_SHORT = 7


def commit() -> str:
    """The commit this build came from: ``MIRROR_SINK_COMMIT``, else the git checkout the package runs
    from (read from its files: a server never runs ``git``), else "unknown"."""
    baked = os.environ.get(COMMIT_ENV, "").strip()
    if baked:
        return baked[:_SHORT]
    found = _checkout_head(Path(__file__).resolve().parents[3] / ".git")
    return found[:_SHORT] if found else "unknown"


def _checkout_head(git: Path) -> str | None:
    """HEAD's commit id in the repository at ``git`` (a directory, or a worktree's ``gitdir:`` file)."""
    try:
        if git.is_file():
            git = (git.parent / git.read_text().removeprefix("gitdir:").strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head  # detached
        ref = head.removeprefix("ref: ")
        common = git / "commondir"
        root = (git / common.read_text().strip()).resolve() if common.is_file() else git
        for base in (git, root):
            if (base / ref).is_file():
                return (base / ref).read_text().strip()
        for line in (root / "packed-refs").read_text().splitlines():
            if line.endswith(f" {ref}"):
                return line.split()[0]
    except OSError:
        return None
    return None
