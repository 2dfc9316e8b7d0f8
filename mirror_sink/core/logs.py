"""Standard-library logging set-up shared by every entry point."""

from __future__ import annotations

import logging
import os

#: What the engine accepts as a logger: a plain one, or one that prefixes its context.
Log = logging.Logger | logging.LoggerAdapter[logging.Logger]

LOG_FORMAT = "%(asctime)s %(levelname)-5s %(name)s: %(message)s"


def configure_logging(level: str | None = None) -> None:
    """Log to stderr at ``level`` (default ``MIRROR_SINK_LOG_LEVEL`` or INFO)."""
    logging.basicConfig(level=(level or os.environ.get("MIRROR_SINK_LOG_LEVEL", "INFO")).upper(), format=LOG_FORMAT)
    # kafka-python (the raw path's protocol client) narrates every connection and metadata refresh
    # at INFO; our own logs say what matters. MIRROR_SINK_KAFKA_PYTHON_LOG_LEVEL turns it back up.
    logging.getLogger("kafka").setLevel(os.environ.get("MIRROR_SINK_KAFKA_PYTHON_LOG_LEVEL", "WARNING").upper())
    # Its event loop warns whenever decoding a large Fetch response takes over 100 ms: expected here
    # (the task thread drives the loop between its own work), and nothing an operator can act on.
    logging.getLogger("kafka.net.selector").setLevel(logging.ERROR)


class ContextLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """Prefixes every message with its context, e.g. ``[orders-mirror task 0]``."""

    def process(self, msg: object, kwargs: object) -> tuple[str, object]:  # type: ignore[override]
        """Add the prefix."""
        return f"[{self.extra['context'] if self.extra else ''}] {msg}", kwargs


def context_logger(name: str, context: str) -> ContextLogger:
    """A logger whose lines say which connector/task they are about."""
    return ContextLogger(logging.getLogger(name), {"context": context})
