"""Source transactions a mirror's copy holds only in part, found from the source's own markers.

A copy's cut is the shadow group's offsets: on each source partition, everything below the offset is
on the target and nothing at or past it. A committed source transaction over several mirrored
partitions is **in the copy in part** when its commit marker lies below the offset on one of them
and at or past it on another. Copies made with ``source.transactions.whole`` never are; copies made
without it can be (the target then holds, for good if the source is lost, half of something the
source only ever showed whole).

How it is found:

1. The source coordinator's log (``__transaction_state``, ``SourceTransactions``) gives every
   committed transaction compaction kept: its producer id and epoch, its partitions, and the client's
   transactions version.
2. Each mirrored partition's log is read raw (read_uncommitted, record batches undecoded) over a
   window around the offset: each control batch is one transaction's marker, naming its producer id
   and epoch.
3. With transactions version 2 (KIP-890: every Java producer on Kafka 4.0+ brokers) a producer's
   epoch is bumped at every commit, so (producer id, epoch) names one transaction, and its marker on
   each partition says on which side of the cut that part lies. A transaction with parts on both
   sides is partial, named with its ``transactional.id`` and the partitions on each side.
4. With version 1 (librdkafka, older Java clients) consecutive transactions share an epoch: only
   their order tells them apart, which the windows cannot give. A version 1 producer with markers on
   both sides of the cut is reported as **not checkable**, by ``transactional.id``, never as whole.

A transaction whose marker on some of its mirrored partitions lies outside the windows is reported
as not checked on those partitions (raise the window to look further).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import Consumer
from kafka.protocol.consumer import FetchRequest

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.clients.source_transactions import SourceTransaction, SourceTransactions
from mirror_sink.core.formats.transaction_log import TRANSACTION_STATE_TOPIC
from mirror_sink.failover.common.groups import committed_offsets
from mirror_sink.failover.common.readers import OffsetSyncReader, assigned_reader
from mirror_sink.failover.common.watermarks import read_watermarks
from mirror_sink.failover.rehearsal.verify import mirrored_partitions
from mirror_sink.raw.wire.batches import CONTROL_COMMIT, control_type, parse_header, split_batches
from mirror_sink.raw.wire.wire import WireClient

_FETCH_VERSION = 12
_READ_UNCOMMITTED = 0
_FETCH_BYTES = 4 << 20
#: How long a partition's leader may stay unknown before the read fails.
_LEADER_WAIT_S = 30.0


@dataclass(frozen=True)
class Marker:
    """One transaction marker on one source partition."""

    offset: int
    producer_id: int
    producer_epoch: int
    commit: bool


@dataclass(frozen=True)
class PartialTransaction:
    """A committed source transaction the copy holds on some of its partitions and not on others."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    in_copy: tuple[SourcePartition, ...]
    missing: tuple[SourcePartition, ...]

    def describe(self) -> str:
        """One line for operators."""
        return (
            f"{self.transactional_id} (producer {self.producer_id}, epoch {self.producer_epoch}): on the target on "
            f"{_names(self.in_copy)}, not on {_names(self.missing)}"
        )


@dataclass
class TransactionCheck:
    """What the check found at one cut."""

    #: Committed transactions over two or more mirrored partitions whose markers were all found.
    checked: int = 0
    partial: list[PartialTransaction] = field(default_factory=list)
    #: transactional.id -> why it could not be checked (transactions version 1, markers outside the windows).
    not_checkable: dict[str, str] = field(default_factory=dict)
    #: The offsets read on each partition, [from, to).
    windows: dict[SourcePartition, tuple[int, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """The JSON form."""
        return {
            "checked": self.checked,
            "partial": [
                {
                    "transactional_id": p.transactional_id,
                    "producer_id": p.producer_id,
                    "producer_epoch": p.producer_epoch,
                    "in_copy": [f"{tp.topic}-{tp.partition}" for tp in p.in_copy],
                    "missing": [f"{tp.topic}-{tp.partition}" for tp in p.missing],
                }
                for p in self.partial
            ],
            "not_checkable": dict(sorted(self.not_checkable.items())),
            "windows": {f"{tp.topic}-{tp.partition}": list(w) for tp, w in sorted(self.windows.items())},
        }

    def lines(self) -> list[str]:
        """For the verify table."""
        out = [
            f"source transactions at the mirror's positions: {self.checked} over several partitions checked, "
            f"{len(self.partial)} in the copy only in part, {len(self.not_checkable)} producers not checkable"
        ]
        out += [f"  partial: {p.describe()}" for p in self.partial]
        out += [f"  not checkable: {tid}: {why}" for tid, why in sorted(self.not_checkable.items())]
        return out


def find_partial(
    positions: Mapping[SourcePartition, int],
    markers: Mapping[SourcePartition, Iterable[Marker]],
    transactions: Iterable[SourceTransaction],
) -> TransactionCheck:
    """The committed ``transactions`` over two or more of the partitions in ``positions`` that the
    copy cut by ``positions`` holds in part, judged by the ``markers`` read on each partition
    (see the module's docstring). Pure: no I/O."""
    check = TransactionCheck()
    where: dict[tuple[int, int], dict[SourcePartition, list[int]]] = {}
    for tp, found in markers.items():
        for marker in found:
            if marker.commit:
                where.setdefault((marker.producer_id, marker.producer_epoch), {}).setdefault(tp, []).append(
                    marker.offset
                )
    mirrored = {(tp.topic, tp.partition): tp for tp in positions}
    for txn in transactions:
        parts = sorted(mirrored[p] for p in txn.partitions if p in mirrored)
        if not txn.committed or len(parts) < 2:
            continue
        seen = where.get((txn.producer_id, txn.producer_epoch), {})
        sides = {tp: [offset < positions[tp] for offset in seen[tp]] for tp in parts if tp in seen}
        if txn.transaction_version < 2:
            if len({side for found in sides.values() for side in found}) > 1:
                check.not_checkable[txn.transactional_id] = (
                    "transactions version 1: its transactions share producer epoch "
                    f"{txn.producer_epoch}, and markers of it lie on both sides of the mirror's positions"
                )
            continue
        seen_sides = {side for found in sides.values() for side in found}
        if len(sides) < len(parts) and len(seen_sides) < 2:
            if sides:  # (no marker in any window: it lies far from the cut on every partition)
                unseen = [tp for tp in parts if tp not in sides]
                check.not_checkable.setdefault(
                    txn.transactional_id, f"markers outside the windows read on {_names(unseen)}"
                )
            continue
        check.checked += 1
        in_copy = tuple(tp for tp in parts if tp in sides and sides[tp][0])
        missing = tuple(tp for tp in parts if tp in sides and not sides[tp][0])
        if in_copy and missing:
            check.partial.append(
                PartialTransaction(txn.transactional_id, txn.producer_id, txn.producer_epoch, in_copy, missing)
            )
    return check


def read_markers(wire: WireClient, tp: SourcePartition, start: int, end: int, timeout_s: float = 60.0) -> list[Marker]:
    """Every transaction marker of ``tp`` in offsets [start, end), read raw (read_uncommitted)."""
    version = wire.negotiate(FetchRequest, _FETCH_VERSION, _FETCH_VERSION)
    found: list[Marker] = []
    offset = start
    deadline = time.monotonic() + timeout_s
    while offset < end:
        node = _leader(wire, tp)
        f = FetchRequest
        request = f(
            version=version,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=_FETCH_BYTES,
            isolation_level=_READ_UNCOMMITTED,
            session_id=0,
            session_epoch=-1,
            topics=[
                f.FetchTopic(
                    topic=tp.topic,
                    partitions=[
                        f.FetchTopic.FetchPartition(
                            partition=tp.partition,
                            current_leader_epoch=-1,
                            fetch_offset=offset,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=_FETCH_BYTES,
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
            rack_id="",
        )
        response = wire.call(node, request, f"reading {tp.topic}-{tp.partition} from {offset}")
        answer = response.responses[0].partitions[0]
        if answer.error_code:
            raise TaskFailure(f"reading {tp.topic}-{tp.partition} at {offset} on the source: error {answer.error_code}")
        moved = False
        for _base, magic, batch in split_batches(memoryview(answer.records or b"")):
            if magic != 2:
                continue
            header = parse_header(batch)
            if header.next_offset <= offset:
                continue
            if header.base_offset >= end:
                return found
            if header.is_control:
                commit = control_type(batch) == CONTROL_COMMIT
                found.append(Marker(header.base_offset, header.producer_id, header.producer_epoch, commit))
            offset, moved = header.next_offset, True
        if not moved and offset >= answer.high_watermark:
            break  # the end of the log
        if not moved and time.monotonic() > deadline:
            raise TaskFailure(
                f"reading {tp.topic}-{tp.partition} on the source: no batch at {offset} in {timeout_s:.0f} s"
            )
    return found


def _leader(wire: WireClient, tp: SourcePartition) -> int:
    deadline = time.monotonic() + _LEADER_WAIT_S
    while (node := wire.leader(tp.topic, tp.partition)) is None:
        if time.monotonic() > deadline:
            raise TaskFailure(f"no leader of {tp.topic}-{tp.partition} on the source")
        wire.poll(0.2)
    return node


def _names(partitions: Iterable[SourcePartition]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}" for tp in partitions)


def check_copy(config: MirrorSinkConfig, *, window: int, client_id: str) -> TransactionCheck:
    """Check the connector's committed copy (its shadow group's offsets on every synced partition)
    for source transactions held in part, reading ``window`` offsets on each side of each position.
    TaskFailure names what cannot be read (the offset syncs, the source, ``__transaction_state``)."""
    syncs = config.offset_syncs_partition
    if syncs is None:
        raise TaskFailure(f"connector {config.name} writes no offset syncs: the copy's partitions are not known")
    reader = OffsetSyncReader(config.target_consumer(), syncs.topic, f"{client_id}-syncs")
    try:
        index = reader.catch_up()
    finally:
        reader.close()
    targets = mirrored_partitions(config, index)
    shadow = committed_offsets(
        config.target_consumer(), config.shadow_group_id, sorted(targets.values()), client_id, "target"
    )
    positions = {SourcePartition(*sp): shadow[tp] for sp, tp in targets.items() if tp in shadow}
    check_windows: dict[SourcePartition, tuple[int, int]] = {}
    markers: dict[SourcePartition, list[Marker]] = {}
    with contextlib.ExitStack() as opened:
        ends = assigned_reader(config.source_consumer(), client_id, "read_uncommitted")
        opened.callback(ends.close)
        transactions = _committed_transactions(config, ends, client_id)
        wire = WireClient(config.source_consumer(), "source", f"{client_id}-markers", _FETCH_BYTES + (1 << 20))
        opened.callback(wire.close)
        for tp, position in sorted(positions.items()):
            low, high = read_watermarks(ends, tp.topic, tp.partition, "source")
            span = (max(low, position - window), min(high, position + window))
            check_windows[tp] = span
            markers[tp] = read_markers(wire, tp, *span)
    check = find_partial(positions, markers, transactions)
    check.windows = check_windows
    return check


def _committed_transactions(config: MirrorSinkConfig, ends: Consumer, client_id: str) -> list[SourceTransaction]:
    """Every transaction the source coordinator's log still holds, as it was prepared."""
    follower = SourceTransactions(config.source_consumer(), f"{client_id}-transactions")
    try:
        availability = follower.start()
        if not availability.readable:
            raise TaskFailure(f"cannot read the source's {TRANSACTION_STATE_TOPIC}: {availability.reason}")
        log_ends = {p: read_watermarks(ends, TRANSACTION_STATE_TOPIC, p, "source")[1] for p in follower.partitions}
        if not follower.read_to(log_ends, 120.0):
            raise TaskFailure(f"reading the source's {TRANSACTION_STATE_TOPIC} to its end took over 120 s")
        return follower.take_prepared()
    finally:
        follower.close()
