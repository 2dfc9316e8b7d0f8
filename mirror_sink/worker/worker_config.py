"""The worker's own settings: where it listens, who it is, where its connector configs live."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field

from mirror_sink.core.paths import data_dir


class WorkerConfig(BaseModel):
    """Worker settings (a ``worker.properties`` file and/or flags), in Connect's names where it has them."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    listeners: str = Field("http://0.0.0.0:8083", pattern=r"^http://[^:/]*:\d+$")
    worker_id: str | None = Field(None, alias="worker.id")
    data_dir: Path = Field(default_factory=lambda: data_dir() / "worker", alias="data.dir")
    config_storage: str = Field("file", alias="config.storage", pattern="^(file|kafka)$")
    config_storage_topic: str = Field("mirror-sink-configs", alias="config.storage.topic")
    bootstrap_servers: str | None = Field(None, alias="bootstrap.servers")

    @property
    def host_port(self) -> tuple[str, int]:
        """Where the REST API listens."""
        url = urlparse(self.listeners)
        return url.hostname or "0.0.0.0", url.port or 8083

    @property
    def id(self) -> str:
        """The worker id: configured, or host:port as Connect's."""
        return self.worker_id or f"{socket.gethostname()}:{self.host_port[1]}"
