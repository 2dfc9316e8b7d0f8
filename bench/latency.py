"""End-to-end latency through a mirror under a steady produce rate, and what its transactions add to the log.

A fresh source topic is mirrored by an already running mirror (``start`` launches it); probe records
go in until the first one shows up on the target (the mirror is up and caught up); then records are
produced at a fixed rate for a fixed time, each stamped with its produce time (CreateTime, which
every mirror here keeps), and a read_committed consumer on the target takes
``arrival - CreateTime`` for each. So exactly-once figures include the wait for the transaction that
carries a record to commit, as an application reading the target would see it.

The load generator runs in a child process of its own (``produce_paced``), so that producing and
reading the target do not share one interpreter lock: one Python process doing both tops out well
below 100,000 records/s of 1 KB. It produces on schedule in small chunks (every record due by now,
then ``poll(0)``), and when it falls behind it produces as fast as librdkafka takes records but never
past the run's end: the rate it reports is the one it achieved, which may be below the one asked for.

Transaction markers: every transaction writes one control record (a commit or abort marker) to each
partition it wrote, and each takes an offset. So over the measured window, target offsets minus the
records mirrored is the number of markers. On the wire and on disk a marker is a control batch of its
own: 61 bytes of v2 batch header and a 17-byte record (4-byte key: version and type; 6-byte value:
version and coordinator epoch), 78 bytes in all, as read back from a Kafka 4.3 segment file
(``CONTROL_BATCH_BYTES``).
"""

from __future__ import annotations

import multiprocessing
import re
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from devkafka.data import create_topic, end_offsets

_PROBE = b"probe"

#: Bytes of one transaction marker in the log: a v2 control batch holding one control record.
CONTROL_BATCH_BYTES = 78

#: The producer settings of the load generator: small lingering, large batches, lz4, idempotent (so the
#: source's end offsets count each produced record exactly once), and a bounded queue (64 MB, about
#: 0.6 s at 100 MB/s), so that a producer the brokers cannot keep up with slows down instead of hiding
#: a backlog that would count as produced.
LOAD_PRODUCER: dict[str, Any] = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "compression.type": "lz4",
    "acks": "all",
    "enable.idempotence": True,
    "queue.buffering.max.kbytes": 64 * 1024,
    "queue.buffering.max.messages": 500_000,
}


@dataclass
class RunningMirror:
    """A mirror that ``StartMirror`` launched.

    ``transactions`` (when the mirror can tell) returns the (committed, aborted) transactions so far.
    """

    target_topic: str
    stop: Callable[[], None]
    transactions: Callable[[], tuple[int, int] | None] | None = None


#: Given a source topic, start mirroring it and return the running mirror.
StartMirror = Callable[[str], RunningMirror]


@dataclass
class Latency:
    """One latency run through one mirror: latency percentiles (ms) and transaction-marker counts.

    ``rate_per_s`` is the rate asked for; ``achieved_rate_per_s`` the one the load generator reached
    (records produced over the seconds it produced for). ``records`` is how many of them reached the
    target and were measured; ``complete`` is False when some had not arrived by the drain deadline
    (the percentiles then cover only those that did). Marker fields are None for a mirror that writes
    without transactions and for an incomplete run, commits None when the mirror does not report them.
    """

    rate_per_s: float
    records: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    achieved_rate_per_s: float | None = None
    produced: int | None = None
    produce_seconds: float | None = None
    complete: bool = True
    #: From the first produced record to the last one's arrival on the target.
    window_seconds: float | None = None
    target_offsets: int | None = None  # target offsets taken in the window, markers included
    markers: int | None = None
    markers_per_s: float | None = None
    markers_per_1k_records: float | None = None
    marker_share: float | None = None  # of the target offsets taken in the window
    marker_bytes: int | None = None  # every marker of the target topic x CONTROL_BATCH_BYTES
    data_bytes: int | None = None  # the target topic's log size less its markers
    marker_bytes_share: float | None = None  # marker_bytes / data_bytes
    commits: int | None = None
    aborted: int | None = None
    commits_per_s: float | None = None


@dataclass
class ProduceStats:
    """What the load generator did."""

    produced: int
    started_at: float  # time.time() of the first produce()
    seconds: float  # from the first produce() to the last
    flush_seconds: float  # the flush after the last produce()
    unflushed: int  # records still queued when the flush gave up (0 normally)


def produce_paced(
    settings: Mapping[str, Any],
    topic: str,
    *,
    partitions: int,
    rate_per_s: float,
    seconds: float,
    values: Sequence[bytes],
    tick_s: float = 0.002,
) -> ProduceStats:
    """Produce ``rate_per_s`` records per second to ``topic`` for ``seconds``, round-robin over partitions.

    Records are sent in chunks: every ``tick_s`` all records due by then go out in a tight loop, then
    ``poll(0)`` serves delivery reports. A run that falls behind stays behind (it never bursts past the
    end) and stops at ``seconds`` either way, so ``produced / seconds`` is the rate achieved.
    """
    producer = Producer({**LOAD_PRODUCER, **settings})
    keys = [b"k%d" % i for i in range(1000)]
    n_values = len(values)
    total = int(rate_per_s * seconds)
    produce, poll = producer.produce, producer.poll
    i = 0
    started_at = time.time()
    started = time.monotonic()
    deadline = started + seconds
    last = started
    while i < total:
        now = time.monotonic()
        if now >= deadline:
            break
        due = min(total, int((now - started) * rate_per_s) + 1)
        while i < due:
            try:
                produce(topic, values[i % n_values], keys[i % 1000], partition=i % partitions)
            except BufferError:
                poll(0.001)  # the queue is full: the brokers are behind, so is this run
                if time.monotonic() >= deadline:
                    break
                continue
            i += 1
        last = time.monotonic()
        poll(0)
        pause = started + i / rate_per_s - time.monotonic()
        if pause > 0:  # on schedule: wait for the next record, at least a tick (chunks, not single records)
            time.sleep(max(pause, tick_s))
    flush_started = time.monotonic()
    unflushed = producer.flush(60)
    return ProduceStats(i, started_at, max(last - started, 1e-6), time.monotonic() - flush_started, unflushed)


def _produce_child(conn: Connection, settings: dict[str, Any], topic: str, kwargs: dict[str, Any]) -> None:
    """The load generator's process: produce, send the ``ProduceStats`` (or the exception) back."""
    try:
        conn.send(produce_paced(settings, topic, **kwargs))
    except BaseException as exc:
        conn.send(exc)
    finally:
        conn.close()


def produce_in_child(
    settings: Mapping[str, Any],
    topic: str,
    *,
    partitions: int,
    rate_per_s: float,
    seconds: float,
    values: Sequence[bytes],
) -> ProduceStats:
    """``produce_paced`` in a spawned child process (its own interpreter lock); blocks until it is done."""
    ctx = multiprocessing.get_context("spawn")  # no fork of a process with librdkafka threads running
    parent, child = ctx.Pipe(duplex=False)
    kwargs = {"partitions": partitions, "rate_per_s": rate_per_s, "seconds": seconds, "values": list(values)}
    proc = ctx.Process(target=_produce_child, args=(child, dict(settings), topic, kwargs), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(seconds + 180):
            raise TimeoutError(f"the load generator did not finish in {seconds + 180:.0f} s")
        try:
            got = parent.recv()
        except EOFError:
            proc.join(30)
            raise RuntimeError(f"the load generator exited with code {proc.exitcode} and no result") from None
    finally:
        proc.join(30)
        if proc.is_alive():
            proc.kill()
    if isinstance(got, BaseException):
        raise got
    if not isinstance(got, ProduceStats):
        raise TypeError(f"the load generator sent {got!r}")
    return got


class _TargetReader:
    """Collects arrival - CreateTime of every non-probe record of the target topic."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.latencies: list[float] = []
        self.probes = 0
        self.last_arrival = 0.0  # time.time() of the last batch with a non-probe record
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
            msgs = [m for m in self._consumer.consume(5000, 0.05) if m.error() is None]
            if not msgs:
                continue
            # One arrival time per batch: a batch is handed over at once, and at 100,000 records/s a
            # clock read per record would cost the reader more than the latencies it measures.
            now_ms = time.time() * 1000
            got = [now_ms - m.timestamp()[1] for m in msgs if m.key() != _PROBE]
            self.probes += len(msgs) - len(got)
            if got:
                self.latencies.extend(got)
                self.last_arrival = now_ms / 1000
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
            try:
                md = probe.list_topics(topic, timeout=5).topics.get(topic)
            except KafkaException:  # a metadata request timed out on a loaded machine: not there yet
                md = None
            if md is not None and md.error is None and len(md.partitions) >= partitions:
                return
            time.sleep(0.25)
    finally:
        probe.close()
    raise TimeoutError(f"target topic {topic} did not appear in {timeout_s:.0f} s")


def _offsets(bootstrap: str, topic: str) -> int:
    """Sum of the high watermarks (read_uncommitted end offsets) of ``topic``'s partitions."""
    return sum(end_offsets(bootstrap, topic, isolation="read_uncommitted").values())


def log_bytes(bootstrap: str, topic: str) -> int | None:
    """Bytes of ``topic``'s log on the brokers (every partition's segments, summed), or None if unknown."""
    try:
        from kafka import KafkaAdminClient  # kafka-python: confluent-kafka has no DescribeLogDirs

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-latency-logdirs")
        try:
            found = admin.describe_log_dirs([topic])
        finally:
            admin.close()
        return sum(
            int(p["partition_size"])
            for broker in found
            for log_dir in broker.get("log_dirs", [])
            for t in log_dir.get("topics", [])
            if t.get("name") == topic
            for p in t.get("partitions", [])
        )
    except Exception:
        return None


def prometheus_transactions(port: int) -> tuple[int, int] | None:
    """(committed, aborted) transactions from a mirror-sink process's /metrics, all tasks summed; None if down."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            body = resp.read().decode()
    except OSError:
        return None
    counts = {"committed": 0.0, "aborted": 0.0}
    seen = False
    for line in body.splitlines():
        if line.startswith("mirror_sink_transactions_total{"):
            # Labels in any order (prometheus-client sorts them): {connector=..,outcome=..,task=..} value
            outcome = re.search(r'[{,]outcome="(\w+)"', line)
            value = line.rsplit("}", 1)[-1].split()
            if outcome and value and outcome.group(1) in counts:
                counts[outcome.group(1)] += float(value[0])
                seen = True
    return (int(counts["committed"]), int(counts["aborted"])) if seen else None


_PROGRESS_LINE = re.compile(r"mirrored (\d+) records \(([\d.]+) MB\) in (\d+) commits, (\d+) aborted")


def logged_transactions(log: Path) -> tuple[int, int] | None:
    """(commits, aborted) from the last progress line of a one-task mirror-sink log, or None if there is none."""
    try:
        matches = _PROGRESS_LINE.findall(log.read_text(errors="replace"))
    except OSError:
        return None
    return (int(matches[-1][2]), int(matches[-1][3])) if matches else None


def _percentiles(latencies: list[float]) -> tuple[float, float, float]:
    if not latencies:
        return (float("nan"),) * 3
    got = sorted(latencies)
    return statistics.median(got), got[min(len(got) - 1, int(len(got) * 0.99))], got[-1]


def measure_latency(
    source: str,
    target: str,
    topic: str,
    start: StartMirror,
    *,
    partitions: int,
    rate_per_s: float,
    seconds: float,
    values: Sequence[bytes],
    transactional: bool,
    drain_timeout_s: float = 180.0,
) -> Latency:
    """Produce ``rate_per_s`` records per second (``values`` in turn) for ``seconds`` through the mirror.

    ``transactional``: the mirror writes in transactions, so target offsets that are not records are
    markers (they are counted then, and left as None otherwise). Waits up to ``drain_timeout_s`` after
    the last record is produced for every record to reach the target; records still missing then make
    the result incomplete rather than an error.
    """
    create_topic(source, topic, partitions)
    mirror = start(topic)
    target_topic = mirror.target_topic
    probe_producer = Producer({"bootstrap.servers": source, "linger.ms": 5, "compression.type": "lz4", "acks": "all"})
    reader: _TargetReader | None = None
    stopped = False
    try:
        _wait_for_topic(target, target_topic, partitions, 120)
        reader = _TargetReader(target, target_topic, partitions)
        deadline = time.monotonic() + 120
        probes = 0
        while reader.probes == 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no probe record reached {target_topic} in 120 s")
            probe_producer.produce(topic, b"{}", key=_PROBE)
            probes += 1
            probe_producer.flush(10)
            time.sleep(0.5)
        # Every probe in (with its transaction's markers), so the window below starts from a still log.
        settle = time.monotonic() + 30
        while reader.probes < probes and time.monotonic() < settle:
            time.sleep(0.1)
        source_0, target_0 = _offsets(source, topic), _offsets(target, target_topic)
        tx_0 = mirror.transactions() if mirror.transactions else None

        stats = produce_in_child(
            {"bootstrap.servers": source}, topic, partitions=partitions, rate_per_s=rate_per_s, seconds=seconds,
            values=values,
        )  # fmt: skip
        deadline = time.monotonic() + drain_timeout_s
        while len(reader.latencies) < stats.produced and time.monotonic() < deadline:
            time.sleep(0.1)
        arrived = len(reader.latencies)
        # From the child's first record (not its spawn, which takes a second) to the last arrival.
        window = max(reader.last_arrival, stats.started_at + stats.seconds) - stats.started_at
        tx_1 = mirror.transactions() if mirror.transactions else None
        mirror.stop()
        stopped = True
        reader.stop()
        p50, p99, top = _percentiles(reader.latencies[: stats.produced])
        result = Latency(
            rate_per_s, min(arrived, stats.produced), p50, p99, top,
            achieved_rate_per_s=stats.produced / stats.seconds, produced=stats.produced,
            produce_seconds=stats.seconds, complete=arrived >= stats.produced, window_seconds=window,
        )  # fmt: skip
        # Markers only from a complete run: with records still missing, offsets minus records means nothing.
        if transactional and result.complete:
            _count_markers(
                result,
                source=source,
                target=target,
                topic=topic,
                target_topic=target_topic,
                source_0=source_0,
                target_0=target_0,
            )
        if tx_0 is not None and tx_1 is not None:
            result.commits, result.aborted = tx_1[0] - tx_0[0], tx_1[1] - tx_0[1]
            result.commits_per_s = result.commits / window if window > 0 else None
        return result
    finally:
        if reader is not None:
            reader.stop()
        if not stopped:
            mirror.stop()


def _count_markers(
    result: Latency, *, source: str, target: str, topic: str, target_topic: str, source_0: int, target_0: int
) -> None:
    """Fill ``result``'s marker fields from the offsets the window took on both sides (mirror stopped)."""
    source_1, target_1 = _offsets(source, topic), _offsets(target, target_topic)
    records = source_1 - source_0
    taken = target_1 - target_0
    markers = max(0, taken - records)
    result.target_offsets = taken
    result.markers = markers
    if result.window_seconds:
        result.markers_per_s = markers / result.window_seconds
    result.markers_per_1k_records = markers / records * 1000 if records else None
    result.marker_share = markers / taken if taken else None
    # Bytes over the topic's whole life (the probe phase too): the log size is all one can ask for.
    size = log_bytes(target, target_topic)
    all_markers = max(0, target_1 - source_1)
    if size is not None:
        result.marker_bytes = all_markers * CONTROL_BATCH_BYTES
        result.data_bytes = size - result.marker_bytes
        result.marker_bytes_share = result.marker_bytes / result.data_bytes if result.data_bytes > 0 else None
