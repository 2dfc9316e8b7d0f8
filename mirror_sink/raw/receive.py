"""kafka-python's receive path, fitted for the raw path's megabyte Fetch responses.

kafka-python 3 reads a socket 4 KB per ``recv`` call, in a Python loop, and joins the pieces: a
6 MB Fetch response costs 1,500 calls and a copy. Measured here (0.5 GB of uncompressed 1 KB
records, Fetch alone, 6 partitions): 127 MB/s with 4 KB reads, 202 MB/s with 64 KB, 242 MB/s with
1 MiB. Reading up to 1 MiB per call (whatever the socket holds; a TLS socket still returns one TLS
record per call) also saves the join's copy whenever one call takes everything available.

Decoding then copied the whole response twice more before parsing it (the decoder asks the frame
for all of it; ``KafkaBytes.read`` slices the frame, a copy, and makes ``bytes`` of the slice,
another): 0.45 of 1.78 s in that Fetch-only run. A large read now returns a view of the frame
instead, which the decoder parses as it is (it turns every input into a memoryview anyway, and
copies each field out of it); the frame is freed once the response is decoded, as before.

kafka-python has no setting for either, so ``install`` replaces the transports' ``_sock_recv`` and
``KafkaBytes.read`` with versions that keep their contracts (what was read until the socket would
block and the error that ended it; the next ``nbytes`` of the frame, as a bytes-like object). It
refuses to patch a kafka-python whose classes do not look as expected.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

import kafka.errors as kerr
from kafka.net import transport
from kafka.protocol import frame

log = logging.getLogger(__name__)

#: Bytes asked of the socket per call.
RECV_BYTES = 1 << 20
#: Reads of at least this many bytes from a response frame are views, not copies (record batches;
#: every other field is far smaller and stays ``bytes``).
VIEW_BYTES = 64 * 1024
_WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


def _sock_recv(self: Any) -> tuple[bytes, Exception | None]:
    """What the socket holds now, read in calls of up to RECV_BYTES, and the error that ended it."""
    chunks: list[bytes] = []
    error: Exception | None = None
    while True:
        try:
            data = self._sock.recv(RECV_BYTES)
        except _WOULD_BLOCK:
            break
        except Exception as exc:  # as kafka-python's own: the connection is closed with this error
            log.debug("%s: error receiving network data: %s", self, exc)
            error = kerr.KafkaConnectionError(exc)
            break
        if not data:
            error = kerr.KafkaConnectionError("socket disconnected")
            break
        chunks.append(data)
    return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), error


_sock_recv.large_reads = True  # type: ignore[attr-defined]
_kafka_bytes_read = frame.KafkaBytes.read


def _read(self: Any, nbytes: int | None = None) -> bytes | memoryview:
    """The next ``nbytes`` of the frame (all that is left by default): a view when that is large."""
    if nbytes is None:
        nbytes = len(self) - self._idx
    if nbytes < VIEW_BYTES:
        return _kafka_bytes_read(self, nbytes)  # type: ignore[no-any-return]
    start = self._idx
    self._idx = min(start + nbytes, len(self))
    return memoryview(self)[start : self._idx]


_read.large_reads = True  # type: ignore[attr-defined]


def install() -> bool:
    """Make kafka-python's TCP and TLS transports read large chunks; False if they do not look as expected."""
    classes = (transport.KafkaTCPTransport, transport.KafkaSSLTransport)
    if not all(callable(getattr(cls, "_sock_recv", None)) for cls in classes) or not (
        issubclass(frame.KafkaBytes, bytearray) and callable(getattr(frame.KafkaBytes, "read", None))
    ):
        log.warning("kafka-python's receive path has changed: raw mode keeps its 4 KB reads and copies")
        return False
    for cls in classes:
        cls._sock_recv = _sock_recv
    frame.KafkaBytes.read = _read
    return True


def installed() -> bool:
    """True when the transports read large chunks."""
    return getattr(frame.KafkaBytes.read, "large_reads", False) and all(
        getattr(cls._sock_recv, "large_reads", False)
        for cls in (transport.KafkaTCPTransport, transport.KafkaSSLTransport)
    )
