"""What a drill report says of the source's transactions at its cut."""

from __future__ import annotations

from mirror_sink.failover.rehearsal.drill import DrillReport, PartitionRpo, TransactionConsistency


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


def test_the_rpo_counts_records_and_says_what_each_age_means() -> None:
    report = DrillReport("d2", "orders-mirror", "2026-11-28T00:00:00+00:00")
    report.rpo = [
        PartitionRpo("orders", 0, 100, 120, records=15, bytes=1500, seconds=3602.2, last_commit_s=10.4),
        PartitionRpo("orders", 1, 90, 90, last_commit_s=2.0),
    ]
    report.timings_s = {"translate": 0.125, "commit": 0.162, "first canary read": 1.063}
    text = report.markdown()
    assert (
        "**RPO at the cut:** 15 committed source records (1500 bytes) not yet mirrored; the oldest of them was "
        "written 3602.2 s before the cut (by its record timestamp). The mirror last committed 10.4 s before the cut"
    ) in text
    assert "| orders-0 | 100 | 120 | 15 | 1500 | 3602.2 | 10.4 |" in text
    assert "| orders-1 | 90 | 90 | 0 | 0 | - | 2.0 |" in text, "no age for records that are not there"
    assert "translate 0.125 s + commit 0.162 s + first canary read 1.063 s = **1.350 s**" in text
    assert report.to_dict()["time_to_ready_total_s"] == 1.35
    empty = DrillReport("d3", "m", "2026-11-28T00:00:00+00:00")
    assert "**RPO at the cut:** nothing: every committed source record was mirrored." in empty.markdown()


def test_a_warning_shows_in_the_title_and_a_kept_drill_says_how_to_delete_its_groups() -> None:
    report = DrillReport("d4", "orders-mirror", "2026-11-28T00:00:00+00:00", kept_groups=True)
    report.warnings.append("the mirror is not running: its shadow group connect-orders-mirror has no member.")
    report.delete_command = "kafka-consumer-groups.sh --bootstrap-server b:9092 --delete --group mirror-sink-drill.d4.g"
    text = report.markdown()
    assert text.startswith("# DR drill d4 of orders-mirror: PASSED with 1 warning\n")
    assert "**Warning:** the mirror is not running" in text
    assert text.endswith(f"Delete them when done: `{report.delete_command}`")
    assert report.passed and report.to_dict()["warnings"] == report.warnings
