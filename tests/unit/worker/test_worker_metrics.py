"""WorkerMetrics, Connect's worker and connector series as Strimzi names them: task counts per state,
each connector's and task's state as a 1, and the plugins' own gauges merged by family name; only for
the runtimes of the sources added and not removed.

A collector of its own (not the process's registered one), over real runtimes of the fake plugin of
``tests/unit/worker/fakes.py``.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from prometheus_client.core import Metric

from mirror_sink.core.base.states import TargetState
from mirror_sink.worker.connector_plugin import MetricFamily
from mirror_sink.worker.connector_runtime import ConnectorRuntime
from mirror_sink.worker.worker_metrics import WorkerMetrics
from tests.unit.worker.conftest import MakeRuntime
from tests.unit.worker.fakes import fake_of, props, settle

pytestmark = pytest.mark.unit

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _samples(families: Iterable[Metric]) -> Samples:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def _of(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def _runtime(make_runtime: MakeRuntime, name: str, target: TargetState, tasks_max: int) -> ConnectorRuntime:
    runtime = make_runtime(props(name, topics=name, tasks_max=str(tasks_max)))
    runtime.apply(target)
    settle(runtime)
    return runtime


def test_task_counts_and_states_are_reported_per_connector(make_runtime: MakeRuntime) -> None:
    orders = _runtime(make_runtime, "orders", TargetState.RUNNING, 3)
    fake_of(orders).tasks[2].fail("TaskFailure: fenced")
    paused = _runtime(make_runtime, "paused", TargetState.PAUSED, 1)
    metrics = WorkerMetrics()
    metrics.add(lambda: [orders, paused])
    samples = _samples(metrics.collect())
    counts = {
        kind: _of(samples, f"kafka_connect_worker_connector_{kind}_task_count", connector="orders")
        for kind in ("running", "failed", "paused", "unassigned", "total")
    }
    assert counts == {"running": 2, "failed": 1, "paused": 0, "unassigned": 0, "total": 3}
    assert _of(samples, "kafka_connect_worker_connector_paused_task_count", connector="paused") == 1
    assert _of(samples, "kafka_connect_connector_status", connector="orders", status="running") == 1
    assert _of(samples, "kafka_connect_connector_status", connector="paused", status="paused") == 1
    assert _of(samples, "kafka_connect_connector_task_status", connector="orders", task="2", status="failed") == 1
    assert _of(samples, "kafka_connect_connector_task_status", connector="orders", task="0", status="running") == 1


def test_the_plugins_gauges_are_merged_by_family_across_connectors(make_runtime: MakeRuntime) -> None:
    runtimes = [_runtime(make_runtime, name, TargetState.STOPPED, 1) for name in ("a", "b")]
    for runtime in runtimes:
        fake_of(runtime).families = [
            MetricFamily("fake_readiness", "Readiness.", ("connector",), (((runtime.name,), 90.0),))
        ]
    metrics = WorkerMetrics()
    metrics.add(lambda: runtimes)
    families = [f for f in metrics.collect() if f.name == "fake_readiness"]
    assert len(families) == 1 and families[0].documentation == "Readiness."
    assert _samples(families) == {
        ("fake_readiness", (("connector", "a"),)): 90.0,
        ("fake_readiness", (("connector", "b"),)): 90.0,
    }


def test_only_the_sources_added_and_not_removed_are_reported(make_runtime: MakeRuntime) -> None:
    runtime = _runtime(make_runtime, "orders", TargetState.STOPPED, 1)

    def source() -> list[ConnectorRuntime]:
        return [runtime]

    metrics = WorkerMetrics()
    assert not _samples(metrics.collect())
    metrics.add(source)
    assert _of(_samples(metrics.collect()), "kafka_connect_connector_status", connector="orders", status="stopped")
    metrics.remove(source)
    metrics.remove(source)  # removed already: nothing to do
    assert not _samples(metrics.collect())
