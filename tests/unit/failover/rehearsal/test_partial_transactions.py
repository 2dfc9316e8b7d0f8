"""Which source transactions a copy holds only in part, judged from the source's markers (pure logic)."""

from __future__ import annotations

from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.clients.source_transactions import SourceTransaction
from mirror_sink.failover.rehearsal.partial_transactions import Marker, find_partial

A0, A1, B0 = SourcePartition("a", 0), SourcePartition("a", 1), SourcePartition("b", 0)
POSITIONS = {A0: 20, A1: 25, B0: 5}


def _txn(
    tid: str, pid: int, epoch: int, *parts: SourcePartition, version: int = 2, committed: bool = True
) -> SourceTransaction:
    return SourceTransaction(
        tid, pid, epoch, committed, frozenset((p.topic, p.partition) for p in parts), False, 0, version
    )


def test_a_transaction_marked_below_the_position_on_one_partition_and_past_it_on_another_is_partial() -> None:
    markers = {A0: [Marker(10, 7, 3, True)], A1: [Marker(30, 7, 3, True)]}
    check = find_partial(POSITIONS, markers, [_txn("ledger", 7, 3, A0, A1)])
    assert check.checked == 1 and [(p.transactional_id, p.in_copy, p.missing) for p in check.partial] == [
        ("ledger", (A0,), (A1,))
    ]
    assert "ledger (producer 7, epoch 3): on the target on a-0, not on a-1" in check.lines()[1]
    assert check.to_dict()["partial"] == [
        {"transactional_id": "ledger", "producer_id": 7, "producer_epoch": 3, "in_copy": ["a-0"], "missing": ["a-1"]}
    ]


def test_transactions_wholly_on_one_side_of_the_cut_are_checked_and_whole() -> None:
    markers = {
        A0: [Marker(10, 7, 3, True), Marker(21, 7, 4, True)],
        A1: [Marker(12, 7, 3, True), Marker(26, 7, 4, True)],
    }
    check = find_partial(POSITIONS, markers, [_txn("ledger", 7, 3, A0, A1), _txn("ledger", 7, 4, A0, A1)])
    assert check.checked == 2 and not check.partial and not check.not_checkable


def test_version_1_producers_with_markers_on_both_sides_are_not_checkable_never_called_whole() -> None:
    # One epoch for every transaction of the producer: the marker at 10 and the one at 26 may be two transactions.
    markers = {A0: [Marker(10, 9, 0, True)], A1: [Marker(26, 9, 0, True)]}
    check = find_partial(POSITIONS, markers, [_txn("rdk", 9, 0, A0, A1, version=0)])
    assert not check.partial and check.checked == 0
    assert "transactions version 1" in check.not_checkable["rdk"]
    on_one_side = find_partial(POSITIONS, {A0: [Marker(10, 9, 0, True)], A1: [Marker(11, 9, 0, True)]},
                               [_txn("rdk", 9, 0, A0, A1, version=0)])  # fmt: skip
    assert not on_one_side.not_checkable and not on_one_side.partial


def test_a_marker_outside_the_windows_leaves_a_transaction_not_checked_unless_its_seen_parts_already_differ() -> None:
    one_side = find_partial(POSITIONS, {A0: [Marker(10, 7, 3, True)]}, [_txn("t", 7, 3, A0, A1)])
    assert not one_side.partial and "outside the windows read on a-1" in one_side.not_checkable["t"]
    markers = {A0: [Marker(10, 7, 3, True)], A1: [Marker(30, 7, 3, True)]}
    split = find_partial(POSITIONS, markers, [_txn("t", 7, 3, A0, A1, B0)])
    assert [(p.in_copy, p.missing) for p in split.partial] == [((A0,), (A1,))]
    nowhere = find_partial(POSITIONS, {}, [_txn("t", 7, 3, A0, A1)])
    assert not nowhere.partial and not nowhere.not_checkable, "far from the cut on every partition"


def test_single_partition_aborted_and_unmirrored_transactions_are_left_out() -> None:
    markers = {A0: [Marker(10, 7, 3, True), Marker(11, 8, 1, False)], A1: [Marker(30, 8, 1, False)]}
    check = find_partial(
        POSITIONS,
        markers,
        [
            _txn("single", 7, 3, A0, SourcePartition("elsewhere", 0)),
            _txn("aborted", 8, 1, A0, A1, committed=False),
        ],
    )
    assert check.checked == 0 and not check.partial and not check.not_checkable
