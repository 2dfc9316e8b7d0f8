"""Records in integration tests: what to write (numbered, tricky, transactional loads) and how to read
it back (a live read_committed reader, committed batches as stored, what mirroring preserves)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence

from confluent_kafka import Consumer, TopicPartition

from devkafka.data import Address, ProduceSpec, Rec, end_offsets, produce_transactions, rec_from_message
from tests.integration.harness.waiting import wait_until


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


def committed_data_batches(bootstrap: str, topic: str, partition: int) -> list[bytes]:
    """The committed data batches of a partition as the broker stores them (raw Fetch, read_committed).

    Control batches and aborted transactions are left out, exactly as raw mode's fetcher leaves them.
    """
    from devkafka.raw_batches import read_committed_batches

    return [
        bytes(item.batch) for item in read_committed_batches(bootstrap, topic, [partition])[partition] if item.batch
    ]
