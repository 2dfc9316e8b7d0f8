"""Offset syncs and checkpoints: encodings round-trip, and translation equals a brute-force model."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.checkpoints import Checkpoint, checkpoints_topic
from mirror_sink.core.formats.offset_syncs import (
    CycleOffsets,
    OffsetIndex,
    OffsetSync,
    SyncRun,
    SyncSpan,
    offset_syncs,
)

TP = TargetPartition("us.orders", 3)


def test_checkpoint_bytes_are_mm2s() -> None:
    # Checkpoint.java: key = STRING group, STRING topic, INT32 partition; value = INT16 version,
    # INT64 upstreamOffset, INT64 offset, STRING metadata (STRING = int16 length + UTF-8).
    cp = Checkpoint("g1", TargetPartition("src.t", 2), 17, 42, "")
    assert cp.encode_key() == b"\x00\x02g1" + b"\x00\x05src.t" + b"\x00\x00\x00\x02"
    assert cp.encode_value() == b"\x00\x00" + struct.pack(">qq", 17, 42) + b"\x00\x00"
    assert Checkpoint.decode(cp.encode_key(), cp.encode_value()) == cp
    assert checkpoints_topic("east") == "east.checkpoints.internal"


def test_checkpoint_decode_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        Checkpoint.decode(b"\x00", b"")


runs_strategy = st.lists(
    st.tuples(st.integers(0, 1000), st.integers(0, 1000), st.integers(1, 1000)), min_size=0, max_size=20
)


@given(start=st.integers(0, 2**40), gaps=runs_strategy, topic=st.text(max_size=30))
def test_sync_round_trip(start: int, gaps: list[tuple[int, int, int]], topic: str) -> None:
    runs = []
    source, target = start, 5
    for ds, dt, n in gaps:
        runs.append(SyncRun(source + ds, target + dt, n))
        source, target = source + ds + n, target + dt + n
    sync = OffsetSync(TP, topic, start, source + 3, tuple(runs))
    assert OffsetSync.decode(sync.encode_key(), sync.encode_value()) == sync


def test_sync_is_small() -> None:
    sync = OffsetSync(TP, "orders", 1_000_000, 1_002_000, (SyncRun(1_000_000, 3_000_000, 2000),))
    assert len(sync.encode_value()) < 40
    with pytest.raises(ValueError):
        OffsetSync.decode(sync.encode_key(), b"\x00\x07")


def test_cycle_offsets_merge_consecutive_batches_only() -> None:
    c = CycleOffsets()
    c.add(TP, 100, 0, 10)
    c.add(TP, 110, 10, 5)  # next batch: both sides consecutive, one run
    c.add(TP, 120, 15, 5)  # source gap (an aborted transaction)
    c.add_offsets(TP, [130, 131, 135], 20)  # re-encoded compacted batch
    assert c.take() == {TP: (SyncRun(100, 0, 15), SyncRun(120, 15, 5), SyncRun(130, 20, 2), SyncRun(135, 22, 1))}
    assert c.take() == {}


def test_offset_syncs_refuse_runs_without_a_span() -> None:
    with pytest.raises(ValueError, match="no source offset moved"):
        offset_syncs([], {TP: (SyncRun(0, 0, 1),)})
    assert offset_syncs([SyncSpan(TP, "orders", 0, 4)], {}) == [OffsetSync(TP, "orders", 0, 4, ())]


# -- translation against a model ----------------------------------------------------------------
# A source partition is a sequence of offsets, each a record to mirror or not (control record,
# aborted record, compacted away). Transactions cover consecutive ranges; on the target each
# transaction's records take consecutive offsets followed by one commit marker.


@st.composite
def mirrored_partition(draw: st.DrawFn) -> tuple[int, list[bool], list[int]]:
    start = draw(st.integers(0, 50))
    kinds = draw(st.lists(st.booleans(), min_size=1, max_size=200))
    cuts = sorted(set(draw(st.lists(st.integers(1, len(kinds)), max_size=20))) | {len(kinds)})
    return start, kinds, cuts


@given(mirrored_partition(), st.integers(0, 300))
@settings(max_examples=300)
def test_translation_is_exact(case: tuple[int, list[bool], list[int]], probe: int) -> None:
    start, kinds, cuts = case
    index = OffsetIndex()
    target_of: dict[int, int] = {}
    target = 7  # the target partition already held something
    lo = 0
    for hi in cuts:
        collector = CycleOffsets()
        for i in range(lo, hi):
            if kinds[i]:
                collector.add(TP, start + i, target, 1)
                target_of[start + i] = target
                target += 1
        target += 1  # the commit marker
        (sync,) = offset_syncs([SyncSpan(TP, "orders", start + lo, start + hi)], collector.take())
        index.add(OffsetSync.decode(sync.encode_key(), sync.encode_value()))
        lo = hi
    end = start + len(kinds)
    mirrored = sorted(target_of)
    for s in (probe, start, end, end + 1, start - 1):
        got = index.translate(TP, s)
        if s < start or s > end:
            assert got is None
            continue
        after = [o for o in mirrored if o >= s]
        if after:
            assert got == target_of[after[0]]
        elif mirrored:
            # Nothing at or after s yet: the consumer resumes after the last mirrored record; only
            # transaction markers lie between.
            assert got is not None and got > target_of[mirrored[-1]]
            assert got == target_of[mirrored[-1]] + 1
        else:
            assert got is None


def test_a_remirror_replaces_what_it_overlaps() -> None:
    index = OffsetIndex()
    index.add(OffsetSync(TP, "orders", 0, 10, (SyncRun(0, 0, 10),)))
    index.add(OffsetSync(TP, "orders", 5, 10, (SyncRun(5, 11, 5),)))  # shadow group reset to 5
    assert index.translate(TP, 4) == 4
    assert index.translate(TP, 5) == 11
    assert index.translate(TP, 9) == 15
    assert index.translate(TP, 10) == 16
    assert index.translate(TP, 11) is None
    assert index.mirrored_to(TP) == 10
    assert [index.partitions[TP].records_from(s) for s in (0, 4, 5, 9, 10)] == [10, 6, 5, 1, 0]


def test_group_filter_has_mm2s_defaults() -> None:
    from mirror_sink.config.mirror_sink_config import MirrorSinkConfig

    cfg = MirrorSinkConfig.parse(
        {"name": "m", "source.cluster.bootstrap.servers": "a:1", "target.cluster.bootstrap.servers": "b:1"}
    )
    groups = cfg.group_filter()
    assert groups.accepts("billing") and not groups.accepts("connect-m") and not groups.accepts("console-consumer-1")
    assert cfg.offset_syncs_partition == TargetPartition("mirror-sink-offset-syncs.source.internal", 0)
    assert cfg.emit_checkpoints and not cfg.sync_group_offsets and cfg.emit_checkpoints_interval_s == 5
    at_least_once = MirrorSinkConfig.parse({**cfg.to_props(), "transaction.producer": "false"})
    assert at_least_once.offset_syncs_partition is None, "without transactions a sync could not be atomic"
    problems = MirrorSinkConfig.errors({**cfg.to_props(), "groups": "((", "emit.checkpoints.interval.seconds": "0"})
    assert set(problems) == {"groups", "emit.checkpoints.interval.seconds"}


def test_failover_table_names_each_group_partition() -> None:
    from mirror_sink.failover.common.translation import Translation
    from mirror_sink.failover.switch.failover_plan import FailoverPlan

    plan = FailoverPlan("planned", [Translation("g", "orders", TP, 100, 140), Translation("h", "orders", TP, 5, 6)])
    plan.behind = {("g", TP): 10}
    plan.unchanged = {("h", TP)}
    lines = plan.table().splitlines()
    assert lines[0].split() == [
        "group",
        "topic",
        "partition",
        "source",
        "offset",
        "->",
        "target",
        "offset",
        "records",
        "behind",
    ]
    assert lines[2].split() == ["g", "us.orders", "3", "100", "->", "140", "10"]
    assert "already there or ahead" in lines[3]


@given(mirrored_partition(), st.integers(0, 300), st.integers(0, 300))
@settings(max_examples=200)
def test_forgetting_below_a_floor_keeps_every_translation_above_it(
    case: tuple[int, list[bool], list[int]], floor: int, probe: int
) -> None:
    start, kinds, cuts = case
    full, pruned = OffsetIndex(), OffsetIndex()
    target, lo = 0, 0
    for hi in cuts:
        collector = CycleOffsets()
        for i in range(lo, hi):
            if kinds[i]:
                collector.add(TP, start + i, target, 1)
                target += 1
        target += 1
        (sync,) = offset_syncs([SyncSpan(TP, "orders", start + lo, start + hi)], collector.take())
        full.add(sync)
        pruned.add(sync)
        lo = hi
    pruned.forget_below({TP: floor})
    low = pruned.source_start(TP)
    assert low is not None and low >= min(floor, start)
    if probe >= low:
        assert pruned.translate(TP, probe) == full.translate(TP, probe)
    else:
        assert pruned.translate(TP, probe) is None


class _Delivered:
    """What librdkafka hands the delivery callback, as far as the tracker reads it."""

    def __init__(self, topic: str, partition: int, offset: int | None) -> None:
        self._t, self._p, self._o = topic, partition, offset

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int | None:
        return self._o


def test_record_mode_pairs_the_nth_delivery_with_the_nth_record() -> None:
    from mirror_sink.core.base.errors import AbortCycle
    from mirror_sink.record.committers import DeliveryTracker

    tracker = DeliveryTracker(track_offsets=True)
    assert tracker.sources is not None
    tracker.sources[("us.orders", 3)] = [10, 11, 12, 20, 21]  # an aborted transaction's gap at 13..19
    tracker.sources[("us.orders", 4)] = [0, 1, 2]
    for i, target in enumerate([100, 101, 102, 103, 104]):
        tracker(None, _Delivered("us.orders", 3, target))
        if i < 3:
            tracker(None, _Delivered("us.orders", 4, 50 + i))
    tracker(None, _Delivered("mirror-sink-offset-syncs.source.internal", 0, 7))  # not a mirrored record
    assert tracker.take_runs() == {
        TP: (SyncRun(10, 100, 3), SyncRun(20, 103, 2)),
        TargetPartition("us.orders", 4): (SyncRun(0, 50, 3),),
    }
    tracker.sources[("us.orders", 3)] = [30, 31]
    tracker(None, _Delivered("us.orders", 3, 200))
    with pytest.raises(AbortCycle, match=r"1 records to us\.orders-3 unacknowledged"):
        tracker.take_runs()
    # A retried batch the broker already had: librdkafka reports it delivered, with no offset.
    tracker.forget_offsets()  # as the abort does
    tracker.sources[("us.orders", 3)] = [40, 41]
    tracker(None, _Delivered("us.orders", 3, 300))
    tracker(None, _Delivered("us.orders", 3, None))
    with pytest.raises(AbortCycle, match=r"1 records to us\.orders-3 acknowledged without their target offset"):
        tracker.take_runs()


def test_a_hole_in_the_syncs_is_never_translated_across() -> None:
    index = OffsetIndex()
    index.add(OffsetSync(TP, "orders", 0, 10, (SyncRun(0, 0, 10),)))
    # 10..19 mirrored by a runtime that writes no syncs, at target offsets 11..20.
    index.add(OffsetSync(TP, "orders", 20, 30, (SyncRun(20, 22, 10),)))
    assert index.translate(TP, 15) is None, "the records from 15 on sit at unknown target offsets"
    assert index.translate(TP, 5) is None
    assert index.translate(TP, 20) == 22


def test_a_transaction_with_many_runs_is_split_into_consecutive_syncs() -> None:
    runs = tuple(SyncRun(100 + 2 * i, 10 + i, 1) for i in range(10))  # compacted: every other offset
    syncs = offset_syncs([SyncSpan(TP, "orders", 100, 125)], {TP: runs}, max_runs=4)
    assert [(s.source_start, s.source_end, len(s.runs)) for s in syncs] == [(100, 108, 4), (108, 116, 4), (116, 125, 2)]
    index = OffsetIndex()
    for sync in syncs:
        index.add(sync)
    assert [index.translate(TP, o) for o in (100, 101, 107, 108, 118, 119, 125)] == [10, 11, 14, 14, 19, 20, 20]


def test_failover_never_selects_the_mirrors_own_groups() -> None:
    import re

    from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
    from mirror_sink.failover.switch.failover_plan import FailoverPlanner

    cfg = MirrorSinkConfig.parse(
        {"name": "m", "source.cluster.bootstrap.servers": "a:1", "target.cluster.bootstrap.servers": "b:1"}
    )
    failover = FailoverPlanner(cfg, say=lambda _: None)
    groups = {"connect-m": "EMPTY", "billing": "EMPTY", "console-consumer-7": "EMPTY"}
    # On the target, connect-m is the shadow group: moving it would overwrite the mirror's own offsets.
    assert failover._select(re.compile(".*"), groups) == ["billing", "console-consumer-7"]
    assert failover._select(None, groups) == ["billing"]


def test_a_sync_that_opens_with_a_skipped_range_round_trips_as_version_1() -> None:
    sync = OffsetSync(TP, "orders", 100, 160, (SyncRun(150, 40, 10),), skipped_to=150)
    value = sync.encode_value()
    assert struct.unpack_from(">h", value)[0] == 1
    assert OffsetSync.decode(sync.encode_key(), value) == sync
    plain = OffsetSync(TP, "orders", 100, 160, (SyncRun(150, 40, 10),))
    assert struct.unpack_from(">h", plain.encode_value())[0] == 0, "nothing skipped: readers of version 0 read it"


def test_only_the_first_of_a_split_transaction_s_syncs_carries_its_gap() -> None:
    runs = tuple(SyncRun(150 + 2 * i, 10 + i, 1) for i in range(6))
    syncs = offset_syncs([SyncSpan(TP, "orders", 100, 170, skipped_to=150)], {TP: runs}, max_runs=4)
    assert [(s.source_start, s.skipped_to) for s in syncs] == [(100, 150), (158, None)]


def test_translation_never_crosses_a_skipped_range() -> None:
    index = OffsetIndex()
    index.add(OffsetSync(TP, "orders", 0, 100, (SyncRun(0, 0, 100),)))
    # 100..149 deleted on the source before they were mirrored; 150..159 mirrored at 100..109.
    index.add(OffsetSync(TP, "orders", 100, 160, (SyncRun(150, 100, 10),), skipped_to=150))
    assert index.gaps(TP) == [(100, 150)]
    assert index.translate(TP, 99) == 99, "a record before the gap translates"
    assert index.translate(TP, 100) is None, "the gap's first offset: its next record lies past the gap"
    assert index.translate(TP, 149) is None
    assert index.translate(TP, 150) == 100, "the first record after the gap translates"
    assert index.translate(TP, 160) == 110
    assert index.mirrored_to(TP) == 160


def test_a_gap_with_nothing_mirrored_after_it_yet_translates_only_its_end() -> None:
    index = OffsetIndex()
    index.add(OffsetSync(TP, "orders", 0, 10, (SyncRun(0, 0, 10),)))
    index.add(OffsetSync(TP, "orders", 10, 30, (), skipped_to=30))
    assert index.translate(TP, 9) == 9
    assert index.translate(TP, 10) is None and index.translate(TP, 29) is None
    assert index.translate(TP, 30) == 10, "at the gap's end: the next record will land after the last one"


def test_forgetting_below_a_gap_s_end_drops_the_gap_and_a_remirror_below_it_too() -> None:
    index = OffsetIndex()
    index.add(OffsetSync(TP, "orders", 0, 10, (SyncRun(0, 0, 10),)))
    index.add(OffsetSync(TP, "orders", 10, 30, (SyncRun(20, 10, 10),), skipped_to=20))
    index.forget_below({TP: 25})
    assert index.gaps(TP) == []
    assert index.translate(TP, 25) == 15
    again = OffsetIndex()
    again.add(OffsetSync(TP, "orders", 0, 10, (SyncRun(0, 0, 10),)))
    again.add(OffsetSync(TP, "orders", 10, 30, (SyncRun(20, 10, 10),), skipped_to=20))
    again.add(OffsetSync(TP, "orders", 5, 30, (SyncRun(5, 50, 25),)))  # re-mirrored from 5: the gap is gone
    assert again.gaps(TP) == []
    assert again.translate(TP, 12) == 57


def test_the_gap_in_the_way_is_named_only_where_it_keeps_an_offset_from_translating() -> None:
    index = OffsetIndex()
    index.add(OffsetSync(TP, "orders", 0, 100, (SyncRun(0, 0, 99),)))  # 99: a transaction marker
    index.add(OffsetSync(TP, "orders", 100, 160, (SyncRun(150, 100, 10),), skipped_to=150))
    assert [index.gap_in_the_way(TP, o) for o in (50, 99, 120, 150, 170)] == [None, (100, 150), (100, 150), None, None]
    assert index.translate(TP, 99) is None, "only a marker lies between 99 and the gap: its next record is past it"


def test_a_sync_that_opens_a_new_incarnation_round_trips_as_version_2_with_or_without_a_gap() -> None:
    for skipped_to in (None, 40):
        sync = OffsetSync(TP, "orders", 0, 60, (SyncRun(40, 5000, 20),), skipped_to, new_topic_id="q3G-new_id")
        value = sync.encode_value()
        assert struct.unpack_from(">h", value)[0] == 2
        assert OffsetSync.decode(sync.encode_key(), value) == sync


def test_only_the_first_of_a_split_transaction_s_syncs_opens_the_new_incarnation() -> None:
    runs = tuple(SyncRun(2 * i, 10 + i, 1) for i in range(6))
    syncs = offset_syncs([SyncSpan(TP, "orders", 0, 12, None, "new-id")], {TP: runs}, max_runs=4)
    assert [(s.source_start, s.new_topic_id) for s in syncs] == [(0, "new-id"), (8, None)]


@pytest.mark.parametrize("old_from", [0, 30], ids=["old-topic-from-0", "old-topic-forgotten-below-30"])
def test_a_new_incarnation_never_translates_with_the_old_topic_s_offsets(old_from: int) -> None:
    index = OffsetIndex()
    # The old topic: source 0..2101 at target 0..2101.
    index.add(OffsetSync(TP, "orders", 0, 2102, (SyncRun(0, 0, 2102),)))
    index.forget_below({TP: old_from})
    # Created again: its offsets 0..99 land after the old topic's records, at 2102..2201.
    index.add(OffsetSync(TP, "orders", 0, 60, (SyncRun(0, 2102, 60),), new_topic_id="new"))
    index.add(OffsetSync(TP, "orders", 60, 100, (SyncRun(60, 2162, 40),)))
    assert [index.translate(TP, o) for o in (0, 59, 60, 99, 100)] == [2102, 2161, 2162, 2201, 2202]
    assert index.translate(TP, 101) is None and index.translate(TP, 2000) is None, "old offsets mean nothing now"
    assert index.mirrored_to(TP) == 100 and index.source_start(TP) == 0


def test_a_new_incarnation_opening_with_a_gap_never_translates_across_it() -> None:
    index = OffsetIndex()
    index.add(OffsetSync(TP, "orders", 0, 500, (SyncRun(0, 0, 500),)))
    index.add(OffsetSync(TP, "orders", 0, 50, (SyncRun(40, 500, 10),), skipped_to=40, new_topic_id="new"))
    assert index.gaps(TP) == [(0, 40)]
    assert index.translate(TP, 0) is None and index.translate(TP, 39) is None
    assert index.translate(TP, 40) == 500 and index.translate(TP, 50) == 510


def test_the_map_read_backwards_gives_the_source_offset_of_the_record_at_or_after_a_target_offset() -> None:
    index = OffsetIndex()
    # source 0..9 at target 0..9; a transaction marker at target 10; source 12..14 at target 11..13.
    index.add(OffsetSync(TP, "orders", 0, 11, (SyncRun(0, 0, 10),)))
    index.add(OffsetSync(TP, "orders", 11, 16, (SyncRun(12, 11, 3),)))
    part = index.partitions[TP]
    assert [part.source_of(t) for t in (0, 9, 10, 11, 13)] == [0, 9, 12, 12, 14]
    assert part.source_of(14) == 16, "past every mirrored record: the end of what is mirrored"
    index.forget_below({TP: 5})
    assert index.partitions[TP].source_of(2) is None, "below the oldest run kept: the syncs expired"
