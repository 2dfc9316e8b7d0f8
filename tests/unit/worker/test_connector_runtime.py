"""ConnectorRuntime, one connector in a worker: what RUNNING, PAUSED and STOPPED start and stop, when a
connector is FAILED and with what trace, what restarts replace, what a tick refreshes, and how a
cluster that cannot be reached shows on the status.

Each test runs a real runtime over the fake plugin of ``tests/unit/worker/fakes.py`` (tasks and jobs
without threads). Transitions run on the runtime's own thread, which ``settle`` waits for. The
cluster watch probes through a ``FakeProber`` where a test names clusters; otherwise it has none to
probe.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest

from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.base.states import ConnectorState, TargetState
from mirror_sink.core.clients.authorization import AuthorizationFailure
from mirror_sink.worker import cluster_watch, connector_services
from mirror_sink.worker.cluster_watch import ClusterWatch
from mirror_sink.worker.connector_runtime import ConnectorRuntime, StateInfo
from mirror_sink.worker.target_claims import TargetTopicClaims
from tests.unit.worker.conftest import MakeRuntime
from tests.unit.worker.fakes import FakeConnector, FakeProber, clusters, eventually, fake_of, props, settle

pytestmark = pytest.mark.unit

RUNNING = StateInfo(ConnectorState.RUNNING)


def _running(make_runtime: MakeRuntime, **extra: str) -> tuple[ConnectorRuntime, FakeConnector]:
    runtime = make_runtime(props(**extra))
    runtime.apply(TargetState.RUNNING)
    settle(runtime)
    assert runtime.state == RUNNING
    return runtime, fake_of(runtime)


def _state(runtime: ConnectorRuntime) -> ConnectorState:
    return runtime.state.state


def _claimable(claims: TargetTopicClaims, topic: str, bootstrap: str = "target:9092") -> bool:
    """Whether another connector could write ``topic`` now."""
    try:
        claims.claim("someone-else", bootstrap, [topic])
    except ConfigError:
        return False
    claims.release("someone-else")
    return True


@pytest.fixture
def prober(monkeypatch: pytest.MonkeyPatch) -> FakeProber:
    """The runtime's cluster watch probes through this, every few milliseconds."""
    found = FakeProber()
    monkeypatch.setattr(connector_services, "ClusterWatch", functools.partial(ClusterWatch, prober=found))
    monkeypatch.setattr(cluster_watch, "_HEALTHY_INTERVAL_S", 0.002)
    monkeypatch.setattr(cluster_watch, "_OUTAGE_INTERVAL_S", 0.002)
    return found


# -- RUNNING, PAUSED, STOPPED -----------------------------------------------------------------------
def test_running_preflights_starts_the_connector_claims_its_topics_then_starts_its_tasks_and_jobs(
    make_runtime: MakeRuntime,
) -> None:
    runtime, fake = _running(make_runtime, tasks_max="2")
    assert fake.events[:2] == ["preflight", "start"]
    assert [t.task_id for t in fake.live_tasks()] == [0, 1] and runtime.local_task_ids() == {0, 1}
    assert [j.name for j in fake.jobs_made.beside_tasks if j.alive] == ["checkpoints", "verify"]
    assert [j.name for j in fake.jobs_made.while_active if j.alive] == ["lag"]
    assert fake.events.index("task 1 start") < fake.events.index("checkpoints start"), "jobs after the tasks"
    assert runtime.task_states() == [RUNNING, RUNNING]
    assert not _claimable(runtime.claims, "target.orders")
    assert runtime.services.watch is not None and not runtime.failed()


def test_pausing_stops_the_tasks_and_the_jobs_beside_them_but_keeps_the_active_jobs_and_the_claims(
    make_runtime: MakeRuntime,
) -> None:
    runtime, fake = _running(make_runtime, tasks_max="2")
    runtime.apply(TargetState.PAUSED)
    settle(runtime)
    assert runtime.state == StateInfo(ConnectorState.PAUSED)
    assert not fake.live_tasks() and not runtime.local_task_ids()
    assert not any(j.alive for j in fake.jobs_made.beside_tasks)
    assert [j.name for j in fake.jobs_made.while_active if j.alive] == ["lag"], "a paused mirror's lag still grows"
    assert not _claimable(runtime.claims, "target.orders")
    assert runtime.task_states() == [StateInfo(ConnectorState.PAUSED)] * 2


def test_resuming_a_paused_connector_checks_again_but_does_not_start_it_again(make_runtime: MakeRuntime) -> None:
    runtime, fake = _running(make_runtime)
    runtime.apply(TargetState.PAUSED)
    runtime.apply(TargetState.RUNNING)
    settle(runtime)
    assert runtime.state == RUNNING
    assert fake.events.count("preflight") == 2 and fake.events.count("start") == 1
    assert len(fake.tasks) == 2 and fake.live_tasks() == [fake.tasks[1]], "a fresh task in the slot"
    assert len(fake.jobs_made.while_active) == 1, "the active jobs ran on through the pause"
    assert len(fake.jobs_made.beside_tasks) == 4


def test_stopping_stops_every_task_and_job_and_the_watch_and_releases_the_claims(make_runtime: MakeRuntime) -> None:
    runtime, fake = _running(make_runtime)
    runtime.apply(TargetState.STOPPED)
    settle(runtime)
    assert runtime.state == StateInfo(ConnectorState.STOPPED)
    assert not fake.live_tasks()
    assert not any(j.alive for j in [*fake.jobs_made.beside_tasks, *fake.jobs_made.while_active])
    assert runtime.services.watch is None and runtime.services.active is None
    assert _claimable(runtime.claims, "target.orders")
    assert runtime.task_states() == [StateInfo(ConnectorState.STOPPED)]


def test_a_connector_stopped_and_run_again_is_started_again_only_if_it_forgot_its_topics(
    make_runtime: MakeRuntime,
) -> None:
    runtime, fake = _running(make_runtime)
    runtime.apply(TargetState.STOPPED)
    runtime.apply(TargetState.RUNNING)
    settle(runtime)
    assert fake.events.count("start") == 1 and runtime.state == RUNNING
    assert len(fake.jobs_made.while_active) == 2, "the active jobs start again after a stop"
    fake.reset_active_topics()
    runtime.apply(TargetState.STOPPED)
    runtime.apply(TargetState.RUNNING)
    settle(runtime)
    assert fake.events.count("start") == 2


# -- FAILED -------------------------------------------------------------------------------------------
def test_a_start_that_fails_leaves_the_connector_failed_with_the_trace_and_no_task_running(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime(props(tasks_max="2"))
    fake = fake_of(runtime)
    fake.start_errors = [RuntimeError("no topic may be created on the target")]
    runtime.apply(TargetState.RUNNING)
    settle(runtime)
    assert runtime.state.state is ConnectorState.FAILED and runtime.failed()
    assert runtime.state.trace is not None
    assert "RuntimeError: no topic may be created on the target" in runtime.state.trace
    assert "Traceback" in runtime.state.trace
    assert not fake.tasks and not fake.jobs_made.beside_tasks
    assert runtime.task_states() == [StateInfo(ConnectorState.UNASSIGNED)] * 2
    assert _claimable(runtime.claims, "target.orders")


def test_a_refused_preflight_fails_the_connector_before_it_is_started(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(props())
    fake = fake_of(runtime)
    fake.preflight_error = TaskFailure("source cluster 'east' refused the certificate")
    runtime.apply(TargetState.RUNNING)
    settle(runtime)
    assert runtime.state.state is ConnectorState.FAILED
    assert runtime.state.trace is not None and "refused the certificate" in runtime.state.trace
    assert "start" not in fake.events and not fake.tasks


def test_a_target_topic_another_connector_of_the_worker_writes_fails_the_second_connector(
    make_runtime: MakeRuntime,
) -> None:
    claims = TargetTopicClaims()
    first = make_runtime(props("first"), claims=claims)
    first.apply(TargetState.RUNNING)
    settle(first)
    second = make_runtime(props("second", target="TARGET:9092"), claims=claims)  # the same cluster
    second.apply(TargetState.RUNNING)
    settle(second)
    assert first.state == RUNNING and second.state.state is ConnectorState.FAILED
    assert second.state.trace is not None and "target.orders (written by connector first)" in second.state.trace
    assert not fake_of(second).tasks


# -- restarts ------------------------------------------------------------------------------------------
def test_restarting_a_failed_connector_starts_it_again_and_runs_its_tasks(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(props())
    fake = fake_of(runtime)
    fake.start_errors = [RuntimeError("boom")]
    runtime.apply(TargetState.RUNNING)
    settle(runtime)
    assert runtime.state.state is ConnectorState.FAILED
    runtime.restart(include_tasks=False, only_failed=True)
    assert _state(runtime) is ConnectorState.RESTARTING, "said at once, before the restart runs"
    settle(runtime)
    assert runtime.state == RUNNING and fake.events.count("start") == 2
    assert [t.task_id for t in fake.live_tasks()] == [0]


def test_restarting_only_failed_tasks_replaces_those_and_leaves_the_connector_and_the_others(
    make_runtime: MakeRuntime,
) -> None:
    runtime, fake = _running(make_runtime, tasks_max="2")
    first, second = fake.tasks
    second.fail("TaskFailure: fenced")
    assert runtime.failed()
    assert runtime.task_states() == [RUNNING, StateInfo(ConnectorState.FAILED, "TaskFailure: fenced")]
    runtime.restart(include_tasks=True, only_failed=True)
    settle(runtime)
    assert fake.events.count("start") == 1, "a running connector is not restarted for its tasks"
    assert fake.live_tasks() == [first, fake.tasks[2]] and fake.tasks[2].task_id == 1
    assert not runtime.failed() and runtime.task_states() == [RUNNING, RUNNING]


def test_restarting_a_paused_connector_restarts_it_and_leaves_it_paused(make_runtime: MakeRuntime) -> None:
    runtime, fake = _running(make_runtime)
    runtime.apply(TargetState.PAUSED)
    runtime.restart(include_tasks=True, only_failed=False)
    settle(runtime)
    assert runtime.state == StateInfo(ConnectorState.PAUSED)
    assert fake.events.count("start") == 2 and not fake.live_tasks()


def test_restarting_one_task_puts_a_fresh_task_in_its_slot(make_runtime: MakeRuntime) -> None:
    runtime, fake = _running(make_runtime, tasks_max="2")
    old = fake.tasks[0]
    runtime.restart_task(0)
    settle(runtime)
    assert not old.is_alive() and old.stops == [90.0]
    assert [t.task_id for t in fake.live_tasks()] == [1, 0] and fake.tasks[2].task_id == 0
    assert sorted(runtime.local_task_ids()) == [0, 1]


# -- ticks ------------------------------------------------------------------------------------------------
def test_a_refresh_that_finds_new_topics_claims_them_before_the_tasks_are_told(make_runtime: MakeRuntime) -> None:
    runtime, fake = _running(make_runtime)
    fake.found = ["orders", "payments"]
    fake.refresh_result = True
    runtime.tick()
    assert fake.events[-2:] == ["refresh", "reconfigure"]
    assert not _claimable(runtime.claims, "target.payments")
    fake.refresh_result = False
    runtime.tick()
    assert fake.events[-1] == "refresh", "unchanged topics: the tasks are not told"


@pytest.mark.parametrize(
    "refusal",
    [
        ConfigError("topics.exclude", "not a regular expression"),
        AuthorizationFailure("source", "Describe", "Topic", ["orders"], "User:mirror"),
    ],
    ids=["config", "authorization"],
)
def test_a_refresh_refused_for_a_reason_no_retry_fixes_fails_the_connector(
    make_runtime: MakeRuntime, refusal: Exception
) -> None:
    runtime, fake = _running(make_runtime)
    fake.refresh_result = refusal
    runtime.tick()
    assert runtime.state.state is ConnectorState.FAILED
    assert runtime.state.trace is not None and type(refusal).__name__ in runtime.state.trace
    runtime.tick()
    assert fake.events.count("refresh") == 1, "a FAILED connector is not refreshed"


def test_a_refresh_that_fails_otherwise_is_tried_again_at_the_next_tick(make_runtime: MakeRuntime) -> None:
    runtime, fake = _running(make_runtime)
    fake.refresh_result = TimeoutError()
    runtime.tick()
    assert runtime.state == RUNNING
    fake.refresh_result = True
    runtime.tick()
    assert fake.events[-2:] == ["refresh", "reconfigure"]


def test_a_tick_refreshes_only_a_running_connector_with_refresh_on_and_one_interval_after_its_start(
    make_runtime: MakeRuntime,
) -> None:
    runtime, fake = _running(make_runtime)
    runtime.apply(TargetState.PAUSED)
    settle(runtime)
    runtime.tick()
    assert "refresh" not in fake.events
    for settings in (
        dataclasses.replace(fake.settings, refresh_enabled=False),
        dataclasses.replace(fake.settings, refresh_interval_s=3600.0),
    ):
        runtime = make_runtime(props(f"refresh-{len(fake.events)}"))
        other = fake_of(runtime)
        other.settings = settings
        runtime.apply(TargetState.RUNNING)
        settle(runtime)
        runtime.tick()
        assert "refresh" not in other.events


def test_a_tick_moves_the_tasks_when_the_worker_group_gives_this_worker_others(make_runtime: MakeRuntime) -> None:
    owned = [0, 1]
    runtime = make_runtime(props(tasks_max="3"), task_ids=lambda tasks_max: list(owned))
    runtime.apply(TargetState.RUNNING)
    settle(runtime)
    fake = fake_of(runtime)
    kept = fake.tasks[1]
    owned[:] = [1, 2]
    runtime.tick()
    settle(runtime)
    assert [t.task_id for t in fake.live_tasks()] == [1, 2] and kept.is_alive()
    assert not fake.tasks[0].is_alive()
    assert runtime.task_states() == [StateInfo(ConnectorState.UNASSIGNED), RUNNING, RUNNING]


# -- clusters ---------------------------------------------------------------------------------------------
def test_a_connector_waits_while_a_cluster_is_unreachable_and_a_shutdown_ends_the_wait_without_failing(
    make_runtime: MakeRuntime, prober: FakeProber
) -> None:
    runtime = make_runtime(props())
    fake = fake_of(runtime)
    fake.settings = dataclasses.replace(fake.settings, clusters=clusters())
    prober.down = {"source"}
    runtime.apply(TargetState.RUNNING)
    eventually(lambda: runtime.state.trace is not None)
    assert runtime.state.state is ConnectorState.UNASSIGNED
    assert runtime.state.trace is not None
    assert runtime.state.trace.startswith("waiting: source cluster 'east' is unreachable: east:9092: connection")
    assert not fake.events, "not even checked while a cluster cannot be reached"
    assert runtime.shutdown(1.0)
    assert runtime.state.state is ConnectorState.UNASSIGNED and not fake.events


def test_a_cluster_unreachable_past_its_give_up_time_fails_the_start_naming_the_setting(
    make_runtime: MakeRuntime, prober: FakeProber
) -> None:
    runtime = make_runtime(props())
    fake = fake_of(runtime)
    fake.settings = dataclasses.replace(fake.settings, clusters=clusters(give_up_ms=0))
    prober.down = {"target"}
    runtime.apply(TargetState.RUNNING)
    settle(runtime)
    assert runtime.state.state is ConnectorState.FAILED and runtime.state.trace is not None
    assert "target cluster 'west' is unreachable" in runtime.state.trace
    assert "giving up (target.unreachable.give.up.ms=0)" in runtime.state.trace
    assert not fake.events


def test_a_running_connector_names_a_cluster_that_went_away_and_forgets_it_when_it_answers(
    make_runtime: MakeRuntime, prober: FakeProber
) -> None:
    runtime = make_runtime(props())
    fake = fake_of(runtime)
    fake.settings = dataclasses.replace(fake.settings, clusters=clusters())
    runtime.apply(TargetState.RUNNING)
    settle(runtime)
    watch = runtime.services.watch
    assert runtime.state == RUNNING and watch is not None
    prober.down = {"source"}
    eventually(lambda: bool(watch.unreachable()))
    runtime.tick()
    assert runtime.state.state is ConnectorState.RUNNING
    assert runtime.state.trace is not None and runtime.state.trace.startswith("waiting: source cluster 'east'")
    assert fake.live_tasks(), "the tasks wait on their own"
    prober.down = set()
    eventually(lambda: not watch.unreachable())
    runtime.tick()
    assert runtime.state == RUNNING


def test_a_running_connector_whose_cluster_stays_away_past_its_give_up_time_is_failed(
    make_runtime: MakeRuntime, prober: FakeProber
) -> None:
    runtime = make_runtime(props())
    fake = fake_of(runtime)
    fake.settings = dataclasses.replace(fake.settings, clusters=clusters(give_up_ms=0))
    runtime.apply(TargetState.RUNNING)
    settle(runtime)
    watch = runtime.services.watch
    assert runtime.state == RUNNING and watch is not None
    prober.down = {"source"}
    eventually(lambda: bool(watch.unreachable()))
    fake.refresh_result = True
    runtime.tick()
    assert runtime.state.state is ConnectorState.FAILED
    assert runtime.state.trace is not None and "(source.unreachable.give.up.ms=0)" in runtime.state.trace
    assert "refresh" not in fake.events


# -- shutdown and status ------------------------------------------------------------------------------------
def test_a_shutdown_stops_everything_and_is_clean_when_nothing_was_left(make_runtime: MakeRuntime) -> None:
    runtime, fake = _running(make_runtime, tasks_max="2")
    assert runtime.shutdown(1.0)
    assert not fake.live_tasks()
    assert not any(j.alive for j in [*fake.jobs_made.beside_tasks, *fake.jobs_made.while_active])
    assert runtime.services.watch is None and _claimable(runtime.claims, "target.orders")
    assert not runtime.tasks.start(), "no task starts after a shutdown"


def test_a_shutdown_that_leaves_a_task_in_its_cycle_says_so(make_runtime: MakeRuntime) -> None:
    runtime, fake = _running(make_runtime, tasks_max="2")
    fake.tasks[1].stuck = True
    assert not runtime.shutdown(0.05)
    assert runtime.tasks.left == [fake.tasks[1]]


def test_the_transaction_versions_are_those_of_the_tasks_that_know_theirs(make_runtime: MakeRuntime) -> None:
    runtime, fake = _running(make_runtime, tasks_max="2")
    fake.tasks[1].version = 2
    assert runtime.transaction_versions() == {1: 2}
