"""Prometheus metrics: MirrorMaker 2's and Kafka Connect's names, and the mirror's own.

MirrorMaker 2 and Connect export JMX; Strimzi's JMX-exporter rules turn
``kafka.connect.mirror:type=MirrorSourceConnector,source=..,target=..,topic=..,partition=..`` attribute
``record-count`` into ``kafka_connect_mirror_mirrorsourceconnector_record_count{source,target,topic,
partition}`` (and Connect's ``sink-task-metrics`` into ``kafka_connect_sink_task_metrics_*``), which
existing MM2 dashboards and alerts query: those names and labels are exported here as they are
(gauges, as the JMX exporter shows them). The mirror's own series start with ``mirror_sink_``.

Kafka 4.3 (KIP-1280) gave MirrorMaker 2's per-partition metrics new names,
``kafka_connect_plugins_record_count{connector,task,source,target,topic,partition}`` and so on
(``metric_names`` has both formats): each connector's ``metric.names.formats`` picks the names its
partitions are exported under, as in Kafka (``legacy``, the default; ``new``; or both, with the same
values).

Tasks record per cycle, never per record: the cost is a few dictionary updates per committed
partition. Rates and the latency window are computed when Prometheus scrapes.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.telemetry.metric_names import (
    DEFAULT_METRIC_NAMES_FORMATS,
    MM2,
    MM2_ATTRIBUTES,
    MM2_LABELS,
    MM2_NEW,
    MM2_NEW_LABELS,
    MetricNamesFormat,
)

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
source_transactions_whole = Gauge(
    "mirror_sink_source_transactions_whole",
    "1 while the task keeps source transactions whole (source.transactions.whole=true and the source's "
    "__transaction_state readable); 0 while it copies per partition.",
    TASK_LABELS,
)
transaction_version = Gauge(
    "mirror_sink_transaction_version",
    "The transaction protocol the task's target producer speaks: 2 (KIP-890 part 2: a new producer epoch per "
    "transaction, partitions added by the brokers; raw mode on a target with transaction.version=2), 1, or 0 "
    "without transactions (at least once).",
    TASK_LABELS,
)
source_transaction_cuts_total = Counter(
    "mirror_sink_source_transaction_cuts",
    "Keeping source transactions whole: snapshots taken as cuts (outcome=cut), cuts that moved only the "
    "partitions no transaction caught mid-markers tied to the others (partial_cut), snapshots dropped because "
    "such a transaction tied them all (mid_markers), and commits made before their cut was reached "
    "(split_commit: source transactions may be split there).",
    (*TASK_LABELS, "outcome"),
)
source_transactions_spanning = Gauge(
    "mirror_sink_source_transactions_spanning_producers",
    "Transactional ids whose source transactions span partitions this task mirrors and partitions it does not: "
    "those cannot land whole (each named once in a WARNING).",
    TASK_LABELS,
)
raw_batches_total = Counter(
    "mirror_sink_raw_batches",
    "Raw mode: source batches forwarded as they are, or re-encoded (by reason).",
    (*TASK_LABELS, "outcome"),
)
fetch_requests_total = Counter(
    "mirror_sink_fetch_requests",
    "Raw mode: Fetches sent to the source, by kind: full (names every partition, asks for a session), "
    "incremental (names only what changed, KIP-227), sessionless, or watch (an incremental Fetch of a quiet "
    "leader, read_uncommitted and parked fetch.idle.wait.max.ms, whose records are never forwarded).",
    (*TASK_LABELS, "kind"),
)
fetch_session_resets_total = Counter(
    "mirror_sink_fetch_session_resets",
    "Raw mode: fetch sessions given up for a full Fetch, by reason (the broker's error, disconnect, "
    "closed, throttled, not_created).",
    (*TASK_LABELS, "reason"),
)
fetch_sessions = Gauge(
    "mirror_sink_fetch_sessions", "Raw mode: incremental fetch sessions held with source brokers.", TASK_LABELS
)
fetch_session_partitions = Gauge(
    "mirror_sink_fetch_session_partitions", "Raw mode: partitions in the fetch sessions held.", TASK_LABELS
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


#: A commit in a partition's 30 s window: (commit time, records, bytes, latency min, max, sum,
#: record age sum in ms).
_Commit = tuple[float, int, int, float, float, float, float]


@dataclass
class _Partition:
    records: int = 0
    bytes: int = 0
    #: The task that committed last: the new names' ``task`` label (a partition the shadow group moves
    #: to another task keeps its counts, so that both formats show the same values).
    task: int = 0
    window: deque[_Commit] = field(default_factory=deque)


@dataclass(slots=True)
class _Row:
    """One series' values, summed over the partitions it stands for."""

    records: int = 0
    bytes: int = 0
    w_records: int = 0
    w_bytes: int = 0
    lat_min: float = float("inf")
    lat_max: float = 0.0
    lat_sum: float = 0.0
    lat_n: int = 0
    age_sum: float = 0.0

    def add(self, part: _Partition) -> None:
        """Count ``part`` (its window already pruned) in this series."""
        self.records += part.records
        self.bytes += part.bytes
        for _, n, b, lat_min, lat_max, lat_sum, age_sum in part.window:
            self.w_records += n
            self.w_bytes += b
            self.lat_min = min(self.lat_min, lat_min)
            self.lat_max = max(self.lat_max, lat_max)
            self.lat_sum += lat_sum
            self.lat_n += n
            self.age_sum += age_sum

    def values(self) -> dict[str, float]:
        """The attributes of ``MM2_ATTRIBUTES``; the latency and age ones only once the window has records."""
        # Kafka's Rate (2 samples of 30 s, as MM2 configures it) never divides by less than a full
        # window, so a young partition's rate ramps up rather than overshooting.
        values: dict[str, float] = {
            "record_count": self.records,
            "byte_count": self.bytes,
            "record_rate": self.w_records / WINDOW_S,
            "byte_rate": self.w_bytes / WINDOW_S,
        }
        if self.lat_n:
            avg = self.lat_sum / self.lat_n
            age = max(0.0, self.age_sum / self.lat_n)
            values |= {
                "replication_latency_ms": avg,
                "replication_latency_ms_min": self.lat_min,
                "replication_latency_ms_max": self.lat_max,
                "replication_latency_ms_avg": avg,
                "record_age_ms": age,
                "record_age_ms_avg": age,
            }
        return values


class MirrorMetrics(Collector):
    """MirrorMaker 2's per-partition series, computed at scrape time from what the tasks committed, under
    the legacy names, KIP-1280's new ones, or both, as each connector's ``metric.names.formats`` says."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: By (connector, source alias, target alias, target topic, partition).
        self._partitions: dict[tuple[str, str, str, str, int], _Partition] = {}
        self._by_connector: dict[str, int] = {}
        #: Source aliases whose connector has ``metrics.aggregate=topic``: one series per topic
        #: (partition="all"), for very many partitions.
        self.topic_level: set[str] = set()
        #: Each connector's ``metric.names.formats``; one not set here has Kafka's default (legacy).
        self._formats: dict[str, frozenset[MetricNamesFormat]] = {}

    def set_formats(self, connector: str, formats: Iterable[MetricNamesFormat]) -> None:
        """Export ``connector``'s partitions under ``formats`` from the next scrape on."""
        with self._lock:
            self._formats[connector] = frozenset(formats)

    def formats(self, connector: str) -> frozenset[MetricNamesFormat]:
        """The names ``connector``'s partitions are exported under."""
        with self._lock:
            return self._formats.get(connector, frozenset(DEFAULT_METRIC_NAMES_FORMATS))

    def committed(
        self, connector: str, source: str, target: str, stats: dict[TargetPartition, CycleStats], *, task: int = 0
    ) -> None:
        """A cycle's commit by ``task``: count it and its replication latency (commit time minus record time)."""
        now = time.time()
        now_ms = now * 1000
        with self._lock:
            self._by_connector[connector] = self._by_connector.get(connector, 0) + sum(
                s.records for s in stats.values()
            )
            for tp, s in stats.items():
                if not s.records:
                    continue
                key = (connector, source, target, tp.topic, tp.partition)
                part = self._partitions.get(key)
                if part is None:
                    part = self._partitions[key] = _Partition()
                part.task = task
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
        """The MM2 series (Prometheus calls this on every scrape): a family only where it has samples."""
        horizon = time.time() - WINDOW_S
        legacy: dict[tuple[str, ...], _Row] = {}
        new: dict[tuple[str, ...], _Row] = {}
        default = frozenset(DEFAULT_METRIC_NAMES_FORMATS)
        with self._lock:
            for (connector, source, target, topic, partition), part in self._partitions.items():
                while part.window and part.window[0][0] < horizon:
                    part.window.popleft()
                per_topic = source in self.topic_level
                label = "all" if per_topic else str(partition)
                formats = self._formats.get(connector, default)
                if MetricNamesFormat.LEGACY in formats:
                    legacy.setdefault((source, target, topic, label), _Row()).add(part)
                if MetricNamesFormat.NEW in formats:
                    # Per topic, a topic's partitions may be spread over the tasks: its one series
                    # stands for all of them, as partition="all" does for its partitions.
                    task = "all" if per_topic else str(part.task)
                    new.setdefault((connector, task, source, target, topic, label), _Row()).add(part)
        yield from _families(MM2, MM2_LABELS, legacy)
        yield from _families(MM2_NEW, MM2_NEW_LABELS, new)


def _families(prefix: str, labels: tuple[str, ...], rows: dict[tuple[str, ...], _Row]) -> Iterator[GaugeMetricFamily]:
    """One gauge family per attribute of ``MM2_ATTRIBUTES`` that has a sample in ``rows``."""
    families = {name: GaugeMetricFamily(prefix + name, doc, labels=labels) for name, doc in MM2_ATTRIBUTES}
    for key, row in rows.items():
        for name, value in row.values().items():
            families[name].add_metric(list(key), value)
    yield from (family for family in families.values() if family.samples)


#: The process's MM2-series collector, registered with prometheus-client's default registry.
MIRROR = MirrorMetrics()
REGISTRY.register(MIRROR)
