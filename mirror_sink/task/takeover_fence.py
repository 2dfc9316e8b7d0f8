"""Fence the task slot that left a transaction open on partitions this task just took over.

A task that dies or freezes mid-transaction leaves that transaction open on its target partitions.
Readers of the target (read_committed) then see nothing past it there until the broker aborts it at
``transaction.timeout.ms`` (60 s by default), however soon another task takes the partitions over.
So when a task is assigned partitions it asks their leaders which producers hold a transaction open
on them (DescribeProducers, KIP-664), finds their transactional ids on the coordinators
(ListTransactions) and, for each that is another slot of this connector, runs InitProducerId under
that id (a worker's slot, ``{connector}-{worker}-{task}``, or a Spark range's,
``{connector}.{topic}.{partition}``, left by a runtime handed over). That is KIP-618's zombie-fencing
round, per takeover: the coordinator aborts the open
transaction at once (its markers unblock the readers) and bumps the epoch, so the old holder can
never commit it afterwards. The stall is then about a session timeout, not a transaction timeout.

Safe because the shadow group uses the classic protocol's eager rebalance: every live member gives
up all its partitions, after ending its cycle, before any member is assigned. A transaction still
open on a partition when its new owner is assigned is a dead or frozen member's. Static membership
(``mirror_sink.task.static_member``) keeps this true: a task that comes back within its session is
handed, without a rebalance, only the partitions it held itself, which no live member was given in
between, and its own predecessor's transaction is fenced by its producer's InitProducerId under the
same transactional id. Fencing a live
slot by mistake would only cost it a producer reset (it never loses or duplicates data), and the
check is best effort: when it cannot run (an ACL, an old broker), the transaction timeout still
bounds the stall, and the log says so.

A disaster failover runs the same round over every mirrored partition (``mirror_sink.failover``): the
mirror died with the source, and its last transaction would otherwise hide, until its timeout, every
record the groups moved there write or read past it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaPythonPartition
from kafka import errors as kerr

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients import clients
from mirror_sink.core.runtime.logs import Log
from mirror_sink.raw.wire.capabilities import client_options, unsupported

_REQUEST_TIMEOUT_MS = 10_000


class TakeoverFence:
    """Aborts, at takeover, transactions another slot of the connector left open on the partitions."""

    def __init__(
        self, target_admin: Mapping[str, str], target_producer: Mapping[str, str], connector: str, slot: str, log: Log
    ) -> None:
        self._admin_props = target_admin
        self._producer_props = target_producer
        #: A worker's slots and the Spark runtime's ranges (``task_slot``, ``range_copier.transactional_id``).
        self._prefixes = (f"{connector}-", f"{connector}.")
        self._slot = slot
        self.log = log
        #: Transactional ids fenced so far by this task (for the tests and the log).
        self.fenced: list[str] = []
        #: Settings the fence's client (kafka-python) cannot honour, e.g. a PKCS#12 keystore: then it
        #: cannot reach the target at all, and trying would hold the task for its 30 s bootstrap
        #: timeout at every assignment (long enough for the shadow group's session to expire).
        self._cannot = unsupported(target_admin)
        self._said_cannot = False

    def fence(self, partitions: Iterable[TargetPartition]) -> list[str]:
        """Fence the holders of transactions open on ``partitions``; returns the ids fenced."""
        wanted = [KafkaPythonPartition(p.topic, p.partition) for p in partitions]
        if not wanted:
            return []
        if self._cannot:
            if not self._said_cannot:
                self._said_cannot = True
                self.log.warning(
                    "cannot look for transactions left open on partitions taken over: the fence's client cannot "
                    "honour %s; any such transaction keeps their new records invisible until transaction.timeout.ms "
                    "aborts it",
                    ", ".join(self._cannot),
                )
            return []
        started = time.monotonic()
        try:
            holders = self._open_transaction_holders(wanted)
        except (kerr.NotLeaderForPartitionError, kerr.LeaderNotAvailableError) as exc:
            # Target partitions whose leaders do not serve them yet: new ones, created a moment ago
            # (the task holds them back until they are served), where nothing can be open.
            self.log.info(
                "did not look for transactions left open on the %d partitions taken over: some have no serving "
                "leader yet (%s); any transaction open there is aborted by transaction.timeout.ms",
                len(wanted),
                exc,
            )
            return []
        except Exception as exc:  # best effort: the transaction timeout still ends them
            self.log.warning(
                "cannot look for transactions left open on the %d partitions taken over (%s); any such "
                "transaction keeps their new records invisible until transaction.timeout.ms aborts it",
                len(wanted),
                exc,
            )
            return []
        fenced = []
        for transactional_id, where in sorted(holders.items()):
            if transactional_id == self._slot or not transactional_id.startswith(self._prefixes):
                continue
            try:
                self._init_producer_id(transactional_id)
            except Exception as exc:
                self.log.warning("could not fence %s (a transaction open on %s): %s", transactional_id, where, exc)
                continue
            fenced.append(transactional_id)
            self.log.info(
                "fenced %s: it left a transaction open on %s (taken over by %s); its transaction is "
                "aborted and it can never commit again (%.1f s)",
                transactional_id,
                where,
                self._slot,
                time.monotonic() - started,
            )
        self.fenced += fenced
        return fenced

    def _open_transaction_holders(self, partitions: list[KafkaPythonPartition]) -> dict[str, str]:
        """Transactional id -> the partitions (as text) on which it holds a transaction open."""
        admin = KafkaAdminClient(
            **client_options(self._admin_props), client_id=f"{self._slot}-fence", request_timeout_ms=_REQUEST_TIMEOUT_MS
        )
        try:
            on: dict[int, list[str]] = {}
            for tp, state in admin.describe_producers(partitions).items():
                for producer in state.active_producers:
                    if producer.current_transaction_start_offset >= 0:
                        on.setdefault(producer.producer_id, []).append(f"{tp.topic}-{tp.partition}")
            if not on:
                return {}
            listings = admin.list_transactions(producer_id_filters=sorted(on))
            return {
                listing.transactional_id: ", ".join(sorted(on[listing.producer_id]))
                for broker in listings.values()
                for listing in broker
                if listing.producer_id in on
            }
        finally:
            admin.close()

    def _init_producer_id(self, transactional_id: str) -> None:
        """InitProducerId under ``transactional_id``: the coordinator aborts its open transaction."""
        producer = Producer(
            {**self._producer_props, "client.id": f"{self._slot}-fence", "transactional.id": transactional_id}
            | {"logger": clients.LIBRDKAFKA_LOG}
        )
        try:
            producer.init_transactions(_REQUEST_TIMEOUT_MS / 1000 * 3)
        finally:
            producer.flush(0)
