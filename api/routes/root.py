"""``/``: the worker's version and cluster, and its health: Kafka Connect's ``RootResource``.

``GET /health`` is KIP-1017's, which Connect serves from the same resource; ``GET /health/ready`` is
this worker's own readiness probe.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.models import HealthResponse, ServerInfo
from mirror_sink import __version__
from mirror_sink.worker.herder import Herder


def router(herder: Herder, *, commit: str, cluster_id: Callable[[], str | None]) -> APIRouter:
    """The root resource of ``herder``'s worker, built from ``commit`` and the cluster id ``cluster_id`` reads."""
    routes = APIRouter()

    @routes.get("/", response_model=ServerInfo)
    def server_info() -> ServerInfo:
        return ServerInfo(version=__version__, commit=commit, kafka_cluster_id=cluster_id())

    @routes.get(
        "/health",
        response_model=HealthResponse,
        responses={500: {"model": HealthResponse}, 503: {"model": HealthResponse}},
    )
    def health() -> JSONResponse:
        """KIP-1017: 200 healthy, 503 starting, 500 unhealthy (the worker's loop stuck over 10 s)."""
        status, message = herder.health()
        code = {"healthy": 200, "starting": 503}.get(status, 500)
        return JSONResponse(HealthResponse(status=status, message=message).model_dump(), status_code=code)

    @routes.get("/health/ready", response_model=HealthResponse, responses={503: {"model": HealthResponse}})
    def ready() -> JSONResponse:
        """Readiness (not in Connect): 200 once every connector and task of this worker is RUNNING (or
        PAUSED/STOPPED as asked), 503 naming those it still waits for."""
        is_ready, message = herder.readiness()
        body = HealthResponse(status="healthy" if is_ready else "starting", message=message).model_dump()
        return JSONResponse(body, status_code=200 if is_ready else 503)

    return routes
