"""CycleBounds: when a cycle commits, by the same rule for a worker task and a Spark range copy."""

from __future__ import annotations

import time

import pytest

from mirror_sink.task.cycle_bounds import CycleBounds

pytestmark = pytest.mark.unit


def test_a_new_cycle_is_due_at_once_until_scheduled_then_at_its_interval() -> None:
    bounds = CycleBounds(max_bytes=100, interval_s=5.0)
    assert bounds.due()  # nothing scheduled yet: the first commit (the starts to save) is not held back
    bounds.schedule()
    now = time.monotonic()
    assert not bounds.due(now)
    assert bounds.due(now + 5.1)
    bounds.schedule(60.0)  # a backlog stretches the next interval
    assert not bounds.due(now + 5.1)
    bounds.due_now()
    assert bounds.due(now)


def test_a_cycle_holding_max_bytes_is_due_before_its_interval() -> None:
    bounds = CycleBounds(max_bytes=100, interval_s=60.0)
    bounds.schedule()
    bounds.add(60)
    assert not bounds.full() and not bounds.due()
    bounds.add(40)
    assert bounds.full() and bounds.due()


def test_take_returns_the_cycles_bytes_and_starts_the_next_cycle_empty() -> None:
    bounds = CycleBounds(max_bytes=100, interval_s=60.0)
    bounds.add(30)
    bounds.add(90)
    assert bounds.take() == 120
    assert bounds.bytes == 0 and not bounds.full()
