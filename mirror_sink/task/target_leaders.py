"""Which target partitions of a task's assignment their leaders serve yet: the rest are held back.

A target partition exists before its leader serves it. A transactional Produce to it in that
window is refused (NOT_LEADER_OR_FOLLOWER), its cycle aborted, and the abort's markers wait on the
same partitions. The connector used to wait, after creating topics, until every new partition was
served; at 10,000 partitions that was its 30 s limit, spent before any task began, while the broker
brought the logs up in its own order. Now it waits at most 5 s (``TopicProvisioner``), the tasks
start, and each source partition is copied as soon as its own target partition is served: the
others are held (``DataPath.hold_at`` at their committed offsets, so nothing of them is taken)
until a check says so.

A check is a Metadata request for the waiting partitions' topics, then a ListOffsets of those it
shows led (``mirror_sink.topics.leader_wait`` says why both). Nothing here blocks the task: the
answers are futures, looked at each time the task's loop goes round. A partition once served is
not asked about again in this run. After ``timeout_s`` without an answer the rest are released
anyway, said once, as the connector's wait did.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

from confluent_kafka import TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.runtime.logs import Log
from mirror_sink.topics.leader_wait import leader_ids, split_by_leader

#: Pause between two checks of partitions still waiting.
_RECHECK_S = 0.25
#: How long one check's requests may take before they count as unanswered.
_REQUEST_TIMEOUT_S = 3.0


class TargetLeaders:
    """The assigned target partitions not yet known to be served, checked without blocking.

    ``open_admin`` makes the target admin client the checks use; it is made when partitions wait
    and dropped when none do, so a task whose partitions are all served holds no extra client."""

    def __init__(
        self,
        open_admin: Callable[[], AdminClient],
        timeout_s: float,
        log: Log,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._open_admin = open_admin
        self._timeout_s = timeout_s
        self.log = log
        self._clock = clock
        self._admin: AdminClient | None = None
        self._served: set[TargetPartition] = set()
        self._waiting: set[TargetPartition] = set()
        self._since = 0.0
        self._next_check = 0.0
        self._described: dict[str, Future[Any]] | None = None
        self._listed: dict[TopicPartition, Future[Any]] | None = None
        self._last_error = ""

    @property
    def waiting(self) -> frozenset[TargetPartition]:
        """The assigned target partitions held back: not known to be served yet."""
        return frozenset(self._waiting)

    def assign(self, targets: Iterable[TargetPartition]) -> None:
        """A new assignment: its partitions not yet seen served wait for a check (one starts now)."""
        self._waiting = set(targets) - self._served
        self._since = self._clock()
        self._next_check = self._since
        self._described = self._listed = None  # answers about the old assignment's partitions
        if not self._waiting:
            self._admin = None

    def poll(self) -> bool:
        """Move the check on; True when partitions stopped waiting since the last call."""
        if not self._waiting:
            return False
        now = self._clock()
        if now - self._since > self._timeout_s:
            self._give_up()
            return True
        if self._listed is not None:
            return self._take_listed(now)
        if self._described is not None:
            self._take_described(now)
            return False
        if now >= self._next_check:
            if self._admin is None:
                self._admin = self._open_admin()
            topics = sorted({tp.topic for tp in self._waiting})
            self._described = self._admin.describe_topics(TopicCollection(topics), request_timeout=_REQUEST_TIMEOUT_S)
        return False

    def _take_described(self, now: float) -> None:
        """The Metadata answer is in: ask the partitions it shows led for their offsets."""
        assert self._described is not None and self._admin is not None
        if not all(f.done() for f in self._described.values()):
            return
        leaders: dict[str, dict[int, int]] = {}
        for topic, future in self._described.items():
            try:
                leaders[topic] = leader_ids(future.result(0))
            except Exception as exc:  # the topic is not known yet to the broker that answered
                self._last_error = f"{topic}: {str(exc) or repr(exc)}"
        self._described = None
        led, _ = split_by_leader((TopicPartition(tp.topic, tp.partition) for tp in self._waiting), leaders)
        if not led:
            self._next_check = now + _RECHECK_S
            return
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        self._listed = self._admin.list_offsets({tp: latest for tp in led}, request_timeout=_REQUEST_TIMEOUT_S)

    def _take_listed(self, now: float) -> bool:
        """The ListOffsets answers are in: each partition answered is served."""
        assert self._listed is not None
        if not all(f.done() for f in self._listed.values()):
            return False
        served = set()
        for tp, future in self._listed.items():
            try:
                future.result(0)
                served.add(TargetPartition(tp.topic, tp.partition))
            except Exception as exc:  # not served yet
                self._last_error = str(exc) or repr(exc)
        self._listed = None
        self._next_check = now + _RECHECK_S
        served &= self._waiting
        self._served |= served
        self._waiting -= served
        if not self._waiting:
            self._admin = None
            if now - self._since > 1.0:  # a wait worth a line: new partitions, a busy target
                self.log.info("every assigned target partition is served, after %.1f s", now - self._since)
        return bool(served)

    def _give_up(self) -> None:
        """Past the limit: the rest are copied anyway (a refused Produce then aborts and retries)."""
        first = min(self._waiting)
        self.log.warning(
            "%d assigned target partitions (e.g. %s) have no serving leader after %.0f s (last answer: %s); "
            "mirroring them anyway",
            len(self._waiting),
            first,
            self._timeout_s,
            self._last_error or "none",
        )
        self._waiting.clear()
        self._described = self._listed = None
        self._admin = None
