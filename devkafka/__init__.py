"""Real Apache Kafka clusters for development, tests and benchmarks, run from Maven Central jars.

Nothing here is used by the mirror itself: it is how a laptop, CI or a benchmark gets a `source` and a
`target` cluster without Docker.
"""

from devkafka.cluster import ClusterStartError, LocalKafkaCluster
from devkafka.jars import KafkaJars
from devkafka.pair import DevClusters

__all__ = ["ClusterStartError", "DevClusters", "KafkaJars", "LocalKafkaCluster"]
