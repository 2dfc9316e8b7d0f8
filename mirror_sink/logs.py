"""Standard-library logging set-up shared by every entry point."""

from __future__ import annotations

import logging
import os

LOG_FORMAT = "%(asctime)s %(levelname)-5s %(name)s: %(message)s"


def configure_logging(level: str | None = None) -> None:
    """Log to stderr at ``level`` (default ``MIRROR_SINK_LOG_LEVEL`` or INFO)."""
    logging.basicConfig(
        level=(level or os.environ.get("MIRROR_SINK_LOG_LEVEL", "INFO")).upper(), format=LOG_FORMAT
    )
