"""``/metrics``: the worker's metrics in Prometheus' text format.

No Kafka Connect resource serves them (Connect publishes its metrics over JMX); the series keep
MirrorMaker 2's and Connect's names. Not part of the OpenAPI document.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest


def router() -> APIRouter:
    """The metrics resource: the process's Prometheus registry."""
    routes = APIRouter()

    @routes.get("/metrics", response_class=PlainTextResponse, include_in_schema=False)
    def metrics() -> Response:
        """Prometheus text format: MirrorMaker 2's and Connect's series and the mirror's own."""
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    return routes
