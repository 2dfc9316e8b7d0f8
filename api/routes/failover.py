"""``/connectors/{name}/checkpoints``, ``.../offsets/translate``, ``.../drills``, ``.../readiness``: what a
consumer failover needs from a connector.

No Kafka Connect resource has them: they serve over REST what MirrorMaker 2 leaves to its
``MirrorClient`` (checkpoints, offset translation), and each connector's DR drills and readiness score.
"""

from __future__ import annotations

from fastapi import APIRouter

from api.models import (
    ConnectorCheckpoints,
    ConnectorDrills,
    DrillSummary,
    ReadinessBody,
    TranslatedOffsets,
    TranslateOffsetsRequest,
)
from connectors.rest_extension import MirrorSinkRest
from mirror_sink.core.formats.drills import drills_topic
from mirror_sink.worker.herder import Herder


def router(herder: Herder) -> APIRouter:
    """The failover resource of ``herder``'s connectors."""
    routes = APIRouter(prefix="/connectors")
    mirror = MirrorSinkRest(herder.queries.connector)

    @routes.get("/{name}/checkpoints", response_model=ConnectorCheckpoints)
    def get_checkpoints(name: str) -> ConnectorCheckpoints:
        """The newest MirrorMaker 2 checkpoint of each source group on this connector's topics."""
        return ConnectorCheckpoints.of(*mirror.checkpoints(name))

    @routes.get("/{name}/drills", response_model=ConnectorDrills)
    def get_drills(name: str) -> ConnectorDrills:
        """The connector's newest DR drills (``mirror-sink drill``), from their kept reports."""
        reports = mirror.drills(name, fresh=True)
        topic = drills_topic(mirror.source_alias(name))
        return ConnectorDrills(drills_topic=topic, drills=[DrillSummary.of(r) for r in reports])

    @routes.get("/{name}/readiness", response_model=ReadinessBody)
    def get_readiness(name: str) -> ReadinessBody:
        """The connector's DR readiness score (0-100), its components and the reasons for every point lost."""
        return ReadinessBody.of(mirror.readiness(name))

    @routes.post("/{name}/offsets/translate", response_model=TranslatedOffsets)
    def translate_offsets(name: str, body: TranslateOffsetsRequest) -> TranslatedOffsets:
        """Offsets of consumers outside groups translated exactly through the offset syncs (or why not)."""
        answers = mirror.translate(name, body.to_domain(), body.direction)
        return TranslatedOffsets.of(body.direction, answers)

    return routes
