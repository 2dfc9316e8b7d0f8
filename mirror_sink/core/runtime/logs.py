"""Standard-library logging set-up shared by every entry point."""

from __future__ import annotations

import logging
import os

from pythonjsonlogger.json import JsonFormatter

#: What the engine accepts as a logger: a plain one, or one that prefixes its context.
Log = logging.Logger | logging.LoggerAdapter[logging.Logger]

LOG_FORMAT = "%(asctime)s %(levelname)-5s %(name)s: %(message)s"
#: JSON lines: these fields, plus ``connector`` / ``task`` where a line is about one.
JSON_FIELDS = ("asctime", "levelname", "name", "message")


def configure_logging(level: str | None = None, log_format: str | None = None) -> None:
    """Log to stderr at ``level`` (default ``MIRROR_SINK_LOG_LEVEL`` or INFO), as text or as JSON
    lines (``log_format`` or ``MIRROR_SINK_LOG_FORMAT``: ``text`` (default) or ``json``)."""
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(log_format or os.environ.get("MIRROR_SINK_LOG_FORMAT", "text")))
    level = (level or os.environ.get("MIRROR_SINK_LOG_LEVEL", "INFO")).upper()
    logging.basicConfig(level=level, handlers=[handler])
    # kafka-python (the raw path's protocol client) narrates every connection and metadata refresh
    # at INFO; our own logs say what matters. MIRROR_SINK_KAFKA_PYTHON_LOG_LEVEL turns it back up.
    logging.getLogger("kafka").setLevel(os.environ.get("MIRROR_SINK_KAFKA_PYTHON_LOG_LEVEL", "WARNING").upper())
    # Its event loop warns whenever decoding a large Fetch response takes over 100 ms: expected here
    # (the task thread drives the loop between its own work), and nothing an operator can act on.
    logging.getLogger("kafka.net.selector").setLevel(logging.ERROR)


def formatter(log_format: str) -> logging.Formatter:
    """``text``: one readable line; ``json``: a JSON object per line with the context's fields."""
    if log_format.lower() == "json":
        return JsonFormatter(list(JSON_FIELDS), rename_fields={"levelname": "level", "asctime": "time"})
    return logging.Formatter(LOG_FORMAT)


class ContextLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """Prefixes every message with its context, e.g. ``[orders-mirror task 0]``, and carries the
    context's fields (``connector``, ``task``) on each record for JSON logs."""

    def process(self, msg: object, kwargs: object) -> tuple[str, object]:  # type: ignore[override]
        """Add the prefix and the fields."""
        extra = dict(self.extra or {})
        context = extra.pop("context", "")
        if isinstance(kwargs, dict):
            kwargs["extra"] = {**extra, **kwargs.get("extra", {})}
        return f"[{context}] {msg}", kwargs


def context_logger(name: str, context: str, **fields: object) -> ContextLogger:
    """A logger whose lines say which connector/task they are about (``fields``: e.g. connector, task)."""
    return ContextLogger(logging.getLogger(name), {"context": context, **fields})
