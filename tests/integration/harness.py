"""Helpers for integration tests: run the mirror as a real process, wait for things, compare clusters."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Self

import httpx
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from prometheus_client.parser import text_string_to_metric_families

from devkafka.cluster import free_port
from devkafka.data import (
    Address,
    ProduceSpec,
    Rec,
    client_settings,
    committed_offsets,
    create_topic,
    end_offsets,
    produce,
    produce_transactions,
    read_all,
    rec_from_message,
)
from devkafka.endpoints import KafkaEndpoint
from devkafka.processes import reap_with_this_process
from mirror_sink.core.base.errors import Retriable
from mirror_sink.core.formats.offset_syncs import OffsetSync, offset_syncs_topic
from mirror_sink.core.runtime.retry import retry_call

Unique = Callable[[str], str]  # the `unique` fixture: a base name -> a name no other test uses

# Short timers so rebalances, refreshes and cycles happen within a test's patience.
FAST_SETTINGS = {
    "transaction.boundary.interval.ms": "200",
    "refresh.topics.interval.ms": "1000",
    "source.group.commit.interval.ms": "1000",
    "transaction.timeout.ms": "20000",
    "target.cluster.consumer.session.timeout.ms": "6000",
    "target.cluster.consumer.heartbeat.interval.ms": "1000",
    "target.cluster.consumer.topic.metadata.refresh.interval.ms": "1000",
    # Offset syncs stay on (every exactness test checks them); the checkpoint emitter, which scans
    # every source group, runs only where a test asks for it.
    "emit.checkpoints.enabled": "false",
}


#: The connector class a REST connector config names (MM2's; mirror-sink's plugin answers to it).
PLUGIN = "org.apache.kafka.connect.mirror.MirrorSinkConnector"


def connector_config(source: KafkaEndpoint, target: KafkaEndpoint, topics: str, **extra: str) -> dict[str, str]:
    """A REST connector config for ``topics`` with the tests' fast timers."""
    return {
        "connector.class": PLUGIN,
        "source.cluster.bootstrap.servers": source.bootstrap_servers,
        "target.cluster.bootstrap.servers": target.bootstrap_servers,
        "topics": topics,
        **FAST_SETTINGS,
        **extra,
    }


def address(endpoint: KafkaEndpoint) -> Address:
    """How to reach ``endpoint`` with full rights (a secured cluster's super user settings)."""
    settings: Address | None = getattr(endpoint, "client_config", None)
    return settings or endpoint.bootstrap_servers


def mirror_config(
    name: str, source: KafkaEndpoint, target: KafkaEndpoint, topics: str, **overrides: str
) -> dict[str, str]:
    """A connector config for tests: fast timers, the given clusters and topics."""
    return {
        "name": name,
        "connector.class": "MirrorSinkConnector",
        "source.cluster.bootstrap.servers": source.bootstrap_servers,
        "target.cluster.bootstrap.servers": target.bootstrap_servers,
        "topics": topics,
        **FAST_SETTINGS,
        **{k.replace("__", "."): v for k, v in overrides.items()},
    }


def wait_until(
    predicate: Callable[[], bool],
    timeout: float,
    what: str,
    interval: float = 0.25,
    detail: Callable[[], str] | None = None,
) -> None:
    """Poll ``predicate`` until true, or fail the test saying ``what`` did not happen (and, when given,
    what ``detail`` says of the state then, such as a mirror's log tail)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            said = f"\n{detail()}" if detail is not None else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{said}")
        time.sleep(interval)


class ChildProcess:
    """A ``mirror-sink`` command in a child process with its own log file, signalled by its own pid."""

    def __init__(self, label: str, workdir: Path) -> None:
        self.label = label
        self.workdir = workdir
        self.log_path = workdir / f"{label}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env: dict[str, str] = {}
        #: The interpreter command and the working directory the child runs with.
        self.python: list[str] = [sys.executable]
        self.cwd: Path | None = None
        workdir.mkdir(parents=True, exist_ok=True)

    def argv(self) -> list[str]:
        """The ``mirror-sink`` arguments (after ``python -m api.cli``)."""
        raise NotImplementedError

    def start(self) -> Self:
        """Launch (or relaunch) the command."""
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start {time.strftime('%H:%M:%S')} =====\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [*self.python, "-m", "api.cli", *self.argv()],
                cwd=self.cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "MIRROR_SINK_LOG_LEVEL": "INFO", **self.env},
            )
        reap_with_this_process(pid=self.proc.pid)
        return self

    @property
    def pid(self) -> int:
        """The child's pid."""
        assert self.proc is not None
        return self.proc.pid

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to this process only."""
        assert self.proc is not None
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        """Wait for the process to exit; its exit code."""
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait (a thread dump and SIGKILL if it does not stop in time)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGCONT)  # in case a test left it stopped
        self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)  # thread dump into the log
            time.sleep(1)
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"{self.label} ignored SIGTERM for {timeout} s\n{self.log_tail()}") from None

    def kill(self) -> None:
        """SIGKILL: a crash at an arbitrary point."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def alive(self) -> bool:
        """True while the process runs."""
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        """Everything the process logged."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 60) -> str:
        """The end of the log, for assertion messages."""
        return "\n".join(self.log_text().splitlines()[-lines:])


class MirrorProcess(ChildProcess):
    """``mirror-sink run`` for one connector config under one worker id."""

    def __init__(self, config: dict[str, str], worker_id: str, workdir: Path, *extra: str) -> None:
        super().__init__(f"{config['name']}-{worker_id}", workdir)
        self.config = config
        self.worker_id = worker_id
        self.config_path = workdir / f"{self.label}.json"
        self.extra = extra

    def argv(self) -> list[str]:
        """``run <config> --worker-id <id> [extra...]``, writing the config file first."""
        self.config_path.write_text(json.dumps({"name": self.config["name"], "config": self.config}))
        return ["run", str(self.config_path), "--worker-id", self.worker_id, *self.extra]


class WorkerProcess(ChildProcess):
    """``mirror-sink worker`` (or ``mm2``) with its REST API on a free loopback port."""

    def __init__(self, workdir: Path, *extra: str, worker_id: str = "w1", mm2_file: Path | None = None) -> None:
        super().__init__(f"worker-{worker_id}", workdir)
        self.port = free_port()
        self.extra = list(extra)
        self.worker_id = worker_id
        self.mm2_file = mm2_file
        self.data_dir = workdir / f"data-{worker_id}"

    @property
    def url(self) -> str:
        """The REST API's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        """``worker`` (or ``mm2 <file>``) with a fixed listener, worker id and data dir."""
        verb = ["mm2", str(self.mm2_file)] if self.mm2_file else ["worker"]
        flags = ["--listeners", self.url, "--worker-id", self.worker_id, "--data-dir", str(self.data_dir)]
        return [*verb, *flags, *self.extra]

    def start(self) -> Self:
        """Launch and wait until the REST API answers."""
        super().start()
        wait_until(self._answers, 60, f"the worker's REST API at {self.url}")
        return self

    def _answers(self) -> bool:
        if not self.alive():
            code = self.proc.returncode if self.proc else None
            raise AssertionError(f"worker exited with {code}:\n{self.log_tail()}")
        try:
            return httpx.get(f"{self.url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


def payload(topic_tag: str, partition: int, seq: int, size: int = 200) -> bytes:
    """A JSON-like value that names its origin, so a duplicate or a loss is easy to read."""
    body = f'{{"src":"{topic_tag}","p":{partition},"seq":{seq},"pad":"'
    return (body + "x" * max(0, size - len(body) - 2) + '"}').encode()


def tricky_records(partitions: int, n: int = 120, *, null_keys: bool = True) -> list[Rec]:
    """Keys and null keys, tombstones, several and null-valued headers, explicit timestamps."""
    out = []
    base_ts = int(time.time() * 1000) - 3_600_000  # recent: older records would fall to retention
    for i in range(n):
        key = None if null_keys and i % 7 == 0 else f"key-{i}".encode()
        value = None if i % 11 == 0 else f'{{"i": {i}}}'.encode()
        headers = (("a", b"1"), ("b", None), ("a", f"{i}".encode())) if i % 3 else ()
        out.append(Rec(key, value, headers, base_ts + i * 1000, i % partitions))
    return out


class TransactionalLoad:
    """Writes numbered records in transactions (every ``abort_every``-th aborted), in a thread."""

    def __init__(
        self,
        bootstrap: Address,
        topic: str,
        partitions: int,
        total: int,
        *,
        per_txn: int = 100,
        abort_every: int = 5,
        compression: str = "lz4",
        pause_s: float = 0.0,
        txn_id: str,
    ) -> None:
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.total, self.per_txn, self.abort_every = total, per_txn, abort_every
        self.spec = ProduceSpec(compression=compression, transactional_id=txn_id)
        self.pause_s = pause_s
        self.committed = 0
        self.error: BaseException | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"load-{topic}", daemon=True)

    def _batches(self) -> Iterator[tuple[list[Rec], bool]]:
        seq, txn = 0, 0
        while self.committed < self.total and not self._stopping.is_set():
            txn += 1
            commit = txn % self.abort_every != 0
            # Recent timestamps (older than the 7-day retention would be deleted under the test), and
            # never in the future: a record stamped ahead of the clock gave a negative replication
            # latency in the metrics test.
            now_ms = int(time.time() * 1000) - self.per_txn
            records = [
                Rec(
                    f"k{(seq + i) % 97}".encode(),
                    payload(self.topic, (seq + i) % self.partitions, seq + i),
                    (("seq", str(seq + i).encode()),),
                    now_ms + i,
                    (seq + i) % self.partitions,
                )
                for i in range(self.per_txn)
            ]
            seq += self.per_txn
            yield records, commit
            # Resumed: the transaction just yielded is complete.
            if commit:
                self.committed += len(records)
            if self.pause_s:
                time.sleep(self.pause_s)

    def _run(self) -> None:
        try:
            produce_transactions(self.bootstrap, self.topic, self._batches(), self.spec)
        except BaseException as exc:
            self.error = exc

    def start(self) -> TransactionalLoad:
        """Begin writing in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """End after the transaction under way (for a load of no fixed size); ``join`` then waits for it."""
        self._stopping.set()

    def join(self, timeout: float) -> None:
        """Wait until every record is written; re-raise the writer's error."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"load on {self.topic} did not finish in {timeout} s")
        if self.error is not None:
            raise self.error


class LiveReader:
    """A read_committed consumer on the target that collects everything while the test runs.

    assign()-based, from offset 0: its positions live in memory, so broker bounces and mirror
    restarts neither skip nor re-read anything on its side.
    """

    def __init__(self, bootstrap: str, partitions: Sequence[tuple[str, int]]) -> None:
        self.records: dict[tuple[str, int], list[Rec]] = {}
        self.errors: list[str] = []
        #: Per partition, (monotonic time, records of it seen by then) after every poll that brought some.
        self.arrivals: dict[tuple[str, int], list[tuple[float, int]]] = {}
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "live-reader",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        self._consumer.assign([TopicPartition(t, p, 0) for t, p in partitions])
        self._bootstrap = bootstrap
        self._partitions = list(partitions)
        self._thread = threading.Thread(target=self._run, name="live-reader", daemon=True)

    def _run(self) -> None:
        arrived: dict[tuple[str, int], int] = {}
        while not self._stop.is_set():
            for msg in self._consumer.consume(1000, 0.2):
                err = msg.error()
                if err is not None:
                    self.errors.append(err.str())
                    continue
                rec = rec_from_message(msg)
                self.records.setdefault((msg.topic() or "", rec.partition), []).append(rec)
                where = (msg.topic() or "", rec.partition)
                arrived[where] = arrived.get(where, 0) + 1
            now = time.monotonic()
            for where, n in arrived.items():
                seen = self.arrivals.setdefault(where, [])
                seen.append((now, (seen[-1][1] if seen else 0) + n))
            arrived.clear()
        self._consumer.close()

    def stall(self, partitions: Iterable[tuple[str, int]], since: float) -> float:
        """Seconds from ``since`` (monotonic) until a record of ``partitions`` next became visible (nan: none yet)."""
        firsts = [t for where in partitions for t, _ in self.arrivals.get(where, []) if t >= since]
        return min(firsts) - since if firsts else float("nan")

    def count(self) -> int:
        """Records seen so far."""
        return sum(len(v) for v in self.records.values())

    def wait_for(self, total: int, timeout: float) -> None:
        """Wait until ``total`` records were seen; on timeout, say where each partition stands.

        Per partition: records seen, and the target's last stable offset next to its high
        watermark (an LSO stuck below the HW means a transaction left open on the target).
        """
        try:
            wait_until(lambda: self.count() >= total, timeout, "the live reader to see everything")
        except AssertionError as exc:
            topics = {t for t, _ in self._partitions}
            stable = {t: end_offsets(self._bootstrap, t) for t in topics}
            high = {t: end_offsets(self._bootstrap, t, isolation="read_uncommitted") for t in topics}
            where = ", ".join(
                f"{t}-{p}: {len(self.records.get((t, p), []))} seen, LSO {stable[t][p]}, HW {high[t][p]}"
                for t, p in self._partitions
            )
            raise AssertionError(f"{exc}; {where}; reader errors: {self.errors[-5:]}") from None

    def start(self) -> LiveReader:
        """Begin reading in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop reading."""
        self._stop.set()
        self._thread.join(30)


def contents(records: Sequence[Rec]) -> list[tuple[object, ...]]:
    """What mirroring preserves, in order."""
    return [r.content() for r in records]


def assert_exact_mirror(
    source: KafkaEndpoint,
    source_topic: str,
    target: KafkaEndpoint,
    target_topic: str,
    group: str,
    *,
    offset_syncs: bool = True,
) -> int:
    """Target == source, record for record, per partition; shadow offsets == source end offsets.

    With ``offset_syncs``, the offset syncs too wherever the mirror wrote them (exactly-once worker
    runs); a mirror that changed runtime midway (Spark writes none yet) passes False.
    """
    src = read_all(address(source), source_topic)
    tgt = read_all(address(target), target_topic)
    for p, records in src.items():
        got = tgt.get(p, [])
        assert len(got) == len(records), f"{target_topic}-{p}: {len(got)} records, source has {len(records)}"
        assert contents(got) == contents(records), f"{target_topic}-{p}: content or order differs"
    ends = end_offsets(address(source), source_topic)
    stored = committed_offsets(address(target), group, [(target_topic, p) for p in ends])
    assert stored == {(target_topic, p): e for p, e in ends.items()}, "shadow group offsets != source end offsets"
    if offset_syncs and offset_syncs_of(target, target_topic):  # Spark and at-least-once runs write none
        assert_offset_syncs_exact(source, source_topic, target, target_topic)
    return sum(len(r) for r in src.values())


def committed_on_target(target: KafkaEndpoint, target_topic: str) -> int:
    """Target offsets readable with read_committed now (records and the transaction markers between
    them): above 0 once a mirror has committed a cycle. Cheap, and unlike a stable read of the shadow
    group it never waits out open transactions, which during a copy are open nearly all the time."""
    try:
        return sum(end_offsets(address(target), target_topic).values())
    except (KafkaException, KeyError):  # a target topic just created (leaders not ready) or not yet there
        return 0


def shadow_caught_up(
    source: KafkaEndpoint, source_topic: str, target: KafkaEndpoint, target_topic: str, group: str
) -> bool:
    """True once the shadow group holds the source end offset of every partition and no transaction
    is open on the target topic, so that a read_committed reader sees everything mirrored.

    The second condition matters: a commit's markers reach the group's offsets and the data
    partitions separately, so the offsets can be visible a moment before the data is (seen in CI).
    """
    ends = end_offsets(address(source), source_topic)
    try:
        stored = committed_offsets(address(target), group, [(target_topic, p) for p in ends])
    except Exception:
        return False
    if any(stored.get((target_topic, p)) != e for p, e in ends.items()):
        return False
    bootstrap = address(target)
    return end_offsets(bootstrap, target_topic) == end_offsets(bootstrap, target_topic, isolation="read_uncommitted")


def committed_data_batches(bootstrap: str, topic: str, partition: int) -> list[bytes]:
    """The committed data batches of a partition as the broker stores them (raw Fetch, read_committed).

    Control batches and aborted transactions are left out, exactly as raw mode's fetcher leaves them.
    """
    from devkafka.raw_batches import read_committed_batches

    return [
        bytes(item.batch) for item in read_committed_batches(bootstrap, topic, [partition])[partition] if item.batch
    ]


def offset_syncs_of(target: KafkaEndpoint, target_topic: str, source_alias: str = "source") -> list[OffsetSync]:
    """The committed offset syncs of ``target_topic``, in commit order."""
    records = read_all(address(target), offset_syncs_topic(source_alias)).get(0, [])
    syncs = [OffsetSync.decode(r.key or b"", r.value or b"") for r in records]
    return [s for s in syncs if s.target.topic == target_topic]


def assert_offset_syncs_exact(
    source: KafkaEndpoint, source_topic: str, target: KafkaEndpoint, target_topic: str, source_alias: str = "source"
) -> None:
    """The committed syncs map every mirrored source record to the target offset it really has.

    Per partition: the syncs' source ranges follow each other with no overlap and no hole (an
    aborted or zombie transaction's sync would overlap), and source offset -> target offset of each
    record equals what reading both clusters shows.
    """
    syncs = offset_syncs_of(target, target_topic, source_alias)
    assert syncs, f"no offset syncs for {target_topic}"
    src = read_all(address(source), source_topic)
    tgt = read_all(address(target), target_topic)
    for p, records in src.items():
        mine = [s for s in syncs if s.target.partition == p]
        mapping: dict[int, int] = {}
        for before, after in itertools.pairwise(mine):
            assert after.source_start == before.source_end, f"{target_topic}-{p}: syncs overlap or leave a hole"
        for sync in mine:
            for run in sync.runs:
                for i in range(run.length):
                    assert run.source + i not in mapping, f"{target_topic}-{p}: source offset {run.source + i} twice"
                    mapping[run.source + i] = run.target + i
        assert sorted(mapping) == [r.offset for r in records], f"{target_topic}-{p}: syncs name other source offsets"
        assert [mapping[r.offset] for r in records] == [r.offset for r in tgt.get(p, [])], (
            f"{target_topic}-{p}: a sync names the wrong target offset"
        )


def compacted_with_gaps(bootstrap: str, topic: str, codec: str) -> None:
    """A one-partition compacted topic whose log the cleaner left with offset gaps inside batches,
    then frozen (no record old enough to clean any more), so what a test reads at its end is what
    the mirror copied."""
    compact_fast = {
        "cleanup.policy": "compact",
        "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.001",
        "min.compaction.lag.ms": "0",
        "delete.retention.ms": "100",
    }
    create_topic(bootstrap, topic, 1, compact_fast)
    # 40 keys in one batch, then the even ones overwritten: compaction leaves holes inside that batch.
    spec = ProduceSpec(compression=codec, batch_bytes=8192)
    for round_ in range(25):
        keys = [k for k in range(40) if round_ == 0 or k % 2 == 0]
        produce(bootstrap, topic, [Rec(b"key-%d" % k, b"v%d-" % round_ * 30) for k in keys], spec)
        time.sleep(0.2)  # let segments roll (segment.ms) so the cleaner can work on them
    wait_until(lambda: has_offset_gaps(bootstrap, topic), 120, "the log cleaner to leave gaps")
    _stop_compacting(bootstrap, topic)


def has_offset_gaps(bootstrap: str, topic: str) -> bool:
    """True once compaction left a batch whose record count is below its offset span."""
    for batch in committed_data_batches(bootstrap, topic, 0):
        last_delta = int.from_bytes(batch[23:27], "big")
        count = int.from_bytes(batch[57:61], "big")
        if count != last_delta + 1:
            return True
    return False


def _stop_compacting(bootstrap: str, topic: str) -> None:
    """No record is old enough to clean from now on: the log stays as the cleaner left it, so the
    source read at the end is the source the mirror copied (CI once saw the source cleaned again
    after the mirror had copied it: 60 records left against 440 mirrored)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    lag = ConfigEntry("min.compaction.lag.ms", "86400000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[lag])
    admin.incremental_alter_configs([resource])[resource].result(30)
    time.sleep(2)  # a cleaner pass that began before the change finishes within milliseconds here


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample of ``url`` by name: (labels, value)."""
    text = httpx.get(url, timeout=10).text
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def total(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    return sum(v for lab, v in samples.get(name, []) if all(lab.get(k) == x for k, x in labels.items()))


#: A group coordinator that is loading, moving or not reached yet: asked again.
_COORDINATOR_MOVING = {
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
}


def commit_group_offsets(bootstrap: Address, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group`` as a consumer application would (not a member: no join).
    A coordinator still loading its partition on a busy machine (COORDINATOR_LOAD_IN_PROGRESS, seen
    in CI) is asked again, as a client would, for up to 30 s (the project's retry policy)."""
    consumer = Consumer({**client_settings(bootstrap), "group.id": group, "enable.auto.commit": False})

    def attempt() -> None:
        try:
            consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
        except KafkaException as exc:
            err = exc.args[0]
            if err.retriable() or err.code() in _COORDINATOR_MOVING:
                raise Retriable(err.str()) from exc
            raise

    try:
        retry_call(attempt, f"committing offsets of {group}", deadline_s=30, max_delay_s=0.5)
    finally:
        consumer.close()


def cluster_state(
    cluster: KafkaEndpoint, token: str, besides: Collection[str] = ()
) -> dict[str, dict[tuple[str, int], int]]:
    """What a command could have written on ``cluster``, for the topics and groups whose names hold
    ``token`` (a test's unique suffix): every partition's end, aborted writes included, and every
    group's committed offsets, but for the groups in ``besides`` (written by something else running,
    such as a mirror's own lag group on the source)."""
    admin = AdminClient(client_settings(address(cluster)))
    topics = sorted(t for t in admin.list_topics(timeout=30).topics if token in t)
    state: dict[str, dict[tuple[str, int], int]] = {}
    for topic in topics:
        ends = end_offsets(address(cluster), topic, isolation="read_uncommitted")
        state[f"topic {topic}"] = {(topic, p): end for p, end in ends.items()}
    listed = admin.list_consumer_groups(request_timeout=30).result(30)
    for group in sorted(g.group_id for g in listed.valid if token in g.group_id and g.group_id not in besides):
        request = [ConsumerGroupTopicPartitions(group)]
        stored = admin.list_consumer_group_offsets(request)[group].result(30)
        state[f"group {group}"] = {(tp.topic, tp.partition): tp.offset for tp in stored.topic_partitions}
    return state


def assert_refused_alike(
    run: Callable[..., subprocess.CompletedProcess[str]],
    config: dict[str, str],
    workdir: Path,
    *args: str,
    says: str,
    clusters: Sequence[KafkaEndpoint],
    token: str,
    besides: Collection[str] = (),
) -> None:
    """A refusal writes nothing, and its dry run foresees it: ``run(config, workdir, *args)`` exits 1
    saying ``says``, so does the same command with ``--dry-run``, and no topic end or group offset
    named with ``token`` moved on any of ``clusters`` (the groups in ``besides`` aside: a mirror
    still running writes them)."""
    before = [cluster_state(c, token, besides) for c in clusters]
    for extra in ((), ("--dry-run",)):
        result = run(config, workdir, *args, *extra)
        shown = " ".join([*args, *extra])
        assert result.returncode == 1, f"{shown}: exit {result.returncode}\n{result.stdout}{result.stderr}"
        assert says in result.stdout, f"{shown}: not refused with {says!r}\n{result.stdout}{result.stderr}"
    after = [cluster_state(c, token, besides) for c in clusters]
    for cluster, was, now in zip(clusters, before, after, strict=True):
        assert now == was, f"a refused {' '.join(args)} wrote to {cluster.bootstrap_servers}: {was} -> {now}"


def run_failover(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink failover`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("failover", config, workdir, *args)


def run_failback(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink failback`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("failback", config, workdir, *args)


def run_drill(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink drill`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("drill", config, workdir, *args)


def run_verify(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink verify`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("verify", config, workdir, *args)


def run_audit(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink audit`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("audit", config, workdir, *args)


def run_translate(config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-sink translate`` for ``config`` with ``args``: its exit code and output."""
    return _run_verb("translate", config, workdir, *args)


def _run_verb(verb: str, config: dict[str, str], workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = workdir / f"{verb}-{time.monotonic_ns()}.json"
    path.write_text(json.dumps({"name": config["name"], "config": config}))
    return subprocess.run(
        [sys.executable, "-m", "api.cli", verb, str(path), *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
