"""A small fake of the Herder as the REST routers use it, shared by the unit tests of ``api.routes``.

- ``FakeHerder``: the write side (create, put and patch configs, target states, restarts, deletes), its
  ``queries`` (``HerderQueries``' reads) and its ``offsets`` (``ConnectorOffsetsAdmin``). It answers from
  the connectors a test puts in it and refuses as the Herder says it does (``ConnectorNotFound``,
  ``TaskNotFound``, ``Conflict`` for a name taken); every change asked of it is recorded in ``calls``.
  It validates nothing and runs nothing: what a router does with an answer or a refusal is the test.
- ``mount``: one router on a bare FastAPI app with the REST API's own error mapping (the exception
  handlers of ``api.app.create_app``), driven in-process through httpx's ASGI transport.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import httpx
from fastapi import APIRouter, FastAPI

from api.app import create_app
from mirror_sink.core.base.states import ConnectorState, TargetState
from mirror_sink.worker.connector_plugin import ConnectorPlugin
from mirror_sink.worker.herder import Herder
from mirror_sink.worker.herder_types import (
    AssignedState,
    Conflict,
    ConnectorInfo,
    ConnectorNotFound,
    ConnectorStatus,
    ConnectorTaskId,
    HerderError,
    PartitionOffset,
    TaskConfig,
    TaskNotFound,
    TaskStatus,
)

WORKER_ID = "worker-1:8083"
#: A connector or task running on this worker.
RUNNING_HERE = AssignedState(ConnectorState.RUNNING, WORKER_ID)


@dataclass
class Connector:
    """What the fake knows of one connector: its config, target state, status and answers."""

    config: dict[str, str]
    target: TargetState = TargetState.RUNNING
    state: AssignedState = RUNNING_HERE
    tasks: list[AssignedState] = field(default_factory=list)
    offsets: list[PartitionOffset] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    #: What ``queries.connector`` answers: the running plugin a REST extension reaches.
    plugin: object | None = None


class FakeQueries:
    """``HerderQueries``: the reads of the connectors of its ``FakeHerder``."""

    def __init__(self, herder: FakeHerder) -> None:
        self._herder = herder

    def names(self) -> list[str]:
        return sorted(self._herder.connectors)

    def config(self, name: str) -> dict[str, str]:
        return dict(self._herder.require(name).config)

    def info(self, name: str) -> ConnectorInfo:
        connector = self._herder.require(name)
        tasks = tuple(ConnectorTaskId(name, i) for i in range(int(connector.config.get("tasks.max", "1"))))
        return ConnectorInfo(name, dict(connector.config), tasks)

    def task_configs(self, name: str) -> list[TaskConfig]:
        return [TaskConfig(t, {**self.config(name), "task.id": str(t.task)}) for t in self.info(name).tasks]

    def status(self, name: str) -> ConnectorStatus:
        connector = self._herder.require(name)
        return ConnectorStatus(name, connector.state, tuple(TaskStatus(i, t) for i, t in enumerate(connector.tasks)))

    def task_status(self, name: str, task_id: int) -> TaskStatus:
        tasks = self.status(name).tasks
        if not 0 <= task_id < len(tasks):
            raise TaskNotFound(name, task_id)
        return tasks[task_id]

    def topics(self, name: str) -> list[str]:
        return list(self._herder.require(name).topics)

    def connector(self, name: str) -> ConnectorPlugin:
        return cast(ConnectorPlugin, self._herder.require(name).plugin)


class FakeOffsets:
    """``ConnectorOffsetsAdmin``: a connector's offsets, and changes to them refused with ``refusal`` if set."""

    def __init__(self, herder: FakeHerder) -> None:
        self._herder = herder
        self.refusal: HerderError | None = None

    def get(self, name: str) -> list[PartitionOffset]:
        return list(self._herder.require(name).offsets)

    def alter(self, name: str, offsets: Sequence[PartitionOffset]) -> None:
        self._change("alter", name, list(offsets))

    def reset(self, name: str) -> None:
        self._change("reset", name)

    def _change(self, *call: object) -> None:
        self._herder.require(str(call[1]))
        if self.refusal is not None:
            raise self.refusal
        self._herder.calls.append(("offsets", *call))


class FakeHerder:
    """The Herder's interface as the routers call it, over connectors held in memory."""

    def __init__(self) -> None:
        self.queries = FakeQueries(self)
        self.offsets = FakeOffsets(self)
        self.connectors: dict[str, Connector] = {}
        self.calls: list[tuple[object, ...]] = []
        self.health_answer = ("", "")
        self.readiness_answer = (False, "")
        self.reset()

    def reset(self) -> None:
        """No connectors, no calls, a healthy and ready worker: as new, for the routers already built
        over this herder (a router is built once per test module: FastAPI takes a tenth of a second)."""
        self.connectors.clear()
        self.calls.clear()
        self.offsets.refusal = None
        self.health_answer = ("healthy", "Worker has completed startup and is ready to handle requests.")
        self.readiness_answer = (True, "every connector and task is RUNNING")

    def add(self, name: str, config: Mapping[str, str] | None = None, **fields: Any) -> Connector:
        """A connector the herder has, with ``fields`` of ``Connector``."""
        connector = Connector(dict(config if config is not None else {"tasks.max": "1"}), **fields)
        self.connectors[name] = connector
        return connector

    def require(self, name: str) -> Connector:
        """The connector ``name``; ``ConnectorNotFound`` as the Herder raises it."""
        if name not in self.connectors:
            raise ConnectorNotFound(name)
        return self.connectors[name]

    def health(self) -> tuple[str, str]:
        return self.health_answer

    def readiness(self) -> tuple[bool, str]:
        return self.readiness_answer

    def create(self, name: str, config: Mapping[str, Any], initial_state: TargetState) -> None:
        if name in self.connectors:
            raise Conflict(f"Connector {name} already exists")
        self.calls.append(("create", name, dict(config), initial_state))
        self.add(name, {k: str(v) for k, v in config.items()}, target=initial_state)

    def put_config(self, name: str, config: Mapping[str, Any]) -> bool:
        created = name not in self.connectors
        self.calls.append(("put_config", name, dict(config)))
        self.add(name, {k: str(v) for k, v in config.items()})
        return created

    def patch_config(self, name: str, patch: Mapping[str, Any]) -> None:
        connector = self.require(name)
        self.calls.append(("patch_config", name, dict(patch)))
        for key, value in patch.items():
            if value is None:
                connector.config.pop(key, None)
            else:
                connector.config[key] = str(value)

    def delete(self, name: str) -> None:
        self.require(name)
        self.calls.append(("delete", name))
        del self.connectors[name]

    def set_target_state(self, name: str, target: TargetState) -> None:
        self.require(name).target = target
        self.calls.append(("set_target_state", name, target))

    def restart(self, name: str, *, include_tasks: bool, only_failed: bool) -> None:
        self.require(name)
        self.calls.append(("restart", name, include_tasks, only_failed))

    def restart_task(self, name: str, task_id: int) -> None:
        self.queries.task_status(name, task_id)
        self.calls.append(("restart_task", name, task_id))

    def reset_topics(self, name: str) -> None:
        self.require(name)
        self.calls.append(("reset_topics", name))


def as_herder(fake: FakeHerder) -> Herder:
    """``fake`` where a router takes the Herder (the routers use only what ``FakeHerder`` has)."""
    return cast(Herder, fake)


@functools.cache
def _error_handlers() -> dict[Any, Any]:
    """``create_app``'s exception handlers: the one place that maps refusals to Connect's error bodies."""
    return dict(create_app(as_herder(FakeHerder())).exception_handlers)


class Rest:
    """A blocking client of one app, in-process: each request a round trip through its ASGI interface."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """The app's answer to ``method url`` (an unexpected exception is its 500, as a server sends it)."""

        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://worker") as client:
                return await client.request(method, url, **kwargs)

        return asyncio.run(send())

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PUT", url, **kwargs)

    def patch(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PATCH", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", url, **kwargs)


def mount(routes: APIRouter) -> Rest:
    """``routes`` alone on a FastAPI app that maps errors as the REST API does."""
    app = FastAPI()
    app.exception_handlers.update(_error_handlers())
    app.include_router(routes)
    return Rest(app)
