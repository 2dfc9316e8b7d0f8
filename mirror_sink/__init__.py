"""mirror-sink: exactly-once Kafka-to-Kafka mirroring (KIP-656 sink tasks, KIP-712 shallow batches)."""

__version__ = "0.1.0"
