"""Fence the old primary before a planned failover's cut, so that no producer writes there after it.

A planned switch trusts the operator to have stopped every producer on the source. One left running
keeps writing there after the cut: its records never reach the new primary, and a failback finds
them days later as diverged. ``mirror-sink failover --fence-source`` therefore, before it waits for
the mirror and cuts:

1. lists the producers writing to the mirrored partitions: DescribeProducers on each partition's
   leader (KIP-664) for the producers that wrote in the last ``RECENT_S`` seconds or hold a
   transaction open, and ListTransactions for the transactional ids among them;
2. fences each transactional one: InitProducerId under its transactional id aborts its open
   transaction and bumps its epoch, so its next write or commit fails with PRODUCER_FENCED (an
   application that restarts and initialises again is stopped by step 3, not by this);
3. where the source has an authorizer, adds a DENY WRITE ACL for ``User:*`` on every mirrored topic.
   A DENY outweighs every ALLOW, so no principal but a super user can write there any more. The
   mirror never writes to the source topics, so it denies no write of its own. The topics are kept
   in the failover record, and the failback lifts the ACLs before its reverse link writes home.

Producers it cannot fence (idempotent or plain ones on a source without an authorizer) are named, and
the failover reports, with their offsets, the records that land after the cut: never lost, they are
what a failback keeps. Nothing here touches the target; fencing twice is harmless, so a failover that
stopped half-way can simply run again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaPythonPartition

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.clients import clients
from mirror_sink.raw.wire.capabilities import client_options

#: A producer that wrote to a mirrored partition within this long counts as still writing.
RECENT_S = 600.0
_TIMEOUT_S = 30.0
#: Every principal: a DENY for it outweighs each ALLOW (super users are not subject to ACLs).
EVERYONE = "User:*"


class SourceFenceRefused(TaskFailure):
    """The source could not be fenced as asked (it names why); the failover does not go on."""


@dataclass(frozen=True)
class SourceProducer:
    """A producer that writes, or wrote lately, to mirrored source partitions."""

    producer_id: int
    epoch: int
    partitions: tuple[str, ...]  # topic-partition
    last_write_ms: int
    transactional_id: str | None
    open_transaction: bool

    def describe(self) -> str:
        """One line for the report."""
        kind = f"transactional id {self.transactional_id}" if self.transactional_id else "no transactional id"
        age = max(0.0, time.time() - self.last_write_ms / 1000)
        txn = ", a transaction open" if self.open_transaction else ""
        return (
            f"producer {self.producer_id} (epoch {self.epoch}, {kind}) on {', '.join(self.partitions)}, "
            f"last write {age:.0f} s ago{txn}"
        )


@dataclass
class _Seen:
    """A producer as the partitions' leaders describe it, gathered over its partitions."""

    epoch: int
    partitions: list[str] = field(default_factory=list)
    last_write_ms: int = 0
    open_transaction: bool = False


@dataclass
class SourceFenceReport:
    """What the fence found and did."""

    producers: list[SourceProducer] = field(default_factory=list)
    fenced: list[str] = field(default_factory=list)  # transactional ids
    not_fenced: list[str] = field(default_factory=list)  # why, per producer
    denied_topics: list[str] = field(default_factory=list)
    authorizer: bool = False
    dry_run: bool = False

    def lines(self) -> list[str]:
        """The report, one fact per line."""
        fence, deny = ("would fence", "would deny") if self.dry_run else ("fenced", "denied")
        out = [f"source fence: {len(self.producers)} producers wrote to the mirrored topics lately"]
        out += [f"  {p.describe()}" for p in self.producers]
        out += [f"  {fence} transactional id {t} (its epoch bumped, its open transaction aborted)" for t in self.fenced]
        out += [f"  not fenced: {why}" for why in self.not_fenced]
        if self.denied_topics:
            out.append(f"  {deny} WRITE to {EVERYONE} on {', '.join(self.denied_topics)} (lifted by the failback)")
        elif not self.authorizer:
            out.append(
                "  the source has no authorizer: no ACL can stop its other producers; records they write after "
                "the cut are reported below with their offsets"
            )
        return out


def deny_bindings(topics: Iterable[str]) -> list[AclBinding]:
    """DENY WRITE for every principal on each of ``topics`` (literal names)."""
    return [
        AclBinding(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            EVERYONE,
            "*",
            AclOperation.WRITE,
            AclPermissionType.DENY,
        )
        for topic in sorted(set(topics))
    ]


class SourceFence:
    """Fences the producers of one connector's mirrored source topics (see the module)."""

    def __init__(self, config: MirrorSinkConfig, say: Callable[[str], None] = print) -> None:
        self.config = config
        self.say = say
        self._client_id = f"{config.name}-source-fence"

    def run(self, partitions: Sequence[tuple[str, int]], *, dry_run: bool = False) -> SourceFenceReport:
        """List, fence and deny (or, with ``dry_run``, only say what it would); SourceFenceRefused
        when the source does not answer or refuses a request the fence needs."""
        report = SourceFenceReport(dry_run=dry_run)
        report.producers = self._producers(partitions)
        admin = clients.admin(self.config.source_admin(), self._client_id)
        report.authorizer = self._has_authorizer(admin)
        for producer in report.producers:
            if producer.transactional_id is not None:
                if not dry_run:
                    self._fence(producer.transactional_id)
                report.fenced.append(producer.transactional_id)
            elif not report.authorizer:
                report.not_fenced.append(
                    f"producer {producer.producer_id} on {', '.join(producer.partitions)} has no transactional id "
                    "and the source no authorizer"
                )
        if report.authorizer:
            topics = sorted({topic for topic, _ in partitions})
            if not dry_run:
                self._deny(admin, topics)
            report.denied_topics = topics
        for line in report.lines():
            self.say(line)
        return report

    # -- the requests ------------------------------------------------------------------------------
    def _producers(self, partitions: Sequence[tuple[str, int]]) -> list[SourceProducer]:
        wanted = [KafkaPythonPartition(t, p) for t, p in partitions]
        if not wanted:
            return []
        since_ms = (time.time() - RECENT_S) * 1000
        try:
            admin = KafkaAdminClient(
                **client_options(self.config.source_admin()),
                client_id=self._client_id,
                request_timeout_ms=int(_TIMEOUT_S * 1000),
            )
        except Exception as exc:
            raise SourceFenceRefused(
                f"the source cluster {self.config.source_alias} does not answer ({exc}): --fence-source needs it "
                "(a disaster failover, without the source, cannot fence it)"
            ) from exc
        try:
            found: dict[int, _Seen] = {}
            for tp, state in admin.describe_producers(wanted).items():
                for p in state.active_producers:
                    open_txn = p.current_transaction_start_offset >= 0
                    if not open_txn and p.last_timestamp < since_ms:
                        continue
                    seen = found.setdefault(p.producer_id, _Seen(p.producer_epoch))
                    seen.partitions.append(f"{tp.topic}-{tp.partition}")
                    seen.last_write_ms = max(seen.last_write_ms, p.last_timestamp)
                    seen.open_transaction = seen.open_transaction or open_txn
            ids: dict[int, str] = {}
            if found:
                for broker in admin.list_transactions(producer_id_filters=sorted(found)).values():
                    for listing in broker:
                        ids[listing.producer_id] = listing.transactional_id
        except Exception as exc:
            raise SourceFenceRefused(
                f"cannot list the producers of the mirrored topics on the source cluster {self.config.source_alias} "
                f"({exc}): DescribeProducers needs READ on the topics, ListTransactions DESCRIBE on their "
                "transactional ids"
            ) from exc
        finally:
            admin.close()
        return [
            SourceProducer(pid, s.epoch, tuple(sorted(s.partitions)), s.last_write_ms, ids.get(pid), s.open_transaction)
            for pid, s in sorted(found.items())
        ]

    def _fence(self, transactional_id: str) -> None:
        """InitProducerId under ``transactional_id`` on the source: its transaction aborted, its epoch bumped."""
        producer = Producer(
            {**self.config.source_producer(), "client.id": self._client_id, "transactional.id": transactional_id}
            | {"logger": clients.LIBRDKAFKA_LOG}
        )
        try:
            producer.init_transactions(_TIMEOUT_S)
        except KafkaException as exc:
            raise SourceFenceRefused(
                f"cannot fence transactional id {transactional_id} on the source cluster {self.config.source_alias}: "
                f"{exc.args[0].str()} (it needs WRITE on that transactional id)"
            ) from exc
        finally:
            producer.flush(0)

    def _has_authorizer(self, admin: AdminClient) -> bool:
        """Whether the source checks ACLs (a broker's ``authorizer.class.name``; not allowed to read it: yes)."""
        try:
            described = admin.describe_cluster(request_timeout=_TIMEOUT_S).result(_TIMEOUT_S)
            if not described.nodes:
                return False
            broker = ConfigResource(ConfigResource.Type.BROKER, str(described.nodes[0].id))
            entry = admin.describe_configs([broker], request_timeout=_TIMEOUT_S)[broker].result(_TIMEOUT_S)
        except KafkaException:
            return True  # access control is on: a principal without DESCRIBE_CONFIGS was refused
        setting = entry.get("authorizer.class.name")
        return setting is not None and bool(setting.value)

    def _deny(self, admin: AdminClient, topics: Sequence[str]) -> None:
        for binding, future in admin.create_acls(deny_bindings(topics), request_timeout=_TIMEOUT_S).items():
            try:
                future.result(_TIMEOUT_S)
            except KafkaException as exc:
                raise SourceFenceRefused(
                    f"cannot deny writes to {binding.name} on the source cluster {self.config.source_alias}: "
                    f"{exc.args[0].str()} (CreateAcls needs ALTER on the cluster)"
                ) from exc


def lift(config: MirrorSinkConfig, topics: Sequence[str], client_id: str) -> int:
    """Delete the DENY WRITE ACLs a fenced failover added on ``topics`` of ``config``'s source; how many went."""
    if not topics:
        return 0
    admin = clients.admin(config.source_admin(), client_id)
    filters = [
        AclBindingFilter(
            b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type
        )
        for b in deny_bindings(topics)
    ]
    deleted = 0
    for _, future in admin.delete_acls(filters, request_timeout=_TIMEOUT_S).items():
        try:
            deleted += len(future.result(_TIMEOUT_S))
        except KafkaException as exc:
            raise TaskFailure(
                f"cannot lift the failover's write fence on {', '.join(topics)}: {exc.args[0].str()}"
            ) from exc
    return deleted
