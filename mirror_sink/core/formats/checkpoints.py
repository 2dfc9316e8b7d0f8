"""MirrorMaker 2 checkpoints, byte for byte as Kafka's ``Checkpoint.java`` (connect-mirror-client) writes them.

A checkpoint says: consumer group G, which has committed ``upstream_offset`` on source partition
``topic``-``partition`` (named here by its *target* topic, as MM2 does), should resume on the target at
``downstream_offset``. They live in ``{source alias}.checkpoints.internal`` on the target (one
partition, compacted), where Kafka's ``RemoteClusterUtils.translateOffsets`` and every tool built on
it read them; the newest record of a key wins.

Key: group (int16-length UTF-8), topic (same), partition (int32). Value: version header (int16, 0),
upstreamOffset (int64), offset (int64), metadata (int16-length UTF-8).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from mirror_sink.core.base.partitions import TargetPartition

VERSION = 0
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_OFFSETS = struct.Struct(">qq")


def checkpoints_topic(source_alias: str) -> str:
    """MirrorMaker 2's checkpoints topic name (DefaultReplicationPolicy.checkpointsTopic)."""
    return f"{source_alias}.checkpoints.internal"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One group's exact resume position on one target partition."""

    group: str
    target: TargetPartition
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def encode_key(self) -> bytes:
        """Checkpoint.recordKey(): group, topic, partition."""
        return kafka_string(self.group) + kafka_string(self.target.topic) + _INT32.pack(self.target.partition)

    def encode_value(self) -> bytes:
        """Checkpoint.recordValue(): version header, then upstream offset, downstream offset, metadata."""
        return (
            _INT16.pack(VERSION)
            + _OFFSETS.pack(self.upstream_offset, self.downstream_offset)
            + kafka_string(self.metadata)
        )

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Checkpoint:
        """Parse a checkpoint record (ours or MirrorMaker 2's); ValueError if it is not one."""
        try:
            group, at = read_kafka_string(key, 0)
            topic, at = read_kafka_string(key, at)
            (partition,) = _INT32.unpack_from(key, at)
            (version,) = _INT16.unpack_from(value, 0)
            if version < VERSION:
                raise ValueError(f"checkpoint version {version}")
            upstream, downstream = _OFFSETS.unpack_from(value, 2)
            metadata, _ = read_kafka_string(value, 2 + _OFFSETS.size)
        except (struct.error, UnicodeDecodeError) as exc:
            raise ValueError(f"not a checkpoint record: {exc}") from exc
        return cls(group, TargetPartition(topic, partition), upstream, downstream, metadata)


def kafka_string(s: str) -> bytes:
    """A Kafka protocol STRING: int16 length, then UTF-8."""
    data = s.encode()
    return _INT16.pack(len(data)) + data


def read_kafka_string(buf: bytes, at: int) -> tuple[str, int]:
    """The STRING at ``at`` and the offset after it."""
    (n,) = _INT16.unpack_from(buf, at)
    at += 2
    if n < 0 or at + n > len(buf):
        raise ValueError("string length out of range")
    return bytes(buf[at : at + n]).decode(), at + n
