"""Write the REST API's OpenAPI document to api/openapi.json: ``python -m api.openapi``.

The checked-in document is what clients generate code from; a test fails when it drifts from the app.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from api.app import create_app
from mirror_sink.worker.config_store import FileConfigBackingStore
from mirror_sink.worker.herder import Herder

SPEC_PATH = Path(__file__).with_name("openapi.json")


def current_spec() -> dict[str, Any]:
    """The OpenAPI document of the app as the code defines it now."""
    with tempfile.TemporaryDirectory() as tmp:
        herder = Herder("openapi", FileConfigBackingStore(Path(tmp) / "connectors.json"))
        return create_app(herder).openapi()


def render(spec: dict[str, Any]) -> str:
    """The checked-in form: sorted keys, two-space indent, trailing newline."""
    return json.dumps(spec, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    SPEC_PATH.write_text(render(current_spec()))
    print(f"wrote {SPEC_PATH}")
