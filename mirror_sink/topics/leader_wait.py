"""The wait for new target partitions' leaders, after CreateTopics or CreatePartitions returns.

A partition exists before its leader serves it: the topic provisioner waits here until each new
partition answers a ListOffsets, so the first transaction of a task is not refused on it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec, TopicDescription

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.runtime.logs import Log

#: How long one "is the new partition served?" check may take before it is asked again.
_LEADER_ATTEMPT_S = 3.0
#: How often a long wait for new partitions' leaders says so.
_LEADER_PROGRESS_S = 5.0


def leader_ids(description: TopicDescription) -> dict[int, int]:
    """Partition -> leader broker id of a described topic; -1 for a partition without a leader."""
    return {p.id: p.leader.id if p.leader is not None else -1 for p in description.partitions}


def split_by_leader(
    waiting: Iterable[TopicPartition], leaders: Mapping[str, Mapping[int, int]]
) -> tuple[list[TopicPartition], list[TopicPartition]]:
    """``waiting`` split into the partitions ``leaders`` (one Metadata answer) shows led, which are worth
    a ListOffsets, and the rest (leader -1, partition or topic not in the answer): ask again later.

    Only led partitions go into a ListOffsets: librdkafka fails the whole request ("No leaders found")
    when none of its partitions has a leader, and each leaderless one with LEADER_NOT_AVAILABLE.
    """
    led: list[TopicPartition] = []
    leaderless: list[TopicPartition] = []
    for tp in waiting:
        (led if leaders.get(tp.topic, {}).get(tp.partition, -1) >= 0 else leaderless).append(tp)
    return led, leaderless


class LeaderWait:
    """Waits, up to ``timeout_s``, until the leader of every new partition serves it."""

    def __init__(self, target_admin: AdminClient, timeout_s: float, log: Log, *, tasks_hold_back: bool = False) -> None:
        self._admin = target_admin
        self._timeout_s = timeout_s
        self._log = log  # the provisioner's logger: its lines keep their name
        #: Whether the tasks hold back what is still not served at the limit (then it is no warning).
        self._tasks_hold_back = tasks_hold_back

    def wait(self, partitions: dict[str, range]) -> None:
        """Wait until the leader of every new partition serves it (ListOffsets answers).

        CreateTopics returns before the brokers have taken up the new partitions' leadership; a
        transactional Produce in that window is refused (NOT_LEADER_OR_FOLLOWER), its cycle aborted,
        and the abort's markers wait on the same partitions: seconds of stall (up to 30 s seen with
        200 partitions) on every new topic. A few milliseconds of waiting here spare all of it.

        Each attempt first describes the topics (a Metadata request), then sends ListOffsets only for
        the partitions that answer shows led. librdkafka's ListOffsets finds leaders in its own
        metadata cache, re-queries only topics missing from it, and takes a cached leader of -1 as a
        final answer ("No leaders found"), so a client whose first answer for a new topic came before
        its leader was known kept failing until that entry aged out (metadata.max.age.ms; 20-30 s
        were lost on fresh clusters and in CI). Any Metadata response refreshes that cache for its
        topics, so the one target admin client serves every attempt (no fresh client per attempt).
        The Metadata answer alone is not enough: the broker that gives it may list a leader before
        that leader serves the partition; ListOffsets answering proves it does.
        """
        waiting = [TopicPartition(topic, p) for topic, ps in partitions.items() for p in ps]
        start = time.monotonic()
        deadline = Deadline(self._timeout_s)
        next_progress = start + _LEADER_PROGRESS_S
        last_error = ""
        while waiting:
            # Short attempts: one ListOffsets was seen to wait out its whole timeout (30 s) on
            # partitions the broker had led since 50 ms after the create, so each is asked again.
            left = min(deadline.left(1.0), _LEADER_ATTEMPT_S)
            leaders, errors = self._describe_leaders(sorted({tp.topic for tp in waiting}), left)
            led, still = split_by_leader(waiting, leaders)
            if errors:
                last_error = next(iter(errors.values()))
            elif still:
                last_error = f"no leader in the metadata of {still[0].topic}-{still[0].partition}"
            if led:
                latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
                futures = self._admin.list_offsets({tp: latest for tp in led}, request_timeout=left)
                for tp, future in futures.items():
                    try:
                        future.result(left + 5)
                    except (KafkaException, TimeoutError) as exc:  # not served yet (or not answered in time)
                        still.append(tp)
                        last_error = str(exc) or repr(exc)
            if not still:
                return
            now = time.monotonic()
            if deadline.passed:
                self._log.log(
                    logging.INFO if self._tasks_hold_back else logging.WARNING,
                    "%d new target partitions (e.g. %s-%d) have no serving leader after %.0f s (last answer: %s); %s",
                    len(still),
                    still[0].topic,
                    still[0].partition,
                    self._timeout_s,
                    last_error,
                    "the tasks start, each holding back its partitions until their own leaders serve them"
                    if self._tasks_hold_back
                    else "mirroring anyway",
                )
                return
            if now > next_progress:
                next_progress = now + _LEADER_PROGRESS_S
                self._log.info(
                    "waiting %.0f s so far for the leaders of %d new target partitions (e.g. %s-%d; last answer: %s)",
                    now - start,
                    len(still),
                    still[0].topic,
                    still[0].partition,
                    last_error,
                )
            waiting = still
            time.sleep(0.05)

    def _describe_leaders(self, topics: list[str], timeout: float) -> tuple[dict[str, dict[int, int]], dict[str, str]]:
        """Each topic's partition leaders as one Metadata answer gives them (-1: none), and the topics
        it could not describe with the reason. The request also refreshes librdkafka's metadata cache
        for these topics, where the ListOffsets that follows looks its leaders up."""
        leaders: dict[str, dict[int, int]] = {}
        errors: dict[str, str] = {}
        futures = self._admin.describe_topics(TopicCollection(topics), request_timeout=timeout)
        for topic, future in futures.items():
            try:
                leaders[topic] = leader_ids(future.result(timeout + 5))
            except (KafkaException, TimeoutError) as exc:  # e.g. not known yet to the broker that answered
                errors[topic] = f"{topic}: {str(exc) or repr(exc)}"
        return leaders, errors
