"""A link's shadow-group offsets, written from outside its tasks in the format its tasks commit them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer, TopicPartition

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients import clients
from mirror_sink.core.formats.commit_metadata import commit_metadata, source_topic_ids
from mirror_sink.failover.common.groups import group_member


@dataclass(frozen=True)
class ShadowGroupOffsets:
    """Where a link's tasks go on: offsets for its shadow group, each a target partition's next
    source offset with the commit metadata the tasks read back (``core.commit_metadata``:
    the source topic's id, so a task starting there checks it reads the topic the offset was taken
    for).

    Every verb that sets a link's position writes through here: the failback's reverse start (inside
    the transaction that keeps the diverged records, ``send_to_transaction``) and the forward link's
    resume when the failback finishes (``commit``). Consumer groups moved by a failover or a drill
    are not shadow groups: they carry no commit metadata (``groups.commit_offsets``).
    """

    group: str
    offsets: tuple[TopicPartition, ...]

    @classmethod
    def for_link(
        cls, link: MirrorSinkConfig, positions: Iterable[tuple[TargetPartition, str, int]], client_id: str
    ) -> ShadowGroupOffsets:
        """``link``'s shadow-group offsets at ``positions`` (target partition, its source topic, next
        source offset; kept in the order given), each source topic's id read from the link's source
        cluster now (a topic it cannot describe is written without one)."""
        wanted = list(positions)
        source = clients.admin(link.source_admin(), client_id)  # kept alive while its futures run
        ids = source_topic_ids(source, sorted({topic for _, topic, _ in wanted}))
        offsets = tuple(
            TopicPartition(*target, offset, metadata=commit_metadata(ids.get(topic)))
            for target, topic, offset in wanted
        )
        return cls(link.shadow_group_id, offsets)

    @property
    def starts(self) -> dict[TargetPartition, int]:
        """Target partition -> the next source offset written for it."""
        return {TargetPartition(tp.topic, tp.partition): tp.offset for tp in self.offsets}

    def commit(self, consumer_props: Mapping[str, str], client_id: str) -> None:
        """Commit the offsets into the group on the link's target (``consumer_props``) as a
        non-member: the broker refuses while the link's tasks are members. KafkaException as
        librdkafka raises it."""
        member = group_member(consumer_props, self.group, client_id)
        try:
            member.commit(offsets=list(self.offsets), asynchronous=False)
        finally:
            member.close()

    def send_to_transaction(self, producer: Producer, consumer_props: Mapping[str, str]) -> None:
        """Commit the offsets inside ``producer``'s open transaction, on its cluster (the link's
        target, ``consumer_props``). The group metadata comes from a consumer that never joins the
        group: generation -1, which the coordinator accepts for a group with no members (the link is
        not running: its group holds no offsets yet)."""
        member = Consumer({**consumer_props, "group.id": self.group, "enable.auto.commit": False})
        try:
            producer.send_offsets_to_transaction(list(self.offsets), member.consumer_group_metadata(), 30)
        finally:
            member.close()
