"""Log formats: JSON lines carry the connector and task as fields."""

from __future__ import annotations

import io
import json
import logging

from mirror_sink.core.runtime.logs import context_logger, formatter


def test_json_lines_carry_connector_and_task() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter("json"))
    logger = logging.getLogger("test_logs.json")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    context_logger("test_logs.json", "orders task 2", connector="orders", task=2).info("assigned %d partitions", 3)
    line = json.loads(stream.getvalue())
    assert line["connector"] == "orders" and line["task"] == 2 and line["level"] == "INFO"
    assert line["message"] == "[orders task 2] assigned 3 partitions" and line["name"] == "test_logs.json"
    handler.setFormatter(formatter("text"))
    context_logger("test_logs.json", "orders").warning("plain")
    assert stream.getvalue().splitlines()[-1].endswith("WARNING test_logs.json: [orders] plain")
