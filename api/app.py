"""The Kafka Connect-compatible REST API over a Herder (FastAPI).

Paths, methods, status codes and JSON shapes follow Kafka Connect's REST API wherever Connect has
them; every error is ``{"error_code": <http status>, "message": <text>}``. The Herder answers with
domain values (turned into the bodies of :mod:`api.models` here) and refuses with domain exceptions,
which only this module maps to status codes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Body, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.models import (
    ActiveTopics,
    ConfigInfos,
    ConfigKeyInfo,
    ConfigMap,
    ConnectorCheckpoints,
    ConnectorDrills,
    ConnectorInfo,
    ConnectorOffsets,
    ConnectorStatus,
    CreateConnectorRequest,
    DrillSummary,
    ErrorResponse,
    HealthResponse,
    LevelRequest,
    LoggerLevel,
    Message,
    PluginInfo,
    ReadinessBody,
    ServerInfo,
    TaskInfo,
    TaskStateBody,
    TranslatedOffsets,
    TranslateOffsetsRequest,
)
from api.plugin import PLUGIN_CLASS, config_definitions, plugin_aliases, validate
from api.status_page import add_status_page
from mirror_sink import __version__
from mirror_sink.core.drills import drills_topic
from mirror_sink.core.states import TargetState
from mirror_sink.worker import connector_validation
from mirror_sink.worker.herder import Herder
from mirror_sink.worker.herder_types import Conflict, HerderError, InvalidRequest, NotFound

ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (400, 404, 409, 500)}

STATUS_OF: tuple[tuple[type[HerderError], int], ...] = ((InvalidRequest, 400), (NotFound, 404), (Conflict, 409))
"""The HTTP status of each kind of refusal; any other HerderError is a 500."""


def status_of(exc: HerderError) -> int:
    """The HTTP status the REST API answers ``exc`` with."""
    return next((status for kind, status in STATUS_OF if isinstance(exc, kind)), 500)


#: log4j level names (what Connect accepts, any case) to Python's.
_PYTHON_LEVELS = {
    "OFF": logging.CRITICAL + 10,
    "FATAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": logging.DEBUG - 5,
    "ALL": logging.NOTSET + 1,
}


def _log4j_level(level: int) -> str:
    """Python's level as the log4j name Connect shows."""
    for name, value in sorted(_PYTHON_LEVELS.items(), key=lambda kv: kv[1]):
        if level <= value:
            return name
    return "OFF"


def _plugin_name(cls: str) -> str:
    """Connect's comparison: the simple class name without its Connector suffix."""
    return cls.rsplit(".", maxsplit=1)[-1].removesuffix("Connector")


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """Connect's error body, ``{"error_code": status, "message": message}``, with that status."""
    return JSONResponse(status_code=status, content={"error_code": status, "message": message}, headers=headers)


def create_app(  # noqa: PLR0915 - one flat table of routes reads better than several routers
    herder: Herder, *, commit: str = "unknown", cluster_id: Callable[[], str | None] = lambda: None
) -> FastAPI:
    """The REST application for ``herder``."""
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

    # -- worker ---------------------------------------------------------------------------------
    @app.get("/", response_model=ServerInfo)
    def server_info() -> ServerInfo:
        return ServerInfo(version=__version__, commit=commit, kafka_cluster_id=cluster_id())

    @app.get("/metrics", response_class=PlainTextResponse, include_in_schema=False)
    def metrics() -> Response:
        """Prometheus text format: MirrorMaker 2's and Connect's series and the mirror's own."""
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    @app.get(
        "/health",
        response_model=HealthResponse,
        responses={500: {"model": HealthResponse}, 503: {"model": HealthResponse}},
    )
    def health() -> JSONResponse:
        """KIP-1017: 200 healthy, 503 starting, 500 unhealthy (the worker's loop stuck over 10 s)."""
        status, message = herder.health()
        code = {"healthy": 200, "starting": 503}.get(status, 500)
        return JSONResponse(HealthResponse(status=status, message=message).model_dump(), status_code=code)

    @app.get("/health/ready", response_model=HealthResponse, responses={503: {"model": HealthResponse}})
    def ready() -> JSONResponse:
        """Readiness (not in Connect): 200 once every connector and task of this worker is RUNNING (or
        PAUSED/STOPPED as asked), 503 naming those it still waits for."""
        is_ready, message = herder.readiness()
        body = HealthResponse(status="healthy" if is_ready else "starting", message=message).model_dump()
        return JSONResponse(body, status_code=200 if is_ready else 503)

    # -- connectors -----------------------------------------------------------------------------
    @app.get("/connectors", response_model=list[str] | dict[str, dict[str, Any]])
    def list_connectors(expand: Annotated[list[str] | None, Query()] = None) -> Any:
        names = herder.queries.names()
        if expand is None:
            return names
        wanted = set(expand)  # Connect ignores (and logs) unknown expansion types
        for unknown in sorted(wanted - {"status", "info"}):
            logging.getLogger(__name__).info("Ignoring unknown expansion type %s", unknown)
        out: dict[str, dict[str, Any]] = {}
        for name in names:
            entry: dict[str, Any] = {}
            if "status" in wanted:
                entry["status"] = ConnectorStatus.of(herder.queries.status(name)).document()
            if "info" in wanted:
                entry["info"] = ConnectorInfo.of(herder.queries.info(name)).model_dump()
            out[name] = entry
        return out

    @app.post("/connectors", status_code=201, response_model=ConnectorInfo)
    def create_connector(request: CreateConnectorRequest, response: Response) -> ConnectorInfo:
        state = request.initial_state or TargetState.RUNNING
        herder.create(request.name, request.config, state)
        response.headers["Location"] = f"/connectors/{quote(request.name)}"
        return ConnectorInfo.of(herder.queries.info(request.name))

    @app.get("/connectors/{name}", response_model=ConnectorInfo)
    def get_connector(name: str) -> ConnectorInfo:
        return ConnectorInfo.of(herder.queries.info(name))

    @app.get("/connectors/{name}/config", response_model=dict[str, str])
    def get_config(name: str) -> dict[str, str]:
        return herder.queries.config(name)

    @app.put("/connectors/{name}/config", response_model=ConnectorInfo)
    def put_config(name: str, config: Annotated[ConfigMap, Body()], response: Response) -> ConnectorInfo:
        created = herder.put_config(name, config)
        response.status_code = 201 if created else 200
        if created:
            response.headers["Location"] = f"/connectors/{quote(name)}"
        return ConnectorInfo.of(herder.queries.info(name))

    @app.patch("/connectors/{name}/config", response_model=ConnectorInfo)
    def patch_config(name: str, patch: Annotated[ConfigMap, Body()]) -> ConnectorInfo:
        herder.patch_config(name, patch)
        return ConnectorInfo.of(herder.queries.info(name))

    @app.get("/connectors/{name}/status", response_model=ConnectorStatus, response_model_exclude_none=True)
    def connector_status(name: str) -> ConnectorStatus:
        # Connect leaves trace out unless there is one (@JsonInclude(NON_EMPTY)).
        return ConnectorStatus.of(herder.queries.status(name))

    @app.get("/connectors/{name}/tasks", response_model=list[TaskInfo])
    def task_configs(name: str) -> list[TaskInfo]:
        return [TaskInfo.of(t) for t in herder.queries.task_configs(name)]

    @app.get("/connectors/{name}/tasks/{task}/status", response_model=TaskStateBody, response_model_exclude_none=True)
    def task_status(name: str, task: int) -> TaskStateBody:
        return TaskStateBody.of_task(herder.queries.task_status(name, task))

    @app.post("/connectors/{name}/restart", response_model=ConnectorStatus | None)
    def restart_connector(
        name: str,
        include_tasks: Annotated[bool, Query(alias="includeTasks")] = False,
        only_failed: Annotated[bool, Query(alias="onlyFailed")] = False,
    ) -> Any:
        herder.restart(name, include_tasks=include_tasks, only_failed=only_failed)
        if not include_tasks and not only_failed:
            return Response(status_code=204)  # Connect's plain connector restart
        return JSONResponse(status_code=202, content=ConnectorStatus.of(herder.queries.status(name)).document())

    @app.post("/connectors/{name}/tasks/{task}/restart", status_code=204)
    def restart_task(name: str, task: int) -> Response:
        herder.restart_task(name, task)
        return Response(status_code=204)

    @app.put("/connectors/{name}/pause", status_code=202)
    def pause(name: str) -> Response:
        herder.set_target_state(name, TargetState.PAUSED)
        return Response(status_code=202)

    @app.put("/connectors/{name}/resume", status_code=202)
    def resume(name: str) -> Response:
        herder.set_target_state(name, TargetState.RUNNING)
        return Response(status_code=202)

    @app.put("/connectors/{name}/stop", status_code=204)
    def stop(name: str) -> Response:
        herder.set_target_state(name, TargetState.STOPPED)
        return Response(status_code=204)

    @app.delete("/connectors/{name}", status_code=204)
    def delete_connector(name: str) -> Response:
        herder.delete(name)
        return Response(status_code=204)

    @app.get("/connectors/{name}/topics", response_model=dict[str, ActiveTopics])
    def topics(name: str) -> dict[str, ActiveTopics]:
        return {name: ActiveTopics(topics=herder.queries.topics(name))}

    @app.put("/connectors/{name}/topics/reset", status_code=202)
    def reset_topics(name: str) -> Response:
        herder.reset_topics(name)
        return Response(status_code=202)

    @app.get("/connectors/{name}/offsets", response_model=ConnectorOffsets)
    def get_offsets(name: str) -> ConnectorOffsets:
        return ConnectorOffsets.of(herder.offsets.get(name))

    @app.get("/connectors/{name}/checkpoints", response_model=ConnectorCheckpoints)
    def get_checkpoints(name: str) -> ConnectorCheckpoints:
        """The newest MirrorMaker 2 checkpoint of each source group on this connector's topics."""
        return ConnectorCheckpoints.of(*herder.offsets.checkpoints(name))

    @app.get("/connectors/{name}/drills", response_model=ConnectorDrills)
    def get_drills(name: str) -> ConnectorDrills:
        """The connector's newest DR drills (``mirror-sink drill``), from their kept reports."""
        reports = herder.queries.drills(name, fresh=True)
        topic = drills_topic(herder.queries.source_alias(name))
        return ConnectorDrills(drills_topic=topic, drills=[DrillSummary.of(r) for r in reports])

    @app.get("/connectors/{name}/readiness", response_model=ReadinessBody)
    def get_readiness(name: str) -> ReadinessBody:
        """The connector's DR readiness score (0-100), its components and the reasons for every point lost."""
        return ReadinessBody.of(herder.queries.readiness(name))

    @app.patch("/connectors/{name}/offsets", response_model=Message)
    def alter_offsets(name: str, body: ConnectorOffsets) -> Message:
        if not body.offsets:
            raise InvalidRequest("Partitions / offsets need to be provided for an alter offsets request")
        herder.offsets.alter(name, body.to_domain())
        return Message(message="The offsets for this connector have been altered successfully")

    @app.post("/connectors/{name}/offsets/translate", response_model=TranslatedOffsets)
    def translate_offsets(name: str, body: TranslateOffsetsRequest) -> TranslatedOffsets:
        """Offsets of consumers outside groups translated exactly through the offset syncs (or why not)."""
        answers = herder.offsets.translate(name, body.to_domain(), body.direction)
        return TranslatedOffsets.of(body.direction, answers)

    @app.delete("/connectors/{name}/offsets", response_model=Message)
    def reset_offsets(name: str) -> Message:
        herder.offsets.reset(name)
        return Message(message="The offsets for this connector have been reset successfully")

    # -- plugins --------------------------------------------------------------------------------
    def _plugin(plugin: str) -> None:
        if plugin not in plugin_aliases():
            raise StarletteHTTPException(404, f"Unknown connector plugin {plugin}; this worker has {PLUGIN_CLASS}")

    @app.get("/connector-plugins", response_model=list[PluginInfo], response_model_by_alias=True)
    def plugins(connectors_only: Annotated[bool, Query(alias="connectorsOnly")] = True) -> list[PluginInfo]:
        # This worker has one plugin and no transformations, predicates or converters to list besides.
        return [PluginInfo.model_validate({"class": PLUGIN_CLASS, "type": "sink", "version": __version__})]

    @app.get("/connector-plugins/{plugin}/config", response_model=list[ConfigKeyInfo])
    def plugin_config(plugin: str) -> list[ConfigKeyInfo]:
        _plugin(plugin)
        return config_definitions()

    @app.put("/connector-plugins/{plugin}/config/validate", response_model=ConfigInfos)
    def validate_config(plugin: str, config: Annotated[ConfigMap, Body()]) -> ConfigInfos:
        _plugin(plugin)
        named = str(config.get("connector.class", ""))
        if named and _plugin_name(named) != _plugin_name(plugin):
            raise InvalidRequest(f"Included connector type {named} does not match request type {plugin}")
        # Module-qualified: this route's own name (its OpenAPI operationId) is validate_config.
        return validate(plugin, config, connector_validation.validate_config)

    # -- loggers --------------------------------------------------------------------------------
    @app.get("/admin/loggers", response_model=dict[str, LoggerLevel])
    def loggers() -> dict[str, LoggerLevel]:
        out = {"root": LoggerLevel(level=_log4j_level(logging.getLogger().level))}
        for name, logger in sorted(logging.Logger.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET:
                out[name] = LoggerLevel(level=_log4j_level(logger.level))
        return out

    @app.get("/admin/loggers/{logger}", response_model=LoggerLevel)
    def get_level(logger: str) -> LoggerLevel:
        if logger == "root":
            return LoggerLevel(level=_log4j_level(logging.getLogger().level))
        found = logging.Logger.manager.loggerDict.get(logger)
        if not isinstance(found, logging.Logger):
            raise StarletteHTTPException(404, f"Logger {logger} not found.")
        return LoggerLevel(level=_log4j_level(found.getEffectiveLevel()))

    @app.put("/admin/loggers/{logger}", response_model=list[str] | None)
    def set_level(logger: str, body: LevelRequest, scope: Annotated[str, Query()] = "worker") -> Any:
        if not body.level:
            raise InvalidRequest("Desired 'level' parameter was not specified in request.")
        level = _PYTHON_LEVELS.get(body.level.upper())
        if level is None:
            raise StarletteHTTPException(404, f"invalid log level '{body.level}'.")
        target = logging.getLogger() if logger == "root" else logging.getLogger(logger)
        target.setLevel(level)
        if scope.lower() == "cluster":  # one worker here; Connect answers 204 for a cluster-wide change
            return Response(status_code=204)
        prefix = f"{logger}."
        descendants = sorted(
            name
            for name, other in logging.Logger.manager.loggerDict.items()
            if isinstance(other, logging.Logger) and (logger == "root" or name.startswith(prefix))
        )
        return [logger, *descendants]

    add_status_page(app, herder)
    return app
