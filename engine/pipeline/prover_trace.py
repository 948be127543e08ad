"""Where a prover slot's time goes around its GPU call: a diagnostic for wrapper - kernels.

With SEALTOP_PROVER_TRACE set, each prover slot writes one line per partition to stderr,
``prover-trace {json}``. For each step between consecutive stamps (task received, key found,
segments attached or opened, turn at the GPU taken, GPU call returned, gpu_done sent) it gives
the wall time, the slot thread's CPU time and its involuntary context switches: a step whose
wall time exceeds its CPU time was waiting (a lock, the GIL, the scheduler). It also lists the
garbage collector's pauses inside the partition (their count and total, and each of 1 ms or
more), and the GPU's own span from just before the call to just after it (on the call's stream). Off (the default), every function here returns at once.

It found both causes of the last wrapper - kernels gap on the H200 (docs/BENCHMARKS.md): mmaps
that waited on an unmap (wall time with no CPU time), and a pageable copy in the finalize thread
that held the CUDA context (a call longer than the GPU's span).
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import resource
import sys
import threading
import time
from collections import deque
from typing import Any

ENABLED = bool(os.environ.get("SEALTOP_PROVER_TRACE"))
_pauses: deque = deque(maxlen=512)  # (perf_counter at start, ms, generation)
_gc_started: dict[int, float] = {}


def _on_gc(phase: str, info: dict) -> None:
    me = threading.get_ident()
    if phase == "start":
        _gc_started[me] = time.perf_counter()
    elif (t := _gc_started.pop(me, None)) is not None:
        _pauses.append((t, (time.perf_counter() - t) * 1000.0, info.get("generation")))


def install() -> None:
    """Start recording GC pauses in this process (when tracing)."""
    if ENABLED and _on_gc not in gc.callbacks:
        gc.callbacks.append(_on_gc)


class SlotTrace:
    """The stamps of one partition in one slot thread."""

    def __init__(self, key: Any) -> None:
        self.key = key
        self.points: list[tuple[str, float, float, int]] = []
        self.extra: dict[str, Any] = {}

    def stamp(self, name: str) -> None:
        if ENABLED:
            ru = resource.getrusage(resource.RUSAGE_THREAD)
            self.points.append((name, time.perf_counter(), time.thread_time(), ru.ru_nivcsw))

    def emit(self) -> None:
        if not ENABLED or len(self.points) < 2:
            return
        t_first, t_last = self.points[0][1], self.points[-1][1]
        steps = {
            b[0]: {"ms": round((b[1] - a[1]) * 1e3, 2), "cpu_ms": round((b[2] - a[2]) * 1e3, 2),
                   "preempted": b[3] - a[3]}
            for a, b in zip(self.points, self.points[1:])
        }
        inside = [(t, ms, g) for t, ms, g in list(_pauses) if t_first <= t <= t_last]
        gc_line = {
            "count": len(inside),
            "ms": round(sum(ms for _, ms, _ in inside), 2),
            "long": [{"at_ms": round((t - t_first) * 1e3, 1), "ms": round(ms, 2), "gen": g}
                     for t, ms, g in inside if ms >= 1.0],
        }
        key = self.key  # a PartKey (a dataclass: not iterable) or a tuple
        if dataclasses.is_dataclass(key) and not isinstance(key, type):
            key = dataclasses.astuple(key)
        line = {"key": list(key), "thread": threading.current_thread().name, "steps": steps,
                "gc": gc_line, **self.extra}
        try:
            print("prover-trace " + json.dumps(line), file=sys.stderr, flush=True)
        except (OSError, ValueError):  # stderr gone: a diagnostic must not fail the partition
            pass
