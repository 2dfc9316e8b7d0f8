"""Raw mode's pure logic: v2 headers, CRC, read_committed filtering, the per-batch fallback."""

from __future__ import annotations

import struct
from functools import partial
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.future import Future
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import SourcePartition
from mirror_sink.core.formats.group_metadata import parse_group_metadata
from mirror_sink.raw.fetch.fetcher import RawFetcher
from mirror_sink.raw.fetch.read_committed import ReadCommittedFilter, Verdict
from mirror_sink.raw.produce.reencode import reencode
from mirror_sink.raw.wire.batches import (
    CONTROL,
    HEADER,
    HEADER_SIZE,
    OLD_FORMAT,
    TIMESTAMP_LOG_APPEND,
    TRANSACTIONAL,
    BatchHeader,
    CorruptBatch,
    ReencodeReason,
    control_type,
    forward_problem,
    parse_header,
    rewrite_in_place,
    split_batches,
    verify_crc,
)
from mirror_sink.raw.wire.capabilities import unsupported
from mirror_sink.raw.wire.memory_budget import MemoryBudget

Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]

records_st = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=40)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=2),
        st.integers(min_value=0, max_value=2**41),
    ),
    min_size=1,
    max_size=30,
)
codec_st = st.sampled_from([0, 1, 2, 3, 4])


def build(
    records: list[Record],
    codec: int = 0,
    *,
    offsets: list[int] | None = None,
    base_offset: int = 0,
    attributes_extra: int = 0,
    producer: tuple[int, int, int] = (-1, -1, -1),
) -> bytearray:
    """A v2 batch as a source broker would return it (base offset and extra attribute bits set)."""
    builder = DefaultRecordBatchBuilder(2, codec, False, *producer, batch_size=10**7)
    for delta, (key, value, headers, ts) in zip(offsets or range(len(records)), records, strict=True):
        builder.append(delta, ts, key, value, headers)
    batch = bytearray(builder.build())
    struct.pack_into(">q", batch, 0, base_offset)
    if attributes_extra:
        (attrs,) = struct.unpack_from(">h", batch, 21)
        struct.pack_into(">h", batch, 21, attrs | attributes_extra)
    _recrc(batch)
    return batch


def _recrc(batch: bytearray) -> None:
    import crc32c

    struct.pack_into(">I", batch, 17, crc32c.crc32c(memoryview(batch)[21:]))


def decoded(batch: bytes | bytearray) -> list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    """(offset, key, value, headers) as a consumer sees them."""
    return [(r.offset, r.key, r.value, list(r.headers)) for r in DefaultRecordBatch(bytes(batch))]


@settings(max_examples=60, deadline=None)
@given(
    records_st,
    codec_st,
    st.tuples(st.integers(0, 2**62), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 1)),
    st.booleans(),
)
def test_rewrite_changes_only_the_header_and_keeps_a_valid_crc(
    records: list[Record], codec: int, producer: tuple[int, int, int], transactional: bool
) -> None:
    pid, epoch, seq = producer
    source = build(records, codec, base_offset=12345, attributes_extra=TIMESTAMP_LOG_APPEND)
    original = bytes(source)
    view = memoryview(source)
    source_codec = parse_header(view).codec  # the builder leaves data it cannot shrink uncompressed
    verify_crc(view, parse_header(view))
    rewrite_in_place(view, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional)
    header = parse_header(view)
    verify_crc(view, header)  # the new CRC matches
    assert source[HEADER_SIZE:] == original[HEADER_SIZE:], "the payload is untouched"
    fields = HEADER.unpack_from(source)
    assert fields[0] == 0 and fields[2] == -1  # base offset and leader epoch for the broker to assign
    assert (header.producer_id, header.producer_epoch, fields[11]) == (pid, epoch, seq)
    assert header.codec == source_codec and header.is_transactional is transactional
    assert not header.attributes & (CONTROL | TIMESTAMP_LOG_APPEND)
    orig_fields = HEADER.unpack_from(original)
    assert fields[6:9] == orig_fields[6:9], "lastOffsetDelta and timestamps kept"
    assert fields[12] == orig_fields[12], "record count kept"
    assert DefaultRecordBatch(bytes(source)).validate_crc()
    assert [r[1:] for r in decoded(source)] == [(k, v, h) for k, v, h, _ in records]


@settings(max_examples=40, deadline=None)
@given(records_st, codec_st, st.data())
def test_a_corrupt_batch_is_detected(records: list[Record], codec: int, data: st.DataObject) -> None:
    batch = build(records, codec)
    pos = data.draw(st.integers(21, len(batch) - 1))
    batch[pos] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptBatch, match="CRC"):
        verify_crc(memoryview(batch), parse_header(memoryview(batch)))


@given(st.lists(records_st, min_size=1, max_size=5), st.integers(0, 60))
def test_split_batches_yields_whole_batches_and_drops_a_partial_tail(batches: list[list[Record]], cut: int) -> None:
    built = [build(r, base_offset=i * 100) for i, r in enumerate(batches)]
    buf = b"".join(built)
    found = list(split_batches(memoryview(buf)))
    assert [bytes(v) for _, _, v in found] == [bytes(b) for b in built]
    truncated = buf[: len(buf) - 1 - min(cut, len(built[-1]) - 2)]
    assert len(list(split_batches(memoryview(truncated)))) == len(built) - 1


def _header(**kw: int) -> BatchHeader:
    fields = {
        "base_offset": 100,
        "length": 500,
        "magic": 2,
        "crc": 0,
        "attributes": 0,
        "last_offset_delta": 9,
        "producer_id": 1,
        "producer_epoch": 0,
        "record_count": 10,
    }
    fields.update(kw)
    return BatchHeader(**fields)


def test_forward_problem_names_every_broker_rule() -> None:
    assert forward_problem(_header(), start_offset=100, max_batch_bytes=1000) is None
    assert "offset gaps" in str(forward_problem(_header(record_count=7), 100, 1000))
    assert "before the start offset" in str(forward_problem(_header(), 104, 1000))
    assert "max.message.bytes 400" in str(forward_problem(_header(), 100, 400))
    assert "message format v1" in str(forward_problem(_header(magic=1), 100, 1000))


def test_forward_problem_gives_its_progress_log_label_with_the_detail() -> None:
    cases = [
        (
            _header(record_count=7),
            100,
            1000,
            ReencodeReason.COMPACTED,
            "offset gaps (compacted: 7 records over 10 offsets)",
        ),
        (_header(), 104, 1000, ReencodeReason.MID_BATCH_START, "starts at 100, before the start offset 104"),
        (_header(), 100, 400, ReencodeReason.TOO_LARGE, "500 bytes, over the target's max.message.bytes 400"),
        (_header(magic=1), 100, 1000, ReencodeReason.OLD_FORMAT, "message format v1"),
    ]
    for header, start, limit, reason, detail in cases:
        problem = forward_problem(header, start, limit)
        assert problem is not None and (problem.reason, problem.detail) == (reason, detail)
    crossing = forward_problem(_header(), 100, 1000, end_offset=105)
    assert crossing is not None and crossing.reason is ReencodeReason.PAST_RANGE_END
    assert crossing.detail == "ends at 109, past the range end 105"
    assert forward_problem(_header(), 100, 1000, end_offset=110) is None, "a batch ending just before the end passes"
    labels = [f"{reason}" for reason in ReencodeReason]
    assert labels == ["mid-batch start", "compacted", "too large", "old format", "past the range end"]
    assert (OLD_FORMAT.reason, str(OLD_FORMAT)) == (ReencodeReason.OLD_FORMAT, "message format v0/v1")


@settings(max_examples=40, deadline=None)
@given(records_st, codec_st, st.data())
def test_reencode_keeps_the_records_between_start_and_end_and_closes_offset_gaps(
    records: list[Record], codec: int, data: st.DataObject
) -> None:
    gaps = data.draw(st.lists(st.integers(1, 5), min_size=len(records), max_size=len(records)))
    offsets = [sum(gaps[: i + 1]) - gaps[0] for i in range(len(records))]
    batch = build(records, codec, offsets=offsets, base_offset=1000)
    start_index = data.draw(st.integers(0, len(records) - 1))
    start = 1000 + offsets[start_index]
    header = parse_header(memoryview(batch))
    if len(records) > 1 and offsets[-1] != len(records) - 1:
        assert "offset gaps" in str(forward_problem(header, 1000, 10**7))
    end_index = data.draw(st.integers(start_index + 1, len(records)))
    end = 1000 + offsets[end_index] if end_index < len(records) else None  # a range end, or none
    rebuilt = reencode(memoryview(batch), codec, start, 10**7, "t-0", end_offset=end)
    assert len(rebuilt) == 1
    out, source_offsets = rebuilt[0]
    assert source_offsets == [1000 + o for o in offsets[start_index:end_index]]
    out_header = parse_header(memoryview(out))
    assert out_header.codec in (codec, 0)  # kept, unless compressing would not shrink the batch
    assert forward_problem(out_header, 0, 10**7) is None, "the result passes every broker rule"
    expected = [(k, v, h) for k, v, h, _ in records[start_index:end_index]]
    assert [r[1:] for r in decoded(out)] == expected
    assert [r.timestamp for r in DefaultRecordBatch(bytes(out))] == [ts for *_, ts in records[start_index:end_index]]


def test_reencode_splits_a_batch_over_the_target_limit_and_fails_on_a_single_huge_record() -> None:
    records: list[Record] = [(b"k%d" % i, bytes([i]) * 700, [], 1_700_000_000_000 + i) for i in range(20)]
    batch = build(records, 0)
    assert "max.message.bytes 3000" in str(forward_problem(parse_header(memoryview(batch)), 0, 3000))
    parts = [p.batch for p in reencode(memoryview(batch), 0, 0, 3000, "t-0")]
    assert len(parts) > 1 and all(len(p) <= 3000 for p in parts)
    assert [r[1:] for p in parts for r in decoded(p)] == [(k, v, h) for k, v, h, _ in records]
    with pytest.raises(TaskFailure, match=r"record too large for the target: a record of t-0"):
        reencode(memoryview(batch), 0, 0, 500, "t-0")


def _marker_batch(pid: int, offset: int, marker: int = 0) -> bytearray:
    """A transaction marker as the broker writes it: ABORT (0) or COMMIT (1) for ``pid``."""
    return build(
        [(struct.pack(">hh", 0, marker), b"\0" * 6, [], 1)],
        base_offset=offset,
        attributes_extra=CONTROL | TRANSACTIONAL,
        producer=(pid, 0, -1),
    )


def _control(pid: int, offset: int, marker: int) -> BatchHeader:
    batch = _marker_batch(pid, offset, marker)
    assert control_type(memoryview(batch)) == marker
    return parse_header(memoryview(batch))


def test_read_committed_skips_aborted_transactions_until_their_marker() -> None:
    def data(pid: int, offset: int, transactional: bool = True) -> BatchHeader:
        return _header(base_offset=offset, last_offset_delta=0, record_count=1, producer_id=pid,
                       attributes=TRANSACTIONAL if transactional else 0)  # fmt: skip

    filt = ReadCommittedFilter([(7, 1), (8, 10)])
    steps = [
        (data(7, 0), None, Verdict.FORWARD),  # before pid 7's aborted transaction starts
        (data(7, 1), None, Verdict.SKIP_ABORTED),
        (data(9, 2, transactional=False), None, Verdict.FORWARD),
        (data(8, 3), None, Verdict.FORWARD),  # pid 8's aborted transaction starts later
        (_control(7, 4, 0), 0, Verdict.SKIP_CONTROL),  # pid 7's ABORT marker ends it
        (data(7, 5), None, Verdict.FORWARD),
        (_control(8, 9, 1), 1, Verdict.SKIP_CONTROL),  # a COMMIT marker is dropped too
        (data(8, 10), None, Verdict.SKIP_ABORTED),
    ]
    for header, marker, expected in steps:
        assert filt.verdict(header, marker) is expected, header


def test_group_metadata_from_librdkafka_is_parsed() -> None:
    dynamic = b"CGMDv2:" + struct.pack("=i", 42) + b"connect-m\0rdkafka-abc\0\x01"
    assert parse_group_metadata(dynamic) == (42, "rdkafka-abc", None)
    static = b"CGMDv2:" + struct.pack("=i", -1) + b"g\0\0\0worker-1\0"
    assert parse_group_metadata(static) == (-1, "", "worker-1")
    with pytest.raises(TaskFailure, match="unknown consumer group metadata"):
        parse_group_metadata(b"CGMDv9:....")


def test_memory_budget_counts_peak_and_overdraft() -> None:
    budget = MemoryBudget(100)
    budget.take(80)
    assert budget.available == 20
    budget.take(50)  # one oversized batch may overdraw: the next fetch then waits
    assert budget.available == 0 and budget.peak == 130
    budget.give_back(130)
    assert budget.available == 100


def test_client_settings_the_raw_client_cannot_honour_are_named() -> None:
    ok = {"bootstrap.servers": "x", "security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512"}
    assert unsupported(ok) == []
    assert unsupported({**ok, "sasl.mechanism": "OAUTHBEARER", "ssl.keystore.location": "/k"}) == [
        "sasl.mechanism=OAUTHBEARER (raw mode authenticates with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 only)",
        "ssl.keystore.location (a PKCS#12 keystore: raw mode reads PEM files (ssl.certificate.location, "
        "ssl.key.location))",
    ]
    # The key names a secret's setting, never its value.
    assert unsupported({**ok, "ssl.keystore.password": "hunter2"})[0].startswith("ssl.keystore.password (")
    assert "hunter2" not in unsupported({**ok, "ssl.keystore.password": "hunter2"})[0]


class _Wire:
    """Stands in for the network client: the fetcher only asks it which versions it may use (the
    lowest: these tests read responses by topic name; raw/fetch/test_fetcher.py covers asking by topic id)."""

    def negotiate(self, request_class: object, lowest: int, highest: int) -> int:
        return lowest

    def add_metadata_listener(self, listener: object) -> None:
        pass


def _fetch_response(
    records: bytes, aborted: list[tuple[int, int]] | None = None, last_stable_offset: int = -1
) -> SimpleNamespace:
    return SimpleNamespace(
        error_code=0,
        last_stable_offset=last_stable_offset,
        records=records,
        aborted_transactions=[SimpleNamespace(producer_id=p, first_offset=o) for p, o in aborted or []],
    )


def _fetcher(start: int = 0) -> RawFetcher:
    fetcher = RawFetcher(
        _Wire(),  # type: ignore[arg-type]
        MemoryBudget(1 << 20),
        fetch_max_bytes=1 << 20,
        partition_max_bytes=1 << 20,
        max_wait_ms=10,
    )
    fetcher.assign({SourcePartition("orders", 3): start})
    return fetcher


def test_a_corrupt_source_batch_is_never_queued_and_fails_the_task_naming_it() -> None:
    good = build([(b"k", b"v" * 50, [], 1)] * 3, 3, base_offset=0)
    bad = build([(b"k", b"v" * 50, [], 1)] * 3, 3, base_offset=3)
    bad[-1] ^= 0x01
    fetcher = _fetcher()
    part = fetcher._parts[SourcePartition("orders", 3)]
    with pytest.raises(TaskFailure, match=r"source partition orders-3: corrupt batch, not mirrored: batch at offset 3"):
        fetcher._collector.take(SourcePartition("orders", 3), part, _fetch_response(bytes(good + bad)))
    queued = list(iter(partial(fetcher.pop, SourcePartition("orders", 3)), None))
    assert [item.next_offset for item in queued] == [3], "only the batch before the corrupt one was queued"


def test_fetched_batches_are_queued_in_order_with_aborted_and_control_ranges_as_skips() -> None:
    committed = build([(b"a", b"1", [], 1)] * 2, 0, base_offset=0, attributes_extra=TRANSACTIONAL, producer=(5, 0, 0))
    aborted = build([(b"b", b"2", [], 1)] * 2, 0, base_offset=2, attributes_extra=TRANSACTIONAL, producer=(6, 0, 0))
    marker = _marker_batch(6, 4)
    fetcher = _fetcher(start=1)  # starts inside the first batch
    part = fetcher._parts[SourcePartition("orders", 3)]
    fetcher._collector.take(
        SourcePartition("orders", 3), part, _fetch_response(bytes(committed + aborted + marker), [(6, 2)])
    )
    items = list(iter(partial(fetcher.pop, SourcePartition("orders", 3)), None))
    assert [(i.batch is not None, i.start, i.next_offset) for i in items] == [
        (True, 1, 2),
        (False, 2, 4),
        (False, 4, 5),
    ]
    assert part.position == 5


def test_an_abort_marker_before_the_start_still_ends_its_transaction() -> None:
    aborted = build([(b"b", b"2", [], 1)] * 2, 0, base_offset=2, attributes_extra=TRANSACTIONAL, producer=(6, 0, 0))
    marker = _marker_batch(6, 4)
    later = build([(b"c", b"3", [], 1)], 0, base_offset=5, attributes_extra=TRANSACTIONAL, producer=(6, 0, 2))
    fetcher = _fetcher(start=5)  # the fetch returns the partition from offset 2, as brokers do
    fetcher._collector.take(
        SourcePartition("orders", 3),
        fetcher._parts[SourcePartition("orders", 3)],
        _fetch_response(bytes(aborted + marker + later), [(6, 2)]),
    )
    items = list(iter(partial(fetcher.pop, SourcePartition("orders", 3)), None))
    assert [(i.batch is not None, i.next_offset) for i in items] == [(True, 6)], "the committed batch is kept"


def test_the_fetcher_has_caught_up_once_its_queue_is_empty_at_the_source_s_last_stable_offset() -> None:
    tp = SourcePartition("orders", 3)
    fetcher = _fetcher(start=0)
    part = fetcher._parts[tp]
    assert not fetcher.caught_up(), "never fetched: nothing is known about the source yet"
    two = build([(b"k", b"v", [], 1)] * 2, 0, base_offset=0)
    # Four records were stable when the broker answered; the response held two (its size limit).
    fetcher._collector.take(tp, part, _fetch_response(bytes(two), last_stable_offset=4))
    assert fetcher.pop(tp) is not None and not fetcher.caught_up(), "two more records wait on the source"
    more = build([(b"k", b"v", [], 1)] * 2, 0, base_offset=2)
    fetcher._collector.take(tp, part, _fetch_response(bytes(more), last_stable_offset=4))
    assert not fetcher.caught_up(), "the last two are fetched but still queued"
    assert fetcher.pop(tp) is not None and fetcher.caught_up(), "all taken, and the source had no more"


class _PipelinedWire(_Wire):
    """Takes Fetch requests and hands back their futures, for the test to complete."""

    def __init__(self) -> None:
        self.sent: list[Future] = []
        self.requests: list[Any] = []

    def leader(self, topic: str, partition: int) -> int:
        return 1

    def leader_epoch(self, topic: str, partition: int) -> int:
        return -1

    def ready(self, node: int) -> bool:
        return True

    def send(self, node: int, request: object) -> Future:
        self.requests.append(request)
        self.sent.append(Future())
        return self.sent[-1]


def _answer(*topics: SimpleNamespace, session_id: int = 0) -> SimpleNamespace:
    """A Fetch response: no top-level error, ``session_id`` (0: no session) and the topics' data."""
    return SimpleNamespace(error_code=0, session_id=session_id, responses=list(topics))


def _pipelined_fetcher(wire: _PipelinedWire) -> RawFetcher:
    return RawFetcher(
        wire,  # type: ignore[arg-type]
        MemoryBudget(1 << 24),
        fetch_max_bytes=1 << 20,
        partition_max_bytes=1 << 20,
        max_wait_ms=10,
    )


def test_a_fetch_sent_before_a_partition_was_given_up_is_dropped_when_it_comes_back() -> None:
    wire = _PipelinedWire()
    fetcher = _pipelined_fetcher(wire)
    tp = SourcePartition("orders", 3)
    fetcher.assign({tp: 1000})
    fetcher.fill()
    assert len(wire.sent) == 1
    fetcher.fill()
    assert len(wire.sent) == 1, "never two fetches for one partition at once"
    # A rebalance: the partition is revoked and assigned back at the committed offset...
    fetcher.unassign([tp])
    fetcher.assign({tp: 1000})
    # ...and the fetch sent before, for offset 1500 in the real world, answers now.
    batch = build([(b"k", b"v", [], 1)], 0, base_offset=1500)
    partition = SimpleNamespace(partition_index=3, **vars(_fetch_response(bytes(batch))))
    wire.sent[0].success(_answer(SimpleNamespace(topic="orders", partitions=[partition])))
    fetcher._parts[tp].position = 1500  # even were the positions to agree, the epoch differs
    assert not fetcher.collect(), "no news for the task"
    assert fetcher.pop(tp) is None, "data fetched for the previous assignment is never queued"
    assert fetcher.budget.used == 0, "its reservation went back to the budget"


def test_while_queues_are_full_a_fetch_never_parks_on_partitions_that_had_nothing() -> None:
    wire = _PipelinedWire()
    fetcher = RawFetcher(
        wire,  # type: ignore[arg-type]
        MemoryBudget(1 << 26),
        fetch_max_bytes=1 << 20,
        partition_max_bytes=1 << 16,
        max_wait_ms=100,
    )
    full, idle, busy = (SourcePartition("orders", p) for p in (0, 1, 2))
    fetcher.assign({full: 0, idle: 0, busy: 0})
    parts = fetcher._parts
    parts[full].queued_bytes = 1 << 16  # its queue is full: left out until the producer takes some
    parts[idle].stable_end = 0  # it had nothing a moment ago

    def asked(request: Any) -> list[int]:
        return sorted(p.partition for t in request.topics for p in t.partitions)

    def forgotten(request: Any) -> list[int]:
        return sorted(p for t in request.forgotten_topics_data for p in t.partitions)

    fetcher.fill()
    assert asked(wire.requests[0]) == [1, 2] and wire.requests[0].max_wait_ms == 0, "not parked"
    assert fetcher.held_back
    # Only partitions at their end are left: their leader is asked again once per max wait, unparked.
    wire.sent[0].success(_answer(session_id=7))
    fetcher.collect()
    parts[busy].stable_end = 0
    fetcher.fill()
    assert len(wire.requests) == 1, "nothing known to wait, nothing new to tell, and answered just now"
    fetcher._sessions[1].last_answer -= 1
    fetcher.fill()
    assert asked(wire.requests[1]) == [] and wire.requests[1].max_wait_ms == 0, "the session holds them"
    assert (wire.requests[1].session_id, wire.requests[1].session_epoch) == (7, 1)
    # Nothing waits in any queue: the held partition joins the session, and the broker may park the Fetch.
    wire.sent[1].success(_answer(session_id=7))
    fetcher.collect()
    parts[full].queued_bytes = 0
    fetcher._dirty.add(full)  # as taking or queueing items does
    fetcher.fill()
    assert asked(wire.requests[2]) == [0] and wire.requests[2].max_wait_ms == 100
    # Full again: the session forgets it, and keeps it out until its queue is down to half.
    wire.sent[2].success(_answer(session_id=7))
    fetcher.collect()
    parts[full].queued_bytes = 1 << 16
    fetcher._dirty.add(full)  # as taking or queueing items does
    fetcher.fill()
    assert forgotten(wire.requests[3]) == [0] and asked(wire.requests[3]) == []
    wire.sent[3].success(_answer(session_id=7))
    fetcher.collect()
    parts[full].queued_bytes = (1 << 15) + 1
    fetcher._dirty.add(full)  # as taking or queueing items does
    fetcher._sessions[1].last_answer -= 1
    fetcher.fill()
    assert asked(wire.requests[4]) == [] and forgotten(wire.requests[4]) == [], "still above half: still held"


def test_raw_mode_advises_record_mode_once_for_sources_of_tiny_batches() -> None:
    from mirror_sink.raw.forwarder import SAMPLE_BATCHES, BatchForwarder

    def path(forwarded: int, nbytes: int) -> BatchForwarder:
        p = object.__new__(BatchForwarder)
        p.forwarded, p.forwarded_bytes, p._advised = forwarded, nbytes, False
        return p

    assert path(SAMPLE_BATCHES - 1, 100).record_mode_advised() is None, "too few batches to tell"
    tiny = path(SAMPLE_BATCHES, SAMPLE_BATCHES * 1700)
    advice = tiny.record_mode_advised()
    assert advice is not None and "averaged 1,700 bytes" in advice
    assert tiny.record_mode_advised() is None, "decided once"
    assert path(SAMPLE_BATCHES, SAMPLE_BATCHES * 64_000).record_mode_advised() is None, "ordinary batches stay raw"
    assert path(SAMPLE_BATCHES, SAMPLE_BATCHES * 900_000).record_mode_advised() is None, "one large record a batch"


def test_batches_read_in_place_keep_their_whole_frame_charged_until_the_last_one_is_gone() -> None:
    """A response read in place (mirror_sink.raw.wire.receive) is one frame: any batch still queued or
    unacknowledged keeps all of it in memory, so all of it stays charged until then."""
    from kafka.protocol.frame import KafkaBytes

    wire = _PipelinedWire()
    fetcher = _pipelined_fetcher(wire)
    a, b = SourcePartition("orders", 0), SourcePartition("orders", 1)
    fetcher.assign({a: 0, b: 0})
    fetcher.fill()
    batch = bytes(build([(b"k", b"v" * 1000, [], 1)] * 3, 0, base_offset=0))
    frame = KafkaBytes(1000 + 2 * len(batch))  # a header, then each partition's records
    frame[1000 : 1000 + len(batch)] = batch
    frame[1000 + len(batch) :] = batch
    whole = memoryview(frame)
    partitions = [
        SimpleNamespace(partition_index=p, **vars(_fetch_response(whole[start : start + len(batch)])))  # type: ignore[arg-type]
        for p, start in ((0, 1000), (1, 1000 + len(batch)))
    ]
    wire.sent[0].success(_answer(SimpleNamespace(topic="orders", partitions=partitions)))
    del whole, partitions, frame
    assert fetcher.collect()
    first, second = fetcher.pop(a), fetcher.pop(b)
    assert first is not None and second is not None and first.batch is not None and second.batch is not None
    assert not first.batch.readonly, "a writable view of the frame: headers are rewritten in place"
    assert (first.charge, second.charge) == (0, 0), "the batches are not charged one by one..."
    size = 1000 + 2 * len(batch)
    assert fetcher.budget.used == size, "...the frame is, whole"
    del first
    assert fetcher.budget.used == size, "one batch acknowledged: the other still holds the frame"
    del second
    assert fetcher.budget.used == 0, "the last one gone, the frame is freed and given back"
