"""End-to-end latency through a mirror under a steady produce rate.

A fresh source topic is mirrored by an already running mirror (``start`` launches it); probe records
go in until the first one shows up on the target (the mirror is up and caught up); then records are
produced at a fixed rate for a fixed time, each stamped with its produce time (CreateTime, which
every mirror here keeps), and a read_committed consumer on the target takes
``arrival - CreateTime`` for each. So exactly-once figures include the wait for the transaction that
carries a record to commit, as an application reading the target would see it.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer, TopicPartition

from devkafka.data import create_topic

#: Given a source topic, start mirroring it; return the target topic and a function that stops it.
StartMirror = Callable[[str], tuple[str, Callable[[], None]]]

_PROBE = b"probe"


@dataclass
class Latency:
    """Latency percentiles of one mirror, in milliseconds."""

    rate_per_s: int
    records: int
    p50_ms: float
    p99_ms: float
    max_ms: float


class _TargetReader:
    """Collects arrival - CreateTime of every non-probe record of the target topic."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.latencies: list[float] = []
        self.probes = 0
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench-latency",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 10,
            }
        )
        self._consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for msg in self._consumer.consume(1000, 0.05):
                if msg.error() is not None:
                    continue
                if msg.key() == _PROBE:
                    self.probes += 1
                else:
                    self.latencies.append(time.time() * 1000 - msg.timestamp()[1])
        self._consumer.close()

    def stop(self) -> None:
        """Stop reading."""
        self._stop.set()
        self._thread.join(10)


def _wait_for_topic(bootstrap: str, topic: str, partitions: int, timeout_s: float) -> None:
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-latency-md"})
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            md = probe.list_topics(topic, timeout=5).topics.get(topic)
            if md is not None and md.error is None and len(md.partitions) >= partitions:
                return
            time.sleep(0.25)
    finally:
        probe.close()
    raise TimeoutError(f"target topic {topic} did not appear in {timeout_s:.0f} s")


def measure_latency(
    source: str,
    target: str,
    topic: str,
    start: StartMirror,
    *,
    partitions: int,
    rate_per_s: int,
    seconds: float,
    value: bytes,
) -> Latency:
    """Produce ``rate_per_s`` records of ``value`` per second for ``seconds`` through the mirror."""
    create_topic(source, topic, partitions)
    target_topic, stop = start(topic)
    producer = Producer({"bootstrap.servers": source, "linger.ms": 5, "compression.type": "lz4", "acks": "all"})
    reader: _TargetReader | None = None
    try:
        _wait_for_topic(target, target_topic, partitions, 120)
        reader = _TargetReader(target, target_topic, partitions)
        deadline = time.monotonic() + 120
        while reader.probes == 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no probe record reached {target_topic} in 120 s")
            producer.produce(topic, b"{}", key=_PROBE)
            producer.flush(10)
            time.sleep(0.5)
        total = int(rate_per_s * seconds)
        tick = 0.01
        per_tick = rate_per_s * tick
        started = time.monotonic()
        for i in range(total):
            # Paced in 10 ms ticks: a steady rate, not bursts.
            due = started + int(i / per_tick) * tick
            if (wait := due - time.monotonic()) > 0:
                time.sleep(wait)
            producer.produce(topic, value, key=b"k%d" % (i % 1000), partition=i % partitions)
            producer.poll(0)
        producer.flush(60)
        deadline = time.monotonic() + 120
        while len(reader.latencies) < total and time.monotonic() < deadline:
            time.sleep(0.1)
        if len(reader.latencies) < total:
            raise TimeoutError(f"{len(reader.latencies):,} of {total:,} records reached {target_topic} in 120 s")
        got = sorted(reader.latencies)
        p99 = got[min(len(got) - 1, int(len(got) * 0.99))]
        return Latency(rate_per_s, total, statistics.median(got), p99, got[-1])
    finally:
        if reader is not None:
            reader.stop()
        stop()
