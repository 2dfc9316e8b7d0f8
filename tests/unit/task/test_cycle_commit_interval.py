"""How long a transaction may last with transaction.boundary=caught-up (pure logic)."""

from __future__ import annotations

import pytest

from mirror_sink.task.cycle import commit_interval_s

pytestmark = pytest.mark.unit


def test_a_caught_up_task_keeps_the_configured_interval_whatever_the_markers_cost() -> None:
    assert commit_interval_s(1.0, 6.0, 60.0, backlog=False) == 1.0


def test_a_backlog_stretches_the_transaction_to_four_times_the_marker_wait_within_the_bounds() -> None:
    assert commit_interval_s(1.0, 0.01, 60.0, backlog=True) == 1.0, "cheap markers: the interval as configured"
    assert commit_interval_s(1.0, 2.0, 60.0, backlog=True) == 8.0
    assert commit_interval_s(1.0, 20.0, 300.0, backlog=True) == 30.0, "never past 30 s"
    assert commit_interval_s(1.0, 6.0, 15.0, backlog=True) == 5.0, "nor past a third of the transaction timeout"
    assert commit_interval_s(40.0, 6.0, 900.0, backlog=True) == 40.0, "never shorter than configured"
