"""The two development clusters, ``source`` and ``target``, side by side under one directory."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from devkafka.cluster import LocalKafkaCluster
from devkafka.jars import KafkaJars
from devkafka.paths import data_dir
from devkafka.replicated import ReplicatedKafkaCluster, ReplicatedPair

CLUSTER_NAMES = ("source", "target")


class DevClusters:
    """``source`` and ``target`` single-node KRaft clusters under ``home`` (default: the data dir);
    ``secured`` ones speak SASL_SSL and mTLS and run an authorizer (``devkafka.security``)."""

    def __init__(
        self,
        home: Path | None = None,
        jars: KafkaJars | None = None,
        broker_config: dict[str, str] | None = None,
        *,
        secured: bool = False,
        heap: str = "768m",
        target_features: dict[str, int] | None = None,
    ) -> None:
        self.home = home or data_dir() / "dev-kafka"
        self.jars = jars or KafkaJars.ensure()
        self.clusters = {
            name: LocalKafkaCluster(
                name,
                self.home / name,
                self.jars,
                broker_config=broker_config,
                secured=secured,
                heap=heap,
                features=target_features if name == "target" else None,
            )
            for name in CLUSTER_NAMES
        }

    @property
    def source(self) -> LocalKafkaCluster:
        """The cluster mirrored from."""
        return self.clusters["source"]

    @property
    def target(self) -> LocalKafkaCluster:
        """The cluster mirrored into."""
        return self.clusters["target"]

    def up(self, timeout: float = 120.0) -> None:
        """Start both clusters in parallel (each start is idempotent) and wait until both serve."""
        with ThreadPoolExecutor(len(self.clusters)) as pool:
            for future in [pool.submit(c.start, timeout) for c in self.clusters.values()]:
                future.result()

    def down(self, *, hard: bool = False) -> None:
        """Stop both clusters by their own pids; their data stays for the next ``up``."""
        with ThreadPoolExecutor(len(self.clusters)) as pool:
            for future in [pool.submit(c.stop, hard=hard) for c in self.clusters.values()]:
                future.result()

    def discard(self) -> None:
        """Stop both clusters at once and delete their data: for throwaway clusters such as the
        benchmarks', whose topics (gigabytes per run) nobody reads again."""
        self.down(hard=True)
        shutil.rmtree(self.home, ignore_errors=True)


@dataclass(frozen=True)
class BrokerPair:
    """A benchmark's two clusters: bootstrap servers, and each broker's process id when it runs on
    this machine (None for a cluster given by address, whose process nobody here can measure)."""

    source: str
    target: str
    source_pid: int | None = None
    target_pid: int | None = None


@contextmanager
def given_or_local_pair(
    workdir: Path, source: str | None, target: str | None, *, heap: str = "768m"
) -> Iterator[BrokerPair]:
    """The given source and target bootstrap servers (no pids), or local clusters started under
    ``workdir`` for the block and discarded after it, with their brokers' pids (``heap`` each)."""
    if bool(source) != bool(target):
        raise ValueError("give both the source and the target bootstrap servers, or neither")
    if source and target:
        yield BrokerPair(source, target)
        return
    clusters = DevClusters(workdir / "clusters", heap=heap)
    print("starting local source and target clusters...", flush=True)
    clusters.up()
    try:
        yield BrokerPair(
            clusters.source.bootstrap_servers,
            clusters.target.bootstrap_servers,
            clusters.source.state.pid,
            clusters.target.state.pid,
        )
    finally:
        clusters.discard()


@contextmanager
def given_or_local(
    workdir: Path, source: str | None, target: str | None, *, heap: str = "768m"
) -> Iterator[tuple[str, str]]:
    """The source and target bootstrap servers: the given ones, or local clusters started under
    ``workdir`` for the block and discarded after it (a benchmark's usual set-up)."""
    with given_or_local_pair(workdir, source, target, heap=heap) as pair:
        yield pair.source, pair.target


def print_clusters(clusters: DevClusters | ReplicatedPair) -> None:
    """One line a node: cluster name, bootstrap address, state, pid."""
    for name, c in clusters.clusters.items():
        nodes = c.nodes if isinstance(c, ReplicatedKafkaCluster) else [c]
        for i, node in enumerate(nodes, start=1):
            label = f"{name}-{i}" if len(nodes) > 1 else name
            state = f"running (pid {node.state.pid})" if node.is_running() else "stopped"
            print(f"{label:<9} {node.bootstrap_servers:<22} {state}")
