"""Failover, the target side of the switch: which positions it moves and which it leaves, what makes it
refuse (and that a refusal has committed nothing), the order of its writes, and what it records for
the way back.

The planner's side (``FailoverPlanner``) is given as the plan it decided; the groups' reads and
commits, the record topic, the end offsets and the two fences are fakes of their own modules' calls,
which answer from tables and journal each write in ``writes``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.formats.offset_syncs import OffsetIndex, OffsetSync, SyncRun
from mirror_sink.failover.common.failover_record import FailoverRecord, PartitionCut, read_records
from mirror_sink.failover.common.groups import ClusterUnreachable, GroupActive
from mirror_sink.failover.common.translation import Translation
from mirror_sink.failover.switch import failover as failover_module
from mirror_sink.failover.switch.failover import Failover
from mirror_sink.failover.switch.failover_plan import FailoverPlan, FailoverRefused
from mirror_sink.failover.switch.source_fence import SourceFenceReport
from tests.unit.failover.fakes import (
    NEW_PRIMARY,
    OLD_PRIMARY,
    FakeAdmin,
    FakeClusters,
    FakeProducer,
    bootstrap,
    forward_config,
    kafka_exception,
)

pytestmark = pytest.mark.unit

SOURCE, TARGET = OLD_PRIMARY, NEW_PRIMARY
T0, T1 = TargetPartition("us-east.orders", 0), TargetPartition("us-east.orders", 1)
SHADOW = "connect-orders-mirror"
RECORDS = "mirror-sink-failovers.us-east.internal"


class _Planner:
    """``FailoverPlanner``'s answers: the plan it decided, and what its preflight selects."""

    def __init__(self) -> None:
        self.decided: FailoverPlan | None = None
        self.preflight_answer: tuple[list[str], list[tuple[str, int]]] | Exception = (["app"], [("orders", 0)])

    def plan(self, groups: str | None, wait_caught_up_s: float) -> FailoverPlan:
        assert self.decided is not None
        return self.decided

    def preflight(self, groups: str | None) -> tuple[list[str], list[tuple[str, int]]]:
        if isinstance(self.preflight_answer, Exception):
            raise self.preflight_answer
        return self.preflight_answer


class _EndReader:
    def __init__(self, cluster: str, opened: list[_EndReader]) -> None:
        self.cluster = cluster
        self.closed = False
        opened.append(self)

    def close(self) -> None:
        self.closed = True


class _Switch:
    """The clusters as the failover verb sees them through its calls (see the module docstring)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.source = FakeAdmin(SOURCE, cluster_id="east-id", groups={"app": "EMPTY", "billing": "EMPTY"})
        self.target = FakeAdmin(TARGET, cluster_id="west-id")
        self.clusters = FakeClusters(self.source, self.target)
        self.writes = self.clusters.writes
        self.planner = _Planner()
        #: (cluster, topic, partition) -> last stable offset.
        self.ends: dict[tuple[str, str, int], int] = {}
        self.readers: list[_EndReader] = []
        self.producers: list[FakeProducer] = []
        self.commit_fails: dict[str, Exception] = {}
        self.record_fails: Exception | None = None
        self.denies: list[str] = ["orders"]
        self.said: list[str] = []
        switch = self

        class SourceFence:
            def __init__(self, config: MirrorSinkConfig, say: Any) -> None:
                pass

            def run(self, partitions: Sequence[tuple[str, int]], *, dry_run: bool = False) -> SourceFenceReport:
                if not dry_run:
                    switch.writes.append(f"{SOURCE}: fence producers of {list(partitions)}, deny {switch.denies}")
                return SourceFenceReport(denied_topics=list(switch.denies), authorizer=True, dry_run=dry_run)

        class TakeoverFence:
            def __init__(self, admin: Mapping[str, str], producer: Mapping[str, str], *args: Any) -> None:
                assert bootstrap(admin) == bootstrap(producer) == TARGET

            def fence(self, partitions: list[TargetPartition]) -> list[str]:
                switch.writes.append(f"{TARGET}: abort open transactions on {partitions}")
                return ["orders-mirror-0"]

        for name, fake in {
            "FailoverPlanner": lambda config, say, untranslated=None: self.planner,
            "clients": SimpleNamespace(admin=self.clusters.admin, target_producer=self._producer),
            "list_groups": self.clusters.list_groups,
            "committed_offsets": self.clusters.committed_offsets,
            "commit_offsets": self._commit_offsets,
            "create_compacted": lambda admin, topic, rf: self.writes.append(f"{admin.bootstrap}: create {topic}"),
            "end_reader": lambda props, client_id: _EndReader(bootstrap(props), self.readers),
            "stable_end": lambda reader, topic, p: self.ends[(reader.cluster, topic, p)],
            "SourceFence": SourceFence,
            "TakeoverFence": TakeoverFence,
        }.items():
            monkeypatch.setattr(failover_module, name, fake)

    def failover(self) -> Failover:
        return Failover(forward_config(), self.said.append)

    def _commit_offsets(
        self, props: Mapping[str, str], group: str, offsets: Mapping[tuple[str, int], int], client_id: str
    ) -> None:
        if group in self.commit_fails:
            raise self.commit_fails[group]
        moved = sorted((TargetPartition(*tp), o) for tp, o in offsets.items())
        self.writes.append(f"{bootstrap(props)}: commit {group} {moved}")

    def _producer(self, props: Mapping[str, str], client_id: str, txn_id: str, timeout_ms: int) -> FakeProducer:
        switch = self

        class Producer(FakeProducer):
            def commit_transaction(self, timeout: float) -> None:
                if switch.record_fails is not None:
                    raise switch.record_fails
                super().commit_transaction(timeout)
                switch.writes.append(f"{bootstrap(props)}: transaction {txn_id} of {len(self.produced)} records")

        self.producers.append(Producer({**props, "transactional.id": txn_id}))
        return self.producers[-1]

    def recorded(self) -> FailoverRecord:
        """The failover record written (read back as a failback reads it)."""
        [producer] = self.producers
        assert producer.steps[:2] == ["init_transactions", "begin_transaction"]
        assert producer.steps[-1] == "commit_transaction"
        assert {(call[1], call[2]) for call in producer.calls if call[0] == "produce"} == {(RECORDS, 0)}
        [record] = read_records(producer.produced).values()
        return record


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> _Switch:
    return _Switch(monkeypatch)


def _index() -> OffsetIndex:
    """The offset syncs: source offsets 0..59 of orders-0 at 0..59 then (after a marker) 60.. at 61..;
    orders-1's 0..9 at 0..9."""
    index = OffsetIndex()
    index.add(OffsetSync(T0, "orders", 0, 60, (SyncRun(0, 0, 60),)))
    index.add(OffsetSync(T0, "orders", 60, 70, (SyncRun(60, 61, 10),)))
    index.add(OffsetSync(T1, "orders", 0, 10, (SyncRun(0, 0, 10),)))
    return index


def _plan(mode: str = "planned") -> FailoverPlan:
    """app at orders-0 40 and orders-1 7; billing at orders-0 20."""
    plan = FailoverPlan(
        mode,
        [
            Translation("app", "orders", T0, 40, 40),
            Translation("app", "orders", T1, 7, 7),
            Translation("billing", "orders", T0, 20, 20),
        ],
    )
    plan.index = _index()
    plan.mirrored = {T0: "orders", T1: "orders"}
    plan.source_cut = {("orders", 0): 65, ("orders", 1): 10}
    if mode == "disaster":
        plan.checkpoint_age_s = {("app", T0): 12.0, ("app", T1): 30.0, ("billing", T0): 4.0}
    return plan


def _ends(switch: _Switch, *, source: bool = True) -> None:
    switch.clusters.committed[(TARGET, SHADOW)] = {T0: 65, T1: 10}
    switch.ends |= {(TARGET, "us-east.orders", 0): 67, (TARGET, "us-east.orders", 1): 11}
    if source:
        switch.ends |= {(SOURCE, "orders", 0): 66, (SOURCE, "orders", 1): 10}


# -- plan: the target side's checks ------------------------------------------------------------------


def test_a_group_with_consumers_on_the_target_refuses_the_plan_naming_it_and_its_state(switch: _Switch) -> None:
    switch.planner.decided = _plan()
    switch.target.groups = {"app": "EMPTY", "billing": "STABLE"}
    with pytest.raises(FailoverRefused, match=r"active on the target: billing \(STABLE\); .*\(nothing committed\)"):
        switch.failover().plan(None, 0)
    assert switch.writes == []


def test_positions_the_target_group_holds_already_or_passed_are_left_and_the_rest_move(switch: _Switch) -> None:
    switch.planner.decided = _plan()
    switch.target.groups = {"billing": "EMPTY"}  # app is not known on the target yet: nobody consumes there
    switch.clusters.committed[(TARGET, "app")] = {T0: 40, T1: 3}  # there already, behind
    switch.clusters.committed[(TARGET, "billing")] = {T0: 35}  # ahead: moving it would read records twice
    plan = switch.failover().plan(None, 0)
    assert plan.unchanged == {("app", T0), ("billing", T0)}
    assert "(target group already there or ahead: left)" in plan.table()


# -- commit -------------------------------------------------------------------------------------------


def test_a_planned_commit_moves_each_group_s_changed_positions_then_records_the_failover_once(
    switch: _Switch,
) -> None:
    _ends(switch)
    plan = _plan()
    plan.unchanged = {("app", T0)}
    assert switch.failover().commit(plan) == 2
    assert switch.writes == [
        f"{TARGET}: commit app [(TargetPartition(topic='us-east.orders', partition=1), 7)]",
        f"{TARGET}: commit billing [(TargetPartition(topic='us-east.orders', partition=0), 20)]",
        f"{TARGET}: create {RECORDS}",
        f"{TARGET}: transaction orders-mirror-failover-record of 4 records",
    ], "no fence in a planned failover: its mirror stopped cleanly"
    record = switch.recorded()
    assert (record.connector, record.mode, record.source_alias) == ("orders-mirror", "planned", "us-east")
    assert (record.source_cluster_id, record.target_cluster_id) == ("east-id", "west-id")
    assert record.cuts == (
        PartitionCut(T0, "orders", 65, 66, 67, 66),
        PartitionCut(T1, "orders", 10, 10, 11, 10),
    ), "the shadow offset, where it lands, the target's end and the source's"
    assert {m.group: m.offsets for m in record.groups} == {"app": {T0: 40, T1: 7}, "billing": {T0: 20}}
    assert all(r.closed for r in switch.readers) and {r.cluster for r in switch.readers} == {SOURCE, TARGET}


def test_a_consumer_that_started_after_the_plan_refuses_the_commit_before_any_group_moves(switch: _Switch) -> None:
    plan = _plan("disaster")
    switch.target.groups = {"billing": "PREPARING_REBALANCE"}
    with pytest.raises(FailoverRefused, match=r"billing \(PREPARING_REBALANCE\)"):
        switch.failover().commit(plan)
    assert switch.writes == [] and switch.producers == [], "not even the mirror's transactions are aborted"


def test_a_group_left_where_it_is_on_every_partition_is_not_checked_or_committed(switch: _Switch) -> None:
    _ends(switch)
    plan = _plan()
    plan.unchanged = {("billing", T0)}
    switch.target.groups = {"billing": "STABLE"}  # its consumers run on the target already: nothing to do
    assert switch.failover().commit(plan) == 1
    assert not [w for w in switch.writes if "commit billing" in w]


def test_a_disaster_commit_aborts_the_mirror_s_open_transactions_before_the_first_group_moves(
    switch: _Switch,
) -> None:
    _ends(switch, source=False)  # the source is gone: no end of it is read
    plan = _plan("disaster")
    plan.mirrored = {T1: "orders"}
    switch.source.cluster_id = "not asked"
    assert switch.failover().commit(plan) == 2
    assert switch.writes[0] == f"{TARGET}: abort open transactions on {[T0, T1]}", "mirrored and moved partitions"
    assert switch.writes[1].startswith(f"{TARGET}: commit app")
    assert any("aborted the transactions the mirror left open on the target" in s for s in switch.said)
    record = switch.recorded()
    assert (record.mode, record.source_cluster_id, record.target_cluster_id) == ("disaster", None, "west-id")
    assert record.cuts == (PartitionCut(T1, "orders", 10, 10, 11, None),)
    assert {m.group: m.checkpoint_age_s for m in record.groups} == {"app": {T0: 12.0, T1: 30.0}, "billing": {T0: 4.0}}


@pytest.mark.parametrize(
    ("refused", "said"),
    [("app", "no group was moved"), ("billing", "groups already moved: app")],
    ids=["first-group", "second-group"],
)
def test_a_group_refused_on_the_way_names_the_groups_moved_and_no_failover_is_recorded(
    switch: _Switch, refused: str, said: str
) -> None:
    switch.commit_fails[refused] = GroupActive(f"group {refused!r} has active members on the target")
    with pytest.raises(FailoverRefused, match=rf"group '{refused}' has active members on the target \({said}\)"):
        switch.failover().commit(_plan())
    assert switch.producers == [] and not [w for w in switch.writes if refused in w]


def test_a_record_that_cannot_be_written_after_every_group_moved_says_so_and_to_run_again(switch: _Switch) -> None:
    _ends(switch)
    switch.record_fails = kafka_exception(KafkaError._FENCED, "fenced")
    with pytest.raises(FailoverRefused, match=r"every group moved, but the failover record could not be written"):
        switch.failover().commit(_plan())
    assert [w.split(" ")[2] for w in switch.writes if " commit " in w] == ["app", "billing"]


def test_a_failover_with_nothing_mirrored_records_no_cuts_and_reads_no_offsets(switch: _Switch) -> None:
    plan = _plan()
    plan.mirrored = {}
    assert switch.failover().record(plan).cuts == ()
    assert switch.readers == []


# -- the source fence -----------------------------------------------------------------------------------


def test_a_source_that_does_not_answer_refuses_the_fence_it_has_nothing_to_fence(switch: _Switch) -> None:
    switch.planner.preflight_answer = ClusterUnreachable("no broker answered")
    with pytest.raises(FailoverRefused, match=r"does not answer \(no broker answered\): --fence-source needs it"):
        switch.failover().fence_source(None, dry_run=False)
    assert switch.writes == []


def test_a_selected_group_with_consumers_on_the_target_refuses_before_the_source_is_fenced(switch: _Switch) -> None:
    switch.target.groups = {"app": "STABLE"}
    with pytest.raises(FailoverRefused, match=r"app \(STABLE\)"):
        switch.failover().fence_source(None, dry_run=False)
    assert switch.writes == [], "the source's producers are left alone"


def test_a_dry_run_fence_denies_nothing_so_the_failover_records_nothing_to_lift(switch: _Switch) -> None:
    failover = switch.failover()
    report = failover.fence_source(None, dry_run=True)
    assert report.dry_run and report.denied_topics == ["orders"]
    assert failover.write_denied == () and switch.writes == []


def test_the_topics_the_fence_denied_are_recorded_for_the_failback_to_lift(switch: _Switch) -> None:
    _ends(switch)
    switch.denies = ["orders", "payments"]
    failover = switch.failover()
    failover.fence_source(None, dry_run=False)
    assert switch.writes == [f"{SOURCE}: fence producers of {[('orders', 0)]}, deny ['orders', 'payments']"]
    assert failover.write_denied == ("orders", "payments")
    failover.commit(_plan())
    assert switch.recorded().write_denied == ("orders", "payments")


def test_late_records_are_the_source_s_offsets_past_the_cut_partition_by_partition(switch: _Switch) -> None:
    switch.ends |= {(SOURCE, "orders", 0): 70, (SOURCE, "orders", 1): 10}
    assert switch.failover().late_records(_plan()) == [
        "orders-0: offsets 65..69 (5 offsets) written on the source after the cut"
    ]
    [reader] = switch.readers
    assert reader.cluster == SOURCE and reader.closed
