"""The shadow group member's identity at one moment: what fences a transactional offset commit.

KIP-447: the group coordinator refuses a TxnOffsetCommit whose generation and member id are not the
group's current ones, so a task that lost its partitions in a rebalance cannot commit for them. A
commit must carry the generation that owned the records it carries, taken before the cycle's first
record (``Ownership.serve``), not at commit time.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from confluent_kafka import Consumer

from mirror_sink.core.base.errors import TaskFailure


@dataclass(frozen=True)
class GroupMetadata:
    """A member's generation, member id and group instance id, with librdkafka's own form of them."""

    generation: int
    member_id: str
    instance_id: str | None
    #: What ``consumer_group_metadata()`` returned: librdkafka's ``send_offsets_to_transaction`` takes it.
    opaque: object

    @classmethod
    def of(cls, member: Consumer) -> GroupMetadata:
        """The member's metadata now."""
        opaque = member.consumer_group_metadata()
        generation, member_id, instance_id = parse_group_metadata(opaque)
        return cls(generation, member_id, instance_id, opaque)


def parse_group_metadata(metadata: object) -> tuple[int, str, str | None]:
    """(generation, member id, group instance id) from librdkafka's consumer_group_metadata().

    Its serialized form is ``b"CGMDv2:"``, the generation as a host-order int32, then the group
    id, member id and (unless a null flag is set) the group instance id, each NUL-terminated.
    """
    if not isinstance(metadata, bytes) or not metadata.startswith(b"CGMDv2:"):
        shown = metadata[:8] if isinstance(metadata, bytes) else type(metadata).__name__
        raise TaskFailure(f"unknown consumer group metadata format {shown!r} from librdkafka")
    (generation,) = struct.unpack_from("=i", metadata, 7)
    _group, member, rest = metadata[11:].split(b"\0", 2)
    instance = None if rest[:1] != b"\0" else rest[1:].split(b"\0", 1)[0].decode()
    return generation, member.decode(), instance
