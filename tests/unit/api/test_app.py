"""Property-based run of the OpenAPI spec (schemathesis): no request makes the REST API answer 500.

Runs the app in-process over ASGI. It needs no cluster: generated configs never name both
bootstrap servers, so no connector reaches Kafka; mirroring through the API is covered by the
integration tests against real clusters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from api.app import create_app
from mirror_sink.core.base.states import TargetState
from mirror_sink.worker.config_store import FileConfigBackingStore, StoredConnector
from mirror_sink.worker.herder import Herder


def _app() -> object:
    store = FileConfigBackingStore(Path("/nonexistent-never-written") / "connectors.json")
    herder = Herder("fuzz", store)
    # One known connector (never started: STOPPED) so {name} paths also hit existing resources.
    herder.worker.stored["known"] = StoredConnector({"name": "known", "topics": "x"}, TargetState.STOPPED)
    store.put = lambda name, connector: None  # type: ignore[method-assign]  # keep the fuzz off the disk
    store.delete = lambda name: None  # type: ignore[method-assign]
    herder.start()  # its loop runs, so /health answers 200 (KIP-1017: 503 while starting)
    return create_app(herder)


schema = schemathesis.openapi.from_asgi("/openapi.json", _app())


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_500(case: schemathesis.Case[Any]) -> None:
    if case.path == "/health/ready" and case.method == "GET":
        # Its documented "not ready" is a 503: "known" above never runs (its stored config is invalid).
        response = case.call()
        assert response.status_code == 503 and "known is FAILED" in response.json()["message"], response.text
        return
    case.call_and_validate(checks=[not_a_server_error])
