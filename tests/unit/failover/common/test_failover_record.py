"""The failover record: written as JSON records, read back whole, the newest one found."""

from __future__ import annotations

import json

import pytest

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.failover.common.failover_record import (
    FailoverRecord,
    GroupMove,
    PartitionCut,
    failovers_topic,
    latest,
    read_records,
)

A0, A1, B0 = TargetPartition("us.orders", 0), TargetPartition("us.orders", 1), TargetPartition("us.pay", 0)


def _record(failover_id: str, mode: str = "planned") -> FailoverRecord:
    cuts = (
        PartitionCut(A0, "orders", 100, 104, 104, 130),
        PartitionCut(A1, "orders", 7, 9, 9, 7),
        PartitionCut(B0, "pay", None, None, 0, None),
    )
    groups = (
        GroupMove("billing", {A0: 90, A1: 9}, {A0: 12.3} if mode == "disaster" else {}),
        GroupMove("audit", {B0: 0}),
    )
    when = "2026-11-26T08:00:00.000+00:00"
    return FailoverRecord("m", failover_id, mode, when, "us", "src-id", "tgt-id", cuts, groups)


def test_a_failover_round_trips_through_its_records() -> None:
    record = _record("20261126T080000Z-aaaaaa", "disaster")
    again = read_records(record.records())[("m", record.failover_id)]
    assert again.cuts == tuple(sorted(record.cuts, key=lambda c: (c.target.topic, c.target.partition)))
    assert sorted(again.groups, key=lambda g: g.group) == sorted(record.groups, key=lambda g: g.group)
    assert (again.mode, again.source_cluster_id, again.target_cluster_id) == ("disaster", "src-id", "tgt-id")
    assert failovers_topic("us") == "mirror-sink-failovers.us.internal"


def test_keys_name_the_connector_and_the_failover_so_compaction_keeps_every_failover() -> None:
    first, second = _record("20261126T080000Z-aaaaaa").records(), _record("20261127T080000Z-bbbbbb").records()
    keys = [k for k, _ in first + second]
    assert len(keys) == len(set(keys)), "one key per topic, group and summary of each failover"
    summary = json.loads(first[-1][0])
    assert summary == {"connector": "m", "failover": "20261126T080000Z-aaaaaa"}, "the summary comes last"


def test_the_newest_whole_failover_of_the_connector_is_the_one_found() -> None:
    older, newer = _record("20261126T080000Z-aaaaaa"), _record("20261127T080000Z-bbbbbb")
    other = FailoverRecord("n", "20261128T080000Z-cccccc", "planned", "t", "us", None, None, (), ())
    partial = _record("20261129T080000Z-dddddd").records()[:-1]  # no summary: not taken
    found = read_records(older.records() + newer.records() + other.records() + partial)
    assert latest(found, "m") == read_records(newer.records())[("m", newer.failover_id)]
    assert latest(found, "x") is None


def test_the_cut_says_how_many_source_offsets_were_not_mirrored() -> None:
    cuts = _record("x").cuts
    assert [c.unmirrored for c in cuts] == [30, 0, None]


def test_a_record_of_another_shape_is_named() -> None:
    with pytest.raises(ValueError, match="not a failover record: b'junk'"):
        read_records([(b"junk", b"{}")])
