"""What the old primary holds that never reached the target: found exactly, and kept, never deleted.

After a disaster failover, the old primary may come back with records past the failover's cut: they
were written there after the mirror's last commit and were never mirrored. The failover record
(``mirror_sink.failover.common.failover_record``) holds each partition's cut (the source offset mirrored up
to), so these records are exactly the old primary's committed records at or past it. Failback reports
them per partition (count, offset range, time range, bytes), as a table and as JSON, and copies them
byte for byte (key, value, headers, timestamp) into a side topic per source topic,
``{topic}.diverged-{failover id}.internal``, so reconciling them is an ordinary consumer job. They are
never sent to the other cluster: ``.internal`` keeps the side topic out of every mirror's default
``topics.exclude``. KIP-1279 truncates them away instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping
from dataclasses import asdict, dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.failover.common.failover_record import FailoverRecord
from mirror_sink.failover.common.shadow_group import ShadowGroupOffsets

#: How long reading one partition's diverged records may take before the report says so.
_READ_TIMEOUT_S = 300.0


def diverged_topic(topic: str, failover_id: str) -> str:
    """The side topic on the old primary that keeps ``topic``'s diverged records of one failover."""
    return f"{topic}.diverged-{failover_id}.internal"


@dataclass
class DivergedRange:
    """The old primary's committed records of one partition at or past the failover's cut."""

    source: SourcePartition
    cut: int  # the source offset the mirror had copied up to
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp_ms: int | None = None
    last_timestamp_ms: int | None = None
    bytes: int = 0  # keys, values and headers

    def take(self, msg: Message) -> None:
        """Count one diverged record."""
        offset = msg.offset() or 0
        _, timestamp = msg.timestamp()
        size = len(msg.key() or b"") + len(msg.value() or b"")
        headers = msg.headers() or []
        pairs = headers.items() if isinstance(headers, dict) else headers
        size += sum(len(name) + len(value or b"") for name, value in pairs)
        self.records += 1
        self.bytes += size
        if self.first_offset is None:
            self.first_offset, self.first_timestamp_ms = offset, timestamp
        self.last_offset, self.last_timestamp_ms = offset, timestamp


@dataclass
class DivergenceReport:
    """Every partition's diverged range for one failover."""

    failover_id: str
    ranges: list[DivergedRange] = field(default_factory=list)

    @property
    def records(self) -> int:
        """Diverged records in all."""
        return sum(r.records for r in self.ranges)

    def table(self) -> str:
        """For operators: one line per partition with diverged records."""
        rows = [("topic", "partition", "records", "offsets", "time range (ms)", "bytes")]
        for r in self.ranges:
            if r.records:
                span = f"{r.first_timestamp_ms}..{r.last_timestamp_ms}"
                offsets = f"{r.first_offset}..{r.last_offset}"
                rows.append((r.source.topic, str(r.source.partition), str(r.records), offsets, span, str(r.bytes)))
        if len(rows) == 1:
            return "no record of the old primary lies past the failover's cut: nothing diverged"
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def to_json(self) -> str:
        """The report as JSON (for tooling and the record of the failback)."""
        ranges = [
            {**asdict(r), "source": {"topic": r.source.topic, "partition": r.source.partition}} for r in self.ranges
        ]
        return json.dumps({"failover": self.failover_id, "records": self.records, "ranges": ranges}, indent=2)


def find_and_keep(
    record: FailoverRecord,
    consumer_props: Mapping[str, str],
    producer_props: Mapping[str, str],
    admin: AdminClient,
    *,
    keep: bool = True,
    shadow_start: ShadowGroupOffsets | None = None,
    say: Callable[[str], None] = print,
) -> DivergenceReport:
    """Read the old primary's records past each cut of ``record``, count them, and (``keep``) copy
    them into their side topics (created here, partition for partition) in one transaction, with
    ``shadow_start`` (a shadow group's offsets on the old primary) committed in it: all or none, so a
    failure leaves nothing to undo. A side partition that already holds records of this failover
    (an earlier failback kept them) is not copied again. Without ``keep`` only the report is made
    (a dry run)."""
    report = DivergenceReport(record.failover_id)
    cuts = [c for c in record.cuts if c.mirrored_to is not None]
    partitions: dict[str, int] = {}
    for cut in cuts:
        partitions[cut.source_topic] = max(partitions.get(cut.source_topic, 0), cut.target.partition + 1)
    if keep:
        _create(admin, {diverged_topic(topic, record.failover_id): n for topic, n in partitions.items()})
    consumer = Consumer(
        {
            **consumer_props,
            "group.id": f"{record.connector}-failback-divergence",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
        }
    )
    producer = (
        Producer(
            {**producer_props, "transactional.id": f"{record.connector}-failback-salvage", "enable.idempotence": True}
        )
        if keep
        else None
    )
    try:
        if producer is not None:
            producer.init_transactions(30)
            producer.begin_transaction()
        for cut in cuts:
            assert cut.mirrored_to is not None
            found = DivergedRange(SourcePartition(cut.source_topic, cut.target.partition), cut.mirrored_to)
            side = diverged_topic(cut.source_topic, record.failover_id)
            copy = producer is not None and not _holds_records(consumer, SourcePartition(side, cut.target.partition))
            for msg in _records_from(consumer, found.source, cut.mirrored_to):
                found.take(msg)
                if copy:
                    assert producer is not None
                    _produce(producer, side, msg, found.source.partition)
            report.ranges.append(found)
            if found.records and producer is not None:
                kept = "kept" if copy else "kept already (an earlier failback), not copied again"
                say(f"{found.source}: {found.records} records past the cut at {found.cut}, {kept} in {side}")
        if producer is not None:
            if shadow_start is not None:
                shadow_start.send_to_transaction(producer, consumer_props)
            producer.commit_transaction(60)
    except KafkaException as exc:
        raise TaskFailure(f"keeping the diverged records: {exc.args[0].str()}") from exc
    finally:
        consumer.close()
    return report


def _holds_records(consumer: Consumer, tp: SourcePartition) -> bool:
    """Whether ``tp`` holds a committed record (an aborted attempt leaves only aborted ones)."""
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(*tp), timeout=30, cached=False)
    except KafkaException as exc:
        if exc.args[0].code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION):
            return False  # created a moment ago: it holds nothing yet
        raise
    if high <= low:
        return False
    records = _records_from(consumer, tp, low)
    try:
        return next(records, None) is not None
    finally:
        records.close()


def _create(admin: AdminClient, topics: Mapping[str, int]) -> None:
    """Create the side topics that do not exist yet (a failback run again finds them there)."""
    if not topics:
        return
    futures = admin.create_topics([NewTopic(topic, n) for topic, n in topics.items()])
    for topic, future in futures.items():
        try:
            future.result(30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise TaskFailure(f"cannot create {topic!r} on the old primary: {exc.args[0].str()}") from exc


def _records_from(consumer: Consumer, tp: SourcePartition, start: int) -> Generator[Message, None, None]:
    """Every committed record of ``tp`` from ``start`` to its end now, as they are read."""
    _, end = consumer.get_watermark_offsets(TopicPartition(*tp), timeout=30, cached=False)
    if end <= start:
        return
    consumer.assign([TopicPartition(*tp, start)])
    deadline = Deadline(_READ_TIMEOUT_S)
    try:
        while not deadline.passed:
            for msg in consumer.consume(10_000, 0.5):
                err = msg.error()
                if err is not None and err.code() == KafkaError._PARTITION_EOF:
                    return
                if err is not None:
                    raise KafkaException(err)
                yield msg
                if (msg.offset() or 0) + 1 >= end:
                    return
        raise TaskFailure(f"reading {tp} from offset {start}: not at its end ({end}) in {_READ_TIMEOUT_S:.0f} s")
    finally:
        consumer.unassign()


def _produce(producer: Producer, topic: str, msg: Message, partition: int) -> None:
    """Copy ``msg`` as it is; a full local queue waits for deliveries rather than fail."""
    while True:
        try:
            producer.produce(
                topic, msg.value(), msg.key(), partition=partition, timestamp=msg.timestamp()[1], headers=msg.headers()
            )
            producer.poll(0)
            return
        except BufferError:
            producer.poll(0.1)
