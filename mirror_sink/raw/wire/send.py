"""kafka-python's send path, taught to write ``Chunks`` (a request as separate buffers) with ``sendmsg``.

``ChunkedProduce.encode`` returns ``Chunks``: framing bytes around views of the record batches.
kafka-python's parser joins the requests queued on a connection (``send_bytes``) and its transport
sends one buffer per ``send`` call. ``install`` lets both pass ``Chunks`` through: the parser
concatenates the lists instead of the bytes, and the plain TCP transport writes up to
``_IOV_MAX`` buffers per ``sendmsg`` call, so a batch goes from the fetched response's memory to the
socket with no copy in between. Python's TLS sockets have no ``sendmsg``: over TLS the chunks are
joined first (one copy, as kafka-python's own encoder makes; TLS encrypts into its own buffer anyway).
"""

from __future__ import annotations

import logging
from collections import deque
from itertools import islice
from typing import Any

import kafka.errors as kerr
from kafka.net import transport
from kafka.protocol import parser

from mirror_sink.raw.wire.produce_request import Chunks

log = logging.getLogger(__name__)

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
