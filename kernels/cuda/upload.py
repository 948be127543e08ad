"""Uploads of a StoredArray through pinned staging buffers, without mapping the file.

Each calling thread owns two pinned buffers. The file is read with pread into one buffer
while the other is copied to the device asynchronously on the thread's stream; an event per
buffer says when its copy is done and the buffer may be filled again. No call here holds the
CUDA context for long (a pageable copy does), and the host never maps the file's pages.

One thread reads a shared-memory file at about 4 GB/s (H200 host: 1.84 GB in 470 ms, slower
than the driver's pageable copy of a mapping), so each buffer is filled by READERS threads at
once, each reading its own part (pread releases the GIL).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from kernels.cuda.stream import thread_stream
from kernels.stored import StoredArray, read_exact

STAGE_BYTES = 32 << 20
READERS = 4
_local = threading.local()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_H2D = 1  # cudaMemcpyHostToDevice


def _stages() -> list[tuple[np.ndarray, Any]]:
    """This thread's (pinned buffer, event of its last copy) pairs, made on first use."""
    import cupyx

    stages = getattr(_local, "stages", None)
    if stages is None:
        stages = _local.stages = [
            (cupyx.empty_pinned((STAGE_BYTES,), dtype=np.uint8), None) for _ in range(2)
        ]
    return stages


def _readers() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            # enough for two slots reading at once; with more slots, reads queue (still correct)
            _pool = ThreadPoolExecutor(2 * READERS, thread_name_prefix="sealtop-read")
        return _pool


def _fill(fd: int, buf: memoryview, offset: int) -> None:
    """Read len(buf) bytes from ``offset`` into ``buf``, READERS parts at once."""
    part = -(-len(buf) // READERS)
    part = -(-part // 4096) * 4096  # whole pages per reader
    jobs = []
    try:
        for lo in range(0, len(buf), part):
            jobs.append(_readers().submit(read_exact, fd, buf[lo:lo + part], offset + lo))
    finally:
        wait(jobs)  # all of them, even after a failure: the caller closes fd next
    for job in jobs:
        job.result()


def upload_stored(src: StoredArray) -> Any:
    """The array's contents in a new device array (uint64, src.shape), queued on this thread's
    stream: kernels queued after it on the same stream see the data."""
    import cupy as cp

    out = cp.empty(src.shape, dtype=cp.uint64)
    total = src.nbytes
    if total == 0:
        return out
    stream = thread_stream()
    stages = _stages()
    fd = os.open(src.path, os.O_RDONLY)
    try:
        for off in range(0, total, STAGE_BYTES):
            k = min(STAGE_BYTES, total - off)
            i = _local.turn = (getattr(_local, "turn", 0) + 1) % 2  # alternate across calls too
            buf, done = stages[i]
            if done is not None:
                done.synchronize()  # the copy out of this buffer has finished
            _fill(fd, buf.data[:k], off)
            cp.cuda.runtime.memcpyAsync(out.data.ptr + off, buf.ctypes.data, k, _H2D, stream.ptr)
            ev = cp.cuda.Event(disable_timing=True)
            ev.record(stream)
            stages[i] = (buf, ev)
    finally:
        os.close(fd)
    return out
