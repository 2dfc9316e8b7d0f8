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
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from mirror_sink.core.clients import LIBRDKAFKA_LOG
from mirror_sink.core.transaction_log import (
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

    @property
    def spans_partitions(self) -> bool:
        """Whether it wrote to more than one partition: only those can be seen in part."""
        return len(self.partitions) > 1


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
        self.skipped_records = 0  # records of a format this decoder does not know

    def start(self, timeout_s: float = 30.0) -> Availability:
        """Assign every partition of the topic from its beginning; say why not when it cannot be read."""
        try:
            meta = self._consumer.list_topics(TRANSACTION_STATE_TOPIC, timeout=timeout_s).topics.get(
                TRANSACTION_STATE_TOPIC
            )
        except KafkaException as exc:
            self.availability = Availability(False, f"cannot describe {TRANSACTION_STATE_TOPIC}: {exc.args[0].str()}")
            return self.availability
        if meta is None or meta.error is not None:
            err = meta.error if meta is not None else None
            if err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                reason = f"not authorized: the mirror's principal needs {REQUIRED_ACLS}"
            elif err is not None and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                reason = f"{TRANSACTION_STATE_TOPIC} does not exist yet (no transaction has run on the source)"
            else:
                reason = f"{TRANSACTION_STATE_TOPIC} cannot be described: {err.str() if err else 'no metadata'}"
            self.availability = Availability(False, reason)
            return self.availability
        partitions = sorted(meta.partitions)
        self._consumer.assign([TopicPartition(TRANSACTION_STATE_TOPIC, p, 0) for p in partitions])
        self._positions = dict.fromkeys(partitions, 0)
        self.availability = Availability(True)
        return self.availability

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
            self._positions[msg.partition() or 0] = (msg.offset() or 0) + 1
            found = self._take(msg.key(), msg.value())
            if found is not None:
                prepared.append(found)
        return prepared

    def _take(self, key: bytes | None, value: bytes | None) -> SourceTransaction | None:
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
            return None
        self.open[txn_id] = state
        return _transaction(txn_id, state) if state.status.prepared else None

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
