"""Translating any consumer's offsets: every defined answer, both ways, against hand-built syncs."""

from __future__ import annotations

import pytest

from api.cli.main import build_parser
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.offset_syncs import OffsetIndex, OffsetSync, SyncRun
from mirror_sink.failover.checkpoints.offset_translator import (
    Direction,
    Outcome,
    TopicOffset,
    answer_offsets,
    mirrored_names,
)

CONFIG = MirrorSinkConfig.parse(
    {
        "name": "m",
        "source.cluster.alias": "src",
        "source.cluster.bootstrap.servers": "a:9092",
        "target.cluster.bootstrap.servers": "b:9092",
        "topics": "orders|payments",
    }
)
TP = TargetPartition("src.orders", 0)


def _index() -> OffsetIndex:
    """Source offsets 100..199 mirrored to target 0..99 (a marker at 150 makes two runs), then a
    skipped range 200..209 and 210..219 mirrored to 101..110 (target 100 is a marker)."""
    index = OffsetIndex()
    index.add(OffsetSync(TP, "orders", 100, 150, (SyncRun(100, 0, 50),)))
    index.add(OffsetSync(TP, "orders", 150, 200, (SyncRun(151, 50, 49),)))
    index.add(OffsetSync(TP, "orders", 200, 220, (SyncRun(210, 101, 10),), skipped_to=210))
    return index


def _to_target(*offsets: tuple[str, int, int]) -> list[tuple[Outcome, TopicOffset | None]]:
    asked = [TopicOffset(*o) for o in offsets]
    names = mirrored_names(CONFIG, Direction.SOURCE_TO_TARGET)
    return [
        (a.outcome, a.answer) for a in answer_offsets(_index(), asked, Direction.SOURCE_TO_TARGET, mirrored_name=names)
    ]


def test_source_offsets_translate_exactly_to_the_first_mirrored_record_at_or_after_them() -> None:
    assert _to_target(("orders", 0, 100), ("orders", 0, 149), ("orders", 0, 150), ("orders", 0, 151)) == [
        (Outcome.EXACT, TopicOffset("src.orders", 0, 0)),
        (Outcome.EXACT, TopicOffset("src.orders", 0, 49)),
        # 150 held a marker: the next record is 151, at target offset 50.
        (Outcome.EXACT, TopicOffset("src.orders", 0, 50)),
        (Outcome.EXACT, TopicOffset("src.orders", 0, 50)),
    ]
    # Everything mirrored, nothing after it yet: the target offset after the last mirrored record.
    assert _to_target(("orders", 0, 220)) == [(Outcome.EXACT, TopicOffset("src.orders", 0, 111))]


def test_each_offset_that_has_no_exact_answer_says_why() -> None:
    assert [
        o for o, _ in _to_target(("orders", 0, 99), ("orders", 0, 205), ("orders", 0, 200), ("orders", 0, 221))
    ] == [
        Outcome.BEFORE_SYNCS,
        Outcome.SKIPPED_RANGE,
        Outcome.SKIPPED_RANGE,  # the first record at or after 200 lies past the skipped range
        Outcome.NOT_YET_MIRRORED,
    ]
    # A topic the connector mirrors but has no sync of, and one it does not mirror at all.
    [payments, other] = answer_offsets(
        _index(),
        [TopicOffset("payments", 0, 5), TopicOffset("audit", 0, 5)],
        Direction.SOURCE_TO_TARGET,
        mirrored_name=mirrored_names(CONFIG, Direction.SOURCE_TO_TARGET),
    )
    assert payments.outcome is other.outcome is Outcome.NOT_MIRRORED
    assert "no offset sync of payments-0" in payments.reason
    assert "does not mirror audit" in other.reason
    assert other.to_dict() == {
        "topic": "audit",
        "partition": 0,
        "offset": 5,
        "result": "not-mirrored",
        "translated": None,
        "reason": other.reason,
    }


def test_target_offsets_translate_back_to_the_source_record_they_hold() -> None:
    asked = [TopicOffset("src.orders", 0, o) for o in (0, 49, 50, 100, 101, 111)] + [TopicOffset("orders", 0, 3)]
    answers = answer_offsets(
        _index(), asked, Direction.TARGET_TO_SOURCE, mirrored_name=mirrored_names(CONFIG, Direction.TARGET_TO_SOURCE)
    )
    assert [(a.outcome, a.answer.offset if a.answer else None) for a in answers] == [
        (Outcome.EXACT, 100),
        (Outcome.EXACT, 149),
        (Outcome.EXACT, 151),
        (Outcome.EXACT, 210),  # the marker at target 100: the next mirrored record came from 210
        (Outcome.EXACT, 210),
        (Outcome.EXACT, 220),
        (Outcome.NOT_MIRRORED, None),  # a source topic's name is not a target topic of this connector
    ]
    assert answers[0].answer == TopicOffset("orders", 0, 100)


def test_earliest_and_latest_are_the_same_on_either_cluster() -> None:
    assert _to_target(("orders", 0, -2), ("orders", 0, -1)) == [
        (Outcome.EXACT, TopicOffset("src.orders", 0, -2)),
        (Outcome.EXACT, TopicOffset("src.orders", 0, -1)),
    ]


def test_identity_policy_names_the_same_topic_on_both_sides() -> None:
    identity = MirrorSinkConfig.parse(
        {**CONFIG.to_props(), "replication.policy.class": "IdentityReplicationPolicy", "topics": "orders"}
    )
    assert mirrored_names(identity, Direction.TARGET_TO_SOURCE)("orders") == "orders"
    assert mirrored_names(identity, Direction.TARGET_TO_SOURCE)("audit") is None
    assert mirrored_names(CONFIG, Direction.TARGET_TO_SOURCE)("src.orders") == "orders"
    assert mirrored_names(CONFIG, Direction.SOURCE_TO_TARGET)("orders") == "src.orders"


def test_the_command_line_reads_topic_partition_offset_and_refuses_anything_else(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(["translate", "c.json", "--offset", "orders.v2:3:-2", "--offset", "a_b-c:0:17"])
    assert args.offset == [TopicOffset("orders.v2", 3, -2), TopicOffset("a_b-c", 0, 17)]
    for bad in ("orders:0", "orders:x:1", "orders:0:-5", "or ders:0:1"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["translate", "c.json", "--offset", bad])
    assert "is not TOPIC:PARTITION:OFFSET" in capsys.readouterr().err
