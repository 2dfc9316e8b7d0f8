"""Raw mode's socket I/O without a broker: Produce requests encoded around the batches' own memory,
byte for byte what kafka-python sends, and responses read straight into their frames over a real
socket pair, whatever the way the bytes arrive."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.protocol.consumer import FetchResponse
from kafka.protocol.frame import KafkaBytes
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.producer import ProduceRequest

import mirror_sink.raw.wire.wire  # noqa: F401  (installs the socket I/O below)
from mirror_sink.raw.wire import produce_request as send
from mirror_sink.raw.wire import receive
from mirror_sink.raw.wire.produce_request import ChunkedProduce, Chunks
from mirror_sink.raw.wire.receive import MIN_POOLED_BYTES, PooledFrame
from tests.unit.raw.wire.fetch_responses import encoded_fetch_response


def test_raw_mode_s_connections_read_in_place_and_send_vectored() -> None:
    """The pinned kafka-python takes both patches (an upgrade that changes it fails here, not silently)."""
    assert receive.installed()
    assert send.installed()


def _kafka_python(version: int, txn: str | None, topics: dict[str, list[tuple[int, bytes]]]) -> bytes:
    p = ProduceRequest
    request = p(
        version=version,
        transactional_id=txn,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            p.TopicProduceData(
                name=t, partition_data=[p.TopicProduceData.PartitionProduceData(index=i, records=r) for i, r in ps]
            )
            for t, ps in topics.items()
        ],
    )
    request.with_header(correlation_id=7, client_id="mirror-task-0")
    return bytes(request.encode(framed=True, header=True))


@pytest.mark.parametrize("version", [8, 9, 10, 11, 12])
@pytest.mark.parametrize("txn", [None, "mirror-sink-task-3"])
def test_a_chunked_produce_is_byte_for_byte_kafka_python_s_request(version: int, txn: str | None) -> None:
    topics = {
        "source.orders": [(0, os.urandom(300)), (5, os.urandom(70_000))],
        "source.é-unicode": [(2, os.urandom(129))],  # a varint length of two bytes (129 + 1)
    }
    views = {t: [(i, memoryview(bytearray(r))) for i, r in ps] for t, ps in topics.items()}
    chunked = ChunkedProduce(version, txn, -1, 30_000, views)
    chunked.with_header(correlation_id=7, client_id="mirror-task-0")
    chunks = chunked.encode(framed=True, header=True)
    assert b"".join(chunks) == _kafka_python(version, txn, topics)
    batches = [v for ps in views.values() for _, v in ps]
    assert sum(any(c is b for c in chunks) for b in batches) == 3, "every batch is sent from its own memory"
    assert chunked.header.get_response_class().__name__.startswith("ProduceResponse")


def test_versions_outside_8_to_12_are_refused() -> None:
    """v13 names topics by id: not a request this encoder writes."""
    with pytest.raises(ValueError, match="Produce v13"):
        ChunkedProduce(13, None, -1, 30_000, {})
    with pytest.raises(ValueError, match="Produce v7"):
        ChunkedProduce(7, None, -1, 30_000, {})


class _Transport:
    """What ``receive._sock_recv`` and ``send._sock_send_vectored`` use of kafka-python's transport."""

    def __init__(self, sock: socket.socket, proto: KafkaProtocol) -> None:
        self._sock = sock
        self._protocol = SimpleNamespace(parser=proto)
        self._write_buffer: Any = None


def _frames(sizes: list[int]) -> list[bytes]:
    return [os.urandom(n) for n in sizes]


@pytest.mark.parametrize("piece", [1, 3, 4096, 1 << 20], ids=["byte-by-byte", "3-bytes", "4-KB", "all-at-once"])
def test_frames_are_read_whole_however_the_bytes_arrive(piece: int) -> None:
    # Small, empty, and over DIRECT_BYTES (read straight into the frame); megabytes in large pieces only.
    sizes = [5, 0, 20_000, 17, 3] if piece < 4096 else [5, 0, 40_000, 300_000, 17, 2_000_000]
    bodies = _frames(sizes)
    wire = b"".join(struct.pack(">i", len(b)) + b for b in bodies)
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    theirs.setblocking(False)
    proto = KafkaProtocol()
    transport = _Transport(ours, proto)
    got: list[bytes] = []
    sent = 0
    try:
        while len(got) < len(bodies):
            if sent < len(wire):
                with contextlib.suppress(BlockingIOError):
                    sent += theirs.send(wire[sent : sent + piece])
            frames, error = receive._sock_recv(transport)
            assert error is None
            assert isinstance(frames, receive.Frames)
            # A large frame is in a pooled buffer (mirror_sink.raw.wire.frames), a small one kafka-python's own.
            for f in frames.frames:
                pooled = len(f) >= MIN_POOLED_BYTES
                assert isinstance(f, PooledFrame if pooled else KafkaBytes)
                got.append(f.view.tobytes() if isinstance(f, PooledFrame) else bytes(f))
    finally:
        ours.close()
        theirs.close()
    assert got == bodies


def test_a_closed_peer_is_a_connection_error() -> None:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    theirs.close()
    try:
        _, error = receive._sock_recv(_Transport(ours, KafkaProtocol()))
    finally:
        ours.close()
    assert error is not None and "socket disconnected" in str(error)


def test_a_large_fetch_response_s_records_are_writable_views_of_its_frame() -> None:
    """Decoded from a frame read in place, a partition's batches are the frame's own memory."""
    records = os.urandom(200_000)
    encoded = encoded_fetch_response(records)
    body = KafkaBytes(len(encoded))
    body.write(encoded)
    body.seek(0)
    decoded = FetchResponse.decode(body, version=12)
    view = decoded.responses[0].partitions[0].records
    assert isinstance(view, memoryview) and not view.readonly and view.obj is body
    assert bytes(view) == records


def test_chunks_go_out_in_order_with_partial_sends_resumed() -> None:
    from collections import deque

    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16_384)
    theirs.setblocking(False)
    pieces = Chunks([b"head", memoryview(bytearray(os.urandom(3_000_000))), b"", b"tail"])
    transport = _Transport(ours, KafkaProtocol())
    transport._write_buffer = deque(pieces)
    received = bytearray()
    try:
        while transport._write_buffer:
            _sent, error = send._sock_send_vectored(transport)
            assert error is None
            while True:
                try:
                    received += theirs.recv(1 << 20)
                except BlockingIOError:
                    break
        while len(received) < pieces.nbytes:
            received += theirs.recv(1 << 20)
    finally:
        ours.close()
        theirs.close()
    assert bytes(received) == b"".join(pieces)
