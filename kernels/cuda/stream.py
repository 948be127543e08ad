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
"""

from __future__ import annotations

import threading
from typing import Any

_local = threading.local()


def cupy_module() -> Any:
    """CuPy, imported on first use, so the cuda modules import where CuPy is not installed.
    Every module of kernels/cuda takes it from here."""
    import cupy

    return cupy



def thread_stream() -> Any:
    """The calling thread's CUDA stream on the current device (made on first use)."""
    cp = cupy_module()
    dev = cp.cuda.Device().id
    streams = getattr(_local, "streams", None)
    if streams is None:
        streams = _local.streams = {}
    st = streams.get(dev)
    if st is None:
        st = streams[dev] = cp.cuda.Stream(non_blocking=False)
    return st


def settle() -> None:
    """Wait until the current stream's queued work is done (see the module docstring)."""
    cupy_module().cuda.get_current_stream().synchronize()


def to_host(x: Any) -> Any:
    """A device array's contents as a numpy array, read once the stream has settled."""
    settle()
    return cupy_module().asnumpy(x)
