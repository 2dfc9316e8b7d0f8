"""``/admin/loggers``: the worker's log levels, read and set by log4j's names: Kafka Connect's
``LoggingResource``.

An admin resource: a listener serves it only if ``admin.listeners`` lets it (:mod:`api.security`).
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.models import LevelRequest, LoggerLevel
from mirror_sink.worker.herder_types import InvalidRequest

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


def router() -> APIRouter:
    """The logging resource: this process's loggers (the worker's levels do not depend on its Herder)."""
    routes = APIRouter(prefix="/admin/loggers")

    @routes.get("", response_model=dict[str, LoggerLevel])
    def loggers() -> dict[str, LoggerLevel]:
        out = {"root": LoggerLevel(level=_log4j_level(logging.getLogger().level))}
        for name, logger in sorted(logging.Logger.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET:
                out[name] = LoggerLevel(level=_log4j_level(logger.level))
        return out

    @routes.get("/{logger}", response_model=LoggerLevel)
    def get_level(logger: str) -> LoggerLevel:
        if logger == "root":
            return LoggerLevel(level=_log4j_level(logging.getLogger().level))
        found = logging.Logger.manager.loggerDict.get(logger)
        if not isinstance(found, logging.Logger):
            raise StarletteHTTPException(404, f"Logger {logger} not found.")
        return LoggerLevel(level=_log4j_level(found.getEffectiveLevel()))

    @routes.put("/{logger}", response_model=list[str] | None)
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

    return routes
