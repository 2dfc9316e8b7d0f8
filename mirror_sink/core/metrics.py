"""Prometheus metrics: MirrorMaker 2's and Kafka Connect's names, and the mirror's own.

MirrorMaker 2 and Connect export JMX; Strimzi's JMX-exporter rules turn
``kafka.connect.mirror:type=MirrorSourceConnector,target=..,topic=..,partition=..`` attribute
``record-count`` into ``kafka_connect_mirror_mirrorsourceconnector_record_count{source,target,topic,
partition}`` (and Connect's ``sink-task-metrics`` into ``kafka_connect_sink_task_metrics_*``), which
existing MM2 dashboards and alerts query: those names and labels are exported here as they are
(gauges, as the JMX exporter shows them). The mirror's own series start with ``mirror_sink_``.

Tasks record per cycle, never per record: the cost is a few dictionary updates per committed
partition. Rates and the latency window are computed when Prometheus scrapes.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from mirror_sink.core.partitions import TargetPartition

MM2 = "kafka_connect_mirror_mirrorsourceconnector_"
MM2_LABELS = ("source", "target", "topic", "partition")
SINK_TASK = "kafka_connect_sink_task_metrics_"
TASK_LABELS = ("connector", "task")
#: MirrorMaker 2's rates and latency statistics cover a 30 s window (Kafka metrics' samples).
WINDOW_S = 30.0

# -- Connect's sink-task metrics and the mirror's own per-task series --------------------------
sink_record_read_total = Counter(
    SINK_TASK + "sink_record_read", "Records read from the source by the task.", TASK_LABELS
)
sink_record_send_total = Counter(
    SINK_TASK + "sink_record_send", "Records committed to the target by the task.", TASK_LABELS
)
sink_partition_count = Gauge(SINK_TASK + "partition_count", "Source partitions the task mirrors.", TASK_LABELS)
offset_commit_completion_total = Counter(
    SINK_TASK + "offset_commit_completion", "Transactions (offset commits) completed.", TASK_LABELS
)
offset_commit_skip_total = Counter(
    SINK_TASK + "offset_commit_skip", "Cycles aborted and rewound instead of committed.", TASK_LABELS
)
transactions_total = Counter(
    "mirror_sink_transactions", "Target transactions by outcome (committed, aborted).", (*TASK_LABELS, "outcome")
)
transaction_seconds = Histogram(
    "mirror_sink_transaction_duration_seconds",
    "From a cycle's first record to its commit.",
    TASK_LABELS,
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
skipped_records_total = Counter(
    "mirror_sink_skipped_records",
    "Source offsets stepped over because they were deleted before they were mirrored (offset.gap.policy=skip); "
    "each range, with its partition, is in mirror-sink-gaps.{source alias}.internal.",
    TASK_LABELS,
)
topic_recreations_total = Counter(
    "mirror_sink_topic_recreations",
    "Source partitions whose topic was deleted and created again, continued from the new topic's start "
    "(topic.recreation.policy=continue); each is in mirror-sink-gaps.{source alias}.internal.",
    TASK_LABELS,
)
rebalances_total = Counter("mirror_sink_rebalances", "Shadow-group assignments and revocations.", TASK_LABELS)
raw_batches_total = Counter(
    "mirror_sink_raw_batches",
    "Raw mode: source batches forwarded as they are, or re-encoded (by reason).",
    (*TASK_LABELS, "outcome"),
)
memory_budget_bytes = Gauge(
    "mirror_sink_memory_budget_bytes", "Raw mode's byte budget: in use, limit, peak.", (*TASK_LABELS, "kind")
)
replication_lag_records = Gauge(
    "mirror_sink_replication_lag_records",
    "Source last stable offset minus the shadow group's offset: offsets not yet mirrored.",
    ("connector", *MM2_LABELS),
)
replication_lag_seconds = Gauge(
    "mirror_sink_replication_lag_seconds",
    "Age of the oldest source record not yet mirrored (0 when caught up): now minus its timestamp.",
    ("connector", *MM2_LABELS),
)
cluster_unreachable_seconds = Gauge(
    "mirror_sink_cluster_unreachable_seconds",
    "How long no bootstrap server of the cluster has accepted a connection (0 while one does).",
    ("connector", "cluster", "alias"),
)
checkpoint_round_seconds = Histogram(
    "mirror_sink_checkpoint_round_seconds",
    "One checkpoint round: reading the syncs and groups, writing the checkpoints.",
    ("connector",),
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30),
)
checkpoints_written_total = Counter(
    "mirror_sink_checkpoints_written", "MirrorMaker 2 checkpoints written.", ("connector",)
)
last_drill_timestamp_seconds = Gauge(
    "mirror_sink_last_drill_timestamp_seconds",
    "When the newest DR drill of the connector (mirror-sink drill) started, from its kept report.",
    ("connector",),
)
last_drill_passed = Gauge(
    "mirror_sink_last_drill_passed", "1 when the newest DR drill passed, 0 when it failed.", ("connector",)
)
last_passed_drill_timestamp_seconds = Gauge(
    "mirror_sink_last_passed_drill_timestamp_seconds",
    "When the newest DR drill that passed started (0: none has).",
    ("connector",),
)
VERIFY_LABELS = ("connector", *MM2_LABELS)
verified_offset = Gauge(
    "mirror_sink_verified_offset",
    "Target offset verification has compared up to (verify.enabled): every record below it is equal to its "
    "source record or counted unverifiable. Summed over partitions with metrics.aggregate=topic.",
    VERIFY_LABELS,
)
verify_mismatches_total = Counter(
    "mirror_sink_verify_mismatches",
    "Target records found different from their source records, or mapping to no source offset.",
    VERIFY_LABELS,
)
verified_bytes_total = Counter(
    "mirror_sink_verified_bytes", "Record bytes (keys, values, headers) verified equal.", VERIFY_LABELS
)
verify_unverifiable_records_total = Counter(
    "mirror_sink_verify_unverifiable_records",
    "Records that could not be verified: gone by compaction or retention, older than the syncs kept, or "
    "skipped on purpose (never counted as mismatches).",
    VERIFY_LABELS,
)


@dataclass(slots=True)
class CycleStats:
    """What one cycle committed to one target partition."""

    records: int = 0
    bytes: int = 0
    min_ts: int = 2**63 - 1  # record timestamps (ms)
    max_ts: int = -1
    ts_sum: int = 0  # for the average latency: sum of the records' timestamps
    read_sum: int = 0  # for the average record age: sum of the times (ms) the records were read

    def add(self, records: int, nbytes: int, first_ts: int, last_ts: int, read_ms: int) -> None:
        """``records`` records read at ``read_ms`` with timestamps from ``first_ts`` to ``last_ts``
        (their mean taken as the middle)."""
        self.records += records
        self.bytes += nbytes
        self.min_ts = min(self.min_ts, first_ts)
        self.max_ts = max(self.max_ts, last_ts)
        self.ts_sum += records * (first_ts + last_ts) // 2
        self.read_sum += records * read_ms


@dataclass
class _Partition:
    records: int = 0
    bytes: int = 0
    #: (commit time, records, bytes, latency min, max, sum, record age sum in ms) per commit in the window
    window: deque[tuple[float, int, int, float, float, float, float]] = field(default_factory=deque)


class MirrorMetrics(Collector):
    """MirrorMaker 2's per-partition series, computed at scrape time from what the tasks committed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._partitions: dict[tuple[str, str, str, int], _Partition] = {}
        self._by_connector: dict[str, int] = {}
        #: Source aliases whose connector has ``metrics.aggregate=topic``: one series per topic
        #: (partition="all"), for very many partitions.
        self.topic_level: set[str] = set()

    def committed(self, connector: str, source: str, target: str, stats: dict[TargetPartition, CycleStats]) -> None:
        """A cycle's commit: count it and its replication latency (commit time minus record time)."""
        now = time.time()
        now_ms = now * 1000
        with self._lock:
            self._by_connector[connector] = self._by_connector.get(connector, 0) + sum(
                s.records for s in stats.values()
            )
            for tp, s in stats.items():
                if not s.records:
                    continue
                key = (source, target, tp.topic, tp.partition)
                part = self._partitions.get(key)
                if part is None:
                    part = self._partitions[key] = _Partition()
                part.records += s.records
                part.bytes += s.bytes
                lat_sum = s.records * now_ms - s.ts_sum
                age_sum = s.read_sum - s.ts_sum  # read time minus record time, summed
                part.window.append((now, s.records, s.bytes, now_ms - s.max_ts, now_ms - s.min_ts, lat_sum, age_sum))

    def records(self, connector: str) -> int:
        """Records the connector has committed in this process."""
        with self._lock:
            return self._by_connector.get(connector, 0)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """The MM2 series (Prometheus calls this on every scrape)."""
        families = {
            name: GaugeMetricFamily(MM2 + name, doc, labels=MM2_LABELS)
            for name, doc in (
                ("record_count", "Records mirrored to the target partition (committed) since the process started."),
                ("byte_count", "Record bytes (key + value) mirrored since the process started."),
                ("record_rate", "Records per second over the last 30 s."),
                ("byte_rate", "Bytes per second over the last 30 s."),
                ("replication_latency_ms", "Mean time from a record's timestamp to its commit, last 30 s."),
                ("replication_latency_ms_min", "Shortest time from record timestamp to commit, last 30 s."),
                ("replication_latency_ms_max", "Longest time from record timestamp to commit, last 30 s."),
                ("replication_latency_ms_avg", "Mean time from record timestamp to commit, last 30 s."),
                (
                    "record_age_ms",
                    "Mean age of records when the mirror read them (read time minus timestamp), last 30 s.",
                ),
                ("record_age_ms_avg", "Mean age of records when read, last 30 s."),
            )
        }
        horizon = time.time() - WINDOW_S
        rows: dict[tuple[str, str, str, str], list[float]] = {}
        with self._lock:
            for (source, target, topic, partition), part in self._partitions.items():
                while part.window and part.window[0][0] < horizon:
                    part.window.popleft()
                label = "all" if source in self.topic_level else str(partition)
                row = rows.setdefault((source, target, topic, label), [0, 0, 0, 0, float("inf"), 0.0, 0.0, 0, 0.0, 0.0])
                # Kafka's Rate (2 samples of 30 s, as MM2 configures it) never divides by less than a
                # full window, so a young partition's rate ramps up rather than overshooting.
                row[9] = WINDOW_S
                row[0] += part.records
                row[1] += part.bytes
                for _, n, b, lat_min, lat_max, lat_sum, age_sum in part.window:
                    row[2] += n
                    row[3] += b
                    row[4] = min(row[4], lat_min)
                    row[5] = max(row[5], lat_max)
                    row[6] += lat_sum
                    row[7] += n
                    row[8] += age_sum
        for labels, row in rows.items():
            records, nbytes, w_records, w_bytes, lat_min, lat_max, lat_sum, lat_n, age_sum, span = row
            values = {
                "record_count": records,
                "byte_count": nbytes,
                "record_rate": w_records / span,
                "byte_rate": w_bytes / span,
            }
            if lat_n:
                avg = lat_sum / lat_n
                values |= {
                    "replication_latency_ms": avg,
                    "replication_latency_ms_min": lat_min,
                    "replication_latency_ms_max": lat_max,
                    "replication_latency_ms_avg": avg,
                    "record_age_ms": max(0.0, age_sum / lat_n),
                    "record_age_ms_avg": max(0.0, age_sum / lat_n),
                }
            for name, value in values.items():
                families[name].add_metric(list(labels), value)
        yield from families.values()


#: The process's MM2-series collector, registered with prometheus-client's default registry.
MIRROR = MirrorMetrics()
REGISTRY.register(MIRROR)
