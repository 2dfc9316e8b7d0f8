"""The raw fetcher's Fetch requests: a session's ``Plan`` as Fetch v12 (topics by name) or v13
(topics by id), read_committed or, for an idle leader's watch, read_uncommitted; the part of the
Java client's ``FetchRequest.Builder``."""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer import FetchRequest

from mirror_sink.raw.fetch.fetch_session import Kind, Plan

_READ_UNCOMMITTED, _READ_COMMITTED = 0, 1
#: v12 names topics; v13 (Kafka 3.1+) names them by id, so a topic deleted and created again under
#: the same name answers UNKNOWN_TOPIC_ID instead of serving the new topic's records at old offsets.
FETCH_VERSIONS = (12, 13)
BY_TOPIC_ID = 13


class FetchRequestBuilder:
    """Builds each Fetch request at the version negotiated with the source."""

    def __init__(self, version: int, partition_max_bytes: int) -> None:
        self.version = version
        self.partition_max_bytes = partition_max_bytes
        self._rotation = 0

    def build(self, plan: Plan, max_bytes: int, wait_ms: int, *, committed: bool = True) -> FetchRequest:
        """The Fetch that carries ``plan``: at most ``max_bytes``, parked at most ``wait_ms``;
        ``committed=False`` asks read_uncommitted (a watch, whose records are never forwarded)."""
        f = FetchRequest
        by_id = self.version >= BY_TOPIC_ID
        topics: dict[Any, list[Any]] = {}
        named = list(plan.send.items())
        if plan.kind is not Kind.INCREMENTAL and named:
            # Rotated on every full Fetch: the broker fills a response in request order, so a fixed
            # order could leave the last partitions with nothing while the first always have data
            # (in a session the broker rotates the partitions it answered by itself, KAFKA-12330).
            self._rotation = (self._rotation + 1) % len(named)
            named = named[self._rotation :] + named[: self._rotation]
        for (topic, partition), state in named:
            topics.setdefault(state.topic_id if by_id else topic, []).append(
                f.FetchTopic.FetchPartition(
                    partition=partition,
                    # KIP-320: the broker refuses a stale or unknown leader, and answers a last fetched
                    # epoch whose log ended earlier with the diverging epoch (a truncated source).
                    current_leader_epoch=state.leader_epoch,
                    fetch_offset=state.offset,
                    last_fetched_epoch=state.last_epoch,
                    log_start_offset=-1,
                    # Constant: in a session, a partition whose limit changed would be re-sent.
                    partition_max_bytes=self.partition_max_bytes,
                )
            )
        forgotten: dict[Any, list[int]] = {}
        for (topic, partition), topic_id in plan.forget.items():
            forgotten.setdefault(topic_id if by_id else topic, []).append(partition)
        return f(
            version=self.version,
            replica_id=-1,
            max_wait_ms=wait_ms,
            min_bytes=1,
            max_bytes=max_bytes,
            isolation_level=_READ_COMMITTED if committed else _READ_UNCOMMITTED,
            session_id=plan.session_id,
            session_epoch=plan.session_epoch,
            topics=[
                f.FetchTopic(topic_id=key, partitions=ps) if by_id else f.FetchTopic(topic=key, partitions=ps)
                for key, ps in topics.items()
            ],
            forgotten_topics_data=[
                f.ForgottenTopic(topic_id=key, partitions=ps) if by_id else f.ForgottenTopic(topic=key, partitions=ps)
                for key, ps in forgotten.items()
            ],
            rack_id="",
        )
