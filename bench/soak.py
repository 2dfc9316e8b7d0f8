"""Soak: exactly once for half an hour of random faults on replicated clusters, with latency over time.

    .venv/bin/python -m bench.soak                          # 30 minutes; writes docs/soak.md and docs/data/soak.png
    .venv/bin/python -m bench.soak --minutes 5 --out /tmp/soak   # a short run elsewhere

Two clusters of three nodes each (``devkafka.replicated``: replication factor 3, min ISR 2). A
transactional producer writes two source topics at a steady rate (lz4 with 4 partitions, zstd with
2; one transaction in five aborted), each record's value carrying its own send time. Two mirror
workers (``mirror-sink run``, ids ``w1`` and ``w2``, raw mode, one task each, exactly once) share the
partitions through the shadow group. Every ``--fault-every`` seconds (jittered) one fault is drawn at
random (seeded) and undone:

- ``mirror-kill``: SIGKILL a worker, start it again 5 s later;
- ``worker-restart``: SIGTERM a worker (it finishes its transaction), start it again;
- ``target-broker-kill`` / ``source-broker-kill``: SIGKILL a broker, start it again 20 s later;
- ``target-broker-restart``: SIGTERM a target broker and start it again (one step of a rolling restart).

A read_committed reader on the target notes when each record became visible. At the end the
sources are read back (read_committed): *lost* counts committed source records never seen on the
target, *duplicated* those seen more than once, *out of order* partitions whose records arrived in
another order. Latency is visibility time minus send time (one machine, one clock): p50, p99 and max
overall and per 10 s window (plotted with the faults marked). Per fault, *recovery* is the time from
the fault until the first record sent after it became visible.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.common.paths import DATA, data_dir
from devkafka.cluster import ClusterStartError
from devkafka.data import create_topic, read_all
from devkafka.processes import reap_with_this_process
from devkafka.replicated import ReplicatedKafkaCluster, ReplicatedPair

REPO = Path(__file__).resolve().parent.parent
#: (topic suffix, partitions, codec)
SOURCES = (("lz4", 4, "lz4"), ("zstd", 2, "zstd"))
FAULTS = ("mirror-kill", "worker-restart", "target-broker-kill", "source-broker-kill", "target-broker-restart")
WINDOW_S = 10.0
#: A record seen on the target: topic, partition, its sequence number, send time, visible time.
Seen = tuple[str, int, int, float, float]


@dataclass
class Fault:
    """One fault: what, when (seconds into the run), and when the first record sent after it was visible."""

    kind: str
    detail: str
    at_s: float
    recovered_s: float | None = None
    #: Of that, how long the source load could not send (a source broker fault blocks the producer too).
    load_blocked_s: float | None = None


@dataclass
class Result:
    """What the soak measured."""

    minutes: float
    sent_committed: int
    seen: int
    lost: int
    duplicated: int
    out_of_order_partitions: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    faults: list[Fault] = field(default_factory=list)
    windows: list[tuple[float, float, float, int]] = field(default_factory=list)  # (t, p50, p99, records)
    #: When the faults' clock started, epoch seconds (``bench.soak_phases`` lines the worker logs up with it).
    started_at: float = 0.0


class Load(threading.Thread):
    """Transactions of ``per_txn`` records to every source topic in turn; values are ``{seq}|{send time}``."""

    def __init__(self, bootstrap: str, topics: dict[str, tuple[int, str]], rate: int, per_txn: int = 100) -> None:
        super().__init__(name="soak-load", daemon=True)
        self.topics, self.per_txn = topics, per_txn
        self.pause_s = per_txn * len(topics) / rate
        self.bootstrap = bootstrap
        self.producers = {t: self._producer(t) for t in topics}
        self.stop_event = threading.Event()
        self.committed = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for producer in self.producers.values():
                producer.init_transactions(60)
            seq, txn = 0, 0
            while not self.stop_event.is_set():
                txn += 1
                for topic, (parts, _) in self.topics.items():
                    self._transaction(topic, parts, seq, commit=txn % 5 != 0)
                seq += self.per_txn
                time.sleep(self.pause_s)
        except BaseException as exc:  # reported by the main thread
            self.error = exc

    def _producer(self, topic: str) -> Producer:
        codec = self.topics[topic][1]
        return Producer(
            {"bootstrap.servers": self.bootstrap, "transactional.id": f"soak-load-{topic}", "compression.type": codec}
        )

    def _transaction(self, topic: str, parts: int, seq: int, *, commit: bool) -> None:
        """One transaction; one that a broker fault made abortable is aborted (and not counted); a
        producer that failed fatally (fenced after its transaction timed out during a source broker
        fault) is replaced, its transaction lost as a crashed producer's would be."""
        try:
            self._one_transaction(topic, parts, seq, commit=commit)
        except KafkaException as exc:
            if not exc.args[0].fatal():
                raise
            print(f"load producer for {topic} failed fatally ({exc}); replacing it", flush=True)
            self.producers[topic] = self._producer(topic)
            self.producers[topic].init_transactions(120)

    def _one_transaction(self, topic: str, parts: int, seq: int, *, commit: bool) -> None:
        producer = self.producers[topic]
        producer.begin_transaction()
        for i in range(self.per_txn):
            producer.produce(topic, f"{seq + i}|{time.time():.6f}".encode(), partition=(seq + i) % parts)
        for _ in range(5):  # a commit that timed out is resumed by calling it again
            try:
                if commit:
                    producer.commit_transaction(60)
                    self.committed += self.per_txn
                    return
                producer.flush(60)
                break
            except KafkaException as exc:
                if exc.args[0].txn_requires_abort():
                    break
                if not exc.args[0].retriable():
                    raise
        producer.abort_transaction(120)


class Reader(threading.Thread):
    """read_committed on the target; per record, (topic, partition, seq, send time, visible time)."""

    def __init__(self, bootstrap: str, partitions: list[tuple[str, int]]) -> None:
        super().__init__(name="soak-reader", daemon=True)
        self.seen: list[Seen] = []
        self.stop_event = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "soak-reader",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        self.consumer.assign([TopicPartition(t, p, 0) for t, p in partitions])

    def run(self) -> None:
        while not self.stop_event.is_set():
            for msg in self.consumer.consume(1000, 0.2):
                if msg.error() is not None:
                    continue
                now = time.time()
                seq, sent = (msg.value() or b"0|0").decode().split("|")
                self.seen.append((msg.topic() or "", msg.partition() or 0, int(seq), float(sent), now))
        self.consumer.close()


class Worker:
    """One ``mirror-sink run`` process for the soak's connector."""

    def __init__(self, config: dict[str, str], worker_id: str, workdir: Path) -> None:
        self.worker_id = worker_id
        self.config_path = workdir / f"{worker_id}.json"
        self.config_path.write_text(json.dumps({"name": config["name"], "config": config}))
        self.log_path = workdir / f"{worker_id}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            argv = [
                sys.executable,
                "-m",
                "api.cli",
                "run",
                str(self.config_path),
                "--worker-id",
                self.worker_id,
            ]
            argv += ["--worker-id", self.worker_id]
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        reap_with_this_process(pid=self.proc.pid)

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(120)


def _percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))] if sorted_values else float("nan")


#: How long a restarted node may take to serve: on two saturated cores a source node took over 90 s.
_START_TIMEOUT_S = 240.0


def _back(cluster: ReplicatedKafkaCluster, node: int, down: set[tuple[str, int]]) -> str:
    """Start ``node`` again; a start that does not come up in time is retried (said in the fault's
    detail). A node that never comes back is left down and noted in ``down`` (the run goes on: the
    cluster keeps a majority), so that no later fault takes a second node of that cluster."""
    for attempt in range(3):
        try:
            cluster.node(node).start(timeout=_START_TIMEOUT_S)
            cluster.wait_brokers([node], timeout=_START_TIMEOUT_S)
            down.discard((cluster.name, node))
            return "" if attempt == 0 else f" (came back on start {attempt + 1})"
        except ClusterStartError as exc:
            print(f"{cluster.name} broker {node} did not come back: {exc}; starting it again", flush=True)
            cluster.node(node).stop(hard=True)
    down.add((cluster.name, node))
    print(f"{cluster.name} broker {node} never came back: left down", flush=True)
    return " (never came back: left down)"


class Soak:
    """The clusters, the load, the reader, the two workers, and the faults done to them."""

    def __init__(self, rate: int, seed: int, work: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.pair = ReplicatedPair(work / "clusters")
        reap_with_this_process(pattern=f"kafka.logs.dir={work}")
        print(f"starting two 3-node clusters under {work}", flush=True)
        self.pair.up()
        self.source, self.target = self.pair.source, self.pair.target
        tag = str(int(time.time()))[-6:]
        self.topics = {f"soak-{tag}-{suffix}": (parts, codec) for suffix, parts, codec in SOURCES}
        for topic, (parts, _) in self.topics.items():
            create_topic(self.source.bootstrap_servers, topic, parts)
        config = {
            "name": f"soak-{tag}",
            "connector.class": "MirrorSinkConnector",
            "source.cluster.bootstrap.servers": self.source.bootstrap_servers,
            "target.cluster.bootstrap.servers": self.target.bootstrap_servers,
            "topics": f"soak-{tag}-.*",
            "tasks.max": "1",
            "mirror.mode": "raw",
            # As measured on 2026-11-29 (docs/soak.md): tasks as static members of the shadow group.
            "shadow.group.static.membership": "true",
            "refresh.topics.interval.ms": "5000",
        }
        self.workers = [Worker(config, w, work) for w in ("w1", "w2")]
        self.partitions = [(f"source.{t}", p) for t, (parts, _) in self.topics.items() for p in range(parts)]
        self.reader = Reader(self.target.bootstrap_servers, self.partitions)
        self.load = Load(self.source.bootstrap_servers, self.topics, rate)
        self.rng = random.Random(seed)
        #: Nodes that never came back after a fault, as (cluster name, node id).
        self.down: set[tuple[str, int]] = set()
        self.actions: dict[str, Callable[[], str]] = {
            "mirror-kill": self.mirror_kill,
            "worker-restart": self.worker_restart,
            "target-broker-kill": lambda: self.broker_kill(self.target),
            "source-broker-kill": lambda: self.broker_kill(self.source),
            "target-broker-restart": self.broker_restart,
        }

    def start(self) -> None:
        """Workers first; the reader and the load once the target topics exist."""
        for w in self.workers:
            w.start()
        admin, deadline = AdminClient(self.target.client_config), time.monotonic() + 120
        while time.monotonic() < deadline:
            if {t for t, _ in self.partitions} <= set(admin.list_topics(timeout=10).topics):
                break
            time.sleep(1)
        self.reader.start()
        self.load.start()

    # -- faults ---------------------------------------------------------------------------------
    def mirror_kill(self) -> str:
        w = self.rng.choice(self.workers)
        w.stop(signal.SIGKILL)
        time.sleep(5)
        w.start()
        return w.worker_id

    def worker_restart(self) -> str:
        w = self.rng.choice(self.workers)
        w.stop(signal.SIGTERM)
        w.start()
        return w.worker_id

    def broker_kill(self, cluster: ReplicatedKafkaCluster) -> str:
        node = self.rng.randrange(1, len(cluster.nodes) + 1)
        if (still_down := self._still_down(cluster)) is not None:
            return still_down
        cluster.node(node).stop(hard=True)
        time.sleep(20)
        return f"{cluster.name} broker {node}" + _back(cluster, node, self.down)

    def broker_restart(self) -> str:
        node = self.rng.randrange(1, len(self.target.nodes) + 1)
        if (still_down := self._still_down(self.target)) is not None:
            return still_down
        self.target.node(node).stop(hard=False)
        return f"target broker {node}" + _back(self.target, node, self.down)

    def _still_down(self, cluster: ReplicatedKafkaCluster) -> str | None:
        """None when every node of ``cluster`` serves (a node left down is started once more first);
        else why the fault is skipped: a second node down would take the cluster's majority."""
        for name, node in sorted(self.down):
            if name == cluster.name:
                _back(cluster, node, self.down)
                if (name, node) in self.down:
                    return f"skipped: {cluster.name} broker {node} is still down"
        return None

    # -- the run --------------------------------------------------------------------------------
    def faults_until(self, deadline: float, fault_every_s: float, started: float) -> list[Fault]:
        """Draw and undo faults until ``deadline``; each noted with its time into the run."""
        faults: list[Fault] = []
        time.sleep(min(fault_every_s, 30))
        while time.time() + fault_every_s / 2 < deadline:
            kind = self.rng.choice(FAULTS)
            at = time.time()
            detail = self.actions[kind]()
            faults.append(Fault(kind, detail, at - started))
            print(f"{at - started:7.0f} s  {kind} ({detail}); {len(self.reader.seen)} records visible", flush=True)
            if self.load.error is not None:
                raise RuntimeError(f"the load failed: {self.load.error}")
            time.sleep(max(1.0, self.rng.uniform(0.5, 1.5) * fault_every_s - (time.time() - at)))
        while time.time() < deadline:
            time.sleep(1)
        return faults

    def finish(self) -> None:
        """Stop the load, let the mirrors deliver everything committed (up to 5 min), stop the rest."""
        self.load.stop_event.set()
        self.load.join(180)
        drain_until = time.time() + 300
        while time.time() < drain_until:
            if len({(t, p, s) for t, p, s, _, _ in self.reader.seen}) >= self.load.committed:
                break
            time.sleep(2)
        time.sleep(5)  # a duplicate would arrive now
        self.reader.stop_event.set()
        self.reader.join(30)
        for w in self.workers:
            w.stop()


def run(minutes: float, fault_every_s: float, rate: int, seed: int, work: Path) -> Result:
    """The soak itself (see the module docstring); clusters and worker logs go under ``work``."""
    soak = Soak(rate, seed, work)
    try:
        soak.start()
        started = time.time()
        faults = soak.faults_until(started + minutes * 60, fault_every_s, started)
        soak.finish()
        source = Expected(soak.topics, soak.source.bootstrap_servers, soak.load.committed)
        result = _evaluate(soak.reader.seen, source, started, minutes, faults)
        result.started_at = started
        return result
    finally:
        for w in soak.workers:
            w.stop(signal.SIGKILL)
        soak.pair.down(hard=True)


@dataclass
class Expected:
    """Where the committed source records are, and how many were committed."""

    topics: dict[str, tuple[int, str]]
    bootstrap: str
    committed: int


def _evaluate(
    seen: list[tuple[str, int, int, float, float]],
    source: Expected,
    started: float,
    minutes: float,
    faults: list[Fault],
) -> Result:
    expected: dict[tuple[str, int], list[int]] = {}
    for topic in source.topics:
        for partition, records in read_all(source.bootstrap, topic).items():
            expected[(f"source.{topic}", partition)] = [int((r.value or b"0").decode().split("|")[0]) for r in records]
    got: dict[tuple[str, int], list[int]] = {}
    for topic, partition, seq, _, _ in seen:
        got.setdefault((topic, partition), []).append(seq)
    lost = duplicated = disordered = 0
    for key, want in expected.items():
        have = got.get(key, [])
        seen_once = set(have)  # once: built inside the comprehension below, it made this quadratic
        lost += len(set(want) - seen_once)
        duplicated += len(have) - len(seen_once)
        first_seen = list(dict.fromkeys(have))
        disordered += int(first_seen != [s for s in want if s in seen_once])
    latencies = sorted((visible - sent) * 1000 for _, _, _, sent, visible in seen)
    windows: list[tuple[float, float, float, int]] = []
    buckets: dict[int, list[float]] = {}
    for _, _, _, sent, visible in seen:
        buckets.setdefault(int((visible - started) // WINDOW_S), []).append((visible - sent) * 1000)
    for index in sorted(buckets):
        values = sorted(buckets[index])
        windows.append((index * WINDOW_S, _percentile(values, 0.5), _percentile(values, 0.99), len(values)))
    for fault in faults:
        at = started + fault.at_s
        after = [(sent, visible) for _, _, _, sent, visible in seen if sent > at]
        if after:
            first_sent, first_visible = min(after)
            fault.recovered_s = round(first_visible - at, 1)
            fault.load_blocked_s = round(first_sent - at, 1)
    return Result(
        minutes=minutes,
        sent_committed=source.committed,
        seen=len(seen),
        lost=lost,
        duplicated=duplicated,
        out_of_order_partitions=disordered,
        p50_ms=round(_percentile(latencies, 0.5), 1),
        p99_ms=round(_percentile(latencies, 0.99), 1),
        max_ms=round(latencies[-1], 1) if latencies else float("nan"),
        faults=faults,
        windows=windows,
    )


def report(result: Result, out: Path, when: str) -> str:
    """docs/soak.md's text (and its plot, in ``out``'s data directory)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 4.5))
    ts = [w[0] / 60 for w in result.windows]
    ax.plot(ts, [w[1] / 1000 for w in result.windows], label="p50 latency (s)")
    ax.plot(ts, [w[2] / 1000 for w in result.windows], label="p99 latency (s)")
    ax.set_yscale("log")
    ax.set_xlabel("minutes into the run")
    ax.set_ylabel("seconds (log)")
    for fault in result.faults:
        ax.axvline(fault.at_s / 60, color="grey", alpha=0.4, linewidth=0.8)
        ax.text(fault.at_s / 60, ax.get_ylim()[1], fault.kind, rotation=90, fontsize=6, va="top", alpha=0.7)
    ax.legend(loc="upper left")
    ax.set_title("mirror-sink soak: latency per 10 s window, faults marked")
    fig.tight_layout()
    data = data_dir(out)
    data.mkdir(parents=True, exist_ok=True)
    fig.savefig(data / "soak.png", dpi=110)
    by_kind: dict[str, list[float]] = {}
    for fault in result.faults:
        if fault.recovered_s is not None:
            by_kind.setdefault(fault.kind, []).append(fault.recovered_s)
    lines = [
        "# Soak: exactly once through random faults",
        "",
        f"Generated by `python -m bench.soak` on {when}: {result.minutes:.0f} minutes, two clusters of three",
        "nodes each on one 2-core machine, two raw-mode workers (one task each), faults drawn at random.",
        "",
        "| committed source records | seen on the target | lost | duplicated | partitions out of order |"
        " latency p50 | p99 | max |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {result.sent_committed:,} | {result.seen:,} | {result.lost} | {result.duplicated} |"
        f" {result.out_of_order_partitions} | {result.p50_ms:.0f} ms | {result.p99_ms:.0f} ms |"
        f" {result.max_ms / 1000:.1f} s |",
        "",
        f"The load committed {result.sent_committed / (result.minutes * 60):.0f} records/s on average"
        " (its transactions wait on the source brokers it shares the machine with).",
        "",
        "Recovery: from the fault until the first record sent after it was visible on the target. For a"
        " source broker fault this includes the time the source load itself could not send (listed per"
        " fault below).",
        "",
        "| fault | count | recovery min | median | max |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for kind in FAULTS:
        values = sorted(by_kind.get(kind, []))
        if values:
            median = values[len(values) // 2]
            lines.append(f"| {kind} | {len(values)} | {values[0]:.1f} s | {median:.1f} s | {values[-1]:.1f} s |")
    lines += ["", f"![latency over time]({DATA}/soak.png)", "", "Every fault in order:", ""]
    lines += [
        f"- {f.at_s:.0f} s: {f.kind} ({f.detail}), recovered in {f.recovered_s} s"
        f" (the source load could not send for {f.load_blocked_s} s of it)"
        for f in result.faults
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--fault-every", type=float, default=60.0, help="mean seconds between faults")
    parser.add_argument("--rate", type=int, default=2000, help="source records per second (all topics)")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument(
        "--out", type=Path, default=REPO / "docs", help="where soak.md goes; soak.json and soak.png go in data/ there"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="clusters and worker logs (default: a temp dir)")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="mirror-sink-soak-"))
    args.out.mkdir(parents=True, exist_ok=True)
    result = run(args.minutes, args.fault_every, args.rate, args.seed, work)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    (args.out / "soak.md").write_text(report(result, args.out, when))
    data: dict[str, Any] = asdict(result)
    (data_dir(args.out) / "soak.json").write_text(json.dumps(data, indent=1))
    print(report(result, args.out, when))
    return 0 if result.lost == 0 and result.duplicated == 0 and result.out_of_order_partitions == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
