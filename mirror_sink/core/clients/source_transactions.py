"""Every source transaction's partition set, read from the source's transaction coordinator.

``SourceTransactions`` follows ``__transaction_state`` on the source (every partition, from the
beginning of what compaction kept, then live) with an assign()-based consumer: no group, so it
needs READ and DESCRIBE on the topic and nothing else. Each PrepareCommit or PrepareAbort record
becomes a ``SourceTransaction``: the transaction's producer, epoch, outcome and every partition it
touched (its ``__consumer_offsets`` partitions apart: the transaction sent offsets). Transactions
open now are kept as well, with the partitions they have added so far.

Both transaction versions are told apart: version 2 (KIP-890) bumps the epoch at every commit or
abort, so (producer id, epoch) names one transaction; version 1 (librdkafka, older Java clients)
keeps one (producer id, epoch) for consecutive transactions, which only their order tells apart.

Where the topic cannot be read (no ACL, a broker that hides it), ``availability`` says why once, and
the caller goes on per partition.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from mirror_sink.core.clients.clients import LIBRDKAFKA_LOG
from mirror_sink.core.formats.transaction_log import (
    TRANSACTION_STATE_TOPIC,
    TransactionLogFormatError,
    TransactionLogValue,
    decode_key,
    decode_value,
)

log = logging.getLogger(__name__)

#: The internal topic of consumer offsets: in a transaction's set when it sent offsets.
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
#: The ACLs reading the coordinator's state takes, for messages and docs.
REQUIRED_ACLS = f"READ and DESCRIBE on topic {TRANSACTION_STATE_TOPIC}"


@dataclass(frozen=True)
class SourceTransaction:
    """One source transaction, as its coordinator prepared it."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    #: Every data partition it wrote to, (topic, partition).
    partitions: frozenset[tuple[str, int]]
    #: Whether it committed consumer offsets too (``sendOffsetsToTransaction``: a read-process-write app).
    sent_offsets: bool
    prepared_ms: int
    #: 2 when the client spoke transactions version 2 (one epoch per transaction); 0 or 1 otherwise.
    transaction_version: int
    #: The ``__consumer_offsets`` partitions it committed offsets to (its groups' coordinators).
    offsets_partitions: frozenset[int] = frozenset()

    @property
    def spans_partitions(self) -> bool:
        """Whether it wrote to more than one partition: only those can be seen in part."""
        return len(self.partitions) > 1


@dataclass
class Prepared:
    """Where a committed source transaction's Prepare and Complete records lie in the coordinator's
    log: what tells whether its markers were all written, or none, at a given moment."""

    transaction: SourceTransaction
    #: The ``__transaction_state`` partition, and the offsets of its PrepareCommit and CompleteCommit.
    log_partition: int
    prepared_at: int
    completed_at: int | None = None

    def visible(self, before: Mapping[int, int], after: Mapping[int, int]) -> bool | None:
        """Whether its records were visible on every partition it touched at a moment between two reads
        of the coordinator log's ends (``before`` and ``after``): True once CompleteCommit was written
        before (every marker written), False when PrepareCommit was written after (no marker written
        yet), None when the moment may have fallen while its markers were being written."""
        if self.completed_at is not None and self.completed_at < before.get(self.log_partition, 0):
            return True
        if self.prepared_at >= after.get(self.log_partition, 0):
            return False
        return None


@dataclass
class Availability:
    """Whether the coordinator's state can be read, and if not, why."""

    readable: bool
    reason: str = ""


def _transaction(txn_id: str, value: TransactionLogValue) -> SourceTransaction:
    data = frozenset(tp for tp in value.partitions if tp[0] != CONSUMER_OFFSETS_TOPIC)
    return SourceTransaction(
        txn_id,
        value.producer_id,
        value.producer_epoch,
        value.status.name == "PREPARE_COMMIT",
        data,
        len(data) != len(value.partitions),
        value.last_update_ms,
        value.client_transaction_version,
        frozenset(p for t, p in value.partitions if t == CONSUMER_OFFSETS_TOPIC),
    )


class SourceTransactions:
    """Follows the source's ``__transaction_state``; ``poll`` hands over newly prepared transactions."""

    def __init__(self, consumer_props: Mapping[str, str], client_id: str) -> None:
        self._consumer = Consumer(
            {
                **consumer_props,
                "logger": LIBRDKAFKA_LOG,
                "client.id": client_id,
                "group.id": f"{client_id}-unused",  # librdkafka wants one; assign() never joins it
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            }
        )
        #: The next offset to read of each partition of the topic.
        self._positions: dict[int, int] = {}
        #: Transactions not complete yet, by transactional.id (Ongoing, PrepareCommit, PrepareAbort).
        self.open: dict[str, TransactionLogValue] = {}
        self.availability = Availability(False, "not started")
        #: The source has no ``__transaction_state`` yet (no transaction ever ran there).
        self.missing = False
        self.skipped_records = 0  # records of a format this decoder does not know
        #: Committed transactions over several partitions (consumer offsets count: an app that sent its
        #: position), by transactional.id, the latest one each,
        #: plus those completed and not yet forgotten (``forget``).
        self._latest: dict[str, Prepared] = {}
        self.prepared: list[Prepared] = []
        self._unreported: list[SourceTransaction] = []

    def start(self, timeout_s: float = 30.0) -> Availability:
        """Assign every partition of the topic from its beginning; say why not when it cannot be read.
        A source where no transaction has run yet has no such topic: that is readable, with no
        partition (``missing``) until ``refresh`` finds it."""
        try:
            meta = self._consumer.list_topics(TRANSACTION_STATE_TOPIC, timeout=timeout_s).topics.get(
                TRANSACTION_STATE_TOPIC
            )
        except KafkaException as exc:
            self.availability = Availability(False, f"cannot describe {TRANSACTION_STATE_TOPIC}: {exc.args[0].str()}")
            return self.availability
        err = meta.error if meta is not None else None
        if meta is None or (err is not None and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            self.missing = True
            self.availability = Availability(True, "no transaction has run on the source yet")
            return self.availability
        if err is not None:
            if err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                reason = f"not authorized: the mirror's principal needs {REQUIRED_ACLS}"
            else:
                reason = f"{TRANSACTION_STATE_TOPIC} cannot be described: {err.str()}"
            self.availability = Availability(False, reason)
            return self.availability
        self.missing = False
        partitions = sorted(meta.partitions)
        self._consumer.assign([TopicPartition(TRANSACTION_STATE_TOPIC, p, 0) for p in partitions])
        self._positions = dict.fromkeys(partitions, 0)
        self.availability = Availability(True)
        return self.availability

    def refresh(self, timeout_s: float = 10.0) -> bool:
        """While the topic is ``missing``: look again; True when it has just been found (and assigned)."""
        if not self.missing:
            return False
        self.start(timeout_s)
        return not self.missing

    @property
    def partitions(self) -> list[int]:
        """The partitions of the topic being read (none while it is ``missing``)."""
        return sorted(self._positions)

    def poll(self, timeout_s: float = 0.0, max_records: int = 10_000) -> list[SourceTransaction]:
        """The transactions prepared since the last call, in the order their coordinator prepared them
        (per ``__transaction_state`` partition)."""
        if not self.availability.readable:
            return []
        prepared: list[SourceTransaction] = []
        for msg in self._consumer.consume(max_records, timeout_s):
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    self._positions[msg.partition() or 0] = msg.offset() or 0
                    continue
                if err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                    self.availability = Availability(False, f"not authorized: the mirror needs {REQUIRED_ACLS}")
                    return prepared
                log.debug("reading %s: %s", TRANSACTION_STATE_TOPIC, err.str())
                continue
            where, offset = msg.partition() or 0, msg.offset() or 0
            self._positions[where] = offset + 1
            found = self._take(msg.key(), msg.value(), where, offset)
            if found is not None:
                prepared.append(found)
        return prepared

    def read_to(self, ends: Mapping[int, int], timeout_s: float) -> bool:
        """Poll until every partition of the log has been read up to ``ends`` (offsets from
        ``log_ends``); False when that took longer than ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while any(self._positions.get(p, 0) < end for p, end in ends.items()):
            if not self.availability.readable or time.monotonic() >= deadline:
                return False
            self.poll(0.005)
        return True

    def take_prepared(self) -> list[SourceTransaction]:
        """The transactions prepared since the last call (by ``poll`` or ``read_to``)."""
        taken, self._unreported = self._unreported, []
        return taken

    def forget(self, before: Mapping[int, int]) -> None:
        """Drop the transactions completed before these log ends: every later moment sees them whole."""
        self.prepared = [
            t for t in self.prepared if t.completed_at is None or t.completed_at >= before.get(t.log_partition, 0)
        ]

    def _take(self, key: bytes | None, value: bytes | None, where: int, offset: int) -> SourceTransaction | None:
        try:
            txn_id = decode_key(key)
            if txn_id is None:
                return None
            state = decode_value(value)
        except (TransactionLogFormatError, UnicodeDecodeError) as exc:
            self.skipped_records += 1
            if self.skipped_records == 1:
                log.warning("a %s record this mirror cannot read was skipped: %s", TRANSACTION_STATE_TOPIC, exc)
            return None
        if state is None or state.status.complete or state.status.name == "EMPTY":
            self.open.pop(txn_id, None)
            latest = self._latest.pop(txn_id, None)
            if latest is not None and state is not None and state.status.complete:
                latest.completed_at = offset
            return None
        self.open[txn_id] = state
        if not state.status.prepared:
            return None
        found = _transaction(txn_id, state)
        self._unreported.append(found)
        if found.committed and (found.spans_partitions or found.sent_offsets):
            tracked = Prepared(found, where, offset)
            self._latest[txn_id] = tracked
            self.prepared.append(tracked)
        return found

    def caught_up(self, timeout_s: float = 10.0) -> bool:
        """Whether everything the coordinator has written by now has been read (one ListOffsets per
        partition: for start-up and tests, not for every cycle)."""
        for p, position in self._positions.items():
            _, end = self._consumer.get_watermark_offsets(
                TopicPartition(TRANSACTION_STATE_TOPIC, p), timeout=timeout_s, cached=False
            )
            if position < end:
                return False
        return True

    def close(self) -> None:
        """Close the consumer."""
        self._consumer.close()
