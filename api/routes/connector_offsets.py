"""``/connectors/{name}/offsets``: a connector's offsets read, altered and reset (KIP-875), the offsets part
of Kafka Connect's ``ConnectorsResource``.
"""

from __future__ import annotations

from fastapi import APIRouter

from api.models import ConnectorOffsets, Message
from mirror_sink.worker.herder import Herder
from mirror_sink.worker.herder_types import InvalidRequest


def router(herder: Herder) -> APIRouter:
    """The connector offsets resource of ``herder``."""
    routes = APIRouter(prefix="/connectors")

    @routes.get("/{name}/offsets", response_model=ConnectorOffsets)
    def get_offsets(name: str) -> ConnectorOffsets:
        return ConnectorOffsets.of(herder.offsets.get(name))

    @routes.patch("/{name}/offsets", response_model=Message)
    def alter_offsets(name: str, body: ConnectorOffsets) -> Message:
        if not body.offsets:
            raise InvalidRequest("Partitions / offsets need to be provided for an alter offsets request")
        herder.offsets.alter(name, body.to_domain())
        return Message(message="The offsets for this connector have been altered successfully")

    @routes.delete("/{name}/offsets", response_model=Message)
    def reset_offsets(name: str) -> Message:
        herder.offsets.reset(name)
        return Message(message="The offsets for this connector have been reset successfully")

    return routes
