"""Topics of a shape a test needs: per-test names, compacted logs with offset gaps inside batches."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from devkafka.data import ProduceSpec, Rec, produce
from devkafka.endpoints import KafkaEndpoint
from tests.integration.harness.records import committed_data_batches
from tests.integration.harness.waiting import wait_until

Unique = Callable[[str], str]  # the `unique` fixture: a base name -> a name no other test uses


class TopicFactory(Protocol):
    """The ``new_topic`` fixture: creates a topic named for this test only (``unique(base)``) and returns
    its name; on the shared source cluster, or on the cluster ``on`` names (reached with full rights).

    Every name of one test ends in the same suffix, so a name built from another is the one the factory
    makes from the built base: ``new_topic("source.orders", on=target)`` is ``f"source.{topic}"`` for
    ``topic = new_topic("orders")``, and ``new_topic(f"{prefix}-a")`` with ``prefix = unique("grow")``
    matches the pattern ``f"{prefix}-.*"``."""

    def __call__(
        self, base: str, partitions: int = 1, config: dict[str, str] | None = None, *, on: KafkaEndpoint | None = None
    ) -> str: ...


def compacted_with_gaps(new_topic: TopicFactory, cluster: KafkaEndpoint, base: str, codec: str) -> str:
    """A one-partition compacted topic on ``cluster`` whose log the cleaner left with offset gaps inside
    batches, then frozen (no record old enough to clean any more), so what a test reads at its end is
    what the mirror copied; its name (``new_topic(base)``)."""
    compact_fast = {
        "cleanup.policy": "compact",
        "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.001",
        "min.compaction.lag.ms": "0",
        "delete.retention.ms": "100",
    }
    topic = new_topic(base, 1, compact_fast, on=cluster)
    bootstrap = cluster.bootstrap_servers
    # 40 keys in one batch, then the even ones overwritten: compaction leaves holes inside that batch.
    spec = ProduceSpec(compression=codec, batch_bytes=8192)
    for round_ in range(25):
        keys = [k for k in range(40) if round_ == 0 or k % 2 == 0]
        produce(bootstrap, topic, [Rec(b"key-%d" % k, b"v%d-" % round_ * 30) for k in keys], spec)
        time.sleep(0.2)  # let segments roll (segment.ms) so the cleaner can work on them
    wait_until(lambda: has_offset_gaps(bootstrap, topic), 120, "the log cleaner to leave gaps")
    _stop_compacting(bootstrap, topic)
    return topic


def has_offset_gaps(bootstrap: str, topic: str) -> bool:
    """True once compaction left a batch whose record count is below its offset span."""
    for batch in committed_data_batches(bootstrap, topic, 0):
        last_delta = int.from_bytes(batch[23:27], "big")
        count = int.from_bytes(batch[57:61], "big")
        if count != last_delta + 1:
            return True
    return False


def _stop_compacting(bootstrap: str, topic: str) -> None:
    """No record is old enough to clean from now on: the log stays as the cleaner left it, so the
    source read at the end is the source the mirror copied (CI once saw the source cleaned again
    after the mirror had copied it: 60 records left against 440 mirrored)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    lag = ConfigEntry("min.compaction.lag.ms", "86400000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[lag])
    admin.incremental_alter_configs([resource])[resource].result(30)
    time.sleep(2)  # a cleaner pass that began before the change finishes within milliseconds here
