"""What the REST API asks of MirrorSink connectors beyond Kafka Connect's resources (as a Connect REST
extension would): lag, verification, drills, readiness, checkpoints and offset translation.

It reaches a connector by name through the runtime (any connector the runtime runs) and answers only
for MirrorSink connectors; the runtime itself knows none of these.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from connectors.mirror_sink_connector import MirrorSinkConnector
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.failover.checkpoints.offset_translator import TranslatedOffset
from mirror_sink.failover.rehearsal.readiness import Readiness
from mirror_sink.worker.connector_plugin import (
    CheckpointState,
    Conflict,
    ConnectorPlugin,
    PartitionLag,
    PartitionOffset,
)

__all__ = ["MirrorSinkRest"]


class MirrorSinkRest:
    """MirrorSink's own answers about the connectors ``connector_of`` finds by name (it raises the
    runtime's NotFound or Conflict for a connector unknown or not running)."""

    def __init__(self, connector_of: Callable[[str], ConnectorPlugin]) -> None:
        self._connector_of = connector_of

    def _connector(self, name: str) -> MirrorSinkConnector:
        found = self._connector_of(name)
        if not isinstance(found, MirrorSinkConnector):
            raise Conflict(f"Connector {name} is not a MirrorSinkConnector")
        return found

    def source_alias(self, name: str) -> str:
        """The connector's source cluster alias."""
        return self._connector(name).config.source_alias

    def lag(self, name: str) -> list[PartitionLag]:
        """The connector's last measured lag per target partition (empty before the first round)."""
        monitor = self._connector(name).jobs_board.lag
        last = dict(monitor.last) if monitor is not None else {}
        return [PartitionLag(t, p, n, s) for (t, p), (n, s) in sorted(last.items())]

    def verified(self, name: str) -> dict[tuple[str, int], int]:
        """Per target partition, the target offset background verification has compared up to
        (empty with verify.enabled=false or before its first round)."""
        verifier = self._connector(name).jobs_board.verifier
        positions = verifier.positions() if verifier is not None else {}
        return {(tp.topic, tp.partition): offset for tp, offset in positions.items()}

    def verify_mismatches(self, name: str) -> int:
        """Mismatches background verification found in this process (0 when it is off)."""
        verifier = self._connector(name).jobs_board.verifier
        return verifier.mismatches if verifier is not None else 0

    def drills(self, name: str, *, fresh: bool = False) -> list[dict[str, Any]]:
        """The connector's newest kept DR drill reports, newest first (empty before the first read or
        with offset syncs off); ``fresh`` reads them again first (Conflict when that fails)."""
        watch = self._connector(name).jobs_board.drills
        if watch is None:
            return []
        if fresh:
            try:
                watch.refresh()
            except TaskFailure as exc:
                if not watch.reports():  # what was read before still answers
                    raise Conflict(f"cannot read the drill reports of {name} from {watch.topic}: {exc}") from exc
        return watch.reports()

    def readiness(self, name: str) -> Readiness:
        """The connector's DR readiness score now, with the reasons for every point lost."""
        return self._connector(name).readiness()

    def checkpoints(self, name: str) -> tuple[str, list[CheckpointState]]:
        """The checkpoints topic and the newest checkpoint of each group on the connector's target topics."""
        return self._connector(name).offsets_store.checkpoints()

    def translate(self, name: str, offsets: Sequence[PartitionOffset], direction: str) -> list[TranslatedOffset]:
        """Each offset translated exactly through the connector's offset syncs, or why it cannot be."""
        return self._connector(name).offsets_store.translate(offsets, direction)
