"""Connector configs the integration tests run mirrors with: the given clusters and topics, fast timers."""

from __future__ import annotations

from devkafka.endpoints import KafkaEndpoint

# Short timers so rebalances, refreshes and cycles happen within a test's patience.
FAST_SETTINGS = {
    "transaction.boundary.interval.ms": "200",
    "refresh.topics.interval.ms": "1000",
    "source.group.commit.interval.ms": "1000",
    "transaction.timeout.ms": "20000",
    "target.cluster.consumer.session.timeout.ms": "6000",
    "target.cluster.consumer.heartbeat.interval.ms": "1000",
    "target.cluster.consumer.topic.metadata.refresh.interval.ms": "1000",
    # Offset syncs stay on (every exactness test checks them); the checkpoint emitter, which scans
    # every source group, runs only where a test asks for it.
    "emit.checkpoints.enabled": "false",
}


#: The connector class a REST connector config names (MM2's; mirror-sink's plugin answers to it).
PLUGIN = "org.apache.kafka.connect.mirror.MirrorSinkConnector"


def connector_config(source: KafkaEndpoint, target: KafkaEndpoint, topics: str, **extra: str) -> dict[str, str]:
    """A REST connector config for ``topics`` with the tests' fast timers."""
    return {
        "connector.class": PLUGIN,
        "source.cluster.bootstrap.servers": source.bootstrap_servers,
        "target.cluster.bootstrap.servers": target.bootstrap_servers,
        "topics": topics,
        **FAST_SETTINGS,
        **extra,
    }


def mirror_config(
    name: str, source: KafkaEndpoint, target: KafkaEndpoint, topics: str, **overrides: str
) -> dict[str, str]:
    """A connector config for tests: fast timers, the given clusters and topics."""
    return {
        "name": name,
        "connector.class": "MirrorSinkConnector",
        "source.cluster.bootstrap.servers": source.bootstrap_servers,
        "target.cluster.bootstrap.servers": target.bootstrap_servers,
        "topics": topics,
        **FAST_SETTINGS,
        **{k.replace("__", "."): v for k, v in overrides.items()},
    }
