"""What the raw fetcher holds per partition: a fetched item's size and its charge to the memory
budget, and when a partition has reached the source's last stable offset."""

from __future__ import annotations

import pytest

from mirror_sink.raw.fetch.fetch_buffer import Fetched, PartitionState

pytestmark = pytest.mark.unit


def test_an_item_is_charged_its_batch_and_what_it_keeps_in_memory() -> None:
    item = Fetched(memoryview(bytearray(100)), None, 0, 10, extra=20)
    assert (item.size, item.charge) == (120, 120)


def test_a_view_of_a_frame_charged_whole_is_charged_nothing_itself() -> None:
    item = Fetched(memoryview(bytearray(100)), None, 0, 10, charged=False)
    assert (item.size, item.charge) == (100, 0)


def test_a_skipped_run_costs_only_what_it_keeps_in_memory() -> None:
    assert Fetched(None, None, 0, 10).size == 0
    assert Fetched(None, None, 0, 10, extra=7).charge == 7


@pytest.mark.parametrize(
    ("stable_end", "position", "at_end"),
    [(-1, 0, False), (10, 5, False), (10, 10, True), (10, 12, True), (0, 0, True)],
)
def test_a_partition_is_at_its_stable_end_once_fetched_up_to_what_the_source_last_reported(
    stable_end: int, position: int, at_end: bool
) -> None:
    assert PartitionState(position, 0, stable_end=stable_end).at_stable_end is at_end
