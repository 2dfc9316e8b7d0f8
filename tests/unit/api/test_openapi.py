"""The checked-in OpenAPI document matches the app (regenerate with ``python -m api.openapi``)."""

from __future__ import annotations

from pathlib import Path

from api.openapi import SPEC_PATH, current_spec, render


def test_checked_in_openapi_matches_the_app() -> None:
    assert SPEC_PATH.read_text() == render(current_spec()), "api/openapi.json is stale: run python -m api.openapi"


def test_every_connect_path_is_documented() -> None:
    paths = current_spec()["paths"]
    for path in (
        "/",
        "/health",
        "/connectors",
        "/connectors/{name}",
        "/connectors/{name}/config",
        "/connectors/{name}/status",
        "/connectors/{name}/tasks",
        "/connectors/{name}/tasks/{task}/status",
        "/connectors/{name}/restart",
        "/connectors/{name}/tasks/{task}/restart",
        "/connectors/{name}/pause",
        "/connectors/{name}/resume",
        "/connectors/{name}/stop",
        "/connectors/{name}/topics",
        "/connectors/{name}/topics/reset",
        "/connectors/{name}/offsets",
        "/connector-plugins",
        "/connector-plugins/{plugin}/config",
        "/connector-plugins/{plugin}/config/validate",
        "/admin/loggers",
        "/admin/loggers/{logger}",
    ):
        assert path in paths, path


def test_health_follows_kip_1017(tmp_path: Path) -> None:
    import asyncio
    import time

    import httpx

    from api.app import create_app
    from mirror_sink.worker.config_store import FileConfigBackingStore
    from mirror_sink.worker.herder import Herder

    herder = Herder("h", FileConfigBackingStore(tmp_path / "connectors.json"))
    app = create_app(herder)

    def get() -> httpx.Response:
        async def call() -> httpx.Response:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://w") as client:
                return await client.get("/health")

        return asyncio.run(call())

    starting = get()
    assert starting.status_code == 503 and starting.json()["status"] == "starting"
    herder.last_tick = time.monotonic()
    healthy = get()
    assert healthy.status_code == 200
    assert healthy.json() == {
        "status": "healthy",
        "message": "Worker has completed startup and is ready to handle requests.",
    }
    herder.last_tick = time.monotonic() - 30  # the herder's loop stuck
    stuck = get()
    assert stuck.status_code == 500 and stuck.json()["status"] == "unhealthy" and "30 s" in stuck.json()["message"]
