"""What the mirror commits beside every shadow offset, and the source topic ids it names: one
format, read by the task (where a partition starts), failover, failback, drills and Spark alike.

The metadata is ``source-leader-epoch=E;source-topic-id=ID``, led by ``source-transactions=whole;``
when the offset was committed at a cut of the source's transactions. The topic id lets a topic
deleted and created again under the same name be told apart (``mirror_sink.task.source_continuity``);
the leader epoch lets a restart ask the source whether its log still agrees (KIP-320).
"""

from __future__ import annotations

from confluent_kafka import KafkaException, TopicCollection, Uuid
from confluent_kafka.admin import AdminClient

_TOPIC_ID = "source-topic-id"
_LEADER_EPOCH = "source-leader-epoch"
_TRANSACTIONS = "source-transactions"
_WHOLE = "whole"


def commit_metadata(topic_id: str | None, leader_epoch: int | None = None, *, at_cut: bool = False) -> str:
    """The metadata committed beside a shadow offset: ``source-leader-epoch=E;source-topic-id=ID``,
    led by ``source-transactions=whole;`` when the offset was committed at a cut of the source's
    transactions (``source.transactions.whole``: no source transaction is in the copy in part).

    The topic id never comes first: readers from before the leader epoch took everything after a
    leading ``source-topic-id=`` as the id, and now read no id at all rather than a wrong one. ""
    when nothing is known.
    """
    fields = []
    if at_cut:
        fields.append(f"{_TRANSACTIONS}={_WHOLE}")
    if leader_epoch is not None and leader_epoch >= 0:
        fields.append(f"{_LEADER_EPOCH}={leader_epoch}")
    if topic_id:
        fields.append(f"{_TOPIC_ID}={topic_id}")
    return ";".join(fields)


def _fields(metadata: str) -> dict[str, str]:
    pairs = (field.partition("=") for field in metadata.rstrip("\0").split(";"))
    return {key: value for key, eq, value in pairs if eq and value}


def stored_topic_id(metadata: str) -> str | None:
    """The source topic id a shadow offset was committed for (None: committed without one)."""
    return _fields(metadata).get(_TOPIC_ID)


def stored_at_cut(metadata: str) -> bool:
    """Whether a shadow offset was committed at a cut of the source's transactions."""
    return _fields(metadata).get(_TRANSACTIONS) == _WHOLE


def stored_leader_epoch(metadata: str) -> int | None:
    """The source leader epoch of the record before a shadow offset (None: committed without one)."""
    epoch = _fields(metadata).get(_LEADER_EPOCH, "")
    return int(epoch) if epoch.isdigit() else None


def kafka_uuid(uuid: Uuid) -> str:
    """A topic id as Kafka prints it (``kafka-topics --describe``): URL-safe base64, no padding."""
    return str(uuid).rstrip("=").replace("+", "-").replace("/", "_")


def source_topic_ids(admin: AdminClient, topics: list[str], timeout_s: float = 30.0) -> dict[str, str]:
    """The current topic id of each of ``topics`` that exists on the source (Kafka's base64 form)."""
    if not topics:
        return {}
    ids: dict[str, str] = {}
    for topic, future in admin.describe_topics(TopicCollection(sorted(set(topics)))).items():
        try:
            ids[topic] = kafka_uuid(future.result(timeout_s).topic_id)
        except (KafkaException, TimeoutError):
            # Gone for now (deleted, not visible), or no answer in time (a source broker restarting,
            # seen in the chaos test): nothing to compare, which proves nothing either way.
            continue
    return ids
