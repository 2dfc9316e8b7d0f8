"""Kafka Connect's worker and connector metrics, as Strimzi's JMX-exporter rules name them.

``kafka.connect:type=connect-worker-metrics,connector=X`` attributes ``connector-running-task-count``
(and failed, paused, unassigned, total) become ``kafka_connect_worker_connector_running_task_count
{connector}``; ``kafka.connect:type=connector-metrics,connector=X`` attribute ``status`` becomes
``kafka_connect_connector_status{connector,status}`` = 1, and ``connector-task-metrics`` ``status``
becomes ``kafka_connect_connector_task_status{connector,task,status}`` = 1. Beside them, the gauges
each connector publishes itself (``ConnectorPlugin.metrics``, KIP-877's plugin metrics; MirrorSink's
DR readiness score and its components). Computed at scrape time from the runtimes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from mirror_sink.core.base.states import ConnectorState
from mirror_sink.worker.connector_runtime import ConnectorRuntime

Runtimes = Callable[[], Iterable[ConnectorRuntime]]
_COUNTED = {
    "running": ConnectorState.RUNNING,
    "failed": ConnectorState.FAILED,
    "paused": ConnectorState.PAUSED,
    "unassigned": ConnectorState.UNASSIGNED,
}


class WorkerMetrics(Collector):
    """Task counts per state, each connector's state, and each connector's own gauges, for every
    runtime of this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sources: list[Runtimes] = []

    def add(self, runtimes: Runtimes) -> None:
        """Report these runtimes (a herder's, or a standalone runner's)."""
        with self._lock:
            self._sources.append(runtimes)

    def remove(self, runtimes: Runtimes) -> None:
        """Stop reporting them."""
        with self._lock:
            if runtimes in self._sources:
                self._sources.remove(runtimes)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """The series (Prometheus calls this on every scrape)."""
        counts = {
            kind: GaugeMetricFamily(
                f"kafka_connect_worker_connector_{kind}_task_count",
                f"Tasks of the connector in state {kind.upper()} on this worker."
                if kind != "total"
                else "Tasks of the connector on this worker.",
                labels=("connector",),
            )
            for kind in (*_COUNTED, "total")
        }
        status = GaugeMetricFamily(
            "kafka_connect_connector_status",
            "The connector's state (1 for its current one).",
            labels=("connector", "status"),
        )
        task_status = GaugeMetricFamily(
            "kafka_connect_connector_task_status",
            "Each task's state (1 for its current one), as Connect's connector-task-metrics status.",
            labels=("connector", "task", "status"),
        )
        #: The plugins' own families, by name, in the order they first come.
        plugin_families: dict[str, GaugeMetricFamily] = {}
        with self._lock:
            sources = list(self._sources)
        for source in sources:
            for runtime in source():
                for family in runtime.connector.metrics():
                    gauge = plugin_families.get(family.name)
                    if gauge is None:
                        gauge = plugin_families[family.name] = GaugeMetricFamily(
                            family.name, family.documentation, labels=family.labels
                        )
                    for labels, value in family.samples:
                        gauge.add_metric(list(labels), value)
                states = [info.state for info in runtime.task_states()]
                for task, state in enumerate(states):
                    task_status.add_metric([runtime.name, str(task), state.value.lower()], 1)
                for kind, state in _COUNTED.items():
                    counts[kind].add_metric([runtime.name], sum(1 for s in states if s is state))
                counts["total"].add_metric([runtime.name], len(states))
                status.add_metric([runtime.name, runtime.state.state.value.lower()], 1)
        yield from counts.values()
        yield status
        yield task_status
        yield from plugin_families.values()


#: The process's worker metrics, registered with prometheus-client's default registry.
WORKER_METRICS = WorkerMetrics()
REGISTRY.register(WORKER_METRICS)
