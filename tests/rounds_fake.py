"""A stand-in for CuPy and the device kernels, for running kernels/cuda/msm_rounds.py and
kernels/cuda/batch_inverse.py on the host (tests/test_cuda_host_rounds.py).

Arrays are numpy arrays; a kernel launch calls the host build of its kernel
(kernels/cuda/msm/host_rounds.cpp: ``host_<name>(threads, order, args...)``, the threads in a
random one of three orders). Streams are queues: a launch, an event record or an event wait is
queued on its stream (so are argsort, ascontiguousarray and take, whose outputs hold zeros until
their stream runs them), and ``drain`` runs the queues in a random interleaving that keeps each
stream's order and every wait behind the record it waits for, so a missing wait shows up as
wrong results (or a deadlock for a wait on a record never made)."""

from __future__ import annotations

import ctypes
import random
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
from host_build import ctype_arg


class _Token:
    done = False


class Sched:
    """The streams of one fake device."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.streams: list[FakeStream] = []
        self.main = FakeStream(self)
        self.stack: list[FakeStream] = [self.main]
        self.launches: list[str] = []

    def current(self) -> FakeStream:
        return self.stack[-1]

    def drain(self) -> None:
        while True:
            ready = [s for s in self.streams if s.q and (s.q[0][0] != "wait" or s.q[0][1] is None or s.q[0][1].done)]
            if not ready:
                if any(s.q for s in self.streams):
                    raise RuntimeError("deadlock: every queued stream waits on an event never recorded")
                return
            kind, arg = self.rng.choice(ready).q.popleft()
            if kind == "record":
                arg.done = True
            elif kind == "run":
                arg()


class FakeStream:
    def __init__(self, sched: Sched, **_: Any) -> None:
        self.sched = sched
        self.q: deque[tuple[str, Any]] = deque()
        sched.streams.append(self)

    def __enter__(self) -> FakeStream:
        self.sched.stack.append(self)
        return self

    def __exit__(self, *_: Any) -> None:
        self.sched.stack.pop()

    def wait_event(self, ev: FakeEvent) -> None:
        self.q.append(("wait", ev.token))

    def record(self, ev: FakeEvent | None = None) -> FakeEvent:
        ev = ev or FakeEvent(self.sched)
        ev.record(self)
        return ev

    def synchronize(self) -> None:
        self.sched.drain()


class FakeEvent:
    def __init__(self, sched: Sched, **_: Any) -> None:
        self.sched = sched
        self.token: _Token | None = None

    def record(self, stream: FakeStream | None = None) -> None:
        self.token = _Token()
        (stream or self.sched.current()).q.append(("record", self.token))


def _queued(sched: Sched, fn: Callable[..., Any], shape: Callable[..., tuple[Any, Any]]) -> Callable[..., np.ndarray]:
    """fn as a kernel queued on the current stream: the output is allocated at once (zeros, as
    unwritten pool memory might hold) and filled when the stream runs the kernel, from the inputs
    as they are then; a stream that reads it without waiting for that reads the zeros."""

    def call(*args: Any, **kw: Any) -> np.ndarray:
        shp, dtype = shape(*args, **kw)
        out = np.zeros(shp, dtype)

        def run() -> None:
            out[...] = fn(*args, **kw)

        sched.current().q.append(("run", run))
        return out

    return call


def fake_cupy(sched: Sched) -> Any:
    """A module-like object with the parts of CuPy that the rounds driver uses."""

    class cuda:  # noqa: N801 (CuPy's name)
        @staticmethod
        def Stream(**kw: Any) -> FakeStream:  # noqa: N802
            return FakeStream(sched, **kw)

        @staticmethod
        def Event(**kw: Any) -> FakeEvent:  # noqa: N802
            return FakeEvent(sched, **kw)

        @staticmethod
        def get_current_stream() -> FakeStream:
            return sched.current()

    class cp:
        uint8, uint32, uint64, int32 = np.uint8, np.uint32, np.uint64, np.int32
        empty, zeros, bincount, arange, minimum = (staticmethod(f) for f in (np.empty, np.zeros, np.bincount, np.arange, np.minimum))
        # kernels on the current stream: their outputs read zeros until the stream gets to them
        argsort = staticmethod(_queued(sched, np.argsort, lambda a: (a.shape, np.intp)))
        ascontiguousarray = staticmethod(_queued(sched, np.ascontiguousarray,
                                                 lambda a, dtype=None: (a.shape, dtype or a.dtype)))
        take = staticmethod(_queued(sched, np.take, lambda a, idx: (np.shape(idx), a.dtype)))

    cp.cuda = cuda  # type: ignore[attr-defined]
    return cp


def fake_kernel(sched: Sched, lib: ctypes.CDLL) -> Callable[[str, str], Any]:
    """kernel(module, name) for the host library: a launch is queued on the current stream."""

    def kernel(module: str, name: str) -> Any:
        fn = getattr(lib, "host_" + name)

        def launch(grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...], **_: Any) -> None:
            keep = tuple(args)  # the arrays stay alive until the launch runs
            order = sched.rng.randrange(3)
            threads = int(np.prod(grid)) * int(np.prod(block))

            def run() -> None:
                fn(ctypes.c_uint32(threads), ctypes.c_int(order), *(ctype_arg(a) for a in keep))

            sched.launches.append(name)
            sched.current().q.append(("run", run))

        return launch

    return kernel
