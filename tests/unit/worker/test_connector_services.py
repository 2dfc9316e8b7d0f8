"""ConnectorServices, a connector's background work in the runtime: which plugin jobs it starts by
phase and when it lets them go, the cluster watch's one instance, maintenance that never overlaps
itself, and the refresh schedule.

Over the fake plugin of ``tests/unit/worker/fakes.py``; the refresh schedule runs on a fake clock.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from types import SimpleNamespace

import pytest

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.worker import connector_services
from mirror_sink.worker.cluster_watch import ClusterWatch
from mirror_sink.worker.connector_services import ConnectorServices
from tests.unit.worker.fakes import SETTLE_S, FakeConnector, props

pytestmark = pytest.mark.unit

LOG = logging.getLogger("test.connector_services")


def _services(connector: FakeConnector | None = None) -> tuple[ConnectorServices, FakeConnector]:
    plugin = connector or FakeConnector(props())
    return ConnectorServices("fake", plugin, threading.RLock(), LOG), plugin


def test_the_jobs_beside_the_tasks_start_once_and_the_active_ones_once_until_stopped() -> None:
    services, fake = _services()
    services.start_beside_tasks()
    services.start_beside_tasks()
    assert [j.name for j in fake.jobs_made.beside_tasks] == ["checkpoints", "verify"]
    assert [j.name for j in fake.jobs_made.while_active] == ["lag"]
    assert all(j.alive for j in [*fake.jobs_made.beside_tasks, *fake.jobs_made.while_active])
    assert services.active == fake.jobs_made.while_active


def test_the_jobs_beside_the_tasks_are_handed_to_whoever_stops_the_tasks_and_made_anew_at_the_next_start() -> None:
    services, fake = _services()
    services.start_beside_tasks()
    helpers = services.take_task_helpers()
    assert list(helpers.jobs) == fake.jobs_made.beside_tasks
    assert not services.take_task_helpers().jobs, "handed over once"
    services.start_beside_tasks()
    assert len(fake.jobs_made.beside_tasks) == 4 and len(fake.jobs_made.while_active) == 1


def test_the_helpers_are_asked_to_stop_together_and_waited_for_up_to_five_seconds_or_the_deadline() -> None:
    services, fake = _services()
    services.start_beside_tasks()
    helpers = services.take_task_helpers()
    helpers.request_stop()
    assert fake.events[-2:] == ["checkpoints request_stop", "verify request_stop"]
    assert all(j.is_alive() for j in helpers.jobs), "asked, not waited for"
    helpers.join()
    assert [j.stop_timeouts for j in fake.jobs_made.beside_tasks] == [[5.0], [5.0]]
    helpers.join(Deadline(1.0))
    assert all(0.0 < j.stop_timeouts[-1] <= 1.0 for j in fake.jobs_made.beside_tasks)


def test_stopping_the_active_jobs_lets_them_go_and_a_later_start_makes_new_ones() -> None:
    services, fake = _services()
    services.start_beside_tasks()
    services.stop_active(2.5)
    assert services.active is None
    assert fake.jobs_made.while_active[0].stop_timeouts == [2.5] and not fake.jobs_made.while_active[0].alive
    services.stop_active()  # nothing to stop: no error
    services.start_beside_tasks()
    assert len(fake.jobs_made.while_active) == 2 and fake.jobs_made.while_active[1].alive


def _watch(services: ConnectorServices) -> ClusterWatch | None:
    """The watch the services hold now."""
    return services.watch


def test_the_cluster_watch_is_started_once_and_stopped_with_the_connector() -> None:
    services, _ = _services()
    watch = services.cluster_watch()
    try:
        assert services.cluster_watch() is watch and services.watch is watch
        assert watch.is_alive() and watch.wait_checked(SETTLE_S)
    finally:
        services.stop_watch(1.0)
    assert not watch.is_alive() and _watch(services) is None
    services.stop_watch()  # nothing to stop: no error


def _maintenance(services: ConnectorServices) -> threading.Thread | None:
    """The thread of the last maintenance run (None: none ran)."""
    return services._maintenance


def test_maintenance_runs_off_the_caller_s_thread_when_due_and_never_beside_itself() -> None:
    services, fake = _services()
    services.maintain()
    assert _maintenance(services) is None, "not due: nothing runs"
    fake.maintenance_is_due = True
    gate = fake.maintain_gate = threading.Event()
    services.maintain()
    first = _maintenance(services)
    assert first is not None and first.is_alive()
    services.maintain()
    assert _maintenance(services) is first, "the last run still goes on"
    gate.set()
    first.join(SETTLE_S)
    assert fake.maintained == 1
    services.maintain()
    second = _maintenance(services)
    assert second is not None and second is not first
    second.join(SETTLE_S)
    assert fake.maintained == 2


def test_a_refresh_is_due_at_once_then_one_interval_after_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SimpleNamespace(now=100.0)
    monkeypatch.setattr(connector_services, "time", SimpleNamespace(monotonic=lambda: clock.now))
    fake = FakeConnector(props())
    fake.settings = dataclasses.replace(fake.settings, refresh_interval_s=30.0)
    services, _ = _services(fake)
    assert services.refresh_due(), "never refreshed: due"
    assert not services.refresh_due()
    clock.now += 29.9
    assert not services.refresh_due()
    clock.now += 0.1
    assert services.refresh_due() and not services.refresh_due()
    services.schedule_refresh()
    clock.now += 29.0
    assert not services.refresh_due(), "a start puts the next refresh one interval away"
