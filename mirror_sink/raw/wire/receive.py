"""kafka-python's receive path, fitted for the raw path's megabyte Fetch responses: one copy per byte,
into response frames kept in a pool of reused buffers.

kafka-python 3 reads a socket 4 KB per ``recv`` call and joins the pieces, copies them into the
response's frame buffer (slicing on the way), copies the whole frame again when decoding starts, and
copies every ``records`` field out of it into ``bytes``; raw mode then made a writable copy of each.
A byte of a Fetch response was copied five or six times before its batch could be rewritten.

Here a byte is copied once, from the socket into its response's frame:

* ``_sock_recv`` reads a frame's body with ``recv_into`` straight into the frame buffer once the
  frame's size is known and at least ``DIRECT_BYTES`` of it are missing; headers and small
  responses go through a 64 KiB scratch buffer per connection, so a burst of small responses costs
  one system call, not two per response. It returns the frames it completed (``Frames``) and
  ``KafkaProtocol.receive_bytes`` decodes those as they are, keeping its byte-stream path for
  anything else.
* A frame of at least ``MIN_POOLED_BYTES`` lives in a buffer reused from an earlier response
  (``FramePool``, below): no fresh pages, no zero-fill. Smaller ones are kafka-python's own
  ``KafkaBytes``.
* ``KafkaBytes.read`` returns a view of the frame for large reads (the decoder asks for the whole
  frame, then turns it into a memoryview anyway).
* A ``records`` field (a partition's record batches) of such a frame is decoded as a view of it,
  not a copy. The view is writable, so raw mode rewrites batch headers in place; the frame stays in
  memory while any view of it does (``fetcher`` charges the memory budget for that). Small frames
  (under ``VIEW_BYTES``) are still decoded from a copy, so their fields are ``bytes``.

kafka-python has no setting for any of it, so ``install`` replaces those functions with versions that
keep their contracts, and refuses when kafka-python's classes do not look as expected.

The frame pool: a Fetch response's bytes land in memory that is already paged in. A fresh
``bytearray`` per response costs more than the copy into it: the allocator hands out fresh pages and
``bytearray`` zero-fills them (8-11% of a 1 GB copy's py-spy samples, docs/benchmarks-notes.md).
``FramePool`` keeps the buffers of released frames by size class and hands them to the next response
of a similar size, neither zeroed nor faulted in again.

A buffer may go back only when no view of it is left, since queued batches are views of their
response. Each frame (``PooledFrame``) is therefore a fresh ``ctypes`` array laid over a pooled
buffer: the array is the views' exporter, so it lives exactly as long as any view does, and its
finalizer returns the buffer, as ``weakref.finalize`` of the frame gave memory back before. A buffer
is also checked to have no export left before it is reused (a resize, which Python refuses while any
view of it exists), so a view that outlived its frame in some path never sees its bytes change.
"""

from __future__ import annotations

import ctypes
import logging
import ssl
import struct
import threading
import weakref
from collections import deque
from typing import Any

import kafka.errors as kerr
from kafka.net import transport
from kafka.protocol import frame, parser
from kafka.protocol.schemas.fields import simple
from kafka.protocol.schemas.fields.codecs import types

log = logging.getLogger(__name__)

#: A frame's missing part at least this large is read straight into the frame.
DIRECT_BYTES = 16 * 1024
#: Headers and small responses are read through a scratch buffer of this size.
SCRATCH_BYTES = 64 * 1024
#: Reads of at least this many bytes from a frame are views of it, not copies.
VIEW_BYTES = 64 * 1024
_WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)
_SIZE = struct.Struct(">i")


#: Frames smaller than this are not pooled (they are decoded from copies, and cheap to allocate).
MIN_POOLED_BYTES = 64 * 1024
#: Idle buffers kept at most, in bytes, over all size classes.
IDLE_LIMIT_BYTES = 64 << 20


def capacity(size: int) -> int:
    """The size class a frame of ``size`` bytes is served from: ``size`` rounded up to a quarter of the
    power of two below it, and to 4 KiB, so that a frame uses at most a quarter more than it needs."""
    step = 1 << max((size - 1).bit_length() - 3, 12)
    return -(-size // step) * step


class PooledFrame:
    """One response's bytes in a pooled buffer, with the file-like calls kafka-python's decoder makes.

    ``view`` is a writable ``memoryview`` of exactly the frame's size; ``read`` of a large part returns
    a view of it (a small part, a copy), as ``_read`` does for kafka-python's own frames."""

    __slots__ = ("_idx", "_view_bytes", "view")

    def __init__(self, view: memoryview, view_bytes: int) -> None:
        self.view = view
        self._idx = 0
        self._view_bytes = view_bytes

    def __len__(self) -> int:
        return self.view.nbytes

    def read(self, nbytes: int | None = None) -> bytes | memoryview:
        """The next ``nbytes`` (all that is left by default): a view when that is large, else a copy."""
        end = self.view.nbytes
        start = self._idx
        stop = end if nbytes is None else min(start + nbytes, end)
        self._idx = stop
        part = self.view[start:stop]
        return part if stop - start >= self._view_bytes else part.tobytes()

    def write(self, data: Any) -> None:
        """Copy ``data`` in at the current position."""
        n = memoryview(data).nbytes
        self.view[self._idx : self._idx + n] = data
        self._idx += n

    def seek(self, idx: int) -> None:
        """Move the position to ``idx``."""
        self._idx = idx

    def tell(self) -> int:
        """The current position."""
        return self._idx


class FramePool:
    """Buffers of released frames, by size class, for the next frames (thread-safe)."""

    def __init__(self, idle_limit_bytes: int = IDLE_LIMIT_BYTES) -> None:
        self.idle_limit_bytes = idle_limit_bytes
        self._idle: dict[int, deque[bytearray]] = {}
        self._idle_bytes = 0
        self._lock = threading.Lock()
        #: Frames served from an idle buffer, and frames that needed a new one.
        self.reused = 0
        self.allocated = 0

    def frame(self, size: int, view_bytes: int) -> PooledFrame:
        """A frame of exactly ``size`` bytes, in a reused buffer when one of its class is idle."""
        cap = capacity(size)
        buf = self._take(cap)
        if buf is None:
            buf = bytearray(cap)
            self.allocated += 1
        else:
            self.reused += 1
        exporter = (ctypes.c_char * cap).from_buffer(buf)
        weakref.finalize(exporter, self._give, cap, buf)
        return PooledFrame(memoryview(exporter).cast("B")[:size], view_bytes)

    @property
    def idle_bytes(self) -> int:
        """Bytes held by idle buffers now."""
        return self._idle_bytes

    def _take(self, cap: int) -> bytearray | None:
        with self._lock:
            idle = self._idle.get(cap)
            while idle:
                buf = idle.pop()
                self._idle_bytes -= cap
                if _unexported(buf):
                    return buf
        return None  # a buffer still exported is dropped: it is freed when its last view goes

    def _give(self, cap: int, buf: bytearray) -> None:
        with self._lock:
            if self._idle_bytes + cap > self.idle_limit_bytes:
                return
            self._idle.setdefault(cap, deque()).append(buf)
            self._idle_bytes += cap


def _unexported(buf: bytearray) -> bool:
    """True when no view of ``buf`` exists: Python refuses to resize a bytearray that has one."""
    try:
        del buf[-1:]
    except BufferError:
        return False
    buf.append(0)  # back to its size, within its allocation: no copy, no new memory
    return True


#: The process's pool (every patched connection draws its large frames from it).
POOL = FramePool()


class Frames:
    """Response frames read whole from a socket, in order, and the bytes read to get them."""

    __slots__ = ("frames", "nbytes")

    def __init__(self) -> None:
        self.frames: list[frame.KafkaBytes] = []
        self.nbytes = 0

    def __len__(self) -> int:  # kafka-python logs and meters ``len`` of what it received
        return self.nbytes


def _feed(proto: Any, data: memoryview, frames: Frames) -> None:
    """Run ``data`` through ``proto``'s frame state (size prefix, then body), completing frames."""
    i, n = 0, len(data)
    while i < n:
        if not proto._receiving:
            header = proto._header
            take = min(4 - header.tell(), n - i)
            header.write(data[i : i + take])
            i += take
            if header.tell() < 4:
                return
            size = _SIZE.unpack_from(header, 0)[0]
            proto._validate_frame_size(size)
            proto._rbuffer = POOL.frame(size, VIEW_BYTES) if size >= MIN_POOLED_BYTES else frame.KafkaBytes(size)
            proto._receiving = True
        body = proto._rbuffer
        take = min(len(body) - body.tell(), n - i)
        body.write(data[i : i + take])
        i += take
        _maybe_complete(proto, frames)


def _maybe_complete(proto: Any, frames: Frames) -> None:
    body = proto._rbuffer
    if body.tell() == len(body):
        frames.frames.append(body)
        proto._reset_buffer()


def _sock_recv(self: Any) -> tuple[Frames | bytes, Exception | None]:
    """Read until the socket would block: frames completed in place, and the error that ended it."""
    proto = getattr(self._protocol, "parser", None)
    if proto is None:  # not yet speaking Kafka (kafka-python creates the parser on connect)
        return self._kafka_python_recv()  # type: ignore[no-any-return]
    scratch = getattr(self, "_mirror_scratch", None)
    if scratch is None:
        scratch = self._mirror_scratch = memoryview(bytearray(SCRATCH_BYTES))
    sock = self._sock
    frames = Frames()
    error: Exception | None = None
    while True:
        try:
            body = proto._rbuffer if proto._receiving else None
            if body is not None and len(body) - body.tell() >= DIRECT_BYTES:
                start = body.tell()
                got = sock.recv_into((body.view if type(body) is PooledFrame else memoryview(body))[start:])
                body.seek(start + got)
                if got:
                    _maybe_complete(proto, frames)
            else:
                got = sock.recv_into(scratch)
                if got:
                    _feed(proto, scratch[:got], frames)
        except _WOULD_BLOCK:
            break
        except kerr.KafkaError as exc:  # a frame size over receive_message_max_bytes
            error = exc
            break
        except Exception as exc:  # as kafka-python's own: the connection is closed with this error
            log.debug("%s: error receiving network data: %s", self, exc)
            error = kerr.KafkaConnectionError(exc)
            break
        if not got:
            error = kerr.KafkaConnectionError("socket disconnected")
            break
        frames.nbytes += got
    return frames, error


_sock_recv.in_place = True  # type: ignore[attr-defined]
_receive_bytes = parser.KafkaProtocol.receive_bytes


def _receive(self: Any, data: Any) -> list[Any]:
    """kafka-python's ``receive_bytes``, taking completed ``Frames`` as well as a byte stream."""
    if not isinstance(data, Frames):
        return _receive_bytes(self, data)  # type: ignore[no-any-return]
    responses = []
    for body in data.frames:
        body.seek(0)
        responses.append(self._process_response(body))
    return responses


_receive.in_place = True  # type: ignore[attr-defined]
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


_read.in_place = True  # type: ignore[attr-defined]


_emit_decode_field = simple.SimpleField.emit_decode_from


def _emit_decode_field_in_place(
    self: Any, ctx: Any, var_name: str, indent: str, *, version: Any = None, compact: bool = False, tagged: bool = False
) -> None:
    """kafka-python's generated decoding of a field, keeping a ``records`` field as a view of a writable frame."""
    if self._type_str != "records":
        _emit_decode_field(self, ctx, var_name, indent, version=version, compact=compact, tagged=tagged)
        return
    length = ctx.next_var("ln")
    if compact:
        types.UnsignedVarInt32.emit_decode_from(ctx, length, indent)
        ctx.emit(indent, f"{length} -= 1")
    else:
        ctx.emit(indent, f'{length} = unpack_from(">i", data, pos)[0]')
        ctx.emit(indent, "pos += 4")
    ctx.emit(indent, f"if {length} < 0:")
    ctx.emit(indent, f"    {var_name} = None")
    ctx.emit(indent, "elif isinstance(data, memoryview) and not data.readonly:")
    ctx.emit(indent, f"    {var_name} = data[pos:pos+{length}]")
    ctx.emit(indent, f"    pos += {length}")
    ctx.emit(indent, "else:")
    ctx.emit(indent, f"    {var_name} = bytes(data[pos:pos+{length}])")
    ctx.emit(indent, f"    pos += {length}")


_emit_decode_field_in_place.in_place = True  # type: ignore[attr-defined]


def install() -> bool:
    """Read Fetch responses in place; False (and kafka-python's own path) if it does not look as expected."""
    classes = (transport.KafkaTCPTransport, transport.KafkaSSLTransport)
    proto = parser.KafkaProtocol
    if not (
        all(callable(getattr(cls, "_sock_recv", None)) for cls in classes)
        and issubclass(frame.KafkaBytes, bytearray)
        and callable(getattr(frame.KafkaBytes, "read", None))
        and all(callable(getattr(proto, f, None)) for f in ("receive_bytes", "_process_response", "_reset_buffer"))
        and callable(getattr(simple.SimpleField, "emit_decode_from", None))
        and simple.SimpleField.TYPES.get("records") is types.Bytes
        and callable(getattr(types.UnsignedVarInt32, "emit_decode_from", None))
    ):
        log.warning("kafka-python's receive path has changed: raw mode keeps its copies of every fetched byte")
        return False
    for cls in classes:
        if cls._sock_recv is not _sock_recv:
            cls._kafka_python_recv = cls._sock_recv  # its own reads, until the connection has a parser
        cls._sock_recv = _sock_recv
    proto.receive_bytes = _receive
    frame.KafkaBytes.read = _read
    simple.SimpleField.emit_decode_from = _emit_decode_field_in_place
    return True


def installed() -> bool:
    """True when Fetch responses are read in place."""
    return (
        getattr(frame.KafkaBytes.read, "in_place", False)
        and getattr(parser.KafkaProtocol.receive_bytes, "in_place", False)
        and getattr(simple.SimpleField.emit_decode_from, "in_place", False)
        and all(
            getattr(cls._sock_recv, "in_place", False)
            for cls in (transport.KafkaTCPTransport, transport.KafkaSSLTransport)
        )
    )
