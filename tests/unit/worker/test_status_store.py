"""How a worker group spreads a connector's task ids: each id on exactly one live worker, evenly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirror_sink.worker.status_store import assigned_tasks, assigned_worker


def test_six_tasks_over_three_workers_two_each() -> None:
    workers = ["w-b", "w-a", "w-c"]
    assert assigned_tasks(6, workers, "w-a") == [0, 3]
    assert assigned_tasks(6, workers, "w-b") == [1, 4]
    assert assigned_tasks(6, workers, "w-c") == [2, 5]


def test_a_worker_alone_runs_every_task_even_before_it_hears_itself() -> None:
    assert assigned_tasks(3, [], "w1") == [0, 1, 2]


def test_more_workers_than_tasks_leaves_some_idle() -> None:
    assert assigned_tasks(2, ["a", "b", "c"], "c") == []


@given(
    st.integers(min_value=0, max_value=40),
    st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=4), min_size=1, max_size=8, unique=True),
)
def test_every_task_runs_on_exactly_one_worker_and_the_spread_is_even(tasks_max: int, workers: list[str]) -> None:
    per_worker = {w: assigned_tasks(tasks_max, workers, w) for w in workers}
    ids = sorted(i for owned in per_worker.values() for i in owned)
    assert ids == list(range(tasks_max))
    sizes = [len(owned) for owned in per_worker.values()]
    assert max(sizes) - min(sizes) <= 1
    for w, owned in per_worker.items():
        assert all(assigned_worker(i, workers) == w for i in owned)
