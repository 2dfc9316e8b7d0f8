"""Integration fixtures: mirror processes that never outlive their test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

from tests.integration.harness import MirrorProcess, WorkerProcess


class MirrorFactory(Protocol):
    """Makes an unstarted mirror process for a connector config and worker id."""

    def __call__(self, config: dict[str, str], worker_id: str = "w1") -> MirrorProcess: ...


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[MirrorFactory]:
    """``mirror(config, worker_id)`` -> an unstarted MirrorProcess, killed at teardown if still alive."""
    made: list[MirrorProcess] = []

    def make(config: dict[str, str], worker_id: str = "w1") -> MirrorProcess:
        process = MirrorProcess(config, worker_id, tmp_path)
        made.append(process)
        return process

    yield make
    for process in made:
        if process.alive():
            process.kill()


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WorkerProcess]:
    """A running REST worker (embedded store, free port); stopped at teardown."""
    process = WorkerProcess(tmp_path).start()
    yield process
    if process.alive():
        process.stop()
