"""The raw path's coordinator lookup under the one retry policy, without a broker."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.raw.wire.wire import COORDINATOR_TRANSACTION, NodeId, WireClient


def _wire(monkeypatch: pytest.MonkeyPatch, codes: Iterator[int]) -> tuple[WireClient, list[float]]:
    """A WireClient with no connection whose FindCoordinator answers ``codes``, and the times it was asked."""
    wire = WireClient.__new__(WireClient)
    wire.cluster, wire.bootstrap = "target", "broker:9092"
    asked: list[float] = []

    def call(node: NodeId, request: Any, what: str, timeout_s: float = 30.0) -> Any:
        assert what == "finding the coordinator of 'tx-1'"
        asked.append(time.monotonic())
        return SimpleNamespace(coordinators=[SimpleNamespace(error_code=next(codes), node_id=3)])

    monkeypatch.setattr(wire, "call", call)
    monkeypatch.setattr(wire, "any_node", lambda: "bootstrap-0")
    return wire, asked


def test_a_coordinator_still_loading_is_asked_again_at_a_steady_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    wire, asked = _wire(monkeypatch, iter([14, 15, 0]))  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
    assert wire.coordinator("tx-1", COORDINATOR_TRANSACTION) == 3
    assert len(asked) == 3
    assert all(later - earlier >= 0.19 for earlier, later in itertools.pairwise(asked)), "0.2 s apart, not faster"


def test_an_error_no_retry_fixes_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    wire, asked = _wire(monkeypatch, iter([53]))  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    with pytest.raises(
        TaskFailure, match=r"^the target cluster denied WRITE on TRANSACTIONAL_ID 'tx-1' to User:ANONYMOUS; grant it"
    ):
        wire.coordinator("tx-1", COORDINATOR_TRANSACTION)
    assert len(asked) == 1


def test_a_coordinator_that_never_appears_fails_the_task_after_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    wire, asked = _wire(monkeypatch, itertools.repeat(15))  # COORDINATOR_NOT_AVAILABLE
    with pytest.raises(TaskFailure, match=r"^finding the coordinator of 'tx-1': COORDINATOR_NOT_AVAILABLE \(15\)$"):
        wire.coordinator("tx-1", COORDINATOR_TRANSACTION, timeout_s=0.5)
    assert len(asked) >= 2


def test_kafka_pythons_response_classes_are_held_by_strong_reference() -> None:
    import weakref

    from kafka.protocol.api_header import ResponseClassRegistry

    import mirror_sink.raw.wire.wire  # noqa: F401  (pins the registry on import)

    registry = ResponseClassRegistry._response_class_registry
    assert registry and not any(isinstance(cls, weakref.ProxyType) for cls in registry.values())
