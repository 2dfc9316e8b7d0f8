"""A connector's offsets (KIP-875), as the runtime serves them: GET, PATCH and DELETE
/connectors/{name}/offsets.

The runtime's part is Connect's: a change only while the connector is STOPPED (a running task would
commit over it in its next transaction). What offsets are and where they live is the plugin's
(``ConnectorPlugin.offsets``, ``alter_offsets``, ``reset_offsets``), as Kafka's
``SinkConnector.alterOffsets`` is.
"""

from __future__ import annotations

from collections.abc import Sequence

from mirror_sink.core.base.states import TargetState
from mirror_sink.worker.herder_types import InvalidRequest, PartitionOffset
from mirror_sink.worker.worker import Worker

__all__ = ["ConnectorOffsetsAdmin"]


class ConnectorOffsetsAdmin:
    """GET, PATCH and DELETE /connectors/{name}/offsets; changes only while the connector is STOPPED."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    def get(self, name: str) -> list[PartitionOffset]:
        """The connector's offsets, keyed by the *source* partition, sorted."""
        return self.worker.running(name).connector.offsets()

    def alter(self, name: str, offsets: Sequence[PartitionOffset]) -> None:
        """Set source partitions' next offsets (while STOPPED)."""
        self._require_stopped(name)
        self.worker.running(name).connector.alter_offsets(offsets)

    def reset(self, name: str) -> None:
        """Forget every stored offset (while STOPPED)."""
        self._require_stopped(name)
        self.worker.running(name).connector.reset_offsets()

    def _require_stopped(self, name: str) -> None:
        # A running task would commit over the change in its next transaction.
        if self.worker.require(name).target_state is not TargetState.STOPPED:
            raise InvalidRequest(  # Connect's BadRequestException, word for word
                "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for "
                f"the specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
            )
