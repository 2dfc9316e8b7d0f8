"""The mirrored positions committed into the source group (``source.group.id``), for lag tools
that look at the source: informational, never read back.

Only the partitions whose position moved since the last commit are sent: an idle task of 1,000
partitions sent all 1,000 every ``source.group.commit.interval.ms`` (10 s), the largest part of its
own idle CPU. Every ``_REFRESH_S`` all of them go again, so that a group kept only by these commits
(no member ever joins it) does not see its offsets expire after ``offsets.retention.minutes``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping

from confluent_kafka import KafkaException, TopicPartition

from mirror_sink.core.base.partitions import SourcePartition

#: How often every position is committed again, moved or not.
_REFRESH_S = 600.0


class SourceGroupCommits:
    """Commits the positions that moved into the source group, asynchronously."""

    def __init__(
        self,
        commit: Callable[[list[TopicPartition]], object],
        log: logging.Logger | logging.LoggerAdapter[logging.Logger],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._commit = commit
        self._log = log
        self._clock = clock
        #: What was last sent per partition, and when every partition was last sent.
        self._sent: dict[SourcePartition, int] = {}
        self._refreshed_at: float | None = None

    def commit(self, partitions: Iterable[SourcePartition], positions: Mapping[SourcePartition, int]) -> int:
        """Commit ``positions`` of ``partitions`` that moved since they were last sent (all of them
        every ``_REFRESH_S``); how many were sent."""
        now = self._clock()
        every = self._refreshed_at is None or now - self._refreshed_at >= _REFRESH_S
        sent = {} if every else self._sent
        moved = {tp: positions[tp] for tp in partitions if sent.get(tp) != positions[tp]}
        if every:
            self._refreshed_at = now
        if not moved:
            return 0
        try:
            self._commit([TopicPartition(tp.topic, tp.partition, offset) for tp, offset in moved.items()])
        except KafkaException as exc:
            self._log.debug("source group commit skipped: %s", exc)
            if every:
                self._refreshed_at = None  # try everything again next time
            return 0
        self._sent.update(moved)
        return len(moved)
