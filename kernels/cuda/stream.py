"""Streams, and reading results back to the host without stalling other threads.

Each calling thread gets its own CUDA stream (a blocking one, so it still orders against work
that callers queue on the legacy default stream), so two prover slots and the finalize thread
of one process overlap on the GPU.

A copy from the device into pageable host memory (cupy.asnumpy, int() of a device scalar,
the count inside cupy.flatnonzero) waits for the stream's queued kernels, and holds a lock of
the CUDA context while it waits: every other thread's CUDA call of the process (an event
record, a kernel launch, an upload) stalls behind it. On the H200 a prover slot's first CUDA
call of a partition waited 66-84 ms in 2 to 4 of 12 partitions while the finalize thread read
a G2 MSM's result, and did not once the reads settled first (docs/BENCHMARKS.md, third round). ``settle`` waits for the
stream first, with a stream synchronize that holds no such lock and releases the GIL, so the
copy that follows finds its data ready.

CuPy's memory pool keeps the blocks freed on a stream for that stream: a call on another stream
cannot reuse them, and when the device is full the pool frees every cached block and allocates
again (a device synchronize and fresh allocations on each call). Prover slots that take turns at
the GPU (gpu_calls = "serial") therefore run their calls on one stream shared for the turn
(:func:`turn_stream`), so each call reuses the working set the previous call freed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_local = threading.local()
_shared: dict[tuple[str, int], Any] = {}
_shared_lock = threading.Lock()


def cupy_module() -> Any:
    """CuPy, imported on first use, so the cuda modules import where CuPy is not installed.
    Every module of kernels/cuda takes it from here."""
    import cupy

    return cupy



def thread_stream() -> Any:
    """The calling thread's CUDA stream on the current device (made on first use), or the
    shared stream it has entered with :func:`turn_stream`."""
    shared = getattr(_local, "shared", None)
    if shared is not None:
        return shared
    return _own_stream("streams", non_blocking=False)


def _own_stream(kind: str, non_blocking: bool) -> Any:
    """The calling thread's stream of ``kind`` on the current device, made on first use."""
    cp = cupy_module()
    dev = cp.cuda.Device().id
    streams = getattr(_local, kind, None)
    if streams is None:
        streams = {}
        setattr(_local, kind, streams)
    st = streams.get(dev)
    if st is None:
        st = streams[dev] = cp.cuda.Stream(non_blocking=non_blocking)
    return st


@contextmanager
def turn_stream(name: str = "turn") -> Iterator[Any]:
    """While inside, the calling thread's :func:`thread_stream` is one stream of the current
    device shared by every thread that enters with ``name`` (made on first use). The caller
    keeps the threads inside one at a time (a lock around it): they share the stream's order and
    its blocks in CuPy's memory pool. Work queued on the thread's own stream before (an upload)
    must be done, or waited for, before the shared stream reads it."""
    cp = cupy_module()
    key = (name, cp.cuda.Device().id)
    with _shared_lock:
        st = _shared.get(key)
        if st is None:
            st = _shared[key] = cp.cuda.Stream(non_blocking=False)
    before = getattr(_local, "shared", None)
    _local.shared = st
    try:
        yield st
    finally:
        _local.shared = before


def side_stream() -> Any:
    """The calling thread's second stream on the current device (non-blocking, made on first
    use): for short, latency-bound work queued to run beside its :func:`thread_stream`, ordered
    against it by events only."""
    return _own_stream("sides", non_blocking=True)


def settle() -> None:
    """Wait until the current stream's queued work is done (see the module docstring)."""
    cupy_module().cuda.get_current_stream().synchronize()


def to_host(x: Any) -> Any:
    """A device array's contents as a numpy array, read once the stream has settled."""
    settle()
    return cupy_module().asnumpy(x)
