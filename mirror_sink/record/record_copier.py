"""Record mode: re-produce each consumed source record to the same partition of its target topic."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import cast

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from mirror_sink.core.base.errors import AbortCycle, RecoverableTaskFailure, Retriable, TaskFailure
from mirror_sink.core.clients.clients import is_fatal
from mirror_sink.core.runtime.retry import retry_call
from mirror_sink.core.telemetry.metrics import CycleStats

_PARTITION_WAIT_S = 30.0


class RecordCopier:
    """Copies key, value (null too), headers and timestamp; partition numbers map 1:1.

    The source timestamp is sent as the record's CreateTime whatever its type on the source, so a
    LogAppendTime source keeps its times on the target (whose topics are provisioned as CreateTime).
    """

    def __init__(self, producer: Producer, sources: dict[tuple[str, int], list[int]] | None = None) -> None:
        self.producer = producer
        #: Where each produced record's source offset is noted, per target partition (offset syncs).
        self.sources = sources
        #: Records, bytes and timestamps per target partition, for metrics (taken at each commit).
        self.stats: dict[tuple[str, int], CycleStats] = {}

    def copy(self, messages: Sequence[Message], target_topics: Mapping[str, str]) -> int:
        """Produce ``messages`` (all without error) and return their key + value bytes."""
        produced = 0
        produce, poll = self.producer.produce, self.producer.poll
        sources = self.sources
        stats = self.stats
        read_ms = int(time.time() * 1000)  # the batch was just consumed
        for msg in messages:
            key, value = msg.key(), msg.value()
            _, timestamp = msg.timestamp()
            topic = target_topics[cast(str, msg.topic())]
            partition = cast(int, msg.partition())
            while True:
                try:
                    produce(
                        topic,
                        value=value,
                        key=key,
                        partition=partition,
                        timestamp=max(timestamp, 0),
                        headers=msg.headers(),
                    )
                    break
                except BufferError:
                    poll(0.05)  # librdkafka's queue is full: let deliveries drain it
                except KafkaException as exc:
                    err: KafkaError = exc.args[0]
                    if err.code() == KafkaError._UNKNOWN_PARTITION:
                        self._await_partition(topic, partition)
                        continue
                    if is_fatal(err):
                        raise RecoverableTaskFailure(f"producing to {topic}-{partition}: {err.str()}") from exc
                    if err.code() == KafkaError._STATE or err.txn_requires_abort():
                        # The transaction already failed in the background: void the cycle.
                        raise AbortCycle(f"producing to {topic}-{partition}: {err.str()}") from exc
                    raise
            if sources is not None:
                noted = sources.get((topic, partition))
                if noted is None:
                    noted = sources[(topic, partition)] = []
                noted.append(cast(int, msg.offset()))
            size = (len(key) if key else 0) + (len(value) if value else 0)
            produced += size
            st = stats.get((topic, partition))
            if st is None:
                st = stats[(topic, partition)] = CycleStats()
            st.records += 1
            st.bytes += size
            st.ts_sum += timestamp
            st.read_sum += read_ms
            st.min_ts = min(st.min_ts, timestamp)
            st.max_ts = max(st.max_ts, timestamp)
        poll(0)
        return produced

    def _await_partition(self, topic: str, partition: int) -> None:
        """The producer's metadata may lag a partition just added by provisioning: refresh it."""

        unanswered: list[str] = []

        def known() -> None:
            try:
                md = self.producer.list_topics(topic, timeout=10).topics.get(topic)
            except KafkaException as exc:  # a target broker away: ask again, and say so if it lasts
                unanswered.append(exc.args[0].str())
                raise Retriable(f"metadata of {topic}: {exc.args[0].str()}") from exc
            unanswered.clear()
            if md is None or partition not in md.partitions:
                raise Retriable(f"target partition {topic}-{partition} not in the producer's metadata")

        try:
            retry_call(known, f"metadata of {topic}", deadline_s=_PARTITION_WAIT_S, max_delay_s=0.5)
        except Retriable as exc:
            if unanswered:
                raise RecoverableTaskFailure(
                    f"the target cluster did not answer for the metadata of {topic}: {unanswered[-1]}"
                ) from exc
            raise TaskFailure(
                f"target partition {topic}-{partition} does not exist (was the target topic shrunk or deleted?)"
            ) from exc
