"""A replicated KRaft cluster on loopback: N combined broker + controller nodes, each its own JVM.

Every node is a voter of the controller quorum, so any one node may die (a quorum of three keeps
its majority), and internal topics and new topics get N replicas with min.insync.replicas 2:
partition leadership, the transaction coordinator and the group coordinator all move to another
node when one dies, as in production. Heaps are small, so two such clusters fit on a 2-core machine
beside the mirror.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from devkafka.cluster import ClusterStartError, LocalKafkaCluster, Membership, free_port, new_cluster_id
from devkafka.data import create_topic
from devkafka.jars import KafkaJars

_STATE_FILE = "replicated.json"
#: The topic, transactional id and group ``warm_up`` uses.
_WARM_UP = "devkafka-warm-up"


class ReplicatedKafkaCluster:
    """A named cluster of ``size`` nodes under ``home``, node ids 1..size; data survives restarts."""

    def __init__(
        self,
        name: str,
        home: Path,
        jars: KafkaJars,
        *,
        size: int = 3,
        broker_config: dict[str, str] | None = None,
        heap: str = "384m",
    ) -> None:
        if size < 3:
            raise ValueError("a replicated cluster needs at least three nodes (a quorum that survives one loss)")
        self.name = name
        self.home = home
        self.jars = jars
        shape = self._shape = self._load_or_create(size)
        voters = ",".join(f"{i}@127.0.0.1:{n['controller_port']}" for i, n in enumerate(shape["nodes"], start=1))
        self.nodes = [
            LocalKafkaCluster(
                f"{name}-{i}",
                home / f"node-{i}",
                jars,
                broker_config=broker_config,
                heap=heap,
                membership=Membership(
                    cluster_id=shape["cluster_id"],
                    node_id=i,
                    voters=voters,
                    replicas=size,
                    port=n["port"],
                    controller_port=n["controller_port"],
                ),
            )
            for i, n in enumerate(shape["nodes"], start=1)
        ]

    def _load_or_create(self, size: int) -> dict[str, Any]:
        path = self.home / _STATE_FILE
        if path.exists():
            shape: dict[str, Any] = json.loads(path.read_text())
            if len(shape["nodes"]) != size:
                raise ClusterStartError(
                    f"cluster {self.name!r} in {self.home} has {len(shape['nodes'])} nodes, not {size}; remove it"
                )
            return shape
        return {
            "cluster_id": new_cluster_id(),
            "nodes": [{"port": free_port(), "controller_port": free_port()} for _ in range(size)],
        }

    # -- identity -------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """Every node's client listener, comma-separated."""
        return ",".join(n.bootstrap_servers for n in self.nodes)

    @property
    def client_config(self) -> dict[str, Any]:
        """librdkafka settings for the cluster."""
        return {"bootstrap.servers": self.bootstrap_servers}

    def node(self, node_id: int) -> LocalKafkaCluster:
        """The node with broker id ``node_id`` (1-based)."""
        return self.nodes[node_id - 1]

    # -- process --------------------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> None:
        """Start every node at once (the quorum needs a majority to elect a leader) and wait until the
        cluster lists all of them as brokers; idempotent."""
        path = self.home / _STATE_FILE
        if not path.exists():  # saved once started, as a node's own state is
            self.home.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self._shape, indent=2))
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            for future in [pool.submit(n.start, timeout) for n in self.nodes]:
                future.result()
        self.wait_brokers(range(1, len(self.nodes) + 1), timeout)
        self.warm_up(timeout)

    def warm_up(self, timeout: float = 120.0) -> None:
        """Commit one transaction with a group's offsets in it, so the transaction log and the
        consumer offsets topic exist and their coordinators answer.

        Kafka creates both internal topics on first use, three replicas of ten partitions each; on a
        busy 2-core machine that takes long enough for a client's first describe or commit to time out.
        A cluster is ready once that is done, not when its brokers have registered."""
        if _WARM_UP not in AdminClient(self.client_config).list_topics(timeout=timeout).topics:
            create_topic(self.bootstrap_servers, _WARM_UP, 1, timeout=timeout)
        producer = Producer({**self.client_config, "transactional.id": _WARM_UP, "log_level": 3})
        group = Consumer({**self.client_config, "group.id": _WARM_UP, "log_level": 3})
        try:
            producer.init_transactions(timeout)
            producer.begin_transaction()
            producer.produce(_WARM_UP, b"warm")
            offsets = [TopicPartition(_WARM_UP, 0, 1)]
            producer.send_offsets_to_transaction(offsets, group.consumer_group_metadata(), timeout)
            producer.commit_transaction(timeout)
        finally:
            group.close()

    def wait_brokers(self, node_ids: Iterable[int], timeout: float = 90.0) -> None:
        """Block until the cluster's metadata lists ``node_ids`` as live brokers."""
        wanted = set(node_ids)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if wanted <= self.live_brokers():
                return
            time.sleep(0.2)
        raise ClusterStartError(
            f"cluster {self.name!r}: brokers {sorted(wanted)} not all registered within {timeout:.0f} s"
        )

    def live_brokers(self) -> set[int]:
        """Broker ids the metadata lists now (empty if no node answers)."""
        admin = AdminClient({**self.client_config, "log_level": 0})
        try:
            return set(admin.list_topics(timeout=2).brokers)
        except Exception:
            return set()

    def is_running(self) -> bool:
        """True while every node's process is alive."""
        return all(n.is_running() for n in self.nodes)

    def stop(self, *, hard: bool = False, timeout: float = 60.0) -> None:
        """Stop every node (SIGTERM, or SIGKILL for a crash)."""
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            for future in [pool.submit(n.stop, hard=hard, timeout=timeout) for n in self.nodes]:
                future.result()


class ReplicatedPair:
    """``source`` and ``target`` replicated clusters side by side under ``home``."""

    def __init__(self, home: Path, jars: KafkaJars | None = None, *, size: int = 3, heap: str = "384m") -> None:
        self.home = home
        self.jars = jars or KafkaJars.ensure()
        self.clusters = {
            name: ReplicatedKafkaCluster(name, home / name, self.jars, size=size, heap=heap)
            for name in ("source", "target")
        }

    @property
    def source(self) -> ReplicatedKafkaCluster:
        """The cluster mirrored from."""
        return self.clusters["source"]

    @property
    def target(self) -> ReplicatedKafkaCluster:
        """The cluster mirrored into."""
        return self.clusters["target"]

    def up(self, timeout: float = 180.0) -> None:
        """Start both clusters (each node at once) and wait until every broker is registered."""
        with ThreadPoolExecutor(2) as pool:
            for future in [pool.submit(c.start, timeout) for c in self.clusters.values()]:
                future.result()

    def down(self, *, hard: bool = False) -> None:
        """Stop both clusters; their data stays for the next ``up``."""
        for cluster in self.clusters.values():
            cluster.stop(hard=hard)
