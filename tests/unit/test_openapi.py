"""The checked-in OpenAPI document matches the app (regenerate with ``python -m api.openapi``)."""

from __future__ import annotations

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
