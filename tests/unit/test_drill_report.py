"""What a drill report says of the source's transactions at its cut."""

from __future__ import annotations

from mirror_sink.failover.drill import DrillReport, TransactionConsistency


def _report(transactions: TransactionConsistency) -> DrillReport:
    return DrillReport("d1", "orders-mirror", "2026-11-28T00:00:00+00:00", transactions=transactions)


def test_a_cut_whose_every_position_was_committed_at_a_cut_is_transaction_consistent() -> None:
    report = _report(TransactionConsistency(option=True, partitions=4))
    assert report.to_dict()["source_transactions"] == {
        "consistent": True,
        "kept_whole_option": True,
        "partitions": 4,
        "not_at_a_cut": [],
    }
    assert "**Source transactions:** the cut is transaction-consistent: all 4 partitions'" in report.markdown()
    several = _report(TransactionConsistency(option=True, partitions=4, tasks=2)).markdown()
    assert "within each of the 2 tasks" in several and "spanning_producers" in several


def test_partitions_not_committed_at_a_cut_are_named_and_the_option_off_is_said() -> None:
    off = _report(TransactionConsistency(option=False, partitions=2, not_at_a_cut=["orders-0", "orders-1"]))
    assert off.to_dict()["source_transactions"]["consistent"] is False
    line = next(x for x in off.markdown().splitlines() if x.startswith("**Source transactions:**"))
    assert "not shown to be transaction-consistent (source.transactions.whole=false)" in line
    assert "2 of 2 partitions" in line and "(orders-0, orders-1)" in line
    split = _report(TransactionConsistency(option=True, partitions=2, not_at_a_cut=["orders-1"])).markdown()
    assert "whole=false" not in split and "1 of 2 partitions" in split
    assert off.passed, "information for the auditor, not a failed drill"


def test_a_drill_of_no_partition_shows_nothing_consistent() -> None:
    assert not TransactionConsistency(option=True, partitions=0).consistent
