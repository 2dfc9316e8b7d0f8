"""TakeoverFence: which holders of transactions open on partitions taken over are fenced, and what
happens when the lookup or a fence cannot be done (best effort: the transaction timeout still ends them).

The clients the fence makes are replaced at its boundary: kafka-python's admin client answers
DescribeProducers and ListTransactions from a table, and the producer records its InitProducerId.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from kafka import TopicPartition as KafkaPythonPartition
from kafka import errors as kerr

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.task import takeover_fence
from mirror_sink.task.takeover_fence import TakeoverFence

pytestmark = pytest.mark.unit

LOG = logging.getLogger("test.takeover_fence")
TA, TB = TargetPartition("source.orders", 0), TargetPartition("source.orders", 1)
TARGET = {"bootstrap.servers": "tgt:9092"}


@dataclass(frozen=True)
class _ActiveProducer:
    producer_id: int
    current_transaction_start_offset: int  # -1: no transaction open


@dataclass(frozen=True)
class _PartitionProducers:
    active_producers: list[_ActiveProducer]


@dataclass(frozen=True)
class _Listing:
    transactional_id: str
    producer_id: int


@dataclass
class Target:
    """What the target's brokers hold, as the fence's clients are told: producers active on each
    partition (id, the start offset of their open transaction), each producer's transactional id,
    and the clients made."""

    active: dict[TargetPartition, list[tuple[int, int]]] = field(default_factory=dict)
    transactional_ids: dict[int, str] = field(default_factory=dict)
    lookup_error: Exception | None = None
    refused: set[str] = field(default_factory=set)
    admins: list[FakeAdmin] = field(default_factory=list)
    fenced: list[str] = field(default_factory=list)
    flushed: list[str] = field(default_factory=list)

    def admin(self, **options: Any) -> FakeAdmin:
        made = FakeAdmin(self, options)
        self.admins.append(made)
        return made

    def producer(self, conf: Mapping[str, Any]) -> FakeProducer:
        return FakeProducer(self, dict(conf))


class FakeAdmin:
    """kafka-python's ``KafkaAdminClient``, as the fence calls it."""

    def __init__(self, target: Target, options: dict[str, Any]) -> None:
        self.target = target
        self.options = options
        self.filters: list[list[int]] = []
        self.closed = False

    def describe_producers(self, partitions: Iterable[KafkaPythonPartition]) -> dict[Any, _PartitionProducers]:
        if self.target.lookup_error is not None:
            raise self.target.lookup_error
        return {
            tp: _PartitionProducers(
                [_ActiveProducer(*p) for p in self.target.active.get(TargetPartition(tp.topic, tp.partition), [])]
            )
            for tp in partitions
        }

    def list_transactions(self, producer_id_filters: list[int]) -> dict[int, list[_Listing]]:
        self.filters.append(list(producer_id_filters))
        wanted = set(producer_id_filters)
        listings = [_Listing(tid, pid) for pid, tid in self.target.transactional_ids.items() if pid in wanted]
        return {1: listings[:1], 2: listings[1:]}  # one list per broker

    def close(self) -> None:
        self.closed = True


class FakeProducer:
    """A librdkafka producer under another slot's transactional id: ``init_transactions`` is the fence."""

    def __init__(self, target: Target, conf: dict[str, Any]) -> None:
        self.target = target
        self.conf = conf

    def init_transactions(self, timeout: float) -> None:
        transactional_id = self.conf["transactional.id"]
        assert self.conf["client.id"] == "mirror-w1-0-fence" and timeout == pytest.approx(30.0)
        if transactional_id in self.target.refused:
            raise RuntimeError("TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
        self.target.fenced.append(transactional_id)

    def flush(self, timeout: float) -> int:
        self.target.flushed.append(self.conf["transactional.id"])
        return 0


@pytest.fixture
def target(monkeypatch: pytest.MonkeyPatch) -> Target:
    scene = Target()
    monkeypatch.setattr(takeover_fence, "KafkaAdminClient", scene.admin)
    monkeypatch.setattr(takeover_fence, "Producer", scene.producer)
    return scene


def _fence(admin_props: Mapping[str, str] = TARGET) -> TakeoverFence:
    return TakeoverFence(admin_props, TARGET, "mirror", "mirror-w1-0", LOG)


def test_the_connectors_other_slots_holding_a_transaction_open_are_fenced_and_no_one_else(target: Target) -> None:
    target.active = {
        TA: [(1, 500), (2, 510), (3, -1)],  # producer 3 holds nothing open
        TB: [(4, 900), (5, 950)],
    }
    target.transactional_ids = {
        1: "mirror-w2-0",  # another worker's slot of this connector
        2: "mirror-w1-0",  # this task's own slot: its own producer fences it anyway
        4: "mirror.orders.1",  # a Spark range of this connector
        5: "billing-w1-0",  # another connector's
    }
    fence = _fence()
    assert fence.fence([TA, TB]) == ["mirror-w2-0", "mirror.orders.1"]
    assert target.fenced == ["mirror-w2-0", "mirror.orders.1"] and fence.fenced == target.fenced
    (admin,) = target.admins
    assert admin.filters == [[1, 2, 4, 5]], "only producers with a transaction open are looked up"
    assert admin.options["client_id"] == "mirror-w1-0-fence" and admin.closed


def test_fenced_ids_add_up_over_takeovers(target: Target) -> None:
    target.active = {TA: [(1, 500)]}
    target.transactional_ids = {1: "mirror-w2-0"}
    fence = _fence()
    fence.fence([TA])
    target.transactional_ids = {1: "mirror-w3-0"}
    fence.fence([TA])
    assert fence.fenced == ["mirror-w2-0", "mirror-w3-0"]


def test_no_partitions_or_no_transaction_open_needs_no_fence(target: Target) -> None:
    fence = _fence()
    assert fence.fence([]) == [] and target.admins == [], "nothing taken over: no client made"
    target.active = {TA: [(1, -1)]}
    assert fence.fence([TA]) == []
    assert target.admins[0].filters == [], "no transaction open: no listing asked for"


def test_a_fence_that_fails_leaves_the_others_fenced(target: Target, caplog: pytest.LogCaptureFixture) -> None:
    target.active = {TA: [(1, 500), (2, 510)]}
    target.transactional_ids = {1: "mirror-w2-0", 2: "mirror-w3-0"}
    target.refused = {"mirror-w2-0"}
    assert _fence().fence([TA]) == ["mirror-w3-0"]
    assert target.flushed == ["mirror-w2-0", "mirror-w3-0"], "each fencing producer is let go"
    assert any("could not fence mirror-w2-0" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("error", "level"),
    [
        (kerr.NotLeaderForPartitionError(), logging.INFO),  # new partitions: nothing can be open there
        (kerr.LeaderNotAvailableError(), logging.INFO),
        (kerr.KafkaTimeoutError(), logging.WARNING),
        (kerr.TopicAuthorizationFailedError(), logging.WARNING),
    ],
    ids=["not-leader", "no-leader", "timeout", "not-authorized"],
)
def test_a_lookup_that_cannot_be_done_fences_nothing_and_says_why(
    target: Target, caplog: pytest.LogCaptureFixture, error: Exception, level: int
) -> None:
    target.lookup_error = error
    caplog.set_level(logging.INFO, logger=LOG.name)
    assert _fence().fence([TA]) == []
    assert target.admins[0].closed
    said = [r for r in caplog.records if "transactions left open" in r.getMessage()]
    assert [r.levelno for r in said] == [level]


def test_settings_its_client_cannot_honour_skip_the_lookup_said_once(
    target: Target, caplog: pytest.LogCaptureFixture
) -> None:
    fence = _fence({**TARGET, "ssl.keystore.location": "/etc/keystore.p12"})
    assert fence.fence([TA]) == [] and fence.fence([TB]) == []
    assert target.admins == [], "it would wait out its bootstrap timeout at every assignment"
    said = [r for r in caplog.records if "ssl.keystore.location" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING
