"""What tests and benchmarks know of a cluster, whichever backend gave it: its name and address."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class KafkaEndpoint(Protocol):
    """What tests and benchmarks need of a cluster: its name and address."""

    @property
    def name(self) -> str: ...

    @property
    def bootstrap_servers(self) -> str: ...


@dataclass(frozen=True)
class ExternalCluster:
    """A cluster this process did not start and cannot bounce."""

    name: str
    bootstrap: str

    @property
    def bootstrap_servers(self) -> str:
        """The address given by the environment."""
        return self.bootstrap
