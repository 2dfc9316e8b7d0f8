"""Small stand-ins for the failover verbs' unit tests: a forward link's config, admin clients that
answer from tables, and a journal of what would have been written where. Nothing here speaks to a
broker; each fake answers exactly what the code under test asks and records what it would write."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import TargetPartition

#: The clusters of the forward link: the old primary (its source) and the new primary (its target).
OLD_PRIMARY, NEW_PRIMARY = "east:9092", "west:9092"

FORWARD = {
    "name": "orders-mirror",
    "source.cluster.alias": "us-east",
    "target.cluster.alias": "us-west",
    "source.cluster.bootstrap.servers": OLD_PRIMARY,
    "target.cluster.bootstrap.servers": NEW_PRIMARY,
    "topics": "orders",
}


def forward_config(**overrides: str) -> MirrorSinkConfig:
    """The forward link us-east (east:9092) -> us-west (west:9092), mirroring ``orders``."""
    return MirrorSinkConfig.parse({**FORWARD, **overrides})


def kafka_exception(code: int, reason: str) -> KafkaException:
    """What librdkafka raises: a KafkaException around a KafkaError."""
    return KafkaException(KafkaError(code, reason))


def bootstrap(props: Mapping[str, str]) -> str:
    """The cluster a client's settings point at."""
    return props["bootstrap.servers"]


class FakeFuture:
    """An admin request's future: its answer, or the exception it raises."""

    def __init__(self, value: object = None, error: BaseException | None = None) -> None:
        self._value = value
        self._error = error

    def result(self, timeout: float | None = None) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


@dataclass
class FakeAdmin:
    """An AdminClient of one cluster, answering from tables.

    ``cluster_id`` None: the cluster does not answer ``describe_cluster``. ``topics``: topic ->
    partitions (``list_topics``). ``groups``: consumer group -> state, for a ``list_groups`` fake.
    ``create_error``: what ``create_topics`` fails with (None: it succeeds)."""

    bootstrap: str
    cluster_id: str | None = None
    topics: dict[str, int] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    list_error: KafkaException | None = None
    create_error: KafkaException | None = None
    created: list[NewTopic] = field(default_factory=list)

    def describe_cluster(self, request_timeout: float) -> FakeFuture:
        if self.cluster_id is None:
            return FakeFuture(error=kafka_exception(KafkaError._TRANSPORT, f"{self.bootstrap}: no answer"))
        return FakeFuture(SimpleNamespace(cluster_id=self.cluster_id))

    def list_topics(self, timeout: float) -> SimpleNamespace:
        if self.list_error is not None:
            raise self.list_error
        metas = {
            name: SimpleNamespace(error=None, partitions=dict.fromkeys(range(n))) for name, n in self.topics.items()
        }
        return SimpleNamespace(topics=metas)

    def create_topics(self, topics: Iterable[NewTopic]) -> dict[str, FakeFuture]:
        out = {}
        for topic in topics:
            self.created.append(topic)
            out[topic.topic] = FakeFuture(error=self.create_error)
        return out


class FakeClusters:
    """The clusters a verb talks to, by bootstrap address: their admin clients, the groups'
    committed offsets, and the journal of every write the fakes were asked for, in order."""

    def __init__(self, *admins: FakeAdmin) -> None:
        self.admins = {a.bootstrap: a for a in admins}
        #: (cluster, group) -> committed offsets.
        self.committed: dict[tuple[str, str], dict[TargetPartition, int]] = {}
        #: What would have been written, in order: one line per write.
        self.writes: list[str] = []

    def admin(self, props: Mapping[str, str], client_id: str) -> FakeAdmin:
        """``clients.admin``: the admin client of the cluster ``props`` point at."""
        return self.admins[bootstrap(props)]

    def list_groups(self, admin: FakeAdmin, cluster: str, timeout_s: float = 30.0) -> dict[str, str]:
        """``groups.list_groups``: every group of ``admin``'s cluster and its state."""
        return dict(admin.groups)

    def committed_offsets(
        self,
        props: Mapping[str, str],
        group: str,
        partitions: Iterable[tuple[str, int]],
        client_id: str,
        cluster: str,
        *,
        timeout_s: float = 60.0,
    ) -> dict[tuple[str, int], int]:
        """``groups.committed_offsets``: ``group``'s offsets on ``partitions``, only those it has."""
        held = self.committed.get((bootstrap(props), group), {})
        return {tp: held[TargetPartition(*tp)] for tp in partitions if TargetPartition(*tp) in held}


class FakeProducer:
    """A transactional producer that records every call, in order, instead of sending."""

    def __init__(self, config: Mapping[str, object] | None = None) -> None:
        self.config = dict(config or {})
        self.calls: list[tuple[Any, ...]] = []

    def init_transactions(self, timeout: float) -> None:
        self.calls.append(("init_transactions",))

    def begin_transaction(self) -> None:
        self.calls.append(("begin_transaction",))

    def produce(self, topic: str, value: bytes, key: bytes, partition: int = -1) -> None:
        self.calls.append(("produce", topic, partition, key, value))

    def send_offsets_to_transaction(self, offsets: list[Any], group_metadata: object, timeout: float) -> None:
        self.calls.append(("send_offsets_to_transaction", offsets, group_metadata))

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append(("commit_transaction",))

    @property
    def steps(self) -> list[str]:
        """The calls' names, in order."""
        return [call[0] for call in self.calls]

    @property
    def produced(self) -> list[tuple[bytes, bytes]]:
        """(key, value) of every record produced, in order."""
        return [(call[3], call[4]) for call in self.calls if call[0] == "produce"]
