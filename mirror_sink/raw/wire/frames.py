"""Response frames in reused buffers: a Fetch response's bytes land in memory that is already paged in.

A fresh ``bytearray`` per response costs more than the copy into it: the allocator hands out fresh
pages and ``bytearray`` zero-fills them (8-11% of a 1 GB copy's py-spy samples, docs/benchmarks-notes.md). ``FramePool``
keeps the buffers of released frames by size class and hands them to the next response of a similar
size, neither zeroed nor faulted in again.

A buffer may go back only when no view of it is left, since queued batches are views of their
response (``mirror_sink.raw.wire.receive``). Each frame is therefore a fresh ``ctypes`` array laid over a
pooled buffer: the array is the views' exporter, so it lives exactly as long as any view does, and
its finalizer returns the buffer, as ``weakref.finalize`` of the frame gave memory back before. A
buffer is also checked to have no export left before it is reused (a resize, which Python refuses
while any view of it exists), so a view that outlived its frame in some path never sees its bytes
change.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections import deque
from typing import Any

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
    a view of it (a small part, a copy), as ``mirror_sink.raw.wire.receive`` does for kafka-python's own
    frames."""

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
