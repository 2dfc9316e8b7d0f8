"""Replication lag per partition, watched from outside the tasks: the source's last stable offset
minus the shadow group's offset (``mirror_sink_replication_lag_records``) and the age of the first
record not yet mirrored (``mirror_sink_replication_lag_seconds``), every few seconds.

Outside the tasks on purpose: a stuck or failed task stops reporting, and that is exactly when the
lag matters. Two batched requests per round (in parts of ``clients.OFFSETS_CALL_PARTITIONS``):
ListOffsets (read_committed) on the source for every mirrored partition, OffsetFetch of the shadow
group on the target (the last committed offsets, without waiting for a transaction still open on
them); for the lagging partitions only, one small read_committed fetch at the shadow offset gives
the first unmirrored record's timestamp.

An idle mirror's round costs one request: when the source's last stable offsets are those of the
last round and nothing was left to mirror then, nothing can have changed but an external reset of
the shadow group, so the OffsetFetch and the sums are skipped. The partition lists and the series'
labels are made again only when the mirrored topics change, and a series is set only when its value
changed (2,000 unchanged gauges were a fifth of an idle round at 1,000 partitions). Every
``_FULL_ROUND_EVERY`` rounds (a minute) all of it is done all the same: a shadow group reset by hand
shows, and a series removed meanwhile (by a stopped monitor of the same connector that closed late)
comes back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka import OFFSET_END, Consumer, IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.clients import LIBRDKAFKA_LOG
from mirror_sink.core.runtime.logs import context_logger
from mirror_sink.core.runtime.repeating_job import RepeatingJob
from mirror_sink.core.telemetry.metrics import replication_lag_records, replication_lag_seconds
from mirror_sink.topics.source_discovery import TopicMapping

_INTERVAL_S = 5.0
_TIMEOUT_S = 10.0
#: Lagging partitions whose first unmirrored record is read per round (the oldest lag wins the alert anyway).
_AGE_PROBES = 200
#: Every this many rounds the shadow group is read and each series set, whatever changed.
_FULL_ROUND_EVERY = 12


@dataclass(frozen=True)
class _Layout:
    """What a round asks for, made once per set of mirrored topics."""

    mappings: tuple[TopicMapping, ...]
    pairs: list[tuple[str, str, int]]  # (source topic, target topic, partition)
    latest: list[TopicPartition]  # the ListOffsets request (at OFFSET_END), source partitions
    ends: dict[TopicPartition, OffsetSpec]  # the same for the admin client
    shadow: list[TopicPartition]  # the OffsetFetch request, target partitions
    labels: list[tuple[str, ...]]  # each pair's series


class LagMonitor:
    """Publishes each mirrored partition's lag in records, on a thread of its own."""

    def __init__(self, config: MirrorSinkConfig, mappings: Callable[[], Mapping[str, TopicMapping]]) -> None:
        self.config = config
        self._mappings = mappings
        self.log = context_logger(__name__, f"{config.name} lag", connector=config.name)
        self._source_admin = clients.admin(config.source_admin(), f"{config.name}-lag")
        self._shadow = Consumer(
            {
                **config.target_consumer(),
                "logger": LIBRDKAFKA_LOG,
                "client.id": f"{config.name}-lag",
                "group.id": config.shadow_group_id,  # reads its offsets; never joins
                "isolation.level": "read_uncommitted",  # no require_stable: never waits on an open transaction
                "enable.auto.commit": False,
            }
        )
        self._probe = Consumer(
            {
                **config.source_consumer(),
                "logger": LIBRDKAFKA_LOG,
                "client.id": f"{config.name}-lag-probe",
                "group.id": f"{config.name}-lag-probe",  # never joined, never committed
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "max.partition.fetch.bytes": 1,  # one batch per partition is enough (KIP-74)
                # An offset gone from the source is the task's to report: a reset here would log
                # "offset reset ... to END", which reads like a skip that never happened.
                "auto.offset.reset": "error",
                "fetch.wait.max.ms": 10,
            }
        )
        self._job = RepeatingJob(
            f"lag-{config.name}",
            self.measure,
            _INTERVAL_S,
            self.log,
            failure="lag measurement failed",  # a cluster away: the gauges keep their last values
            failure_level=logging.DEBUG,
            finish=self._close,
        )
        self._layout: _Layout | None = None
        #: Each published series' last values (records, seconds).
        self._published: dict[tuple[str, ...], tuple[int, float]] = {}
        self._rounds = 0
        #: The last full round's source ends and lag, to tell a round that can change nothing.
        self._last_ends: dict[tuple[str, int], int] | None = None
        self._last_lag: dict[tuple[str, int], int] = {}
        #: The last round's lag per target (topic, partition): (records, seconds), for the status page.
        self.last: dict[tuple[str, int], tuple[int, float]] = {}

    def start(self) -> None:
        """Measure every few seconds until ``stop``."""
        self._job.start()

    def request_stop(self) -> None:
        """Ask the thread to end after its current round."""
        self._job.request_stop()

    def stop(self, timeout_s: float = 15.0) -> None:
        """End the thread; it closes its consumer itself."""
        self._job.stop(timeout_s)

    def is_alive(self) -> bool:
        """True while the thread runs (a measurement may wait on a cluster that does not answer)."""
        return self._job.is_alive()

    def _close(self) -> None:
        self._shadow.close()
        self._probe.close()
        for labels in self._published:  # a stopped or deleted connector's series go away
            replication_lag_records.remove(*labels)
            replication_lag_seconds.remove(*labels)

    def measure(self) -> dict[tuple[str, int], int]:
        """One round: lag per (target topic, partition), published as gauges and returned."""
        layout = self._layout_of(self._mappings())
        if not layout.pairs:
            return {}
        self._rounds += 1
        every = self._rounds % _FULL_ROUND_EVERY == 0
        ends = self._ends(layout)
        if not every and ends == self._last_ends and not any(self._last_lag.values()):
            return self._last_lag  # the source moved nowhere, and the mirror had nothing left
        committed = clients.in_parts(self._shadow.committed, layout.shadow, _TIMEOUT_S)
        _serve_events(self._shadow)
        _serve_events(self._probe)
        shadow = {(tp.topic, tp.partition): tp.offset for tp in committed if tp.error is None}
        lag = {}
        behind: dict[tuple[str, int], tuple[str, int]] = {}  # source partition -> (target topic, shadow offset)
        for source_topic, target_topic, p in layout.pairs:
            end = ends.get((source_topic, p))
            if end is None:
                continue
            done = shadow.get((target_topic, p), -1)
            # No offset yet: everything from the source's start is still to mirror (an upper bound
            # when offset.fallback=latest would skip it; the first commit corrects it).
            lag[(target_topic, p)] = n = max(0, end - max(done, 0))
            if n:
                behind[(source_topic, p)] = (target_topic, max(done, 0))
        ages = self._ages(behind)
        self.last = {tp: (n, ages.get(tp, 0.0)) for tp, n in lag.items()}
        records: dict[tuple[str, ...], int] = {}
        seconds: dict[tuple[str, ...], float] = {}
        for (_, target_topic, p), labels in zip(layout.pairs, layout.labels, strict=True):
            behind_by = lag.get((target_topic, p))
            if behind_by is None:
                continue
            records[labels] = records.get(labels, 0) + behind_by
            seconds[labels] = max(seconds.get(labels, 0.0), ages.get((target_topic, p), 0.0))
        self._publish(records, seconds, every=every)
        self._last_ends, self._last_lag = ends, lag
        return lag

    def _ends(self, layout: _Layout) -> dict[tuple[str, int], int]:
        """Each source partition's last stable offset (a partition whose leader is away is left out).

        One ListOffsets per leader through the read_committed probe consumer (``offsets_for_times``
        at "latest" answers the last stable offset, one list in, one list out); when that call fails
        as a whole, the admin client's, which answers each partition on its own (a future each).
        """
        try:
            found = clients.in_parts(self._probe.offsets_for_times, layout.latest, _TIMEOUT_S)
        except KafkaException as exc:
            self.log.debug("ListOffsets through the probe consumer failed, asking per partition: %s", exc)
        else:
            return {(tp.topic, tp.partition): tp.offset for tp in found if tp.error is None and tp.offset >= 0}
        futures = self._source_admin.list_offsets(
            layout.ends, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=_TIMEOUT_S
        )
        ends = {}
        for tp, future in futures.items():
            try:
                ends[(tp.topic, tp.partition)] = future.result(_TIMEOUT_S).offset
            except KafkaException:
                continue  # a partition whose leader is away: skipped this round
        return ends

    def _layout_of(self, mappings: Mapping[str, TopicMapping]) -> _Layout:
        """The round's requests and labels: the last round's while the mirrored topics stay the same."""
        current = tuple(mappings.values())
        if self._layout is not None and self._layout.mappings == current:
            return self._layout
        cfg = self.config
        pairs = [(m.source_topic, m.target_topic, p) for m in current for p in range(m.source_partitions)]
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]  # confluent-kafka leaves it unannotated
        per_topic = cfg.metrics_aggregate == "topic"
        self._layout = _Layout(
            mappings=current,
            pairs=pairs,
            latest=[TopicPartition(s, p, OFFSET_END) for s, _, p in pairs],
            ends={TopicPartition(s, p): latest for s, _, p in pairs},
            shadow=[TopicPartition(t, p) for _, t, p in pairs],
            labels=[
                (cfg.name, cfg.source_alias, cfg.target_alias, t, "all" if per_topic else str(p)) for _, t, p in pairs
            ],
        )
        return self._layout

    def _publish(
        self, records: Mapping[tuple[str, ...], int], seconds: Mapping[tuple[str, ...], float], *, every: bool
    ) -> None:
        """Set each series whose value changed (``every``: each one), and remove those of partitions
        no longer mirrored."""
        before = {} if every else self._published
        now = {labels: (n, seconds[labels]) for labels, n in records.items()}
        for labels, values in now.items():
            if before.get(labels) != values:
                replication_lag_records.labels(*labels).set(values[0])
                replication_lag_seconds.labels(*labels).set(values[1])
        for gone in self._published.keys() - now.keys():
            replication_lag_records.remove(*gone)
            replication_lag_seconds.remove(*gone)
        self._published = now

    def _ages(self, behind: dict[tuple[str, int], tuple[str, int]]) -> dict[tuple[str, int], float]:
        """Seconds since the first unmirrored record of each lagging partition was written (its timestamp)."""
        if not behind:
            return {}
        probes = sorted(behind.items())[:_AGE_PROBES]
        self._probe.assign([TopicPartition(t, p, offset) for (t, p), (_, offset) in probes])
        wanted = {tp for tp, _ in probes}
        ages: dict[tuple[str, int], float] = {}
        now_ms = time.time() * 1000
        deadline = Deadline(2.0)
        try:
            while wanted and not deadline.passed:
                for msg in self._probe.consume(len(wanted), 0.2):
                    key = (msg.topic() or "", msg.partition() or 0)
                    if msg.error() is not None or key not in wanted:
                        continue
                    wanted.discard(key)
                    _, ts = msg.timestamp()
                    ages[(behind[key][0], key[1])] = max(0.0, (now_ms - ts) / 1000) if ts > 0 else 0.0
        finally:
            self._probe.unassign()
        return ages


def _serve_events(consumer: Consumer) -> None:
    """Serve what librdkafka queued for ``consumer`` (its log lines and error events, kept until the
    client is polled): a consumer that only reads offsets would hold them back and pile them up."""
    for _ in range(1000):
        if consumer.poll(0) is None:
            return
