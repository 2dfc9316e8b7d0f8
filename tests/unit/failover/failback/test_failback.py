"""Failback, the way back after a failover: what makes it refuse (and that a refusal has written
nothing, on either cluster), what ``start`` and ``finish`` write and in which order, and the
translation strategy for positions inside what the forward link mirrored.

The failback reaches the clusters through calls of its own modules: the failovers reader, the
reverse link's start (``failback_link``), the divergence finder, the drift finder, the fence's lift,
the failover verb itself, the syncs and end-offset readers, and the shadow-group writer. Each is a
fake here that answers from the tables of ``_Clusters`` and journals every write in ``writes``,
as ``cluster: what``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.core.formats.offset_syncs import OffsetIndex, OffsetSync, SyncRun
from mirror_sink.failover.common.failover_record import FailoverRecord, PartitionCut
from mirror_sink.failover.common.shadow_group import ShadowGroupOffsets
from mirror_sink.failover.common.translation import Translation, TranslationFallback
from mirror_sink.failover.failback import failback as failback_module
from mirror_sink.failover.failback.divergence import DivergedRange, DivergenceReport
from mirror_sink.failover.failback.drift import TopicDrift
from mirror_sink.failover.failback.failback import Failback, ThroughForwardLink
from mirror_sink.failover.failback.failback_link import FailbackRefused
from mirror_sink.failover.switch.failover_plan import FailoverPlan
from tests.unit.failover.fakes import (
    NEW_PRIMARY,
    OLD_PRIMARY,
    FakeAdmin,
    FakeClusters,
    bootstrap,
    forward_config,
    kafka_exception,
)

pytestmark = pytest.mark.unit

#: The forward link's target partitions on the new primary, and their home partitions on the old one.
T0, T1, T2 = (TargetPartition("us-east.orders", p) for p in range(3))
H0 = TargetPartition("orders", 0)
FORWARD_SHADOW, REVERSE_SHADOW = "connect-orders-mirror", "connect-orders-mirror-failback"
FAILOVERS = "mirror-sink-failovers.us-east.internal"
#: Forward: orders-0's source offsets 0..59 landed at 0..59, its shadow offset is 60, the new
#: primary's end was 62 at the failover (two commit markers after the last record).
CUTS = (PartitionCut(T0, "orders", 60, 60, 62, None), PartitionCut(T1, "orders", 10, 10, 11, None))


def _record(failover_id: str = "20260102T000000Z-bbbbbb", **fields: Any) -> FailoverRecord:
    base: dict[str, Any] = {
        "connector": "orders-mirror",
        "failover_id": failover_id,
        "mode": "planned",
        "time": "2026-01-02T00:00:00.000+00:00",
        "source_alias": "us-east",
        "source_cluster_id": "east-id",
        "target_cluster_id": "west-id",
        "cuts": CUTS,
        "groups": (),
    }
    return FailoverRecord(**(base | fields))


def _forward_index() -> OffsetIndex:
    index = OffsetIndex()
    index.add(OffsetSync(T0, "orders", 0, 60, (SyncRun(0, 0, 60),)))
    return index


def _reverse_index() -> OffsetIndex:
    """The reverse link's syncs: the new primary's records from 62 on came home at 75.. (60..74 on the
    old primary are the records that diverged there)."""
    index = OffsetIndex()
    index.add(OffsetSync(H0, "us-east.orders", 62, 70, (SyncRun(62, 75, 8),)))
    return index


class _Clusters:
    """The old primary (east) and the new primary (west) as the failback sees them through its calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.old = FakeAdmin(OLD_PRIMARY, "east-id", topics={"orders": 3}, groups={REVERSE_SHADOW: "EMPTY"})
        self.new = FakeAdmin(NEW_PRIMARY, "west-id", groups={FORWARD_SHADOW: "EMPTY"})
        clusters = FakeClusters(self.old, self.new)
        self.writes = clusters.writes
        #: Reads worth counting: the failovers topic, the reverse start's check, the divergence's count.
        self.reads: list[str] = []
        self.failovers: list[FailoverRecord] = [_record()]
        self.failovers_error: TaskFailure | None = None
        self.reverse_refusal: FailbackRefused | None = None
        self.advanced: list[str] = []
        #: The old primary's last stable offsets, and the plan the failover verb decides on it.
        self.ends = {("orders", 0): 80, ("orders", 1): 20, ("orders", 2): 5}
        self.moving = FailoverPlan("planned", [Translation("app", "us-east.orders", H0, 30, 30)])
        self.moving.index = _reverse_index()
        self.failovers_made: list[SimpleNamespace] = []
        self.resumed: list[tuple[TargetPartition, str, int]] = []
        self.resume_fails: Exception | None = None
        self.said: list[str] = []
        here = self

        class Failover:
            def __init__(
                self,
                config: MirrorSinkConfig,
                say: Callable[[str], None],
                *,
                untranslated: TranslationFallback | None = None,
                destination: str = "the target",
            ) -> None:
                self.config = config
                here.failovers_made.append(SimpleNamespace(config=config, fallback=untranslated, to=destination))

            def plan(self, groups: str | None, wait_caught_up_s: float) -> FailoverPlan:
                return here.moving

            def commit(self, plan: FailoverPlan) -> int:
                moved = sorted({t.group for t in plan.translations})
                here.writes.append(f"{bootstrap(self.config.target_consumer())}: move groups {moved}")
                return len(moved)

        class Resume(ShadowGroupOffsets):
            @classmethod
            def for_link(
                cls, link: MirrorSinkConfig, positions: Iterable[tuple[TargetPartition, str, int]], client_id: str
            ) -> ShadowGroupOffsets:
                here.resumed = list(positions)
                return cls(link.shadow_group_id, tuple(TopicPartition(*t, o) for t, _, o in here.resumed))

            def commit(self, consumer_props: Mapping[str, str], client_id: str) -> None:
                if here.resume_fails is not None:
                    raise here.resume_fails
                here.writes.append(f"{bootstrap(consumer_props)}: commit {self.group} at {self.starts}")

        class Reader:
            def __init__(self, props: Mapping[str, str], *args: str) -> None:
                self.cluster = bootstrap(props)

            def catch_up(self) -> OffsetIndex:
                assert self.cluster == NEW_PRIMARY, "the forward link's syncs are on its target"
                return _forward_index()

            def close(self) -> None:
                pass

        for name, fake in {
            "clients": SimpleNamespace(admin=clusters.admin),
            "list_groups": clusters.list_groups,
            "read_failovers": self._read_failovers,
            "reverse_start": self._reverse_start,
            "advanced_since": lambda forward, record, client_id: list(self.advanced),
            "find_and_keep": self._find_and_keep,
            "find_drift": self._find_drift,
            "lift": self._lift,
            "Failover": Failover,
            "ShadowGroupOffsets": Resume,
            "OffsetSyncReader": Reader,
            "assigned_reader": Reader,
            "read_watermarks": self._read_watermarks,
        }.items():
            monkeypatch.setattr(failback_module, name, fake)

    def failback(self) -> Failback:
        return Failback(forward_config(), self.said.append)

    def _read_failovers(
        self, props: Mapping[str, str], topic: str, client_id: str
    ) -> dict[tuple[str, str], FailoverRecord]:
        assert (bootstrap(props), topic) == (NEW_PRIMARY, FAILOVERS), "the record is kept on the new primary"
        self.reads.append("failovers")
        if self.failovers_error is not None:
            raise self.failovers_error
        return {(r.connector, r.failover_id): r for r in self.failovers}

    def _reverse_start(
        self, forward: MirrorSinkConfig, reverse: MirrorSinkConfig, record: FailoverRecord
    ) -> ShadowGroupOffsets:
        self.reads.append("reverse start")
        if self.reverse_refusal is not None:
            raise self.reverse_refusal
        starts = sorted((TargetPartition("orders", c.target.partition), c.target_end) for c in record.cuts)
        return ShadowGroupOffsets(reverse.shadow_group_id, tuple(TopicPartition(*tp, o) for tp, o in starts))

    def _find_and_keep(
        self,
        record: FailoverRecord,
        consumer_props: Mapping[str, str],
        producer_props: Mapping[str, str],
        admin: FakeAdmin,
        *,
        keep: bool,
        shadow_start: ShadowGroupOffsets | None = None,
        say: Callable[[str], None] = print,
    ) -> DivergenceReport:
        assert bootstrap(consumer_props) == bootstrap(producer_props) == admin.bootstrap == OLD_PRIMARY
        if keep:
            assert shadow_start is not None
            start = f"{shadow_start.group} at {shadow_start.starts}"
            self.writes.append(f"{OLD_PRIMARY}: keep diverged records and start {start}, in one transaction")
        else:
            self.reads.append("divergence")
        found = DivergedRange(SourcePartition("orders", 0), 60, records=15 if keep else 14)
        return DivergenceReport(record.failover_id, [found])

    def _find_drift(
        self, config: MirrorSinkConfig, record: FailoverRecord, old: FakeAdmin, new: FakeAdmin, *, configs_synced: bool
    ) -> TopicDrift:
        assert (old.bootstrap, new.bootstrap) == (OLD_PRIMARY, NEW_PRIMARY)
        return TopicDrift(only_on_new_primary=["us-west.audit"], configs_synced=configs_synced)

    def _lift(self, config: MirrorSinkConfig, topics: tuple[str, ...], client_id: str) -> int:
        self.writes.append(f"{bootstrap(config.source_admin())}: lift the write fence on {list(topics)}")
        return len(topics)

    def _read_watermarks(self, reader: Any, topic: str, partition: int, role: str) -> tuple[int, int]:
        assert (reader.cluster, role) == (OLD_PRIMARY, "old primary")
        return 0, self.ends[(topic, partition)]


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch) -> _Clusters:
    return _Clusters(monkeypatch)


# -- plan: every refusal before anything is written ------------------------------------------------------


def test_no_failover_of_this_connector_on_record_refuses_the_failback(kafka: _Clusters) -> None:
    kafka.failovers = [_record(connector="another-mirror")]
    with pytest.raises(FailbackRefused, match=rf"no failover of orders-mirror is recorded in {FAILOVERS} on west"):
        kafka.failback().plan()
    assert kafka.reads == ["failovers"] and kafka.writes == []


def test_a_failovers_topic_that_cannot_be_read_refuses_naming_it(kafka: _Clusters) -> None:
    kafka.failovers_error = TaskFailure("broker down")
    with pytest.raises(FailbackRefused, match=rf"cannot read {FAILOVERS} \(broker down\)"):
        kafka.failback().plan()
    assert kafka.writes == []


def test_the_newest_failover_of_the_connector_is_the_one_failed_back(kafka: _Clusters) -> None:
    older, newer = _record("20260101T000000Z-aaaaaa"), _record("20260103T000000Z-cccccc")
    kafka.failovers = [older, newer, _record("20260105T000000Z-dddddd", connector="another-mirror")]
    plan = kafka.failback().plan()
    assert plan.record is newer
    assert kafka.said[0] == f"failover {newer.failover_id} (planned, {newer.time}): 2 partitions"


@pytest.mark.parametrize(
    ("cluster", "role"), [("old", "old primary \\(source\\)"), ("new", "new primary \\(target\\)")], ids=["old", "new"]
)
def test_a_failover_recorded_for_other_clusters_refuses_before_anything_else_is_read(
    kafka: _Clusters, cluster: str, role: str
) -> None:
    admin = kafka.old if cluster == "old" else kafka.new
    held, admin.cluster_id = admin.cluster_id, "someone-else"
    with pytest.raises(
        FailbackRefused, match=rf"recorded for {role} cluster id {held}, but {admin.bootstrap} is cluster someone-else"
    ):
        kafka.failback().plan()
    assert kafka.reads == ["failovers"] and kafka.writes == []


def test_a_cluster_of_the_failover_that_does_not_answer_refuses(kafka: _Clusters) -> None:
    kafka.new.cluster_id = None
    with pytest.raises(FailbackRefused, match=rf"the new primary \(target\) cluster at {NEW_PRIMARY} does not answer"):
        kafka.failback().plan()
    assert kafka.writes == []


def test_a_disaster_failover_that_could_not_read_the_old_primary_s_id_is_not_checked_against_it(
    kafka: _Clusters,
) -> None:
    kafka.failovers = [_record(mode="disaster", source_cluster_id=None)]
    kafka.old.cluster_id = None  # would refuse as "does not answer" if it were asked
    assert kafka.failback().plan().record.source_cluster_id is None


def test_a_reverse_link_that_cannot_start_at_the_cut_refuses_before_the_divergence_is_even_counted(
    kafka: _Clusters,
) -> None:
    kafka.reverse_refusal = FailbackRefused("the reverse link's group holds offsets already")
    with pytest.raises(FailbackRefused, match="holds offsets already"):
        kafka.failback().plan()
    assert kafka.reads == ["failovers", "reverse start"] and kafka.writes == []


def test_a_plan_counts_the_diverged_records_and_the_drift_and_writes_nothing(kafka: _Clusters) -> None:
    plan = kafka.failback().plan()
    assert kafka.reads == ["failovers", "reverse start", "divergence"] and kafka.writes == []
    assert plan.report.records == 14 and plan.drift.only_on_new_primary == ["us-west.audit"]
    assert (plan.reverse["name"], plan.reverse["source.cluster.bootstrap.servers"]) == (
        "orders-mirror-failback",
        NEW_PRIMARY,
    )
    assert (plan.start.group, plan.start.starts) == (REVERSE_SHADOW, {H0: 62, ("orders", 1): 11})
    assert '"only_on_new_primary": [\n      "us-west.audit"' in plan.to_json()


# -- start: the one write on the old primary ----------------------------------------------------------


def test_start_keeps_the_diverged_records_and_starts_the_reverse_link_at_the_cut_in_one_write(
    kafka: _Clusters,
) -> None:
    failback = kafka.failback()
    plan = failback.plan()
    report = failback.start(plan)
    assert kafka.writes == [
        f"{OLD_PRIMARY}: keep diverged records and start {REVERSE_SHADOW} at {plan.start.starts}, in one transaction"
    ], "no fence to lift: the failover put none"
    assert report.records == 15, "the report of what was kept, not the plan's count"
    assert kafka.said[-1] == "reverse link orders-mirror-failback: 2 partitions start at the failover's cut"
    assert kafka.reads.count("failovers") == 1, "the failover is read once, for the plan and the start"


def test_the_failover_s_write_fence_is_announced_by_the_plan_and_lifted_by_start_before_it_writes_home(
    kafka: _Clusters,
) -> None:
    kafka.failovers = [_record(write_denied=("orders",))]
    failback = kafka.failback()
    plan = failback.plan()
    assert kafka.writes == [] and "fenced writes on the old primary's orders" in kafka.said[-1]
    failback.start(plan)
    assert [w.split(":", 2)[2].split(" ")[1] for w in kafka.writes] == ["lift", "keep"]
    assert kafka.writes[0] == f"{OLD_PRIMARY}: lift the write fence on ['orders']"


# -- finish: the groups home, then the forward link after everything ----------------------------------


def test_a_reverse_link_still_running_refuses_the_finish_before_anything_is_planned(kafka: _Clusters) -> None:
    kafka.old.groups[REVERSE_SHADOW] = "STABLE"
    failback = kafka.failback()
    with pytest.raises(FailbackRefused, match=r"reverse link orders-mirror-failback is still running .* is STABLE"):
        failback.finish(failback.reverse(), None, 0, dry_run=False)
    assert kafka.failovers_made == [] and kafka.writes == []


def test_a_forward_link_running_again_refuses_the_finish(kafka: _Clusters) -> None:
    kafka.new.groups[FORWARD_SHADOW] = "COMPLETING_REBALANCE"
    failback = kafka.failback()
    with pytest.raises(FailbackRefused, match=r"forward link orders-mirror is running \(group connect-orders-mirror"):
        failback.finish(failback.reverse(), None, 0, dry_run=False)
    assert kafka.failovers_made == [] and kafka.writes == []


def test_a_forward_link_past_the_failover_s_cut_refuses_the_finish_as_done_already_or_run_again(
    kafka: _Clusters,
) -> None:
    kafka.advanced = ["orders-0 60 -> 70"]
    failback = kafka.failback()
    with pytest.raises(FailbackRefused, match=r"past failover .*'s cut \(orders-0 60 -> 70\): .* finished already"):
        failback.finish(failback.reverse(), None, 0, dry_run=False)
    assert kafka.failovers_made == [] and kafka.writes == []


def test_a_home_topic_missing_on_the_old_primary_refuses_before_any_group_moves(kafka: _Clusters) -> None:
    kafka.old.topics = {"payments": 1}
    failback = kafka.failback()
    with pytest.raises(FailbackRefused, match=rf"the home topic orders is not on the old primary \({OLD_PRIMARY}\)"):
        failback.finish(failback.reverse(), None, 0, dry_run=False)
    assert kafka.writes == []


def test_an_old_primary_whose_topics_cannot_be_listed_refuses_before_any_group_moves(kafka: _Clusters) -> None:
    kafka.old.list_error = kafka_exception(KafkaError.CLUSTER_AUTHORIZATION_FAILED, "no DESCRIBE")
    failback = kafka.failback()
    with pytest.raises(FailbackRefused, match=r"cannot list the old primary's topics: no DESCRIBE"):
        failback.finish(failback.reverse(), None, 0, dry_run=False)
    assert kafka.writes == []


def test_a_dry_run_finish_shows_the_plan_and_commits_nothing(kafka: _Clusters) -> None:
    failback = kafka.failback()
    assert failback.finish(failback.reverse(), None, 0, dry_run=True) == 0
    assert kafka.writes == [] and kafka.said[-1] == "dry run: nothing committed"
    assert kafka.moving.table() in kafka.said


def test_a_finish_moves_the_groups_home_then_sets_the_forward_link_after_all_the_old_primary_holds(
    kafka: _Clusters,
) -> None:
    failback = kafka.failback()
    assert failback.finish(failback.reverse(), "app", 0, dry_run=False) == 1
    assert kafka.writes == [
        f"{OLD_PRIMARY}: move groups ['app']",
        f"{NEW_PRIMARY}: commit {FORWARD_SHADOW} at {dict(zip((T0, T1, T2), (80, 20, 5), strict=True))}",
    ], "the forward link goes on after what came back and what diverged: no record crosses twice"
    assert kafka.resumed == [(T0, "orders", 80), (T1, "orders", 20), (T2, "orders", 5)], (
        "every partition of the home topic, the one the reverse link added too"
    )
    [made] = kafka.failovers_made
    assert (made.config.name, made.to) == ("orders-mirror-failback", "the old primary")
    assert isinstance(made.fallback, ThroughForwardLink)
    assert kafka.reads.count("failovers") == 1, "the reverse config and the finish read the same failover, once"


def test_a_forward_link_that_cannot_be_set_after_the_groups_moved_refuses_saying_what_was_done(
    kafka: _Clusters,
) -> None:
    kafka.resume_fails = kafka_exception(KafkaError.UNKNOWN_MEMBER_ID, "the group has members")
    failback = kafka.failback()
    with pytest.raises(FailbackRefused, match=r"groups moved home, but the forward link's group connect-orders-mirror"):
        failback.finish(failback.reverse(), None, 0, dry_run=False)
    assert kafka.writes == [f"{OLD_PRIMARY}: move groups ['app']"]


def test_a_group_placed_before_the_diverged_records_is_told_it_reads_them_before_what_came_back(
    kafka: _Clusters,
) -> None:
    kafka.moving.translations.append(Translation("late", "us-east.orders", H0, 64, 77))
    failback = kafka.failback()
    failback.finish(failback.reverse(), None, 0, dry_run=True)
    diverged = [s for s in kafka.said if "before the diverged offsets" in s]
    assert diverged == [
        "app on orders-0: at 30, before the diverged offsets 60..74: it reads those records (kept in the side "
        "topic too) after the rest of what was mirrored and before what came back"
    ], "late is past them, at what came back"


# -- ThroughForwardLink: a position inside what the forward link mirrored -------------------------


def _through() -> ThroughForwardLink:
    return ThroughForwardLink({cut.target: cut for cut in CUTS}, _forward_index())


def _at(offset: int, topic: str = "us-east.orders") -> Translation:
    """A group at ``offset`` on the new primary, moving home to orders-0."""
    return Translation("app", topic, H0, offset, None)


def test_a_position_inside_what_was_mirrored_goes_back_to_its_record_s_offset_on_the_old_primary() -> None:
    assert _through().translate(_at(30), _reverse_index()) == 30


def test_a_position_past_the_last_record_mirrored_goes_to_the_first_record_that_came_back() -> None:
    assert _through().translate(_at(61), _reverse_index()) == 75, "not to the diverged records at 60..74"


@pytest.mark.parametrize(
    ("t", "why"),
    [
        (_at(62), "written on the new primary after the failover: the reverse link's own syncs translate it"),
        (_at(30, topic="us-east.payments"), "a partition the failover did not cut"),
    ],
    ids=["written-after-the-failover", "partition-not-cut"],
)
def test_positions_the_forward_link_did_not_mirror_are_left_to_the_reverse_link_s_syncs(
    t: Translation, why: str
) -> None:
    assert _through().translate(t, _reverse_index()) is None, why


def test_a_partition_with_no_shadow_offset_at_the_failover_is_not_translated_through_it() -> None:
    cuts = {T0: PartitionCut(T0, "orders", None, None, 62, None)}
    assert ThroughForwardLink(cuts, _forward_index()).translate(_at(30), _reverse_index()) is None
