"""One partition's part of a Fetch response, into that partition's queue (the Java client's
``FetchCollector`` and ``CompletedFetch``).

Partition errors are answered here (an offset the source no longer has, a topic deleted or created
again, a log that diverged from what was mirrored (KIP-320), a retriable error's backoff); data is
checked (CRC), filtered (control batches and aborted transactions dropped) and queued as ``Fetched``
items in offset order. Batches stay in the response's frame, as writable views, and the frame is
charged to the memory budget whole until its last view is gone (any one view keeps all of it in memory).
"""

from __future__ import annotations

import logging
import struct
import time
import weakref
from collections.abc import Iterable
from typing import Any

from mirror_sink.core.base.error_codes import RETRIABLE, KafkaErrorCode
from mirror_sink.core.base.errors import SourceOffsetOutOfRange, SourceTruncated, TaskFailure
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.base.topic_ids import as_text
from mirror_sink.raw.fetch.fetch_buffer import Fetched, PartitionState
from mirror_sink.raw.fetch.read_committed import ReadCommittedFilter, Verdict
from mirror_sink.raw.wire.batches import (
    HEADER_SIZE,
    CorruptBatch,
    control_type,
    parse_header,
    split_batches,
    verify_crc,
)
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.wire import WireClient, error_name

#: A partition error that a later Fetch may not see: UNKNOWN_SERVER_ERROR too, as the Java consumer does.
_FETCH_AGAIN = RETRIABLE | {KafkaErrorCode.UNKNOWN_SERVER_ERROR}
#: After a partition error it is left out of Fetches this long (the others go on meanwhile).
_RETRY_BACKOFF_S = 0.2
#: A v2 batch's partitionLeaderEpoch: int32 after baseOffset and batchLength.
_LEADER_EPOCH = struct.Struct(">i")
_LEADER_EPOCH_AT = 12

# The fetcher's logger: its lines keep the logger name they had before the fetcher was split up.
log = logging.getLogger("mirror_sink.raw.fetch.fetcher")


class FetchCollector:
    """Queues what a Fetch response brings for one partition, or notes its error."""

    def __init__(self, wire: WireClient, budget: MemoryBudget, gone: set[SourcePartition]) -> None:
        self.wire = wire
        self.budget = budget
        #: The fetcher's partitions whose position the source no longer has (added to here).
        self._gone = gone

    def take(self, tp: SourcePartition, part: PartitionState, pd: Any) -> Any:
        """Queue one partition's data; the response's frame when views of it were queued, else None."""
        where = f"source partition {tp}"
        if pd.error_code == KafkaErrorCode.OFFSET_OUT_OF_RANGE:
            # Not raised here: the fetch thread goes on for the other partitions, and this one waits
            # for the task's decision (``check_gone``, then a seek past the gap or a failure).
            part.gone = SourceOffsetOutOfRange(tp.topic, tp.partition, part.position, "OFFSET_OUT_OF_RANGE")
            self._gone.add(tp)
            return None
        if pd.error_code in (KafkaErrorCode.UNKNOWN_TOPIC_ID, KafkaErrorCode.INCONSISTENT_TOPIC_ID):
            return self._topic_id_unknown(tp, part, pd.error_code)
        diverging = getattr(pd, "diverging_epoch", None)
        if diverging is not None and diverging.epoch >= 0 and 0 <= diverging.end_offset < part.position:
            part.gone = SourceTruncated(
                f"source partition {tp} diverged from what was mirrored (an unclean leader election truncated "
                f"its log?): the mirror read up to offset {part.position} in leader epoch {part.last_epoch}, but "
                f"the source's log of that epoch ends at offset {diverging.end_offset}. The target holds offsets "
                f"{diverging.end_offset}..{part.position - 1} that the source no longer has; the mirror stops "
                "rather than mirror over them (docs/troubleshooting.md)"
            )
            self._gone.add(tp)
            return None
        if pd.error_code in _FETCH_AGAIN:
            log.info("%s: %s; refreshing metadata and retrying", where, error_name(pd.error_code))
            self.wire.refresh_metadata()
            part.retry_at = time.monotonic() + _RETRY_BACKOFF_S
            return None
        if pd.error_code:
            topic_refused = pd.error_code == KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED
            denied = self.wire.denied(pd.error_code, "READ", [tp.topic]) if topic_refused else None
            raise denied or TaskFailure(f"fetching {where}: {error_name(pd.error_code)}")
        part.stable_end = pd.last_stable_offset
        records = pd.records
        if not records:
            return None
        pd.records = None
        in_frame = isinstance(records, memoryview) and not records.readonly
        # A view of the response's frame is rewritten in place (mirror_sink.raw.wire.receive); anything
        # else (a small response, decoded from a copy) gets the one writable copy of its own.
        buf = records if in_frame else memoryview(bytearray(records))
        try:
            last, forwarded = self._queue_batches(part, buf, pd.aborted_transactions or (), charged=not in_frame)
        except CorruptBatch as exc:
            raise TaskFailure(f"{where}: corrupt batch, not mirrored: {exc}") from exc
        if in_frame:
            return records.obj if forwarded else None
        if last is not None:
            # The buffer lives as long as any view of it: what nothing forwards is charged to the last view.
            last.extra = len(buf) - forwarded
            part.queued_bytes += last.extra
            part.queued_charge += last.extra
            self.budget.take(last.extra)
        return None

    def _topic_id_unknown(self, tp: SourcePartition, part: PartitionState, code: int) -> None:
        """The topic the mirrored offsets belong to is gone: created again under its name (the task
        fails naming both ids), or deleted (asked again until the connector drops the topic)."""
        now = self.wire.topic_id(tp.topic)
        if part.topic_id is not None and now is not None and now != part.topic_id:
            part.gone = SourceOffsetOutOfRange(
                tp.topic,
                tp.partition,
                part.position,
                f"the topic was deleted and created again: it has id {as_text(now)} now, the mirrored offsets "
                f"belong to id {as_text(part.topic_id)}",
            )
            self._gone.add(tp)
            return
        log.info("source partition %s: %s; refreshing metadata and retrying", tp, error_name(code))
        self.wire.refresh_metadata()
        part.retry_at = time.monotonic() + _RETRY_BACKOFF_S

    def charge_frame(self, frame: Any) -> None:
        """Charge the whole of ``frame`` until it is freed: any one view keeps all of it in memory."""
        self.budget.take(len(frame))
        weakref.finalize(frame, self.budget.give_back, len(frame))

    def _queue_batches(
        self, part: PartitionState, buf: memoryview, aborted: Iterable[Any], *, charged: bool
    ) -> tuple[Fetched | None, int]:
        """Queue the batches of one response: the last item holding a view of it, and the bytes of all such views.

        ``charged``: each view is charged to the budget (False when the buffer is charged whole)."""
        committed = ReadCommittedFilter((a.producer_id, a.first_offset) for a in aborted)
        last = None
        forwarded = 0
        for base, magic, view in split_batches(buf):
            if magic < 2:
                # v0/v1: the wrapper's offset is its last record's; the fallback re-encodes it.
                if base >= part.position:
                    last = self._queue(part, Fetched(view, None, part.position, base + 1, charged=charged))
                    forwarded += len(view)
                continue
            header = parse_header(view)
            epoch = part.last_epoch = _LEADER_EPOCH.unpack_from(view, _LEADER_EPOCH_AT)[0]
            control = control_type(view) if header.is_control and len(view) > HEADER_SIZE else None
            # Every batch goes through the filter, those before the position too: an abort marker
            # there still ends its producer's aborted transaction for the batches after it.
            verdict = committed.verdict(header, control)
            if header.next_offset <= part.position:
                continue
            verify_crc(view, header)
            if verdict is not Verdict.FORWARD or header.record_count == 0:
                self._queue(part, Fetched(None, header, part.position, header.next_offset, leader_epoch=epoch))
            else:
                item = Fetched(view, header, part.position, header.next_offset, charged=charged, leader_epoch=epoch)
                last = self._queue(part, item)
                forwarded += len(view)
        return last, forwarded

    def _queue(self, part: PartitionState, item: Fetched) -> Fetched:
        part.queue.append(item)
        part.queued_bytes += item.size
        part.queued_charge += item.charge
        self.budget.take(item.charge)
        part.position = item.next_offset
        return item
