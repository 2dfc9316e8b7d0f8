"""The frame pool: a response's buffer is reused only once no view of it is left."""

from __future__ import annotations

import gc

import pytest
from kafka.protocol.consumer import FetchResponse

import mirror_sink.raw.wire.wire  # noqa: F401  (installs the in-place decoding of records)
from mirror_sink.raw.wire.receive import FramePool, capacity
from tests.unit.raw.wire.fetch_responses import encoded_fetch_response

pytestmark = pytest.mark.unit


def test_size_classes_waste_at_most_a_quarter_and_are_few() -> None:
    sizes = range(65_536, 4_000_000, 977)
    assert all(size <= capacity(size) <= size * 1.25 + 4096 for size in sizes)
    assert all(capacity(size) % 4096 == 0 for size in sizes)
    assert len({capacity(size) for size in sizes}) <= 30  # one ctypes array type per class


def test_a_buffer_is_reused_after_its_last_view_goes_and_not_before() -> None:
    pool = FramePool()
    frame = pool.frame(200_000, 65_536)
    frame.write(b"first")
    frame.seek(0)
    view = frame.read()  # a view of the whole frame, as the decoder takes it
    batch = view[10:20]  # a queued batch: a view of a view
    del frame, view
    gc.collect()
    assert pool.idle_bytes == 0  # the batch still holds the buffer
    other = pool.frame(200_000, 65_536)
    assert (pool.allocated, pool.reused) == (2, 0)
    del batch
    assert pool.idle_bytes == capacity(200_000)
    again = pool.frame(210_000, 65_536)  # the same class
    assert (pool.allocated, pool.reused) == (2, 1)
    assert len(again) == 210_000 and again.view.tobytes()[:5] == b"first"  # not zeroed: overwritten by the next read
    del other, again


def test_a_buffer_still_exported_is_never_handed_out() -> None:
    pool = FramePool()
    frame = pool.frame(100_000, 65_536)
    exporter = frame.view.obj
    buffer = bytearray(capacity(100_000))
    survivor = memoryview(buffer)  # as if a view outlived its frame in some path
    pool._give(capacity(100_000), buffer)
    assert pool.frame(100_000, 65_536).view.obj is not exporter
    assert pool.reused == 0  # the exported buffer was dropped, not reused
    del survivor, frame


def test_idle_buffers_are_bounded() -> None:
    pool = FramePool(idle_limit_bytes=3 * capacity(100_000))
    frames = [pool.frame(100_000, 65_536) for _ in range(5)]
    del frames
    assert pool.idle_bytes == 3 * capacity(100_000)


def test_a_fetch_response_decoded_from_a_pooled_frame_has_writable_views_of_it() -> None:
    records = bytes(range(256)) * 800
    encoded = encoded_fetch_response(records)
    pool = FramePool()
    frame = pool.frame(len(encoded), 65_536)
    frame.write(encoded)
    frame.seek(0)
    decoded = FetchResponse.decode(frame, version=12)
    view = decoded.responses[0].partitions[0].records
    assert isinstance(view, memoryview) and not view.readonly and view.obj is frame.view.obj
    assert bytes(view) == records
    del frame, decoded
    assert pool.idle_bytes == 0
    del view
    assert pool.idle_bytes == capacity(len(encoded))
