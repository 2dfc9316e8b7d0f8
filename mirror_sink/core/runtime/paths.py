"""Where the product keeps local state when nothing else is configured."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """State of the embedded worker and of the local clusters (``MIRROR_SINK_DATA_DIR``)."""
    default = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "mirror-sink"
    return Path(os.environ.get("MIRROR_SINK_DATA_DIR", default))
