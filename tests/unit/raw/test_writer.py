"""RawWriter.open, the one place raw mode's target side is built: the connection's limits, the
transaction client, pipeline and committer it hands each other, and no connection left open when a
step fails."""

from __future__ import annotations

from typing import Any, cast

import pytest

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.raw import writer as writer_module
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.wire import WireClient
from mirror_sink.raw.writer import RawWriter
from tests.unit.raw.fakes import FakeWire

pytestmark = pytest.mark.unit

SYNCS = TargetPartition("mm2-offset-syncs.source.internal", 0)


class _Built:
    """What ``open`` built, by the fakes put in place of the names ``writer`` imports."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.wires: list[FakeWire] = []
        self.transactions: dict[str, Any] = {}
        self.pipeline: dict[str, Any] = {}
        self.committer: tuple[Any, ...] = ()
        self.transactions_failure: BaseException | None = None
        self.pipeline_failure: BaseException | None = None
        self.pipelines_closed = 0
        monkeypatch.setattr(writer_module, "TransactionClient", self._transactions)
        monkeypatch.setattr(writer_module, "ProducePipeline", self._pipeline)
        monkeypatch.setattr(writer_module, "RawCommitter", self._committer)

    def wire_class(self, *args: Any) -> FakeWire:
        self.wires.append(FakeWire(*args))
        return self.wires[-1]

    def _transactions(self, wire: FakeWire, **kwargs: Any) -> Any:
        if self.transactions_failure is not None:
            raise self.transactions_failure
        self.transactions = {"wire": wire, **kwargs}
        return self

    def _pipeline(self, wire: FakeWire, transactions: Any, budget: MemoryBudget, **kwargs: Any) -> Any:
        if self.pipeline_failure is not None:
            raise self.pipeline_failure
        self.pipeline = {"wire": wire, "transactions": transactions, "budget": budget, **kwargs}
        return self

    def _committer(self, *args: Any) -> tuple[Any, ...]:
        self.committer = args
        return args

    def close(self) -> None:  # the pipeline's
        self.pipelines_closed += 1


def _open(built: _Built, budget: MemoryBudget, *, timeout_ms: int = 60_000) -> RawWriter:
    return RawWriter.open(
        {"bootstrap.servers": "tgt:9092"},
        client_id="mirror-0-raw-producer",
        budget=budget,
        transactional_id="mirror-0-txn",
        transaction_timeout_ms=timeout_ms,
        group_id="shadow",
        request_max_bytes=2 << 20,
        sync_partition=SYNCS,
        version=1,
        wire_class=cast(type[WireClient], built.wire_class),
    )


def test_open_wires_one_target_connection_through_the_transaction_client_pipeline_and_committer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built, budget = _Built(monkeypatch), MemoryBudget(1 << 20)
    writer = _open(built, budget)
    (wire,) = built.wires
    assert wire.args == ({"bootstrap.servers": "tgt:9092"}, "target", "mirror-0-raw-producer", 16 << 20, 30_000)
    assert built.transactions == {
        "wire": wire,
        "transactional_id": "mirror-0-txn",
        "transaction_timeout_ms": 60_000,
        "group_id": "shadow",
        "version": 1,
    }
    assert built.pipeline == {"wire": wire, "transactions": built, "budget": budget, "request_max_bytes": 2 << 20}
    assert built.committer == (built, built, SYNCS)
    assert cast(object, writer.wire) is wire and cast(object, writer.committer) is built.committer


def test_a_produce_request_never_outlives_its_transaction(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _Built(monkeypatch)
    _open(built, MemoryBudget(1 << 20), timeout_ms=5_000)
    assert built.wires[0].args[4] == 5_000


@pytest.mark.parametrize("step", ["transactions", "pipeline"])
def test_a_step_that_fails_closes_the_target_connection(monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    built = _Built(monkeypatch)
    setattr(built, f"{step}_failure", TaskFailure("the target has no transactions"))
    with pytest.raises(TaskFailure):
        _open(built, MemoryBudget(1 << 20))
    assert built.wires[0].closed == 1


def test_closing_the_writer_closes_its_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _Built(monkeypatch)
    _open(built, MemoryBudget(1 << 20)).close()
    assert built.pipelines_closed == 1
