"""Topic ids (KIP-516) as Kafka prints them and as the protocol carries them.

Kafka prints a topic id (``kafka-topics --describe``) as URL-safe base64 of its 16 bytes, without
padding; mirror-sink stores and logs ids in that form, and turns them into ``uuid.UUID`` only for
the requests that carry them (Fetch v13+).
"""

from __future__ import annotations

import base64
import uuid


def as_uuid(topic_id: str) -> uuid.UUID:
    """``uuid.UUID`` of an id in Kafka's printed form; ValueError if it is not one."""
    raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a topic id: {topic_id!r}")
    return uuid.UUID(bytes=raw)


def as_text(topic_id: uuid.UUID) -> str:
    """An id in Kafka's printed form."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()
