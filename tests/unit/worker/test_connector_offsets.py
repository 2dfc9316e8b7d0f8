"""ConnectorOffsetsAdmin, KIP-875's verbs as the runtime serves them: a read in any state, a change
only while the connector is STOPPED (Connect's refusal, word for word), the rest the plugin's.

Over a real Worker running the fake plugin of ``tests/unit/worker/fakes.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mirror_sink.core.base.states import TargetState
from mirror_sink.worker.config_store import StoredConnector
from mirror_sink.worker.connector_offsets import ConnectorOffsetsAdmin
from mirror_sink.worker.herder_types import Conflict, ConnectorNotFound, InvalidRequest, PartitionOffset
from mirror_sink.worker.worker import Worker
from tests.unit.worker.fakes import FakeConnector, fake_of, props, settle

pytestmark = pytest.mark.unit

ORDERS_0 = PartitionOffset("orders", 0, 42)
ORDERS_1 = PartitionOffset("orders", 1, 7)


def _admin(worker: Worker, target: TargetState) -> tuple[ConnectorOffsetsAdmin, FakeConnector]:
    worker.apply("orders", StoredConnector(props("orders"), target))
    runtime = worker.running("orders")
    settle(runtime)
    fake = fake_of(runtime)
    fake.stored_offsets = [ORDERS_0]
    return ConnectorOffsetsAdmin(worker), fake


@pytest.mark.parametrize("target", list(TargetState))
def test_the_offsets_are_read_in_any_state(worker: Worker, target: TargetState) -> None:
    admin, _ = _admin(worker, target)
    assert admin.get("orders") == [ORDERS_0]


@pytest.mark.parametrize("target", [TargetState.RUNNING, TargetState.PAUSED])
def test_a_change_is_refused_unless_the_connector_is_stopped(worker: Worker, target: TargetState) -> None:
    admin, fake = _admin(worker, target)
    changes: list[Callable[[], None]] = [lambda: admin.alter("orders", [ORDERS_1]), lambda: admin.reset("orders")]
    for change in changes:
        with pytest.raises(InvalidRequest) as refused:
            change()
        assert refused.value.message == (
            "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for "
            "the specified connector by issuing a 'PUT' request to the '/connectors/orders/stop' endpoint"
        )
    assert fake.stored_offsets == [ORDERS_0] and "alter offsets" not in fake.events


def test_a_stopped_connector_s_offsets_are_altered_and_reset_by_its_plugin(worker: Worker) -> None:
    admin, fake = _admin(worker, TargetState.STOPPED)
    admin.alter("orders", [ORDERS_1])
    assert admin.get("orders") == [ORDERS_1]
    admin.reset("orders")
    assert admin.get("orders") == [] and fake.events[-2:] == ["alter offsets", "reset offsets"]


def test_an_unknown_connector_or_one_whose_config_cannot_run_is_refused(worker: Worker) -> None:
    admin = ConnectorOffsetsAdmin(worker)
    with pytest.raises(ConnectorNotFound):
        admin.get("nope")
    with pytest.raises(ConnectorNotFound):
        admin.reset("nope")
    worker.apply("broken", StoredConnector(props("broken", invalid="yes"), TargetState.STOPPED))
    with pytest.raises(Conflict):
        admin.get("broken")
    with pytest.raises(Conflict):
        admin.alter("broken", [ORDERS_1])
