"""The Kafka Connect-compatible REST API over a Herder (FastAPI): the app, its error mapping, its routers.

Paths, methods, status codes and JSON shapes follow Kafka Connect's REST API wherever Connect has
them; every error is ``{"error_code": <http status>, "message": <text>}``. The routes live in
:mod:`api.routes`, one router per resource as Connect has one resource class per part of its API. The
Herder answers them with domain values (turned into the bodies of :mod:`api.models` there) and refuses
with domain exceptions, which only this module maps to status codes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.models import ErrorResponse
from api.routes import connector_offsets, connectors, failover, loggers, metrics, plugins, root, status_page
from mirror_sink import __version__
from mirror_sink.worker.herder import Herder
from mirror_sink.worker.herder_types import Conflict, HerderError, InvalidRequest, NotFound

ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (400, 404, 409, 500)}

STATUS_OF: tuple[tuple[type[HerderError], int], ...] = ((InvalidRequest, 400), (NotFound, 404), (Conflict, 409))
"""The HTTP status of each kind of refusal; any other HerderError is a 500."""


def status_of(exc: HerderError) -> int:
    """The HTTP status the REST API answers ``exc`` with."""
    return next((status for kind, status in STATUS_OF if isinstance(exc, kind)), 500)


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """Connect's error body, ``{"error_code": status, "message": message}``, with that status."""
    return JSONResponse(status_code=status, content={"error_code": status, "message": message}, headers=headers)


def create_app(
    herder: Herder, *, commit: str = "unknown", cluster_id: Callable[[], str | None] = lambda: None
) -> FastAPI:
    """The REST application for ``herder``: Connect's error mapping over every router of :mod:`api.routes`."""
    app = FastAPI(
        title="mirror-sink",
        version=__version__,
        description="Kafka Connect-compatible REST API of the mirror-sink worker.",
        responses=ERRORS,
    )

    @app.exception_handler(HerderError)
    async def herder_error(_: Request, exc: HerderError) -> JSONResponse:
        return error_response(status_of(exc), exc.message)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        return error_response(400, f"Invalid request: {problems}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = str(exc.detail)
        if detail == HTTPStatus(exc.status_code).phrase:  # the framework's own: Jersey's wording
            detail = f"HTTP {exc.status_code} {detail}"
        return error_response(exc.status_code, detail)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        logging.getLogger(__name__).exception("request failed")
        return error_response(500, f"{type(exc).__name__}: {exc}")

    app.include_router(root.router(herder, commit=commit, cluster_id=cluster_id))
    app.include_router(metrics.router())
    app.include_router(connectors.router(herder))
    app.include_router(connector_offsets.router(herder))
    app.include_router(failover.router(herder))
    app.include_router(plugins.router())
    app.include_router(loggers.router())
    app.include_router(status_page.router(herder))
    return app
