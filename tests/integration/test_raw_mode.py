"""Raw mode (KIP-712) on real brokers: bytes kept, the per-batch fallback, the memory budget."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from functools import partial

import psutil
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from devkafka.data import ProduceSpec, Rec, produce, produce_transactions, read_all
from devkafka.endpoints import KafkaEndpoint
from mirror_sink.raw.forwarder import SAMPLE_BATCHES
from mirror_sink.raw.wire.batches import HEADER_SIZE
from tests.integration.conftest import MirrorFactory
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import assert_exact_mirror, shadow_caught_up
from tests.integration.harness.processes import MirrorProcess
from tests.integration.harness.records import committed_data_batches, tricky_records
from tests.integration.harness.topics import TopicFactory, Unique, compacted_with_gaps
from tests.integration.harness.waiting import wait_until

RAW = {"mirror.mode": "raw"}


def _final_progress(proc: MirrorProcess) -> str:
    lines = [line for line in proc.log_text().splitlines() if "raw mode:" in line]
    assert lines, proc.log_tail()
    return lines[-1]


def test_every_codec_keeps_its_compressed_bytes_and_the_target_topics_their_settings(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    name, prefix = unique("codecs"), unique("codec")
    codecs = ["none", "gzip", "snappy", "lz4", "zstd"]
    topic_config = {"cleanup.policy": "compact,delete", "retention.ms": "315360000000", "max.message.bytes": "2000000"}
    topics: dict[str, str] = {}
    for codec in codecs:
        topic = topics[codec] = new_topic(f"{prefix}-{codec}", 2, topic_config)
        # Several batches per partition, with keys, nulls, headers and timestamps in them.
        spec = ProduceSpec(compression=codec, batch_bytes=4096)
        produce(source.bootstrap_servers, topic, tricky_records(2, 300, null_keys=False), spec)
    proc = mirror(mirror_config(name, source, target, rf"{prefix}-.*", **RAW)).start()
    try:
        group = f"connect-{name}"
        for codec in codecs:
            topic = topics[codec]
            wait_until(partial(shadow_caught_up, source, topic, target, f"source.{topic}", group), 60, topic)
            assert_exact_mirror(source, topic, target, f"source.{topic}", group)
    finally:
        assert proc.stop() == 0, proc.log_tail()
    assert "starting in raw mode" in proc.log_text()
    assert "re-encoded: none" in _final_progress(proc)
    for codec in codecs:
        topic = topics[codec]
        for p in range(2):
            src = committed_data_batches(source.bootstrap_servers, topic, p)
            dst = committed_data_batches(target.bootstrap_servers, f"source.{topic}", p)
            assert len(src) > 1 and len(dst) == len(src), f"{topic}-{p}: {len(src)} source, {len(dst)} target batches"
            for i, (a, b) in enumerate(zip(src, dst, strict=True)):
                assert a[21] & 0x07 == b[21] & 0x07, f"{topic}-{p} batch {i}: codec changed"
                assert a[HEADER_SIZE:] == b[HEADER_SIZE:], f"{topic}-{p} batch {i}: payload bytes differ"
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    res = ConfigResource(ConfigResource.Type.TOPIC, f"source.{topics['lz4']}")
    configs = admin.describe_configs([res])[res].result(30)
    assert {k: configs[k].value for k in topic_config} == topic_config, "copied from the source topic"
    assert configs["message.timestamp.type"].value == "CreateTime"
    assert configs["compression.type"].value == "producer", "the target broker keeps each batch's codec and bytes"


def test_a_compacted_source_with_offset_gaps_mirrors_exactly(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    name, topic = unique("compacted"), compacted_with_gaps(new_topic, source, "compacted", "lz4")
    proc = mirror(mirror_config(name, source, target, topic, **RAW)).start()
    try:
        group = f"connect-{name}"
        wait_until(partial(shadow_caught_up, source, topic, target, f"source.{topic}", group), 60, "catch up")
        assert_exact_mirror(source, topic, target, f"source.{topic}", group)
    finally:
        assert proc.stop() == 0, proc.log_tail()
    assert re.search(r"re-encoding a batch of \S+-0 \(offset gaps", proc.log_text()), proc.log_tail()
    assert re.search(r"re-encoded: \d+ compacted", _final_progress(proc))


def test_a_start_inside_a_batch_mirrors_only_the_records_from_there(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    name, topic, group = unique("midbatch"), new_topic("midbatch", 1), unique("app")
    records = [Rec(b"k%d" % i, b"value-%d" % i) for i in range(100)]
    produce(source.bootstrap_servers, topic, records, ProduceSpec(compression="zstd", linger_ms=200))
    assert len(committed_data_batches(source.bootstrap_servers, topic, 0)) == 1, "one batch holds every record"
    app = Consumer({"bootstrap.servers": source.bootstrap_servers, "group.id": group})
    app.commit(offsets=[TopicPartition(topic, 0, 37)], asynchronous=False)
    app.close()
    config = mirror_config(
        name, source, target, topic, **RAW, **{"offset.fallback": "source-group", "offset.fallback.group.id": group}
    )
    proc = mirror(config).start()
    try:
        wait_until(partial(shadow_caught_up, source, topic, target, f"source.{topic}", f"connect-{name}"), 60, "mirror")
    finally:
        assert proc.stop() == 0, proc.log_tail()
    mirrored = read_all(target.bootstrap_servers, f"source.{topic}")[0]
    assert [r.content() for r in mirrored] == [r.content() for r in read_all(source.bootstrap_servers, topic)[0][37:]]
    assert "re-encoded: 1 mid-batch start" in _final_progress(proc)


def test_a_batch_over_the_target_topics_limit_is_split_until_a_raised_limit_reaches_the_task(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    """The target topic's max.message.bytes travels with the topic mappings: a source batch larger
    than it is re-encoded into batches that fit, and once an operator raises it, the next topic
    refresh hands the new limit to the task, which then forwards such a batch whole."""
    name, topic = unique("limit"), new_topic("limit", 1)
    limit = 8000
    target_topic = new_topic("source.limit", 1, {"max.message.bytes": str(limit)}, on=target)  # f"source.{topic}"
    one_batch = ProduceSpec(linger_ms=500)  # random values: no codec shrinks the batch under the limit

    def batch_of_50(first: int) -> list[Rec]:
        return [Rec(b"k%d" % i, os.urandom(400)) for i in range(first, first + 50)]

    produce(source.bootstrap_servers, topic, batch_of_50(0), one_batch)
    source_batches = committed_data_batches(source.bootstrap_servers, topic, 0)
    assert len(source_batches) == 1 and len(source_batches[0]) > limit, [len(b) for b in source_batches]
    settings = {"sync.topic.configs.enabled": "false", "refresh.topics.interval.ms": "500"}
    proc = mirror(mirror_config(name, source, target, topic, **RAW, **settings)).start()
    group = f"connect-{name}"
    try:
        wait_until(partial(shadow_caught_up, source, topic, target, target_topic, group), 60, "the first batch")
        split = committed_data_batches(target.bootstrap_servers, target_topic, 0)
        assert len(split) > 2 and all(len(b) <= limit for b in split), [len(b) for b in split]
        assert f"over the target's max.message.bytes {limit}" in proc.log_text(), proc.log_tail()

        admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
        raise_it = ConfigEntry("max.message.bytes", "1000000", incremental_operation=AlterConfigOpType.SET)
        raised = ConfigResource(ConfigResource.Type.TOPIC, target_topic, incremental_configs=[raise_it])
        admin.incremental_alter_configs([raised])[raised].result(30)
        wait_until(lambda: "topic mappings changed" in proc.log_text(), 30, "a topic refresh to read the new limit")
        produce(source.bootstrap_servers, topic, batch_of_50(50), one_batch)
        wait_until(partial(shadow_caught_up, source, topic, target, target_topic, group), 60, "the second batch")
        assert_exact_mirror(source, topic, target, target_topic, group)
    finally:
        assert proc.stop() == 0, proc.log_tail()
    second = committed_data_batches(source.bootstrap_servers, topic, 0)[1]
    last = committed_data_batches(target.bootstrap_servers, target_topic, 0)[-1]
    assert last[HEADER_SIZE:] == second[HEADER_SIZE:], "forwarded whole, its bytes kept"
    assert "re-encoded: 1 too large" in _final_progress(proc)


BUDGET = 24 * 1024 * 1024
#: What a busy mirror holds beyond its warmed-up idle footprint and the budget. The budget charges
#: every response frame whole while any of its batches is queued or unacknowledged, and nothing
#: else holds batch bytes (responses are read in place and Produce requests are sent from the
#: frames, see mirror_sink.raw.wire.receive and .send); what is left is the decoded responses, small
#: responses' copies, the connections' scratch buffers and the allocator's slack. Measured: 28 MiB
#: of growth on a 24 MiB budget, run after run alone or beside the kafka tier, and once 36 MiB in a
#: clean-clone run with three test workers on two cores (file-backed pages do not move: the growth
#: is heap). An unbounded fetcher would grow by the 80 MB written, so this bound still tells them apart.
BUSY_OVERHEAD = 16 * 1024 * 1024
#: The fixed overhead for operators: the idle footprint (about 70 MiB: interpreter, librdkafka's
#: clients, kafka-python) plus BUSY_OVERHEAD, with room for another machine's libraries.
FIXED_OVERHEAD = 100 * 1024 * 1024


class RssSampler:
    """Samples a process's resident set size every 20 ms in a background thread."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = 0
        self.peak_shared = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.is_set():
            try:
                m = self.process.memory_info()
                self.peak = max(self.peak, m.rss)
                self.peak_shared = max(self.peak_shared, m.shared)
            except psutil.NoSuchProcess:
                return
            time.sleep(0.02)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(5)


def test_memory_stays_within_the_budget_whatever_the_partition_count_and_fetch_sizes(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    partitions = 200
    name, topic = unique("memory"), new_topic("memory", partitions)
    config = mirror_config(
        name,
        source,
        target,
        topic,
        **RAW,
        **{
            "buffer.memory": str(BUDGET),
            "source.cluster.consumer.fetch.max.bytes": str(500 << 20),
            "source.cluster.consumer.max.partition.fetch.bytes": str(50 << 20),
            # The mirror is frozen while the data is written: it must stay in its group meanwhile.
            "target.cluster.consumer.session.timeout.ms": "45000",
        },
    )
    proc = mirror(config).start()
    group = f"connect-{name}"
    # Warmed up on a record per partition first, so that what is measured idle already holds what
    # a mirror creates once, on its first data (the target's admin client, connections, codecs).
    warm_up = [Rec(None, b"warm-up", partition=p) for p in range(partitions)]
    produce(source.bootstrap_servers, topic, warm_up)
    wait_until(partial(shadow_caught_up, source, topic, target, f"source.{topic}", group), 60, "the warm-up")
    with RssSampler(proc.pid) as idle:
        time.sleep(1)
    # Frozen while 200 partitions x 400 KB of incompressible data (80 MB) are written, so that it
    # then faces all of it at once: with these fetch sizes an unbounded fetcher would hold it all.
    proc.signal(signal.SIGSTOP)
    try:
        records = [Rec(None, os.urandom(20_000), partition=p) for p in range(partitions) for _ in range(20)]
        produce(source.bootstrap_servers, topic, records, ProduceSpec(batch_bytes=200_000))
    finally:
        proc.signal(signal.SIGCONT)
    try:
        with RssSampler(proc.pid) as busy:
            wait_until(partial(shadow_caught_up, source, topic, target, f"source.{topic}", group), 180, "catch up")
    finally:
        assert proc.stop() == 0, proc.log_tail()
    mirrored = sum(len(v) for v in read_all(target.bootstrap_servers, f"source.{topic}").values())
    assert mirrored == len(warm_up) + len(records)
    budget_peak = float(re.findall(r"memory peak ([\d.]+) MB", _final_progress(proc))[-1]) * 1e6
    mib = 2**20
    print(
        f"RSS idle {idle.peak / mib:.1f} MiB (file-backed {idle.peak_shared / mib:.1f}), "
        f"peak {busy.peak / mib:.1f} MiB (file-backed {busy.peak_shared / mib:.1f}); "
        f"budget {BUDGET / mib:.0f} MiB, used at most {budget_peak / mib:.1f}"
    )
    assert budget_peak <= BUDGET + 2 * 200_000, "the fetcher kept within its budget (plus one oversized batch)"
    growth = busy.peak - idle.peak
    assert growth < BUDGET + BUSY_OVERHEAD, f"RSS grew {growth / mib:.0f} MiB while busy"
    assert busy.peak < BUDGET + FIXED_OVERHEAD, f"peak RSS {busy.peak / mib:.0f} MiB"


def test_auto_mode_turns_to_record_mode_when_the_source_s_batches_are_tiny(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    """Small source transactions leave batches of a record or two (under 100 bytes): after its first batches, auto
    mode goes on in record mode, from the committed offsets, and the mirror stays exact."""
    name, topic = unique("tiny"), new_topic("tiny", 2)
    transactions = [([Rec(b"k", f"{i}".encode(), partition=i % 2)], True) for i in range(SAMPLE_BATCHES + 300)]
    produce_transactions(source.bootstrap_servers, topic, transactions, ProduceSpec(transactional_id=f"{topic}-w"))
    proc = mirror(mirror_config(name, source, target, topic, **{"mirror.mode": "auto"})).start()
    try:
        group = f"connect-{name}"
        wait_until(partial(shadow_caught_up, source, topic, target, f"source.{topic}", group), 120, "catch up")
        assert_exact_mirror(source, topic, target, f"source.{topic}", group)
    finally:
        assert proc.stop() == 0, proc.log_tail()
    log = proc.log_text()
    assert "mirror.mode=auto switches to record mode: the first" in log, proc.log_tail()
    assert log.index("starting in raw mode") < log.index("starting in record mode"), "raw first, then record"
    assert "task FAILED" not in log and "recreating the task's clients" not in log


def test_on_a_version_2_target_each_transaction_writes_with_an_epoch_of_its_own(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, mirror: MirrorFactory
) -> None:
    """Transactions version 2 (KIP-890 part 2) on the wire: no AddPartitionsToTxn, and each EndTxn
    gives the next transaction a new epoch, so no late write of an ended transaction can join the next."""
    name, topic = unique("txv2"), new_topic("txv2", 2)
    config = mirror_config(name, source, target, topic, **RAW, **{"transaction.boundary.interval.ms": "100"})
    proc = mirror(config).start()
    group = f"connect-{name}"
    try:
        for round_ in range(6):  # separate source commits, far enough apart to be separate cycles
            produce_transactions(
                source.bootstrap_servers,
                topic,
                [([Rec(f"k{round_}-{i}".encode(), b"v" * 100, partition=i % 2) for i in range(20)], True)],
                ProduceSpec(transactional_id=unique("tx")),
            )
            wait_until(partial(shadow_caught_up, source, topic, target, f"source.{topic}", group), 60, "a round")
        assert_exact_mirror(source, topic, target, f"source.{topic}", group)
    finally:
        assert proc.stop() == 0, proc.log_tail()
    assert "transactions version 2" in proc.log_text(), proc.log_tail()
    for p in range(2):
        stamps = [
            (int.from_bytes(b[43:51], "big"), int.from_bytes(b[51:53], "big"))  # producer id, producer epoch
            for b in committed_data_batches(target.bootstrap_servers, f"source.{topic}", p)
        ]
        assert len({pid for pid, _ in stamps}) == 1, f"one task, one producer id: {stamps}"
        epochs = [epoch for _, epoch in stamps]
        assert epochs == sorted(epochs) and len(set(epochs)) >= 6, f"partition {p}: an epoch per transaction: {epochs}"
