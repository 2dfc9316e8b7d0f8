"""What a commit costs against the number of partitions its transaction touched: the transaction markers.

    .venv/bin/python -m bench.markers                    # a local target broker, 20 commits per size
    .venv/bin/python -m bench.markers --transactions 10 --partitions 1,10,100
    .venv/bin/python -m bench.markers --target host:9092 # a given cluster (one topic of 1,000 partitions is created)

When a transaction commits (EndTxn), the coordinator writes the PrepareCommit to its log, answers,
and only then writes a COMMIT marker to every partition the transaction touched. Until all of them
are written the producer's next AddPartitionsToTxn is refused with CONCURRENT_TRANSACTIONS, and
the client retries (mirror-sink's raw ``TransactionClient``: backoff from 5 ms doubling up to
0.5 s). At 1,000 partitions that wait was 3.5-8 s per commit on a 2-core machine
(docs/benchmarks.md, "At scale").

With transactions version 2 (KIP-890 part 2, the default of Kafka 4.0+ targets) there is no
AddPartitionsToTxn: the leader adds a partition when its first batch arrives, and refuses that
batch (CONCURRENT_TRANSACTIONS) while the previous transaction's markers are written. The wait moves
into the Produce. Both protocols are measured in one run on the same target (``--protocols``), in
turns (``TURNS`` per P), so that neither gains from a broker warmed up by the other.

For each protocol and each number P of partitions touched (``--partitions``), ``--transactions`` +
1 transactions are written with raw mode's own clients (``WireClient``, ``TransactionClient``,
``ProducePipeline``), each one small record batch (about 400 bytes) to each of the first P
partitions of one 1,000-partition topic, then committed. Per transaction it measures:

- ``add``: version 1's AddPartitionsToTxn until accepted, retries included: the previous
  transaction's marker wait as a client sees it (an upper bound, late by up to one backoff step);
  0 in version 2;
- ``produce``: the batches sent until all are acknowledged (in version 2, the marker wait included);
- ``commit``: the EndTxn call, from outside;
- ``transaction``: the three together, what a commit cycle pays for its transaction;
- ``last refusal``: version 1, when the last refused AddPartitionsToTxn answer of the add arrived
  (a lower bound of the marker wait; 0 when the first attempt was accepted), and how many were refused.

The first transaction of each P only absorbs the previous P's markers and is not counted. Only the
target cluster is used: without ``--target`` a single local KRaft broker is started under
``--workdir`` and discarded at the end. Prints a table and writes JSON to ``--out``. Not a test.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from devkafka.cluster import LocalKafkaCluster
from devkafka.data import client_settings, create_topic
from devkafka.jars import KafkaJars
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.wire import NodeId, WireClient
from mirror_sink.raw.writer import RawWriter

ROOT = Path(__file__).resolve().parent.parent
PARTITIONS = (1, 10, 100, 300, 1000)
RECORDS_PER_BATCH = 4
VALUE_BYTES = 64


class AddPartitionsLog(WireClient):
    """A WireClient noting when each AddPartitionsToTxn answer arrived and whether it was refused."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: (monotonic time of the answer, refused) of each AddPartitionsToTxn since the last clear.
        self.answers: list[tuple[float, bool]] = []

    def call(self, node: NodeId, request: Any, what: str, timeout_s: float = 30.0) -> Any:
        response = super().call(node, request, what, timeout_s)
        if what == "AddPartitionsToTxn":
            refused = any(
                x.partition_error_code for t in response.results_by_topic_v3_and_below for x in t.results_by_partition
            )
            self.answers.append((time.monotonic(), refused))
        return response


@dataclass
class Sample:
    """One transaction, in seconds."""

    add_s: float  # version 1's AddPartitionsToTxn until accepted (the previous markers' wait); 0 in version 2
    produce_s: float  # its batches sent and acknowledged (version 2: the markers' wait included)
    commit_s: float  # EndTxn
    last_refusal_s: float  # version 1: when the add's last refused attempt was answered (0: none refused)
    refusals: int
    at_s: float  # when it started, seconds since the producer started (to line up with other load)

    @property
    def transaction_s(self) -> float:
        """What the transaction cost its cycle: add, produce and commit."""
        return self.add_s + self.produce_s + self.commit_s


@dataclass
class Summary:
    """Median and p90 in milliseconds of one protocol's and P's samples."""

    protocol: int
    partitions: int
    commits: int
    add_ms: float
    produce_ms: float
    commit_ms: float
    commit_p90_ms: float
    transaction_ms: float
    transaction_p90_ms: float
    transaction_per_partition_ms: float
    last_refusal_ms: float
    refusals: float
    samples: list[Sample] = field(default_factory=list)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0 < q <= 100) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def summarize(protocol: int, partitions: int, samples: Sequence[Sample]) -> Summary:
    """Medians (and p90s of the commit and the whole transaction) of ``samples``, in ms."""

    def ms(values: Sequence[float], q: float = 50) -> float:
        return round(1000 * (statistics.median(values) if q == 50 else percentile(values, q)), 2)

    totals = [s.transaction_s for s in samples]
    commits = [s.commit_s for s in samples]
    return Summary(
        protocol=protocol,
        partitions=partitions,
        commits=len(samples),
        add_ms=ms([s.add_s for s in samples]),
        produce_ms=ms([s.produce_s for s in samples]),
        commit_ms=ms(commits),
        commit_p90_ms=ms(commits, 90),
        transaction_ms=ms(totals),
        transaction_p90_ms=ms(totals, 90),
        transaction_per_partition_ms=round(1000 * statistics.median(totals) / partitions, 3),
        last_refusal_ms=ms([s.last_refusal_s for s in samples]),
        refusals=statistics.median(s.refusals for s in samples),
        samples=list(samples),
    )


def small_batch() -> bytes:
    """One uncompressed v2 batch of a few small records (the pipeline stamps producer id, epoch, sequence)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 16,
    )
    now = int(time.time() * 1000)
    for i in range(RECORDS_PER_BATCH):
        builder.append(i, now, f"key-{i}".encode(), bytes(VALUE_BYTES), [])
    return bytes(builder.build())


class MarkerBench:
    """One transactional producer on the target, writing transactions over the first P partitions of ``topic``."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, protocol: int) -> None:
        self.topic = topic
        self.writer = RawWriter.open(
            client_settings(bootstrap),
            client_id="bench-markers",
            budget=MemoryBudget(0),
            transactional_id=f"bench-markers-{uuid.uuid4().hex[:8]}",
            transaction_timeout_ms=120_000,
            group_id="unused",
            request_max_bytes=16 << 20,
            version=protocol,
            wire_class=AddPartitionsLog,
        )
        assert isinstance(self.writer.wire, AddPartitionsLog)
        self.wire = self.writer.wire
        self.txn, self.producer = self.writer.transactions, self.writer.pipeline
        if self.txn.version != protocol:
            raise SystemExit(f"the target does not speak transactions version {protocol}")
        self.batch = small_batch()
        self.started = time.monotonic()
        self.writer.committer.start()  # InitProducerId; the pipeline stamps its batches with the epoch
        while any(self.wire.leader(topic, p) is None for p in range(partitions)):  # metadata: not timed
            self.wire.poll(0.1)

    def close(self) -> None:
        """Close the connections (no transaction is left open: each one is committed)."""
        self.writer.close()

    def transaction(self, partitions: int) -> Sample:
        """One transaction over partitions 0..P-1."""
        tps = [TargetPartition(self.topic, p) for p in range(partitions)]
        self.wire.answers.clear()
        started = time.monotonic()
        if self.txn.version == 1:  # version 2: each partition joins with its first Produce
            self.txn.add_partitions(tps)
        added = time.monotonic()
        refused = [at for at, was_refused in self.wire.answers if was_refused]
        for tp in tps:  # each send rewrites its batch in place: a copy each
            self.producer.send(tp, memoryview(bytearray(self.batch)), RECORDS_PER_BATCH, 0, None)
        self.producer.flush()
        produced = time.monotonic()
        self.txn.end(commit=True)
        committed = time.monotonic()
        if self.txn.transaction.epoch_changed:  # version 2: the next transaction writes with EndTxn's new epoch
            self.txn.transaction.epoch_changed = False
            self.producer.new_epoch()
        self.txn.transaction.end_cycle()
        return Sample(
            add_s=added - started,
            produce_s=produced - added,
            commit_s=committed - produced,
            last_refusal_s=refused[-1] - started if refused else 0.0,
            refusals=len(refused),
            at_s=round(started - self.started, 3),
        )

    def measure(self, partitions: int, commits: int) -> list[Sample]:
        """``commits`` + 1 transactions over P partitions; the first only absorbs the markers before it."""
        self.transaction(partitions)
        return [self.transaction(partitions) for _ in range(commits)]


#: Each protocol's transactions per P are measured in this many turns, the protocols taking turns,
#: so that neither gains from running second on a broker that warmed up under the other.
TURNS = 4


def measure_in_turns(benches: Sequence[MarkerBench], partitions: int, commits: int) -> list[Summary]:
    """``commits`` transactions over P partitions per bench, the benches taking ``TURNS`` turns."""
    samples: dict[int, list[Sample]] = {id(b): [] for b in benches}
    per_turn = max(1, commits // TURNS)
    while any(len(found) < commits for found in samples.values()):
        for bench in benches:
            found = samples[id(bench)]
            found += bench.measure(partitions, min(per_turn, commits - len(found)))
    return [summarize(b.txn.version, partitions, samples[id(b)]) for b in benches]


@contextmanager
def target_cluster(workdir: Path, given: str | None) -> Iterator[str]:
    """The given bootstrap servers, or a single local KRaft broker started under ``workdir`` and discarded after."""
    if given:
        yield given
        return
    cluster = LocalKafkaCluster("target", workdir / "target", KafkaJars.ensure())
    print("starting a local target broker...", flush=True)
    try:
        cluster.start(timeout=180)
        yield cluster.bootstrap_servers
    finally:
        cluster.stop(hard=True)
        shutil.rmtree(workdir / "target", ignore_errors=True)


def loadavg() -> str:
    """The machine's 1, 5 and 15 minute load averages (other work on a shared machine skews the numbers)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def render(summaries: Sequence[Summary]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| transactions version | partitions | commits | add ms | produce ms | EndTxn ms (median / p90) "
        "| transaction ms (median / p90) | per partition ms | version 1's refused adds |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in summaries:
        lines.append(
            f"| {s.protocol} | {s.partitions} | {s.commits} | {s.add_ms:.1f} | {s.produce_ms:.1f} "
            f"| {s.commit_ms:.1f} / {s.commit_p90_ms:.1f} | {s.transaction_ms:.1f} / {s.transaction_p90_ms:.1f} "
            f"| {s.transaction_per_partition_ms:.3f} | {s.refusals:g} |"
        )
    return "\n".join(lines)


def main() -> int:
    """Measure each P, print the table, write the JSON; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transactions", type=int, default=20, help="commits measured per partition count")
    parser.add_argument(
        "--partitions", default=",".join(map(str, PARTITIONS)), help="comma-separated partition counts (max 1000)"
    )
    parser.add_argument(
        "--protocols", default="1,2", help="transaction protocol versions to measure, in turn (2 needs a 4.0+ target)"
    )
    parser.add_argument("--target", help="target bootstrap servers (default: a local broker started here)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "markers.json")
    parser.add_argument("--workdir", type=Path, default=ROOT / "bench" / "results" / "markers")
    args = parser.parse_args()
    counts = [int(p) for p in args.partitions.split(",")]
    if any(not 1 <= p <= max(PARTITIONS) for p in counts) or args.transactions < 1:
        parser.error(f"partition counts must be 1..{max(PARTITIONS)} and --transactions at least 1")
    load_before = loadavg()
    started = time.time()
    summaries: list[Summary] = []
    with target_cluster(args.workdir, args.target) as bootstrap:
        topic = f"bench-markers-{int(started)}"
        create_topic(bootstrap, topic, max(PARTITIONS), timeout=180)
        benches = [MarkerBench(bootstrap, topic, max(counts), int(v)) for v in args.protocols.split(",")]
        try:
            for p in counts:
                for summary in measure_in_turns(benches, p, args.transactions):
                    print(
                        f"version {summary.protocol}, P={p}: transaction {summary.transaction_ms:.1f} ms, "
                        f"EndTxn {summary.commit_ms:.1f} ms (median)",
                        flush=True,
                    )
                    summaries.append(summary)
        finally:
            for bench in benches:
                bench.close()
    load_after = loadavg()
    table = render(summaries)
    print(table)
    print(f"load average (1/5/15 min) before: {load_before}; after: {load_after}")
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
        "command": " ".join([".venv/bin/python -m bench.markers", *sys.argv[1:]]),
        "target": args.target or "local single-broker KRaft cluster",
        "batch_bytes": len(small_batch()),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "seconds": round(time.time() - started, 1),
        "results": [asdict(s) for s in summaries],
        "table": table,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
