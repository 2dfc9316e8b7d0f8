"""verify's walk through the offset map: equal, different, forged, and what cannot be verified."""

from __future__ import annotations

import threading
import time

from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.formats.offset_syncs import SyncRun
from mirror_sink.failover.rehearsal.verify import (
    NO_SYNC,
    SKIPPED,
    SOURCE_GONE,
    TARGET_GONE,
    ByteRate,
    PartitionVerdict,
    Record,
    VerifyReport,
    compare_partition,
)

T, S = TargetPartition("src.orders", 0), SourcePartition("orders", 0)


def rec(offset: int, value: bytes, ts: int = 1000) -> Record:
    return Record(offset, b"k", value, (("h", b"1"),), ts)


def test_every_mapped_record_equal_is_verified_with_its_bytes() -> None:
    # Source 0..4 and 7..9 (5, 6: an aborted transaction) landed at target 0..4 and 6..8 (5: a marker).
    runs = [SyncRun(0, 0, 5), SyncRun(7, 6, 3)]
    source = [rec(o, b"v%d" % o) for o in (*range(5), 7, 8, 9)]
    target = [rec(t, b"v%d" % s) for t, s in zip((*range(5), 6, 7, 8), (*range(5), 7, 8, 9), strict=True)]
    verdict = compare_partition(T, S, runs, target, source, window=(0, 9))
    assert (verdict.verified, verdict.mismatches, dict(verdict.unverifiable)) == (8, 0, {})
    assert verdict.bytes == sum(r.size for r in target) and verdict.verified_to == 9


def test_the_first_difference_is_named_with_both_offsets() -> None:
    runs = [SyncRun(10, 100, 3)]
    source = [rec(10, b"a"), rec(11, b"b"), rec(12, b"c")]
    target = [rec(100, b"a"), rec(101, b"B"), rec(102, b"c", ts=5)]
    verdict = compare_partition(T, S, runs, target, source, window=(100, 103))
    assert (verdict.verified, verdict.mismatches) == (1, 2)
    assert str(verdict.first_mismatch) == "src.orders-0@101 vs orders-0@11: value differs"


def test_a_record_appended_by_hand_maps_to_no_source_offset() -> None:
    runs = [SyncRun(0, 0, 2)]
    source = [rec(0, b"a"), rec(1, b"b")]
    target = [rec(0, b"a"), rec(1, b"b"), rec(2, b"forged")]
    verdict = compare_partition(T, S, runs, target, source, window=(0, 3))
    assert verdict.mismatches == 1
    assert str(verdict.first_mismatch) == "src.orders-0@2 vs no source offset: maps to no source offset"


def test_what_is_gone_or_unsynced_or_skipped_is_unverifiable_not_a_mismatch() -> None:
    # Target 0..1 were mirrored before the syncs kept; source 11 was compacted away after mirroring;
    # target 5 was deleted on the target; 3 source offsets were skipped on purpose.
    runs = [SyncRun(10, 2, 4)]
    source = [rec(10, b"a"), rec(12, b"c"), rec(13, b"d")]
    target = [rec(0, b"old"), rec(1, b"old"), rec(2, b"a"), rec(3, b"b"), rec(4, b"c")]
    verdict = compare_partition(T, S, runs, target, source, window=(0, 6), skipped=3)
    assert verdict.mismatches == 0 and verdict.verified == 2
    assert dict(verdict.unverifiable) == {NO_SYNC: 2, SOURCE_GONE: 1, TARGET_GONE: 1, SKIPPED: 3}


def test_a_round_compares_only_its_window_and_runs_committed_after_it_wait_for_the_next() -> None:
    # Runs at target 0..9 and 10..19; this round's window is [5, 12): the rest is another round's.
    runs = [SyncRun(0, 0, 10), SyncRun(10, 10, 10)]
    source = [rec(o, b"v%d" % o) for o in range(5, 12)]
    target = [rec(o, b"v%d" % o) for o in range(5, 12)]
    verdict = compare_partition(T, S, runs, target, source, window=(5, 12), synced_from=0)
    assert (verdict.verified, verdict.mismatches, dict(verdict.unverifiable)) == (7, 0, {})
    # A record in a later window with no run, above the oldest sync: not the mirror's.
    late = compare_partition(T, S, [], [rec(30, b"x")], [], window=(30, 31), synced_from=0)
    assert late.mismatches == 1


def test_the_byte_rate_sleeps_only_when_ahead_of_its_cap() -> None:
    now = [0.0]
    slept: list[float] = []
    rate = ByteRate(1000, clock=lambda: now[0])
    rate.take(500, sleep=slept.append)
    assert slept == [0.5]
    now[0] = 2.0
    rate.take(500, sleep=slept.append)
    assert slept == [0.5]  # 1000 bytes in 2 s: under the cap
    ByteRate(None).take(10**9, sleep=slept.append)
    assert slept == [0.5]


def test_the_byte_rate_looks_at_the_clock_once_per_20_ms_of_bytes_not_per_record() -> None:
    ticks = [0]
    slept: list[float] = []

    def clock() -> float:
        ticks[0] += 1
        return 0.0

    rate = ByteRate(20_000_000, clock=clock)  # 20 MB/s: a check per 64 KiB at most
    for _ in range(1000):
        rate.take(1000, sleep=slept.append)  # 1 MB read at once: 0.05 s ahead
    assert ticks[0] <= 1 + 1_000_000 // 65536 + 1
    assert slept and all(s >= 0.02 for s in slept)


def test_a_stopping_connector_does_not_sleep_out_the_cap() -> None:
    stop = threading.Event()
    stop.set()
    rate = ByteRate(1000, clock=lambda: 0.0)
    started = time.monotonic()
    rate.take(10_000, stop)  # 10 s ahead of a 1,000 B/s cap
    assert time.monotonic() - started < 1.0


def test_the_table_gives_each_partitions_reasons_for_what_it_could_not_verify() -> None:
    gone = PartitionVerdict(TargetPartition("src.t", 0), SourcePartition("t", 0), verified=5, verified_to=20)
    gone.unverifiable.update({SOURCE_GONE: 12, NO_SYNC: 3})
    clean = PartitionVerdict(TargetPartition("src.t", 1), SourcePartition("t", 1), verified=7, verified_to=7)
    lines = VerifyReport("m", [gone, clean]).table().splitlines()
    assert lines[2].endswith("15 (3 no sync, 12 source gone)  20")
    assert lines[3].split()[4] == "0"
