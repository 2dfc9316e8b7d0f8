"""What a mirror wrote to the target, checked: progress (committed, caught up) and exactly-once
(record for record, shadow offsets, offset syncs)."""

from __future__ import annotations

import itertools

from confluent_kafka import KafkaException

from devkafka.data import committed_offsets, end_offsets, read_all
from devkafka.endpoints import KafkaEndpoint
from mirror_sink.core.formats.offset_syncs import OffsetSync, offset_syncs_topic
from tests.integration.harness.clusters import address
from tests.integration.harness.records import contents


def assert_exact_mirror(
    source: KafkaEndpoint,
    source_topic: str,
    target: KafkaEndpoint,
    target_topic: str,
    group: str,
    *,
    offset_syncs: bool = True,
) -> int:
    """Target == source, record for record, per partition; shadow offsets == source end offsets.

    With ``offset_syncs``, the offset syncs too wherever the mirror wrote them (exactly-once worker
    runs); a mirror that changed runtime midway (Spark writes none yet) passes False.
    """
    src = read_all(address(source), source_topic)
    tgt = read_all(address(target), target_topic)
    for p, records in src.items():
        got = tgt.get(p, [])
        assert len(got) == len(records), f"{target_topic}-{p}: {len(got)} records, source has {len(records)}"
        assert contents(got) == contents(records), f"{target_topic}-{p}: content or order differs"
    ends = end_offsets(address(source), source_topic)
    stored = committed_offsets(address(target), group, [(target_topic, p) for p in ends])
    assert stored == {(target_topic, p): e for p, e in ends.items()}, "shadow group offsets != source end offsets"
    if offset_syncs and offset_syncs_of(target, target_topic):  # Spark and at-least-once runs write none
        assert_offset_syncs_exact(source, source_topic, target, target_topic)
    return sum(len(r) for r in src.values())


def committed_on_target(target: KafkaEndpoint, target_topic: str) -> int:
    """Target offsets readable with read_committed now (records and the transaction markers between
    them): above 0 once a mirror has committed a cycle. Cheap, and unlike a stable read of the shadow
    group it never waits out open transactions, which during a copy are open nearly all the time."""
    try:
        return sum(end_offsets(address(target), target_topic).values())
    except (KafkaException, KeyError):  # a target topic just created (leaders not ready) or not yet there
        return 0


def shadow_caught_up(
    source: KafkaEndpoint, source_topic: str, target: KafkaEndpoint, target_topic: str, group: str
) -> bool:
    """True once the shadow group holds the source end offset of every partition and no transaction
    is open on the target topic, so that a read_committed reader sees everything mirrored.

    The second condition matters: a commit's markers reach the group's offsets and the data
    partitions separately, so the offsets can be visible a moment before the data is (seen in CI).
    """
    ends = end_offsets(address(source), source_topic)
    try:
        stored = committed_offsets(address(target), group, [(target_topic, p) for p in ends])
    except Exception:
        return False
    if any(stored.get((target_topic, p)) != e for p, e in ends.items()):
        return False
    bootstrap = address(target)
    return end_offsets(bootstrap, target_topic) == end_offsets(bootstrap, target_topic, isolation="read_uncommitted")


def offset_syncs_of(target: KafkaEndpoint, target_topic: str, source_alias: str = "source") -> list[OffsetSync]:
    """The committed offset syncs of ``target_topic``, in commit order."""
    records = read_all(address(target), offset_syncs_topic(source_alias)).get(0, [])
    syncs = [OffsetSync.decode(r.key or b"", r.value or b"") for r in records]
    return [s for s in syncs if s.target.topic == target_topic]


def assert_offset_syncs_exact(
    source: KafkaEndpoint, source_topic: str, target: KafkaEndpoint, target_topic: str, source_alias: str = "source"
) -> None:
    """The committed syncs map every mirrored source record to the target offset it really has.

    Per partition: the syncs' source ranges follow each other with no overlap and no hole (an
    aborted or zombie transaction's sync would overlap), and source offset -> target offset of each
    record equals what reading both clusters shows.
    """
    syncs = offset_syncs_of(target, target_topic, source_alias)
    assert syncs, f"no offset syncs for {target_topic}"
    src = read_all(address(source), source_topic)
    tgt = read_all(address(target), target_topic)
    for p, records in src.items():
        mine = [s for s in syncs if s.target.partition == p]
        mapping: dict[int, int] = {}
        for before, after in itertools.pairwise(mine):
            assert after.source_start == before.source_end, f"{target_topic}-{p}: syncs overlap or leave a hole"
        for sync in mine:
            for run in sync.runs:
                for i in range(run.length):
                    assert run.source + i not in mapping, f"{target_topic}-{p}: source offset {run.source + i} twice"
                    mapping[run.source + i] = run.target + i
        assert sorted(mapping) == [r.offset for r in records], f"{target_topic}-{p}: syncs name other source offsets"
        assert [mapping[r.offset] for r in records] == [r.offset for r in tgt.get(p, [])], (
            f"{target_topic}-{p}: a sync names the wrong target offset"
        )
