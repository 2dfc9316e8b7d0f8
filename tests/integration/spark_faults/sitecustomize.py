"""Test-only fault injection for the Spark runtime's executors, kept out of the product.

A directory on ``PYTHONPATH`` is searched for ``sitecustomize`` when each Python process starts, the
executors' workers included. When ``MIRROR_SINK_FAULT_AFTER_PRODUCE`` names an existing file, the
first transactional commit in any of those processes deletes the file and fails: the range's records
are produced and its offsets are not committed, a crash at the worst moment. Spark retries the task.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

FAULT_FILE_ENV = "MIRROR_SINK_FAULT_AFTER_PRODUCE"


def _install() -> None:
    from mirror_sink.raw.txn.committer import RawCommitter
    from mirror_sink.record.committers import TransactionalCommitter

    for cls in (RawCommitter, TransactionalCommitter):
        real = cls.commit

        def commit(self: Any, *args: Any, _real: Any = real, **kwargs: Any) -> None:
            marker = Path(os.environ[FAULT_FILE_ENV])
            if marker.exists():
                marker.unlink()
                raise RuntimeError(f"injected fault after producing, before committing ({FAULT_FILE_ENV})")
            _real(self, *args, **kwargs)

        cls.commit = commit  # type: ignore[method-assign]


if os.environ.get(FAULT_FILE_ENV):
    _install()
