"""``maxBytesPerTrigger``: how far into each source partition a micro-batch may plan for a byte budget.

The planner deals in offsets; the bytes between two offsets are only known once fetched, and a planning
Fetch would read the data twice. The source's leaders do know each partition's log size
(DescribeLogDirs, which needs DESCRIBE on the source cluster): divided by the offsets that log holds,
it gives the partition's average bytes per offset, and the budget is shared out in those units. The
bound is an estimate (one partition's records need not all be one size) and soft: a partition with
data always gets at least one offset, so a record larger than the whole budget still moves.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka.protocol.admin import DescribeLogDirsRequest

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.raw.wire.wire import WireClient, error_name

log = logging.getLogger(__name__)

#: v1 is every broker's baseline; from v3 a refusal is an error code rather than an empty answer.
_DESCRIBE_LOG_DIRS_VERSIONS = (1, 4)
_LEADERS_TIMEOUT_S = 30.0
_CLUSTER_AUTHORIZATION_FAILED = 31


@dataclass(frozen=True)
class LogSpan:
    """One source partition's log: its size on the leader, and the offsets it holds."""

    size_bytes: int
    start_offset: int
    end_offset: int

    @property
    def bytes_per_offset(self) -> float:
        """Average bytes per offset (markers and aborted records included); 1 for an empty log."""
        offsets = self.end_offset - self.start_offset
        return self.size_bytes / offsets if offsets > 0 and self.size_bytes > 0 else 1.0


def cap_by_bytes(
    starts: Mapping[SourcePartition, int],
    ends: Mapping[SourcePartition, int],
    bytes_per_offset: Mapping[SourcePartition, float],
    max_bytes: int,
) -> dict[SourcePartition, int]:
    """End offsets that keep the planned bytes within ``max_bytes``, shared fairly.

    Partitions needing least are served first, each to at most an equal share of what is left, so a
    nearly idle partition's unused share goes to the busy ones. Every partition with data gets at
    least one offset (progress over precision).
    """
    wanted = {tp: end - starts[tp] for tp, end in ends.items() if end > starts[tp]}
    capped = dict(ends)
    left = float(max_bytes)
    by_need = sorted(wanted, key=lambda tp: wanted[tp] * bytes_per_offset[tp])
    for served, tp in enumerate(by_need):
        share = left / (len(by_need) - served)
        take = max(1, min(wanted[tp], math.floor(share / bytes_per_offset[tp])))
        capped[tp] = starts[tp] + take
        left = max(0.0, left - take * bytes_per_offset[tp])
    return capped


def bytes_per_offset(
    wire: WireClient, watermarks: Mapping[SourcePartition, tuple[int, int]]
) -> dict[SourcePartition, float]:
    """Average bytes per offset of each partition, from its log size and (log start, end) offsets.

    A partition the leaders did not describe (its leader just moved) is given the largest average of
    the others, so the estimate errs towards planning less, never more.
    """
    sizes = log_sizes(wire, watermarks)
    known = {tp: LogSpan(sizes[tp], *watermarks[tp]).bytes_per_offset for tp in watermarks if tp in sizes}
    fallback = max(known.values(), default=1.0)
    return {tp: known.get(tp, fallback) for tp in watermarks}


def log_sizes(wire: WireClient, partitions: Iterable[SourcePartition]) -> dict[SourcePartition, int]:
    """Each partition's log size in bytes on its leader (DescribeLogDirs, one request per leader).

    A partition whose leader moved between the metadata and the request is missing from the answer.
    """
    version = wire.negotiate(DescribeLogDirsRequest, *_DESCRIBE_LOG_DIRS_VERSIONS)
    by_leader: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for tp, leader in _leaders(wire, list(partitions)).items():
        by_leader[leader][tp.topic].append(tp.partition)
    sizes: dict[SourcePartition, int] = {}
    for leader, topics in by_leader.items():
        r = DescribeLogDirsRequest
        request = r(
            version=version,
            topics=[r.DescribableLogDirTopic(topic=t, partitions=ps) for t, ps in topics.items()],
        )
        response = wire.call(leader, request, "describing the source partitions' log sizes (maxBytesPerTrigger)")
        codes = [response.error_code] if version >= 3 else []
        if not response.results:  # every broker has a log dir: before v3, an empty answer is a refusal
            codes.append(_CLUSTER_AUTHORIZATION_FAILED)
        for code in codes:
            if code:
                raise wire.denied(code, "DESCRIBE", [], implied_by="ALTER on the cluster") or TaskFailure(
                    f"DescribeLogDirs on source broker {leader} failed: {error_name(code)}"
                )
        for result in response.results:
            if result.error_code:  # an offline log dir: its partitions have led elsewhere since
                log.info("source broker %s log dir %s: %s", leader, result.log_dir, error_name(result.error_code))
                continue
            for topic in result.topics:
                for p in topic.partitions:
                    if not p.is_future_key:  # a replica being moved between disks: not the live log
                        tp = SourcePartition(topic.name, p.partition_index)
                        sizes[tp] = sizes.get(tp, 0) + p.partition_size
    return sizes


def _leaders(wire: WireClient, partitions: list[SourcePartition]) -> dict[SourcePartition, int]:
    deadline = Deadline(_LEADERS_TIMEOUT_S)
    while True:
        leaders = {tp: wire.leader(tp.topic, tp.partition) for tp in partitions}
        known = {tp: node for tp, node in leaders.items() if node is not None}
        if len(known) == len(partitions):
            return known
        if deadline.passed:
            missing = sorted(f"{tp.topic}-{tp.partition}" for tp in partitions if tp not in known)
            raise TaskFailure(f"no leader known for source partitions {', '.join(missing)}")
        wire.poll(0.1)
