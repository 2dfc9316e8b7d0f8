"""Apache Kafka MirrorMaker 2 as a baseline: mirror one topic once in dedicated mode and measure the JVM.

    from bench.mm2 import run_mm2
    run = run_mm2(src, tgt, "orders", exactly_once=True, workdir=Path("bench/results"), tasks=6)

Runs ``org.apache.kafka.connect.mirror.MirrorMaker`` (what ``connect-mirror-maker.sh`` starts) from the
Kafka jars the project caches, with one flow ``{alias}->target`` that mirrors only ``topic``, and
everything the measurement does not need switched off (heartbeats, checkpoints, offset syncs, config and
ACL sync, topic and group refresh). Each run gets its own source alias (``mm2alo<ms>`` / ``mm2eos<ms>``),
so its target topic ``{alias}.{topic}``, its Connect group and its internal topics
(``mm2-{offsets,configs,status}.{alias}.internal`` on the target) are its own, and several runs can
mirror the same source topic side by side. Nothing is deleted afterwards: the target topic and those
three internal topics stay on the target cluster.

Two variants:

- at-least-once: MM2's delivery as shipped (Connect's producer: acks=all, one request in flight, no
  idempotence);
- exactly-once (KIP-618 for Connect source tasks, usable in dedicated mode since 3.5 through KIP-710):
  ``{target}.exactly.once.source.support = enabled`` on the worker (a *worker* setting: MM2 builds each
  herder's worker config from the target cluster's ``{target}.*`` keys, a plain top-level key is ignored),
  ``dedicated.mode.enable.internal.rest = true`` with a ``listeners`` address, as Kafka's docs require
  (followers send task configs and zombie-fencing requests to the leader over it; a single node is its
  own leader and ran exactly-once without it in a trial, but a benchmark should run the documented
  setup), and ``{source}.consumer.isolation.level = read_committed`` (without it MirrorSourceConnector
  reports exactly-once as unsupported). Each task then writes the records of each ``poll()`` and their
  source offsets in one transaction.

Timing starts just before the JVM is spawned, so JVM start-up, Connect's group join and the creation of
the internal and target topics are part of the cost, as they are for anyone who runs MM2 to copy a topic;
it stops when the completion check below succeeds, before MM2 is shut down. CPU is user + system time of
the JVM's process tree, RSS the peak of its sum, both sampled every 0.5 s (``bench.common.cpu.ProcessTree``,
as every mirror is).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common.console import tail
from bench.common.cpu import ProcessTree
from devkafka.cluster import free_port
from devkafka.data import reader
from devkafka.jars import KafkaJars
from devkafka.processes import reap_with_this_process
from mirror_sink.topics.topic_provisioner import by_partitions

#: Before an idle measurement, the caught-up mirror settles this long (its last commit's markers,
#: offset flushes and checkpoints end); bench.scenarios.shapes gives mirror-sink the same.
IDLE_SETTLE_S = 10.0

MAIN_CLASS = "org.apache.kafka.connect.mirror.MirrorMaker"
TARGET_ALIAS = "target"
SAMPLE_S = 0.5
# What connect-mirror-maker.sh / kafka-run-class.sh give the JVM by default (KAFKA_JVM_PERFORMANCE_OPTS).
JVM_OPTS = (
    "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
)  # fmt: skip
# Everything to stdout (redirected to the run's log file); client config dumps at WARN.
LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
"""


@dataclass
class MM2Run:
    """One mirror run's figures; ``seconds`` counts from the JVM's spawn to the completion check."""

    seconds: float
    cpu_seconds: float
    peak_rss_bytes: int
    target_topic: str
    records: int  # source offsets mirrored (records, for a source written without transactions)
    log: Path
    first_commit_s: float | None = None  # from the spawn to the first committed source offset
    idle_cpu_seconds: float | None = None  # CPU over the ``idle_s`` after completion (run_mm2's argument)


def _topics(topic: str | Sequence[str]) -> list[str]:
    return [topic] if isinstance(topic, str) else list(topic)


def mm2_properties(
    source: str,
    target: str,
    topic: str | Sequence[str],
    *,
    alias: str,
    exactly_once: bool,
    tasks: int,
    rest_port: int | None = None,
    compression: str = "lz4",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The ``mm2.properties`` of one run: flow ``{alias}->target`` mirroring only ``topic`` (or each of several)."""
    flow = f"{alias}->{TARGET_ALIAS}"
    props = {
        "clusters": f"{alias}, {TARGET_ALIAS}",
        f"{alias}.bootstrap.servers": source,
        f"{TARGET_ALIAS}.bootstrap.servers": target,
        f"{flow}.enabled": "true",
        # DefaultTopicFilter matches whole names against a regex; [.] keeps a dot literal without a
        # backslash, which a properties file would eat.
        f"{flow}.topics": "^(" + "|".join(t.replace(".", "[.]") for t in _topics(topic)) + ")$",
        "tasks.max": str(tasks),
        # Single-broker clusters: the target topic and Connect's internal topics get one replica.
        "replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        # No offset-syncs.topic.replication.factor: any offset-syncs.topic.* key together with
        # emit.offset-syncs.enabled=false fails MirrorSourceConnector's validation.
        # One partition each (default 25 and 5): one small topic set per run, and one partition to read.
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        # Only the data flow. A global emit.heartbeats.enabled=false also keeps MM2 from starting a
        # second herder target->alias just to emit heartbeats into the source cluster.
        "emit.heartbeats.enabled": "false",
        "emit.checkpoints.enabled": "false",
        "sync.group.offsets.enabled": "false",
        "emit.offset-syncs.enabled": "false",
        "sync.topic.configs.enabled": "false",
        "sync.topic.acls.enabled": "false",
        "refresh.topics.enabled": "false",  # the topic exists at start; MirrorSourceConnector loads it then
        "refresh.groups.enabled": "false",
        # Worker settings come from the target cluster's keys. Source offsets are committed every second
        # (default 60 s) so that the completion check (see OffsetsReader) lags the data by at most 1 s in
        # at-least-once mode; exactly-once commits them in every transaction anyway.
        f"{TARGET_ALIAS}.offset.flush.interval.ms": "1000",
        # The target written with the codec mirror-sink's producers use, so both store alike.
        f"{TARGET_ALIAS}.producer.compression.type": compression,
        # Kafka's own advice (a WARN at start-up: every plugin on the class path has a ServiceLoader
        # manifest). The default, hybrid_warn, scans all ~90 jars reflectively, once for MirrorMakerConfig
        # (top-level key) and once per herder (worker key): ~8 s more start-up and a heap grown to ~1.5 GB.
        # Pass {"plugin.discovery": "hybrid_warn", "target.plugin.discovery": "hybrid_warn"} as ``extra``
        # to measure MM2 exactly as shipped.
        "plugin.discovery": "service_load",
        f"{TARGET_ALIAS}.plugin.discovery": "service_load",
    }
    if exactly_once:
        if rest_port is None:
            raise ValueError("exactly-once needs rest_port for the internal REST server")
        props |= {
            f"{TARGET_ALIAS}.exactly.once.source.support": "enabled",
            "dedicated.mode.enable.internal.rest": "true",
            "listeners": f"http://127.0.0.1:{rest_port}",
            f"{alias}.consumer.isolation.level": "read_committed",
        }
    return props | dict(extra or {})


def write_properties(path: Path, props: Mapping[str, str]) -> None:
    path.write_text("".join(f"{k} = {v}\n" for k, v in props.items()))


def java_command(jars: KafkaJars, props: Path, log4j2: Path, heap: str) -> list[str]:
    """MirrorMaker 2's command line as kafka-run-class.sh builds it: ``KAFKA_JVM_PERFORMANCE_OPTS`` when
    set (the test suite sets C1 and the serial collector for its short-lived JVMs), else the script's
    default."""
    java = os.environ.get("JAVA", "java")
    performance = os.environ.get("KAFKA_JVM_PERFORMANCE_OPTS", "").split() or list(JVM_OPTS)
    return [
        java, "-Xms256m", f"-Xmx{heap}", *performance, f"-Dlog4j2.configurationFile={log4j2}",
        "-cp", jars.classpath, MAIN_CLASS, str(props),
    ]  # fmt: skip


def _consumer(bootstrap: str, isolation: str) -> Consumer:
    return reader(bootstrap, "mirror-sink-bench-mm2", isolation=isolation)


def source_extent(bootstrap: str, topic: str, isolation: str) -> dict[int, tuple[int, int, int | None]]:
    """Per partition: (log start, end offset, offset of the last record MM2 will copy, None if none).

    The last record is found by reading the tail (a growing window back from the end) with MM2's own
    isolation level: a transactional source ends with a commit marker, and under read_committed aborted
    records are skipped, so the end offset minus one need not be a record that MM2 ever sees.
    """
    consumer = _consumer(bootstrap, isolation)
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        bounds = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30) for p in partitions}
        last: dict[int, int | None] = {p: None for p in partitions}
        pending = {p for p, (lo, hi) in bounds.items() if hi > lo}
        window = 64
        while pending:
            starts = {p: max(bounds[p][0], bounds[p][1] - window) for p in pending}
            consumer.assign([TopicPartition(topic, p, o) for p, o in starts.items()])
            reading = set(pending)
            deadline = time.monotonic() + 60
            while reading:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"reading the tail of {topic!r}: partitions {sorted(reading)} not at EOF")
                for msg in consumer.consume(1000, 0.5):
                    err, p = msg.error(), msg.partition() or 0
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            raise KafkaException(err)
                        reading.discard(p)
                    elif p in reading:
                        last[p] = max(last[p] or 0, msg.offset() or 0)
            pending = {p for p in pending if last[p] is None and starts[p] > bounds[p][0]}
            window *= 8
        return {p: (lo, hi, last[p]) for p, (lo, hi) in bounds.items()}
    finally:
        consumer.close()


class OffsetsReader:
    """MM2's committed source offsets for ``topics``, read incrementally from the Connect offsets topic.

    Completion criterion: every partition's committed upstream offset has reached the last record MM2
    will copy. MirrorSourceTask commits, per source partition, the upstream offset of the last record it
    handed to Connect; Connect commits an offset only once the producer has acknowledged every record up
    to it (at-least-once) or writes it in the same transaction as those records (exactly-once; read here
    with read_committed, so only committed transactions count). So a committed offset is a proof that the
    target holds every record up to it, committed. Target end offsets are not: with transactions they
    also count one commit marker per transaction and partition, and without them a retried (duplicated)
    batch would count twice. Counting the target's records with a consumer is exact but reads the whole
    topic. The offsets topic, by contrast, holds a few bytes per partition and commit.
    """

    def __init__(self, target: str, alias: str, topics: Sequence[str]) -> None:
        self.offsets_topic = f"mm2-offsets.{alias}.internal"
        self.alias = alias
        self.topics = set(topics)
        self.committed: dict[tuple[str, int], int] = {}
        self._consumer = _consumer(target, "read_committed")
        self._assigned = False

    def poll(self) -> dict[tuple[str, int], int]:
        """Read what was committed since the last call; returns upstream offset by source (topic, partition)."""
        if not self._assigned:
            try:
                md = self._consumer.list_topics(self.offsets_topic, timeout=5).topics.get(self.offsets_topic)
            except KafkaException:  # a metadata request timed out on a loaded machine: ask at the next poll
                return self.committed
            if md is None or md.error is not None or not md.partitions:
                return self.committed
            self._consumer.assign([TopicPartition(self.offsets_topic, p, OFFSET_BEGINNING) for p in md.partitions])
            self._assigned = True
        while True:
            msgs = self._consumer.consume(10_000, 0.05)
            for msg in msgs:
                if msg.error() is not None or msg.key() is None:
                    continue
                key = json.loads(msg.key() or b"null")  # ["MirrorSourceConnector", {cluster, partition, topic}]
                if not (isinstance(key, list) and len(key) == 2 and isinstance(key[1], dict)):
                    continue
                part = key[1]
                if part.get("cluster") != self.alias or part.get("topic") not in self.topics:
                    continue
                value = json.loads(msg.value() or b"null")  # {"offset": n}, or a tombstone
                if isinstance(value, dict) and isinstance(value.get("offset"), int):
                    self.committed[(part["topic"], int(part["partition"]))] = value["offset"]
            if not msgs:
                return self.committed

    def close(self) -> None:
        """Close the consumer."""
        self._consumer.close()


def stop_process(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """SIGTERM (MM2's shutdown hook stops the herders), SIGKILL if it is still there after ``timeout_s``."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(30)


@dataclass
class MM2Process:
    """A running MM2 (see ``start_mm2``)."""

    proc: subprocess.Popen[bytes]
    alias: str
    target_topic: str
    log: Path
    started: float  # time.monotonic() just before the JVM was spawned

    def stop(self, timeout_s: float = 60) -> None:
        """SIGTERM, SIGKILL after ``timeout_s``."""
        stop_process(self.proc, timeout_s)


def start_mm2(
    source: str,
    target: str,
    topic: str | Sequence[str],
    *,
    exactly_once: bool,
    workdir: Path,
    tasks: int,
    compression: str = "lz4",
    extra: Mapping[str, str] | None = None,
    heap: str = "2g",
    create_target_topics: bool = False,
) -> MM2Process:
    """Start MM2 mirroring ``topic`` in the background (files ``{alias}.*`` in ``workdir``); ``{alias}`` in
    a key of ``extra`` stands for the source cluster's alias, which each run picks.

    ``create_target_topics``: create MM2's target topics first, as an operator would have to when
    MM2 cannot: it creates every new topic in one CreateTopics request, which a KRaft controller
    refuses above 10,000 records ("excessively large batch operation"; 100 topics of 100
    partitions are 10,100), and does not try again until its next topic refresh, which fails the same way.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    alias = f"mm2{'eos' if exactly_once else 'alo'}{time.time_ns() // 1_000_000}"
    if create_target_topics:
        _create_target_topics(source, target, alias, _topics(topic))
    props = mm2_properties(
        source, target, topic, alias=alias, exactly_once=exactly_once, tasks=tasks,
        rest_port=free_port() if exactly_once else None, compression=compression,
        extra={k.replace("{alias}", alias): v for k, v in (extra or {}).items()},
    )  # fmt: skip
    props_path, log4j2_path, log_path = (workdir / f"{alias}{s}" for s in (".properties", ".log4j2.properties", ".log"))
    write_properties(props_path, props)
    log4j2_path.write_text(LOG4J2)
    cmd = java_command(KafkaJars.ensure(), props_path, log4j2_path, heap)
    with open(log_path, "wb") as log:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    reap_with_this_process(pid=proc.pid)
    return MM2Process(proc, alias, f"{alias}.{_topics(topic)[0]}", log_path, started)


def _create_target_topics(source: str, target: str, alias: str, topics: Sequence[str]) -> None:
    """MM2's target topics (``{alias}.{topic}``, the source's partition counts), in requests a KRaft
    controller accepts (the provisioner's ``by_partitions``)."""
    listed = AdminClient({"bootstrap.servers": source}).list_topics(timeout=60).topics
    admin = AdminClient({"bootstrap.servers": target})
    new = [NewTopic(f"{alias}.{t}", len(listed[t].partitions), 1) for t in topics]
    for batch in by_partitions(new, lambda topic: topic.num_partitions):
        for future in admin.create_topics(batch, request_timeout=120).values():
            future.result(180)


def run_mm2(
    source: str,
    target: str,
    topic: str | Sequence[str],
    *,
    exactly_once: bool,
    workdir: Path,
    tasks: int,
    timeout_s: float = 900,
    on_progress: Callable[[int, int], None] | None = None,
    compression: str = "lz4",
    extra: Mapping[str, str] | None = None,
    heap: str = "2g",
    stop_timeout_s: float = 60,
    idle_s: float = 0.0,
    create_target_topics: bool = False,
) -> MM2Run:
    """Mirror ``topic`` from ``source`` to ``target`` with a fresh MM2 process and measure it.

    Starts MM2 (files ``{alias}.properties``, ``{alias}.log`` in ``workdir``), waits until its committed
    source offsets cover every record of ``topic`` as it stood at the start, calling
    ``on_progress(done, total)`` (in source offsets) every 0.5 s, then stops it (SIGTERM, SIGKILL after
    ``stop_timeout_s``). ``extra`` adds or overrides mm2.properties keys. Raises if MM2 exits early or
    ``timeout_s`` passes first; a benchmark process that dies takes the JVM with it. With ``idle_s``, MM2
    keeps running that long after completion, and its CPU then (metadata refreshes, commits of nothing)
    is ``idle_cpu_seconds``. ``topic`` may be several topics, all mirrored by the one flow.
    """
    isolation = "read_committed" if exactly_once else "read_uncommitted"
    extent = {(t, p): bounds for t in _topics(topic) for p, bounds in source_extent(source, t, isolation).items()}
    total = sum(hi - lo for lo, hi, _ in extent.values())
    mm2 = start_mm2(
        source, target, topic, exactly_once=exactly_once, workdir=workdir, tasks=tasks,
        compression=compression, extra=extra, heap=heap, create_target_topics=create_target_topics,
    )  # fmt: skip
    proc, started, log_path, target_topic = mm2.proc, mm2.started, mm2.log, mm2.target_topic
    offsets = OffsetsReader(target, mm2.alias, _topics(topic))
    first_commit_s = idle_cpu = None
    try:
        sampler = ProcessTree(proc.pid)
        while True:
            time.sleep(SAMPLE_S)
            sampler.sample()
            committed = offsets.poll()
            if committed and first_commit_s is None:
                first_commit_s = time.monotonic() - started
            done = sum(max(0, min(committed.get(p, lo - 1) + 1, hi) - lo) for p, (lo, hi, _) in extent.items())
            if all(last is None or committed.get(p, -1) >= last for p, (_, _, last) in extent.items()):
                seconds = time.monotonic() - started
                sampler.sample()
                if on_progress is not None:
                    on_progress(total, total)
                if idle_s:
                    # As bench.scenarios.shapes: the last commit's work ends first.
                    idle_cpu = sampler.idle(idle_s, IDLE_SETTLE_S)
                break
            if on_progress is not None:
                on_progress(done, total)
            if proc.poll() is not None:
                raise RuntimeError(f"MM2 exited with {proc.returncode}; see {log_path}\n{tail(log_path)}")
            if time.monotonic() - started > timeout_s:
                raise TimeoutError(f"MM2 mirrored {done:,} of {total:,} offsets in {timeout_s:.0f} s; see {log_path}")
    finally:
        offsets.close()
        stop_process(proc, stop_timeout_s)
    cpu = sampler.cpu_seconds() - (idle_cpu or 0.0)
    return MM2Run(seconds, cpu, sampler.peak_rss_bytes, target_topic, total, log_path, first_commit_s, idle_cpu)
