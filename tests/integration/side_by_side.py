"""The frame of the fault tests: a raw and a record mirror side by side under transactional loads.

Each mirror copies source topics of its own, which transactional loads keep writing (one
transaction in five aborted), while a read_committed ``LiveReader`` collects the target from the
start. A test starts the mirrors, injects its faults between ``moving`` checks (new records keep
becoming visible), then ``drain``s and ``check``s: every committed source record exactly once, in
order per partition, as the live reader saw it and as a reader after the end sees it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from devkafka.data import read_all
from devkafka.endpoints import KafkaEndpoint
from tests.integration.harness.exactness import assert_exact_mirror, shadow_caught_up
from tests.integration.harness.processes import MirrorProcess
from tests.integration.harness.records import LiveReader, TransactionalLoad, contents
from tests.integration.harness.waiting import wait_until


@dataclass
class LoadedMirror:
    """One of the side-by-side mirrors: its mode, connector name, source topics and process."""

    mode: str
    name: str
    topics: dict[str, int]  # source topic -> partitions
    process: MirrorProcess

    @property
    def group(self) -> str:
        """The shadow group."""
        return f"connect-{self.name}"

    @property
    def partitions(self) -> list[tuple[str, int]]:
        """The mirror's target partitions."""
        return [(f"source.{t}", p) for t, parts in self.topics.items() for p in range(parts)]

    @property
    def first_transactional_id(self) -> str:
        """The transactional id of its task 0."""
        return f"{self.name}-{self.process.worker_id}-0"


class SideBySide:
    """Mirrors running at once under ``loads``, and a live reader of everything they write."""

    def __init__(
        self,
        source: KafkaEndpoint,
        target: KafkaEndpoint,
        mirrors: Sequence[LoadedMirror],
        loads: Sequence[TransactionalLoad],
    ) -> None:
        self.source, self.target = source, target
        self.mirrors, self.loads = list(mirrors), list(loads)
        self.live = LiveReader(target.bootstrap_servers, [tp for m in self.mirrors for tp in m.partitions])

    def start(self) -> SideBySide:
        """Start reading the target, then writing the sources."""
        self.live.start()
        for load in self.loads:
            load.start()
        return self

    def seen(self, mirror: LoadedMirror | None = None) -> int:
        """Records the live reader has seen (of one mirror, or of all)."""
        mirrors = self.mirrors if mirror is None else [mirror]
        return sum(len(self.live.records.get(tp, [])) for m in mirrors for tp in m.partitions)

    def moving(self, what: str, progress: int, timeout: float, *, each: bool) -> None:
        """Wait until ``progress`` more records are visible on the target (of ``each`` mirror, or of
        all of them together), with every mirror alive."""
        goals = [(m, self.seen(m) + progress) for m in self.mirrors] if each else [(None, self.seen() + progress)]
        for mirror, goal in goals:
            wait_until(
                lambda mirror=mirror, goal=goal: self.seen(mirror) >= goal or self._one_died(),  # type: ignore[misc]
                timeout,
                f"{progress} more records on the target{f' of the {mirror.mode} mirror' if mirror else ''} {what}",
                detail=lambda: "\n".join(m.process.log_tail(30) for m in self.mirrors),
            )
            for m in self.mirrors:
                assert m.process.alive(), f"the {m.mode} mirror died {what}:\n{m.process.log_tail()}"

    def _one_died(self) -> bool:
        return any(not m.process.alive() for m in self.mirrors)

    def stalls(self, since: float) -> str:
        """Per mirror, seconds from ``since`` (monotonic) until its next record became visible."""
        return ", ".join(f"{m.mode} {self.live.stall(m.partitions, since):.1f} s" for m in self.mirrors)

    def drain(self, timeout: float) -> None:
        """End the loads, wait until every mirror has copied its sources to their ends and the live
        reader has seen every committed record, then a moment more for anything extra."""
        for load in self.loads:
            load.stop()
        for load in self.loads:
            load.join(120)
        for m in self.mirrors:
            for topic in m.topics:
                wait_until(
                    lambda m=m, t=topic: shadow_caught_up(self.source, t, self.target, f"source.{t}", m.group),  # type: ignore[misc]
                    timeout,
                    f"{topic} mirrored to its end ({m.mode} mode)",
                    detail=lambda m=m: m.process.log_tail(40),  # type: ignore[misc]
                )
        self.live.wait_for(sum(load.committed for load in self.loads), 60)
        time.sleep(1)  # anything extra (a duplicate) would arrive now

    def stop(self, timeout: float = 60.0) -> dict[str, int]:
        """Stop the loads, the reader and the mirrors (SIGTERM); each mirror's exit code by mode.
        Safe after a failure: it leaves no writer, reader or mirror behind for the next test."""
        for load in self.loads:
            load.stop()
        self.live.stop()
        return {m.mode: m.process.stop(timeout=timeout) for m in self.mirrors}

    def check(self, codes: dict[str, int]) -> None:
        """Every mirror stopped cleanly, and its target holds every committed source record exactly
        once, in order per partition: as the live reader saw it during the run, and as read now."""
        assert codes == dict.fromkeys(codes, 0), {m.mode: m.process.log_tail() for m in self.mirrors}
        for m in self.mirrors:
            for topic, parts in m.topics.items():
                expected = read_all(self.source.bootstrap_servers, topic)
                for p in range(parts):
                    seen = self.live.records.get((f"source.{topic}", p), [])
                    assert contents(seen) == contents(expected[p]), f"{m.mode}: live reader saw {topic}-{p} differ"
                assert_exact_mirror(self.source, topic, self.target, f"source.{topic}", m.group)
