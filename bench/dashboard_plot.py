"""The Grafana dashboard's main panels, drawn from a real worker's /metrics under a steady load and a pause.

    .venv/bin/python -m bench.dashboard_plot                 # local clusters; writes docs/data/dashboard-panels.png
    .venv/bin/python -m bench.dashboard_plot --out /tmp/panels.png --run-s 20 --pause-s 10 --after-s 20

Starts the two local development clusters and a REST worker (``mirror-sink worker``), creates a
six-partition source topic, produces a steady load into it (``--rate`` records/s of ~``--record-bytes``
bytes, lz4) for the whole run while an application consumer group reads it and commits where it
was ``--app-commit-delay-s`` ago (behind the mirror, so the checkpoint emitter, which writes only
exact checkpoints, has positions to checkpoint), and creates a MirrorSinkConnector over REST. The
connector runs ``--run-s`` seconds, is PAUSED for ``--pause-s`` (the lag grows) and RESUMED for
``--after-s`` more. Every second the worker's ``/metrics`` is scraped and the quantities the
dashboard's panels query (``deploy/grafana/mirror-sink-dashboard.json``) are recorded; they are
plotted as a 3x2 grid, the paused interval shaded, and a short summary is printed.

Not a test: the numbers vary with the machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from bench.common.paths import DOCS, data_dir
from devkafka.cluster import free_port
from devkafka.data import create_topic
from devkafka.pair import DevClusters
from devkafka.processes import reap_with_this_process

MM2 = "kafka_connect_mirror_mirrorsourceconnector_"
CONNECTOR = "dash-mirror"
SOURCE_ALIAS = "east"
APP_GROUP = "dash-orders-app"
PARTITIONS = 6


# -- the load ------------------------------------------------------------------------------------
def _values(n: int, size: int) -> list[bytes]:
    """``n`` distinct JSON-like documents of ``size`` bytes, compressible about as real ones are."""
    rng = random.Random(7)
    words = [f"{w}{i}" for i in range(100) for w in ("order", "sku", "region", "user")]
    out = []
    for i in range(n):
        items: list[dict[str, object]] = []
        doc = {"id": i, "user": f"user-{rng.randrange(10**6)}", "items": items}
        body = json.dumps(doc)
        while len(body) < size - 50:
            items.append({"sku": rng.choice(words), "qty": rng.randrange(1, 9), "price": rng.randrange(100, 99999)})
            body = json.dumps(doc)
        out.append(body.encode()[:size].ljust(size, b" "))
    return out


class SteadyProducer:
    """``rate`` records a second into ``topic`` (lz4), on a thread, until ``stop``; counts deliveries."""

    def __init__(self, bootstrap: str, topic: str, rate: int, record_bytes: int) -> None:
        self.topic, self.rate = topic, rate
        self.values = _values(2048, record_bytes)
        self.delivered = 0
        self.failed = 0
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "compression.type": "lz4", "linger.ms": 5, "acks": "all"}
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dash-producer", daemon=True)

    def _delivered(self, err: KafkaError | None, _msg: Message) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.failed += 1

    def _run(self) -> None:
        tick = 0.01
        started = time.monotonic()
        sent = 0
        while not self._stop.is_set():
            due = int((time.monotonic() - started) * self.rate)
            while sent < due:
                value = self.values[sent % len(self.values)]
                try:
                    self._producer.produce(self.topic, value, key=str(sent).encode(), on_delivery=self._delivered)
                except BufferError:
                    self._producer.poll(0.05)
                    continue
                sent += 1
            self._producer.poll(0)
            time.sleep(tick)
        self._producer.flush(30)

    def start(self) -> None:
        """Begin producing."""
        self._thread.start()

    def stop(self) -> None:
        """Stop producing and flush what is queued."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(60)


class AppConsumer:
    """A source application's consumer group: reads ``topic`` and commits, so checkpoints have a group.

    It commits, once a second, the position it had ``delay_s`` ago: an application a little behind
    the head. The checkpoint emitter writes only exact checkpoints, for positions the mirror has
    already committed, so a group that commits the head itself (ahead of the mirror's last
    transaction) can go without a checkpoint for as long as it stays ahead.
    """

    def __init__(self, bootstrap: str, topic: str, delay_s: float) -> None:
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": APP_GROUP,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self._consumer.subscribe([topic])
        self.topic, self.delay_s = topic, delay_s
        self.consumed = 0
        self.commits = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dash-app-consumer", daemon=True)

    def _run(self) -> None:
        positions: dict[int, int] = {}  # partition -> next offset
        history: deque[tuple[float, dict[int, int]]] = deque()
        next_commit = time.monotonic() + 1.0
        try:
            while not self._stop.is_set():
                for m in self._consumer.consume(1000, 0.2):
                    if m.error() is None:
                        self.consumed += 1
                        positions[m.partition() or 0] = (m.offset() or 0) + 1
                now = time.monotonic()
                history.append((now, dict(positions)))
                if now < next_commit:
                    continue
                next_commit = now + 1.0
                due: dict[int, int] | None = None
                while history and history[0][0] <= now - self.delay_s:
                    due = history.popleft()[1]
                if due:
                    offsets = [TopicPartition(self.topic, p, o) for p, o in due.items()]
                    self._consumer.commit(offsets=offsets, asynchronous=False)
                    self.commits += 1
        finally:
            self._consumer.close()

    def start(self) -> None:
        """Begin consuming."""
        self._thread.start()

    def stop(self) -> None:
        """Stop and leave the group."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(30)
        else:
            self._consumer.close()


# -- the worker ----------------------------------------------------------------------------------
class Worker:
    """``mirror-sink worker`` on a free loopback port, its log and data under ``workdir``."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "worker.log"
        self.data_dir = workdir / "worker-data"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        """Launch and wait until ``/health`` says 200."""
        argv = [sys.executable, "-m", "api.cli", "worker", "--listeners", self.url]
        argv += ["--worker-id", "dash", "--data-dir", str(self.data_dir)]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env={**os.environ}
            )
        reap_with_this_process(pid=self.proc.pid)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited with {self.proc.returncode}; see {self.log_path}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"worker at {self.url} not healthy in {timeout:.0f} s; see {self.log_path}")
            time.sleep(0.25)

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM (tasks finish their transaction), SIGKILL if it does not stop in time."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def _rest(method: str, url: str, body: object | None = None) -> object:
    response = httpx.request(method, url, json=body, timeout=30)
    if response.status_code >= 400:
        raise RuntimeError(f"{method} {url}: {response.status_code} {response.text}")
    return response.json() if response.content else None


def _connector_state(url: str) -> tuple[str, list[str]]:
    status = _rest("GET", f"{url}/connectors/{CONNECTOR}/status")
    assert isinstance(status, dict)
    return status["connector"]["state"], [t["state"] for t in status.get("tasks", [])]


def _wait_state(url: str, want: str, t0: float, timeout: float = 120.0) -> None:
    """Poll the status until the connector and its tasks are ``want``; print each state on the way."""
    deadline = time.monotonic() + timeout
    seen = None
    while True:
        state, tasks = _connector_state(url)
        if (state, tasks) != seen:
            seen = (state, tasks)
            print(f"  {time.monotonic() - t0:5.1f} s: connector {state}, tasks {tasks}", flush=True)
        if state == want and tasks and all(t == want for t in tasks):
            return
        if "FAILED" in (state, *tasks) or time.monotonic() > deadline:
            raise RuntimeError(f"connector {CONNECTOR} is {state}, tasks {tasks}; wanted {want}")
        time.sleep(0.25)


# -- the scrape ----------------------------------------------------------------------------------
@dataclass
class Sample:
    """One scrape: the dashboard's quantities (NaN where a series was absent) and a few cross-checks."""

    t: float  # seconds since the connector was created
    records_per_s: float
    lag_records: float
    lag_seconds: float
    latency_avg_ms: float
    latency_max_ms: float
    txns_committed: float  # the counter; per second is its delta
    txns_aborted: float
    memory_in_use: float
    memory_limit: float
    record_count: float  # kafka_connect_mirror_..._record_count, summed
    checkpoints_written: float
    checkpoint_rounds: float  # mirror_sink_checkpoint_round_seconds_count
    partition_count: float  # kafka_connect_sink_task_metrics_partition_count, summed over tasks
    running_tasks: float  # kafka_connect_worker_connector_running_task_count
    paused_tasks: float  # kafka_connect_worker_connector_paused_task_count
    produced: int  # records the load had delivered to the source when scraped
    series: int  # how many sample lines the scrape had


def _nan_sum(values: list[float]) -> float:
    return sum(values) if values else math.nan


def parse_scrape(text: str, topic: str, t: float, produced: int) -> Sample:
    """The dashboard's quantities for ``topic`` (the target topic) out of one /metrics body."""
    by_name: dict[str, list[tuple[dict[str, str], float]]] = {}
    count = 0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            by_name.setdefault(s.name, []).append((s.labels, s.value))
            count += 1

    def values(name: str, **labels: str) -> list[float]:
        return [v for lab, v in by_name.get(name, []) if all(lab.get(k) == want for k, want in labels.items())]

    avg = values(MM2 + "replication_latency_ms_avg", topic=topic)
    lag_s = values("mirror_sink_replication_lag_seconds", topic=topic)
    max_ms = values(MM2 + "replication_latency_ms_max", topic=topic)
    return Sample(
        t=t,
        records_per_s=_nan_sum(values(MM2 + "record_rate", topic=topic)),
        lag_records=_nan_sum(values("mirror_sink_replication_lag_records", topic=topic)),
        lag_seconds=max(lag_s) if lag_s else math.nan,
        latency_avg_ms=statistics.fmean(avg) if avg else math.nan,
        latency_max_ms=max(max_ms) if max_ms else math.nan,
        txns_committed=_nan_sum(values("mirror_sink_transactions_total", connector=CONNECTOR, outcome="committed")),
        txns_aborted=_nan_sum(values("mirror_sink_transactions_total", connector=CONNECTOR, outcome="aborted")),
        memory_in_use=_nan_sum(values("mirror_sink_memory_budget_bytes", connector=CONNECTOR, kind="in_use")),
        memory_limit=_nan_sum(values("mirror_sink_memory_budget_bytes", connector=CONNECTOR, kind="limit")),
        record_count=_nan_sum(values(MM2 + "record_count", topic=topic)),
        checkpoints_written=_nan_sum(values("mirror_sink_checkpoints_written_total", connector=CONNECTOR)),
        checkpoint_rounds=_nan_sum(values("mirror_sink_checkpoint_round_seconds_count", connector=CONNECTOR)),
        partition_count=_nan_sum(values("kafka_connect_sink_task_metrics_partition_count", connector=CONNECTOR)),
        running_tasks=_nan_sum(values("kafka_connect_worker_connector_running_task_count", connector=CONNECTOR)),
        paused_tasks=_nan_sum(values("kafka_connect_worker_connector_paused_task_count", connector=CONNECTOR)),
        produced=produced,
        series=count,
    )


class Scraper:
    """Scrapes ``{url}/metrics`` once a second on a thread, keeping a :class:`Sample` per scrape."""

    def __init__(self, url: str, topic: str, producer: SteadyProducer, t0: float, keep: Path | None = None) -> None:
        self.url, self.topic, self.producer, self.t0 = url, topic, producer, t0
        self.keep = keep  # a directory for every scrape's body, to look into a series afterwards
        self.samples: list[Sample] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dash-scraper", daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=5) as client:
            next_at = time.monotonic()
            while not self._stop.is_set():
                produced = self.producer.delivered
                try:
                    body = client.get(f"{self.url}/metrics").text
                    t = time.monotonic() - self.t0
                    self.samples.append(parse_scrape(body, self.topic, t, produced))
                    if self.keep is not None:
                        (self.keep / f"scrape-{len(self.samples):03d}-{t:05.1f}s.txt").write_text(body)
                except (httpx.HTTPError, ValueError) as e:
                    self.errors.append(f"{time.monotonic() - self.t0:.0f} s: {e}")
                next_at += 1.0
                self._stop.wait(max(0.0, next_at - time.monotonic()))

    def start(self) -> None:
        """Begin scraping."""
        self._thread.start()

    def stop(self) -> None:
        """Stop scraping."""
        self._stop.set()
        self._thread.join(10)


# -- the plot and the summary --------------------------------------------------------------------
@dataclass
class Run:
    """What the run recorded: the samples and when the connector was paused and resumed."""

    samples: list[Sample]
    running_at: float  # when the status first said RUNNING for the connector and its tasks
    paused_at: float
    resumed_at: float
    rate: int
    record_bytes: int


def per_second(samples: list[Sample], attr: str) -> list[float]:
    """The per-second rate of a counter (the first sample has none: NaN)."""
    out = [math.nan]
    for a, b in itertools.pairwise(samples):
        va, vb = getattr(a, attr), getattr(b, attr)
        dt = b.t - a.t
        out.append((vb - va) / dt if dt > 0 and not (math.isnan(va) or math.isnan(vb)) else math.nan)
    return out


def plot(run: Run, out: Path) -> None:
    """The 3x2 grid of panels, titled as the dashboard's, into ``out`` (about 1400 px wide)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = run.samples
    t = [x.t for x in s]
    fig, axes = plt.subplots(3, 2, figsize=(14, 10.5), dpi=100, sharex=True)
    panels = [
        ("Throughput (records/s, committed)", "records/s", [("records/s", [x.records_per_s for x in s])]),
        ("Replication lag (records)", "records", [("lag", [x.lag_records for x in s])]),
        (
            "Replication lag (age of the oldest unmirrored record)",
            "seconds",
            [("age", [x.lag_seconds for x in s])],
        ),
        (
            "Replication latency (record timestamp to commit)",
            "ms",
            [("max", [x.latency_max_ms for x in s]), ("avg", [x.latency_avg_ms for x in s])],
        ),
        (
            "Transactions per second",
            "transactions/s",
            [("committed", per_second(s, "txns_committed")), ("aborted", per_second(s, "txns_aborted"))],
        ),
        (
            "Memory budget (raw mode)",
            "MiB",
            [
                ("in use", [x.memory_in_use / 2**20 for x in s]),
                ("limit", [x.memory_limit / 2**20 for x in s]),
            ],
        ),
    ]
    for ax, (title, unit, lines) in zip(axes.flat, panels, strict=True):
        ax.axvspan(run.paused_at, run.resumed_at, color="tab:orange", alpha=0.15, lw=0, label="PAUSED")
        for label, ys in lines:
            style = {"ls": "--", "lw": 1.0, "color": "grey"} if label == "limit" else {"lw": 1.4}
            ax.plot(t, ys, label=label, **style)
        ax.set_title(title, fontsize=11)
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("seconds since the connector was created")
    fig.suptitle(
        f"mirror-sink worker /metrics, scraped every second: {PARTITIONS} partitions, {run.rate:,} records/s of "
        f"{run.record_bytes} B (lz4); connector paused for {run.resumed_at - run.paused_at:.0f} s",
        fontsize=12,
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def _first(samples: list[Sample], after: float, ok: Callable[[Sample], bool]) -> Sample | None:
    return next((x for x in samples if x.t > after and ok(x)), None)


def summarize(run: Run) -> list[str]:
    """Peak lag while paused, time to catch up after resuming, steady records/s; and what looked odd.

    The lag gauges are measured every 5 s, so beside them the true lag is given too: records the
    load had delivered to the source minus records the mirror had committed (``record_count``), at
    each scrape.
    """
    s = run.samples
    pause, resume = run.paused_at, run.resumed_at

    def true_lag(x: Sample) -> float:
        return x.produced - (0.0 if math.isnan(x.record_count) else x.record_count)

    committed = per_second(s, "record_count")
    commit_rate = [r for x, r in zip(s, committed, strict=True) if pause - 15 <= x.t < pause and not math.isnan(r)]
    end_rate = [x.records_per_s for x in s if x.t >= s[-1].t - 5 and not math.isnan(x.records_per_s)]
    steady_lag = [true_lag(x) for x in s if pause - 15 <= x.t < pause]
    threshold = 2 * max(steady_lag, default=float(run.rate))
    gauge = [x for x in s if pause <= x.t <= resume + 10 and not math.isnan(x.lag_records)]
    peak = max(gauge, key=lambda x: x.lag_records, default=None)
    true_peak = max((x for x in s if pause <= x.t <= resume + 10), key=true_lag, default=None)
    caught_gauge = _first(s, resume, lambda x: not math.isnan(x.lag_records) and x.lag_records <= threshold)
    caught_true = _first(s, resume, lambda x: true_lag(x) <= threshold)
    at_resume = max((x.record_count for x in s if x.t <= resume and not math.isnan(x.record_count)), default=0.0)
    first_commit = _first(s, resume, lambda x: x.record_count > at_resume)
    lines = [
        f"connector and task RUNNING {run.running_at:.1f} s after the POST",
        f"steady throughput: {statistics.median(commit_rate) if commit_rate else math.nan:,.0f} records/s committed"
        f" (record_count per second, the 15 s before the pause); record_rate (30 s window) at the end:"
        f" {statistics.median(end_rate) if end_rate else math.nan:,.0f}; produced {run.rate:,}/s",
        f"steady lag (produced - committed) before the pause: up to {max(steady_lag, default=0):,.0f} records",
    ]
    if peak is not None and true_peak is not None:
        lines.append(
            f"peak lag: gauge {peak.lag_records:,.0f} records (age {peak.lag_seconds:.1f} s) at t={peak.t:.0f} s;"
            f" produced - committed {true_lag(true_peak):,.0f} at t={true_peak.t:.0f} s"
            f" (paused {pause:.0f}-{resume:.0f} s)"
        )
    for label, caught in (("gauge", caught_gauge), ("produced - committed", caught_true)):
        if caught is None:
            lines.append(f"caught up by the {label}: never back to <= {threshold:,.0f} records")
        else:
            lines.append(
                f"caught up (<= {threshold:,.0f} records) by the {label}: {caught.t - resume:.0f} s after resuming"
            )
    if first_commit is not None:
        lines.append(f"first commit after resuming: {first_commit.t - resume:.1f} s after the PUT .../resume")
    ck = [x for x in s if not math.isnan(x.checkpoints_written)]
    if ck:
        last_change = max((b.t for a, b in itertools.pairwise(ck) if b.checkpoints_written > a.checkpoints_written),
                          default=ck[0].t)  # fmt: skip
        lines.append(
            f"checkpoints: {ck[-1].checkpoints_written:,.0f} written in {ck[-1].checkpoint_rounds:,.0f} rounds,"
            f" the last new ones at t={last_change:.0f} s"
        )
    else:
        lines.append("checkpoints: mirror_sink_checkpoints_written_total never appeared")
    paused = [x for x in s if pause + 2 <= x.t <= resume]
    if paused:

        def seen(attr: str) -> list[float]:
            return sorted({getattr(x, attr) for x in paused})

        lines.append(
            f"while paused: running tasks {seen('running_tasks')}, paused tasks {seen('paused_tasks')},"
            f" partition_count {seen('partition_count')}, memory in_use {seen('memory_in_use')} bytes"
        )
    last = s[-1]
    lines.append(
        f"at the end: produced {last.produced:,}, committed (record_count) {last.record_count:,.0f},"
        f" lag gauge {last.lag_records:,.0f}; transactions committed {last.txns_committed:,.0f},"
        f" aborted {last.txns_aborted:,.0f}"
    )
    return lines


# -- the run -------------------------------------------------------------------------------------
def run_load(args: argparse.Namespace, src: str, tgt: str, workdir: Path) -> Run:
    """Worker, load, connector, scrape; pause and resume on schedule. Stops everything it started."""
    topic = f"orders-{time.time_ns() // 1_000_000}"
    target_topic = f"{SOURCE_ALIAS}.{topic}"
    create_topic(src, topic, PARTITIONS)
    worker = Worker(workdir)
    producer = SteadyProducer(src, topic, args.rate, args.record_bytes)
    app = AppConsumer(src, topic, args.app_commit_delay_s)
    scraper: Scraper | None = None
    try:
        print(f"starting the worker at {worker.url} (log {worker.log_path})...", flush=True)
        worker.start()
        producer.start()
        app.start()
        config = {
            "connector.class": "MirrorSinkConnector",
            "source.cluster.alias": SOURCE_ALIAS,
            "source.cluster.bootstrap.servers": src,
            "target.cluster.bootstrap.servers": tgt,
            "topics": topic,
            "emit.checkpoints.enabled": "true",
            "groups": APP_GROUP,
        }
        t0 = time.monotonic()
        _rest("POST", f"{worker.url}/connectors", {"name": CONNECTOR, "config": config})
        scraper = Scraper(worker.url, target_topic, producer, t0, args.keep_scrapes)
        scraper.start()
        _wait_state(worker.url, "RUNNING", t0)
        running_at = time.monotonic() - t0
        print(
            f"connector {CONNECTOR} RUNNING {running_at:.1f} s after the POST; mirroring {topic} -> {target_topic}"
            f" for {args.run_s:.0f} s",
            flush=True,
        )
        time.sleep(args.run_s)
        _rest("PUT", f"{worker.url}/connectors/{CONNECTOR}/pause")
        paused_at = time.monotonic() - t0
        print(f"paused at {paused_at:.0f} s for {args.pause_s:.0f} s", flush=True)
        time.sleep(args.pause_s)
        _rest("PUT", f"{worker.url}/connectors/{CONNECTOR}/resume")
        resumed_at = time.monotonic() - t0
        print(f"resumed at {resumed_at:.0f} s; running {args.after_s:.0f} s more", flush=True)
        time.sleep(args.after_s)
    finally:
        if scraper is not None:
            scraper.stop()
        producer.stop()
        app.stop()
        worker.stop()
    if scraper.errors:
        print(f"{len(scraper.errors)} scrapes failed, first: {scraper.errors[0]}", flush=True)
    print(
        f"load: {producer.delivered:,} records delivered, {producer.failed} failed; app group consumed"
        f" {app.consumed:,} and committed {app.commits} times",
        flush=True,
    )
    return Run(scraper.samples, running_at, paused_at, resumed_at, args.rate, args.record_bytes)


def main() -> int:
    """Parse arguments, bring up clusters, run, plot, summarize, clean up."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=data_dir(DOCS) / "dashboard-panels.png")
    parser.add_argument("--workdir", type=Path, help="worker log and data, clusters (default: a temporary dir)")
    parser.add_argument("--rate", type=int, default=3000, help="records per second produced")
    parser.add_argument("--record-bytes", type=int, default=500)
    parser.add_argument("--run-s", type=float, default=40.0, help="seconds running before the pause")
    parser.add_argument("--pause-s", type=float, default=20.0)
    parser.add_argument("--after-s", type=float, default=40.0, help="seconds running after the resume")
    parser.add_argument(
        "--app-commit-delay-s", type=float, default=3.0, help="the source app group commits where it was this long ago"
    )
    parser.add_argument("--keep-scrapes", type=Path, help="also write every /metrics body into this directory")
    parser.add_argument("--samples", type=Path, help="also write the samples here as JSON")
    args = parser.parse_args()
    temp = args.workdir is None
    workdir: Path = Path(tempfile.mkdtemp(prefix="mirror-sink-dash-")) if temp else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    if args.keep_scrapes is not None:
        args.keep_scrapes.mkdir(parents=True, exist_ok=True)
    clusters = DevClusters(workdir / "clusters-dash")
    print(f"starting local source and target clusters under {clusters.home}...", flush=True)
    try:
        clusters.up()
        run = run_load(args, clusters.source.bootstrap_servers, clusters.target.bootstrap_servers, workdir)
    finally:
        clusters.discard()
    if args.samples is not None:
        rows = [asdict(x) for x in run.samples]
        args.samples.write_text(
            json.dumps(
                {
                    "running_at": run.running_at,
                    "paused_at": run.paused_at,
                    "resumed_at": run.resumed_at,
                    "samples": rows,
                }
            )
        )
    plot(run, args.out)
    for line in summarize(run):
        print(line)
    print(f"wrote {args.out}")
    if temp:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
