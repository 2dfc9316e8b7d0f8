"""``/connectors``: connectors, their configs, states, tasks and topics: Kafka Connect's ``ConnectorsResource``.

The offsets of ``ConnectorsResource`` (KIP-875) are :mod:`api.routes.connector_offsets`'; the routes
MirrorMaker 2's consumer failover adds below a connector are :mod:`api.routes.failover`'s.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Body, Query, Response
from fastapi.responses import JSONResponse

from api.models import (
    ActiveTopics,
    ConfigMap,
    ConnectorInfo,
    ConnectorStatus,
    CreateConnectorRequest,
    TaskInfo,
    TaskStateBody,
)
from mirror_sink.core.base.states import TargetState
from mirror_sink.worker.herder import Herder

log = logging.getLogger(__name__)


def router(herder: Herder) -> APIRouter:
    """The connectors resource of ``herder``."""
    routes = APIRouter(prefix="/connectors")

    @routes.get("", response_model=list[str] | dict[str, dict[str, Any]])
    def list_connectors(expand: Annotated[list[str] | None, Query()] = None) -> Any:
        names = herder.queries.names()
        if expand is None:
            return names
        wanted = set(expand)  # Connect ignores (and logs) unknown expansion types
        for unknown in sorted(wanted - {"status", "info"}):
            log.info("Ignoring unknown expansion type %s", unknown)
        out: dict[str, dict[str, Any]] = {}
        for name in names:
            entry: dict[str, Any] = {}
            if "status" in wanted:
                entry["status"] = ConnectorStatus.of(herder.queries.status(name)).document()
            if "info" in wanted:
                entry["info"] = ConnectorInfo.of(herder.queries.info(name)).model_dump()
            out[name] = entry
        return out

    @routes.post("", status_code=201, response_model=ConnectorInfo)
    def create_connector(request: CreateConnectorRequest, response: Response) -> ConnectorInfo:
        state = request.initial_state or TargetState.RUNNING
        herder.create(request.name, request.config, state)
        response.headers["Location"] = f"/connectors/{quote(request.name)}"
        return ConnectorInfo.of(herder.queries.info(request.name))

    @routes.get("/{name}", response_model=ConnectorInfo)
    def get_connector(name: str) -> ConnectorInfo:
        return ConnectorInfo.of(herder.queries.info(name))

    @routes.get("/{name}/config", response_model=dict[str, str])
    def get_config(name: str) -> dict[str, str]:
        return herder.queries.config(name)

    @routes.put("/{name}/config", response_model=ConnectorInfo)
    def put_config(name: str, config: Annotated[ConfigMap, Body()], response: Response) -> ConnectorInfo:
        created = herder.put_config(name, config)
        response.status_code = 201 if created else 200
        if created:
            response.headers["Location"] = f"/connectors/{quote(name)}"
        return ConnectorInfo.of(herder.queries.info(name))

    @routes.patch("/{name}/config", response_model=ConnectorInfo)
    def patch_config(name: str, patch: Annotated[ConfigMap, Body()]) -> ConnectorInfo:
        herder.patch_config(name, patch)
        return ConnectorInfo.of(herder.queries.info(name))

    @routes.get("/{name}/status", response_model=ConnectorStatus, response_model_exclude_none=True)
    def connector_status(name: str) -> ConnectorStatus:
        # Connect leaves trace out unless there is one (@JsonInclude(NON_EMPTY)).
        return ConnectorStatus.of(herder.queries.status(name))

    @routes.get("/{name}/tasks", response_model=list[TaskInfo])
    def task_configs(name: str) -> list[TaskInfo]:
        return [TaskInfo.of(t) for t in herder.queries.task_configs(name)]

    @routes.get("/{name}/tasks/{task}/status", response_model=TaskStateBody, response_model_exclude_none=True)
    def task_status(name: str, task: int) -> TaskStateBody:
        return TaskStateBody.of_task(herder.queries.task_status(name, task))

    @routes.post("/{name}/restart", response_model=ConnectorStatus | None)
    def restart_connector(
        name: str,
        include_tasks: Annotated[bool, Query(alias="includeTasks")] = False,
        only_failed: Annotated[bool, Query(alias="onlyFailed")] = False,
    ) -> Any:
        herder.restart(name, include_tasks=include_tasks, only_failed=only_failed)
        if not include_tasks and not only_failed:
            return Response(status_code=204)  # Connect's plain connector restart
        return JSONResponse(status_code=202, content=ConnectorStatus.of(herder.queries.status(name)).document())

    @routes.post("/{name}/tasks/{task}/restart", status_code=204)
    def restart_task(name: str, task: int) -> Response:
        herder.restart_task(name, task)
        return Response(status_code=204)

    @routes.put("/{name}/pause", status_code=202)
    def pause(name: str) -> Response:
        herder.set_target_state(name, TargetState.PAUSED)
        return Response(status_code=202)

    @routes.put("/{name}/resume", status_code=202)
    def resume(name: str) -> Response:
        herder.set_target_state(name, TargetState.RUNNING)
        return Response(status_code=202)

    @routes.put("/{name}/stop", status_code=204)
    def stop(name: str) -> Response:
        herder.set_target_state(name, TargetState.STOPPED)
        return Response(status_code=204)

    @routes.delete("/{name}", status_code=204)
    def delete_connector(name: str) -> Response:
        herder.delete(name)
        return Response(status_code=204)

    @routes.get("/{name}/topics", response_model=dict[str, ActiveTopics])
    def topics(name: str) -> dict[str, ActiveTopics]:
        return {name: ActiveTopics(topics=herder.queries.topics(name))}

    @routes.put("/{name}/topics/reset", status_code=202)
    def reset_topics(name: str) -> Response:
        herder.reset_topics(name)
        return Response(status_code=202)

    return routes
