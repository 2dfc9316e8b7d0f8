"""``api.routes.metrics``: ``GET /metrics`` serves the process's Prometheus registry in the text format,
and stays out of the OpenAPI document (Connect has no such resource)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter

from api.routes import metrics
from tests.unit.api.fakes import mount

pytestmark = pytest.mark.unit


@pytest.fixture
def probe() -> Iterator[Counter]:
    """A series of the test's own in the process registry, gone again afterwards."""
    counter = Counter("unit_test_metrics_route_probe", "a series only this test writes", ["connector"])
    try:
        yield counter
    finally:
        REGISTRY.unregister(counter)


def test_the_process_registry_is_served_in_prometheus_text_format(probe: Counter) -> None:
    probe.labels("orders-mirror").inc(3)
    answer = mount(metrics.router()).get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == CONTENT_TYPE_LATEST
    assert 'unit_test_metrics_route_probe_total{connector="orders-mirror"} 3.0' in answer.text.splitlines()


def test_metrics_are_not_part_of_the_openapi_document() -> None:
    app = FastAPI()
    app.include_router(metrics.router())
    assert "/metrics" not in app.openapi().get("paths", {})
