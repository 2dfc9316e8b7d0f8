"""Never skip silently: source records deleted before they were mirrored, and a source topic deleted
and created again, stop the mirror (both modes) with every affected partition named, before the next
retry, and nothing after the gap is committed. With ``offset.gap.policy=skip`` the mirror steps over a
deleted range instead, and the exact range is on record (audit topic, offset syncs, metric), with
every record after it mirrored exactly once. With ``topic.recreation.policy=continue`` a recreated
topic's new incarnation is mirrored from its start into the same target topic, exactly once, and the
recreation is on record the same way."""

from __future__ import annotations

import itertools
import json
import signal
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from devkafka.cluster import free_port
from devkafka.data import Rec, committed_offsets, delete_records, produce, read_all, recreate_topic, topic_id
from devkafka.endpoints import KafkaEndpoint
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.commit_metadata import stored_topic_id
from mirror_sink.core.formats.offset_syncs import OffsetIndex
from mirror_sink.core.formats.skipped_ranges import gaps_topic
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import offset_syncs_of, shadow_caught_up
from tests.integration.harness.metrics import scrape, total
from tests.integration.harness.processes import MirrorProcess
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

MODES = ("raw", "record")
#: How soon a stopped mirror must say so: before the next retry, not after a minute.
FAILS_WITHIN_S = 60


def _records(partitions: int, per_partition: int, start: int = 0) -> list[Rec]:
    now = int(time.time() * 1000) - partitions * per_partition
    return [
        Rec(f"k{i}".encode(), f"v{start + i}".encode(), (), now + i, i % partitions)
        for i in range(partitions * per_partition)
    ]


def _caught_up(proc: MirrorProcess, source: KafkaEndpoint, target: KafkaEndpoint, topic: str, what: str) -> None:
    """Wait (90 s at most) until the mirror's shadow group holds the source's end of ``topic``."""
    group, target_topic = f"connect-{proc.config['name']}", f"source.{topic}"
    wait_until(lambda: shadow_caught_up(source, topic, target, target_topic, group), 90, what, detail=proc.log_tail)


def _mirrored_then_stopped(
    mirror: MirrorFactory, config: dict[str, str], source: KafkaEndpoint, target: KafkaEndpoint, topic: str
) -> MirrorProcess:
    """Start the mirror, wait until it has copied ``topic`` to its end, stop it gracefully."""
    proc = mirror(config).start()
    _caught_up(proc, source, target, topic, "the first records mirrored")
    assert proc.stop() == 0, proc.log_tail()
    return proc


def _fails_within(proc: MirrorProcess, seconds: float) -> float:
    """Seconds until the mirror exited with 1 (a task FAILED)."""
    started = time.monotonic()
    assert proc.wait(seconds) == 1, proc.log_tail()
    return time.monotonic() - started


def _nothing_more(source: KafkaEndpoint, target: KafkaEndpoint, topic: str, name: str, held: dict[int, int]) -> None:
    """The target and the shadow group hold exactly what they held before the gap."""
    target_topic = f"source.{topic}"
    stored = committed_offsets(target.bootstrap_servers, f"connect-{name}", [(target_topic, p) for p in held])
    assert stored == {(target_topic, p): offset for p, offset in held.items()}, "the shadow group moved past the gap"
    mirrored = read_all(target.bootstrap_servers, target_topic)
    assert {p: len(records) for p, records in mirrored.items()} == held, "records after the gap were mirrored"


@pytest.mark.parametrize("mode", MODES)
def test_records_deleted_while_the_mirror_was_stopped_fail_it_naming_each_partition(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
) -> None:
    name, topic = unique(f"gone-{mode}"), new_topic(f"gone-{mode}", 3)
    produce(source.bootstrap_servers, topic, _records(3, 100))
    config = mirror_config(name, source, target, topic, **{"mirror.mode": mode})
    proc = _mirrored_then_stopped(mirror, config, source, target, topic)
    produce(source.bootstrap_servers, topic, _records(3, 100, start=300))
    # Partitions 0 and 2 lose offsets 100..149 before the mirror sees them; partition 1 loses nothing.
    delete_records(source.bootstrap_servers, topic, {0: 150, 2: 150})

    took = _fails_within(proc.start(), FAILS_WITHIN_S)
    log = proc.log_text()
    assert "source records were deleted before they were mirrored" in log, proc.log_tail()
    for p in (0, 2):
        assert f"{topic}-{p}: first missing 100, first still there 150 (50 records)" in log, proc.log_tail()
    assert f"{topic}-1: first missing" not in log
    _nothing_more(source, target, topic, name, {0: 100, 1: 100, 2: 100})
    print(f"{mode}: failed {took:.1f} s after the start")


@pytest.mark.parametrize("mode", MODES)
def test_records_deleted_under_a_running_mirror_fail_it_the_same_way(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
) -> None:
    name, topic = unique(f"gone-live-{mode}"), new_topic(f"gone-live-{mode}", 2)
    produce(source.bootstrap_servers, topic, _records(2, 100))
    # A session long enough that the pause below never costs the task its partitions: the fetch, not
    # a new assignment, must be what finds the gap.
    config = mirror_config(
        name, source, target, topic, **{"mirror.mode": mode, "target.cluster.consumer.session.timeout.ms": "30000"}
    )
    proc = mirror(config).start()
    _caught_up(proc, source, target, topic, "the first records mirrored")
    # Frozen long enough for every fetch in flight to come back empty; then records arrive and are
    # deleted (retention overtaking a slow mirror, in a few seconds) before the mirror reads on.
    proc.signal(signal.SIGSTOP)
    try:
        time.sleep(1.5)
        produce(source.bootstrap_servers, topic, _records(2, 100, start=200))
        delete_records(source.bootstrap_servers, topic, {0: 180, 1: 120})
    finally:
        proc.signal(signal.SIGCONT)
    _fails_within(proc, FAILS_WITHIN_S)
    log = proc.log_text()
    assert "source records were deleted before they were mirrored" in log, proc.log_tail()
    assert f"{topic}-0: first missing 100, first still there 180 (80 records)" in log, proc.log_tail()
    assert f"{topic}-1: first missing 100, first still there 120 (20 records)" in log, proc.log_tail()
    # The lag probe reads from the shadow offsets too; a reset there would read like a skip.
    assert "offset reset" not in log.lower(), [line for line in log.splitlines() if "reset" in line.lower()]
    _nothing_more(source, target, topic, name, {0: 100, 1: 100})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("grown", [True, False], ids=["grown-past-the-stored-offset", "smaller"])
def test_a_source_topic_created_again_fails_the_mirror_naming_both_ids(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
    grown: bool,
) -> None:
    name, topic = unique(f"again-{mode}"), new_topic(f"again-{mode}", 2)
    produce(source.bootstrap_servers, topic, _records(2, 100))
    old_id = topic_id(source.bootstrap_servers, topic)
    config = mirror_config(name, source, target, topic, **{"mirror.mode": mode})
    proc = _mirrored_then_stopped(mirror, config, source, target, topic)
    new_id = recreate_topic(source.bootstrap_servers, topic, 2)
    # Grown past the stored offset (100): offsets alone would fit, and the new topic's first 100
    # records per partition would never be mirrored. Smaller: the stored offset is past its end.
    produce(source.bootstrap_servers, topic, _records(2, 150 if grown else 20, start=1000))

    _fails_within(proc.start(), FAILS_WITHIN_S)
    log = proc.log_text()
    assert f"source topic {topic} was deleted and created again" in log, proc.log_tail()
    assert f"topic id {old_id}" in log and f"now has id {new_id}" in log, proc.log_tail()
    end = 150 if grown else 20
    for p in (0, 1):
        assert f"{topic}-{p} at 100 (the topic now holds 0..{end})" in log, proc.log_tail()
    _nothing_more(source, target, topic, name, {0: 100, 1: 100})


def _skipped_exactly(
    target: KafkaEndpoint,
    topic: str,
    before: dict[int, list[Rec]],
    gaps: dict[int, tuple[int, int]],
) -> None:
    """The target holds every source record but the skipped ranges, exactly once and in order; each
    range is on record once in the audit topic and as a gap marker in the offset syncs, and
    translation never crosses it."""
    target_topic = f"source.{topic}"
    mirrored = read_all(target.bootstrap_servers, target_topic)
    for p, records in before.items():
        first, end = gaps.get(p, (0, 0))
        want = [r.content() for r in records if not first <= r.offset < end]
        assert [r.content() for r in mirrored.get(p, [])] == want, f"{target_topic}-{p}: not exactly once past the gap"
    audit = [json.loads(r.value or b"") for r in read_all(target.bootstrap_servers, gaps_topic("source")).get(0, [])]
    recorded = {a["partition"]: (a["first_missing"], a["first_present"]) for a in audit if a["topic"] == topic}
    assert recorded == gaps and len([a for a in audit if a["topic"] == topic]) == len(gaps), audit
    syncs = offset_syncs_of(target, target_topic)
    index = OffsetIndex()
    for sync in syncs:
        index.add(sync)
    for p, records in before.items():
        mine = [s for s in syncs if s.target.partition == p]
        for earlier, later in itertools.pairwise(mine):
            assert later.source_start == earlier.source_end, f"{target_topic}-{p}: syncs leave a hole"
        marked = [(s.source_start, s.skipped_to) for s in mine if s.skipped_to is not None]
        assert marked == ([gaps[p]] if p in gaps else []), f"{target_topic}-{p}: gap markers {marked}"
        if p in gaps:
            first, end = gaps[p]
            tp = TargetPartition(target_topic, p)
            assert index.translate(tp, first) is None and index.translate(tp, end - 1) is None
            # The first record after the gap, where it landed on the target.
            first_after = next(r for r in records if r.offset >= end).content()
            landed = next(r.offset for r in mirrored[p] if r.content() == first_after)
            assert index.translate(tp, end) == landed


@pytest.mark.parametrize("mode", MODES)
def test_skip_steps_over_records_deleted_while_stopped_and_records_the_exact_range(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
) -> None:
    name, topic = unique(f"skip-{mode}"), new_topic(f"skip-{mode}", 3)
    produce(source.bootstrap_servers, topic, _records(3, 100))
    config = mirror_config(name, source, target, topic, **{"mirror.mode": mode})
    _mirrored_then_stopped(mirror, config, source, target, topic)
    produce(source.bootstrap_servers, topic, _records(3, 100, start=300))
    before = read_all(source.bootstrap_servers, topic)
    delete_records(source.bootstrap_servers, topic, {0: 150, 2: 150})

    port = free_port()
    proc = mirror({**config, "offset.gap.policy": "skip"}, "w1", "--metrics-port", str(port)).start()
    _caught_up(proc, source, target, topic, "the records after the gap mirrored")
    samples = scrape(f"http://127.0.0.1:{port}/metrics")
    assert total(samples, "mirror_sink_skipped_records_total", connector=name) == 100
    assert proc.stop() == 0, proc.log_tail()
    _skipped_exactly(target, topic, before, {0: (100, 150), 2: (100, 150)})
    log = proc.log_text()
    for p in (0, 2):
        assert f"recorded skipped range {topic}-{p} offsets 100..149 (50 offsets)" in log, proc.log_tail()


@pytest.mark.parametrize("mode", MODES)
def test_skip_steps_over_records_deleted_under_a_running_mirror_the_same_way(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
) -> None:
    name, topic = unique(f"skip-live-{mode}"), new_topic(f"skip-live-{mode}", 2)
    produce(source.bootstrap_servers, topic, _records(2, 100))
    settings = {
        "mirror.mode": mode,
        "offset.gap.policy": "skip",
        "target.cluster.consumer.session.timeout.ms": "30000",
    }
    config = mirror_config(name, source, target, topic, **settings)
    proc = mirror(config).start()
    _caught_up(proc, source, target, topic, "the first records mirrored")
    proc.signal(signal.SIGSTOP)
    try:
        time.sleep(1.5)
        produce(source.bootstrap_servers, topic, _records(2, 100, start=200))
        before = read_all(source.bootstrap_servers, topic)
        delete_records(source.bootstrap_servers, topic, {0: 180, 1: 120})
    finally:
        proc.signal(signal.SIGCONT)
    _caught_up(proc, source, target, topic, "the records after the gap mirrored")
    assert proc.stop() == 0, proc.log_tail()
    _skipped_exactly(target, topic, before, {0: (100, 180), 1: (100, 120)})
    log = proc.log_text()
    assert "offset reset" not in log.lower(), [line for line in log.splitlines() if "reset" in line.lower()]


@pytest.mark.parametrize("mode", MODES)
def test_a_source_topic_created_again_under_a_running_mirror_fails_it_naming_both_ids(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
) -> None:
    name, topic = unique(f"again-live-{mode}"), new_topic(f"again-live-{mode}", 2)
    produce(source.bootstrap_servers, topic, _records(2, 100))
    old_id = topic_id(source.bootstrap_servers, topic)
    config = mirror_config(
        name, source, target, topic, **{"mirror.mode": mode, "target.cluster.consumer.session.timeout.ms": "30000"}
    )
    proc = mirror(config).start()
    _caught_up(proc, source, target, topic, "the first records mirrored")
    # Frozen while the topic is deleted, created again and grown past the stored offset (100): by
    # offsets alone the mirror would go on at 100 and never copy the new topic's first 100 records.
    proc.signal(signal.SIGSTOP)
    try:
        new_id = recreate_topic(source.bootstrap_servers, topic, 2)
        produce(source.bootstrap_servers, topic, _records(2, 150, start=1000))
    finally:
        proc.signal(signal.SIGCONT)
    _fails_within(proc, FAILS_WITHIN_S)
    log = proc.log_text()
    assert f"source topic {topic} was deleted and created again" in log, proc.log_tail()
    assert f"topic id {old_id}" in log and f"now has id {new_id}" in log, proc.log_tail()
    _nothing_more(source, target, topic, name, {0: 100, 1: 100})


def _continued_exactly(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    topic: str,
    name: str,
    old: dict[int, list[Rec]],
    ids: tuple[str, str],
) -> None:
    """The target topic holds the old topic's records, then every record of the new one, exactly once
    and in order; the recreation is on record once per partition (audit topic, a new-incarnation
    sync that translates the new topic's offsets exactly), and the shadow group holds the new id."""
    old_id, new_id = ids
    target_topic = f"source.{topic}"
    new = read_all(source.bootstrap_servers, topic)
    mirrored = read_all(target.bootstrap_servers, target_topic)
    audit = [json.loads(r.value or b"") for r in read_all(target.bootstrap_servers, gaps_topic("source")).get(0, [])]
    mine = [a for a in audit if a["topic"] == topic]
    assert sorted((a["partition"], a["previous_topic_id"], a["topic_id"], a["previous_mirrored_to"]) for a in mine) == [
        (p, old_id, new_id, len(old[p])) for p in sorted(old)
    ], mine
    syncs = offset_syncs_of(target, target_topic)
    index = OffsetIndex()
    for sync in syncs:
        index.add(sync)
    for p in sorted(old):
        want = [r.content() for r in old[p]] + [r.content() for r in new[p]]
        assert [r.content() for r in mirrored[p]] == want, f"{target_topic}-{p}: not exactly once across the recreation"
        opened = [s for s in syncs if s.target.partition == p and s.new_topic_id is not None]
        assert [(s.new_topic_id, s.source_start) for s in opened] == [(new_id, 0)], opened
        landed = [r.offset for r in mirrored[p][len(old[p]) :]]
        tp = TargetPartition(target_topic, p)
        assert [index.translate(tp, r.offset) for r in new[p]] == landed, f"{target_topic}-{p}: translation"
    reader = Consumer({"bootstrap.servers": target.bootstrap_servers, "group.id": f"connect-{name}"})
    try:
        held = reader.committed([TopicPartition(target_topic, p) for p in old], timeout=30)
    finally:
        reader.close()
    assert {(tp.partition, tp.offset, stored_topic_id(tp.metadata or "")) for tp in held} == {
        (p, len(new[p]), new_id) for p in old
    }


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("when", ["stopped", "running"])
def test_continue_mirrors_a_recreated_topic_from_its_start_exactly_once_and_on_record(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    mirror: MirrorFactory,
    mode: str,
    when: str,
) -> None:
    name, topic = unique(f"continue-{when}-{mode}"), new_topic(f"continue-{when}-{mode}", 2)
    produce(source.bootstrap_servers, topic, _records(2, 100))
    old = read_all(source.bootstrap_servers, topic)
    old_id = topic_id(source.bootstrap_servers, topic)
    settings = {
        "mirror.mode": mode,
        "topic.recreation.policy": "continue",
        "target.cluster.consumer.session.timeout.ms": "30000",
    }
    port = free_port()
    proc = mirror(mirror_config(name, source, target, topic, **settings), "w1", "--metrics-port", str(port))
    proc.start()
    _caught_up(proc, source, target, topic, "the old topic mirrored")
    if when == "stopped":
        assert proc.stop() == 0, proc.log_tail()
    else:
        proc.signal(signal.SIGSTOP)  # frozen while the topic is deleted, created again and grown
    try:
        # Grown past the stored offset (100): by offsets alone the mirror would go on at 100.
        new_id = recreate_topic(source.bootstrap_servers, topic, 2)
        produce(source.bootstrap_servers, topic, _records(2, 150, start=1000))
    finally:
        if when == "stopped":
            proc.start()
        else:
            proc.signal(signal.SIGCONT)
    _caught_up(proc, source, target, topic, "the new topic mirrored from its start")
    samples = scrape(f"http://127.0.0.1:{port}/metrics")
    assert total(samples, "mirror_sink_topic_recreations_total", connector=name) == 2
    assert proc.stop() == 0, proc.log_tail()
    _continued_exactly(source, target, topic, name, old, (old_id, new_id))
    log = proc.log_text()
    for p in (0, 1):
        assert f"recorded the recreation of {topic}-{p} (topic id {old_id}, mirrored up to offset 100" in log
