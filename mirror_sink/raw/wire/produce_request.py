"""Produce requests sent as header bytes around views of the batches, written to the socket with
``sendmsg``: no copy of a batch to encode it, none to send it.

kafka-python's generated encoder writes a whole request into one buffer (a copy of every batch)
and then slices the result out of it (another). ``ChunkedProduce`` stands in for its
``ProduceRequest`` (v8 to v12) at the connection: it encodes the request header and every field
itself and returns ``Chunks``, the small framing byte strings with the batches' own memory between
them. A ``ChunkedProduce`` joined is byte for byte what kafka-python would have sent (tested).

kafka-python's parser joins the requests queued on a connection (``send_bytes``) and its transport
sends one buffer per ``send`` call. ``install`` lets both pass ``Chunks`` through: the parser
concatenates the lists instead of the bytes, and the plain TCP transport writes up to
``_IOV_MAX`` buffers per ``sendmsg`` call, so a batch goes from the fetched response's memory to the
socket with no copy in between. Python's TLS sockets have no ``sendmsg``: over TLS the chunks are
joined first (one copy, as kafka-python's own encoder makes; TLS encrypts into its own buffer anyway).
"""

from __future__ import annotations

import logging
import struct
from collections import deque
from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Any

import kafka.errors as kerr
from kafka.net import transport
from kafka.protocol import parser
from kafka.protocol.producer import ProduceRequest

log = logging.getLogger(__name__)

_PRODUCE = 0
#: Produce versions with compact (varint) lengths and tagged fields.
_FLEXIBLE_FROM = 9
VERSIONS = (8, 12)  # v12 is v11's format (it only means transactions version 2)
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id
_ACKS_TIMEOUT = struct.Struct(">hi")


class Chunks(list[bytes | memoryview]):
    """One or more requests' bytes, in order, as separate buffers to be written with one ``sendmsg``."""

    __slots__ = ()

    @property
    def nbytes(self) -> int:
        """The bytes of all the buffers."""
        return sum(memoryview(c).nbytes for c in self)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string(value: str | None, compact: bool) -> bytes:
    if value is None:
        return b"\x00" if compact else _I16.pack(-1)
    raw = value.encode()
    return (_uvarint(len(raw) + 1) if compact else _I16.pack(len(raw))) + raw


def _array_length(n: int, compact: bool) -> bytes:
    return _uvarint(n + 1) if compact else _I32.pack(n)


class ChunkedProduce:
    """A Produce request (v8-v12) whose record batches are sent from their own memory.

    ``topics`` maps each topic to its (partition, batches) pairs, in request order. The object
    offers what kafka-python's connection and parser use of a request: ``API_KEY``,
    ``API_VERSION``, ``with_header``, ``header``, ``expect_response`` and ``encode``.
    """

    API_KEY = _PRODUCE

    def __init__(
        self,
        version: int,
        transactional_id: str | None,
        acks: int,
        timeout_ms: int,
        topics: Mapping[str, Sequence[tuple[int, memoryview]]],
    ) -> None:
        if not VERSIONS[0] <= version <= VERSIONS[1]:
            raise ValueError(f"Produce v{version} is not one ChunkedProduce speaks ({VERSIONS[0]}-{VERSIONS[1]})")
        self.API_VERSION = version
        self.transactional_id = transactional_id
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.topics = topics
        self._header: Any = None

    @property
    def header(self) -> Any:
        """kafka-python's request header, once ``with_header`` has set it (the parser matches responses by it)."""
        return self._header

    def with_header(self, correlation_id: int = 0, client_id: str = "kafka-python") -> None:
        """Set the header the next ``encode`` writes (kafka-python's parser calls this with the correlation id)."""
        self._header = ProduceRequest.header_class(
            request_api_key=_PRODUCE,
            request_api_version=self.API_VERSION,
            correlation_id=correlation_id,
            client_id=client_id,
        )

    def expect_response(self) -> bool:
        """A Produce with acks=0 gets no response."""
        return self.acks != 0

    def encode(self, framed: bool = False, header: bool = False) -> Chunks:
        """The request's bytes as ``Chunks``: framing around each batch's view, the batches uncopied."""
        compact = self.API_VERSION >= _FLEXIBLE_FROM
        head = bytearray()
        if header:
            if self._header is None:
                raise ValueError("No header found")
            head += _HEADER.pack(_PRODUCE, self.API_VERSION, self._header.correlation_id)
            head += _string(self._header.client_id, compact=False)  # the header's client id is never compact
            if compact:
                head += b"\x00"  # the header's tagged fields
        head += _string(self.transactional_id, compact)
        head += _ACKS_TIMEOUT.pack(self.acks, self.timeout_ms)
        head += _array_length(len(self.topics), compact)
        chunks = Chunks()
        pending = head  # framing bytes not yet appended as a chunk
        for name, partitions in self.topics.items():
            pending += _string(name, compact)
            pending += _array_length(len(partitions), compact)
            for index, batch in partitions:
                size = memoryview(batch).nbytes
                pending += _I32.pack(index)
                pending += _uvarint(size + 1) if compact else _I32.pack(size)
                chunks.append(bytes(pending))
                chunks.append(batch)
                pending = bytearray(b"\x00" if compact else b"")  # the partition's tagged fields
            if compact:
                pending += b"\x00"  # the topic's tagged fields
        if compact:
            pending += b"\x00"  # the request's tagged fields
        if pending:
            chunks.append(bytes(pending))
        if framed:
            chunks.insert(0, _I32.pack(chunks.nbytes))
        return chunks

    def __str__(self) -> str:
        batches = sum(len(p) for p in self.topics.values())
        return f"ProduceRequest(v{self.API_VERSION}, {batches} batches, transactional_id={self.transactional_id})"

    __repr__ = __str__


#: Buffers per ``sendmsg`` call (Linux's IOV_MAX is 1024).
_IOV_MAX = 512

_send_bytes = parser.KafkaProtocol.send_bytes
_write = transport.KafkaTCPTransport.write
_tcp_sock_send = transport.KafkaTCPTransport._sock_send


def _send_bytes_chunked(self: Any) -> Any:
    """kafka-python's ``send_bytes``: everything queued, as ``Chunks`` when any request is chunked."""
    pending = self.bytes_to_send
    if not any(isinstance(p, Chunks) for p in pending):
        return _send_bytes(self)
    self.bytes_to_send = []
    out = Chunks()
    for p in pending:
        if isinstance(p, Chunks):
            out.extend(p)
        else:
            out.append(p)
    return out


_send_bytes_chunked.vectored = True  # type: ignore[attr-defined]


def _write_chunked(self: Any, data: Any) -> None:
    """kafka-python's ``write``, taking ``Chunks`` as well as bytes."""
    if not isinstance(data, Chunks):
        _write(self, data)
    elif isinstance(self, transport.KafkaSSLTransport):
        _write(self, b"".join(data))
    else:
        if not self._write or self._closed:
            raise RuntimeError("Transport closed for writes")
        self.writelines(data)


_write_chunked.vectored = True  # type: ignore[attr-defined]


def _sock_send_vectored(self: Any) -> tuple[int, Exception | None]:
    """Send the write buffer with ``sendmsg`` until the socket would block; bytes sent and any error."""
    total = 0
    sock = self._sock
    if sock is None:
        return total, kerr.KafkaConnectionError("Connection closed during send")
    pending: deque[Any] = self._write_buffer
    while pending:
        try:
            sent = sock.sendmsg(list(islice(pending, _IOV_MAX)))
        except (BlockingIOError, InterruptedError):
            return total, None
        except Exception as exc:  # as kafka-python's own: the connection is closed with this error
            log.debug("%s: error sending request data: %s", self, exc)
            return total, kerr.KafkaConnectionError(exc)
        total += sent
        while sent:
            head = memoryview(pending[0])
            if sent >= head.nbytes:
                sent -= head.nbytes
                pending.popleft()
            else:
                pending[0] = head[sent:]
                sent = 0
    return total, None


_sock_send_vectored.vectored = True  # type: ignore[attr-defined]


def install() -> bool:
    """Let connections send ``Chunks``; False (and no ``ChunkedProduce`` may be sent) if kafka-python changed."""
    tcp = transport.KafkaTCPTransport
    if not (
        callable(getattr(parser.KafkaProtocol, "send_bytes", None))
        and callable(getattr(tcp, "write", None))
        and callable(getattr(tcp, "writelines", None))
        and callable(getattr(tcp, "_sock_send", None))
        and issubclass(transport.KafkaSSLTransport, tcp)
    ):
        log.warning("kafka-python's send path has changed: raw mode encodes Produce requests with kafka-python")
        return False
    parser.KafkaProtocol.send_bytes = _send_bytes_chunked
    tcp.write = _write_chunked
    tcp._sock_send = _sock_send_vectored  # the TLS transport keeps its own
    return True


def installed() -> bool:
    """True when connections send ``Chunks``."""
    return all(
        getattr(f, "vectored", False)
        for f in (
            parser.KafkaProtocol.send_bytes,
            transport.KafkaTCPTransport.write,
            transport.KafkaTCPTransport._sock_send,
        )
    )
