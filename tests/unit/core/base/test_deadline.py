"""The one deadline value the code uses instead of hand-written monotonic arithmetic."""

from __future__ import annotations

import time

import pytest

from mirror_sink.core.base.deadline import Deadline

pytestmark = pytest.mark.unit


def test_a_deadline_counts_down_and_passes() -> None:
    deadline = Deadline(0.05)
    before = (deadline.passed, deadline.left())
    time.sleep(0.06)
    assert before[0] is False and 0 < before[1] <= 0.05
    assert deadline.passed
    assert deadline.left() == 0.0, "never negative: a wait of nothing"
    assert deadline.left(0.1) == 0.1, "or the floor the caller asks for"
