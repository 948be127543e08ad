"""An MSM's ends beside the next MSM: the bucket sums, the window reduction and the one-thread
finish (small kernels whose time is latency, not work) queued on the calling thread's side
stream (kernels/cuda/stream.py side_stream), after an event on its own, so that the next MSM's
kernels fill the card meanwhile. msm.msm takes an :class:`Ends` to do so. Nothing in them makes
the host wait: the heavy buckets are planned before the accumulation, and one GPU thread
combines the windows (where inline the host does, msm.HOST_FINISH).

The CUDA backend passes one for every MSM on device scalars and joins it when a result is
fetched (SEALTOP_MSM_ENDS=inline keeps them in line). A pipeline's witness MSMs spent ~39 ms a
partition in their ends on the H200 and H's ~31 ms (docs/BENCHMARKS.md, twelfth round); beside,
H's MSM took 579 ms against 622 on the card's timeline and the partition 1.045 s against 1.071
(thirteenth round).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from kernels.cuda.stream import cupy_module as _cp

ENDS = os.environ.get("SEALTOP_MSM_ENDS", "side")


@dataclass
class Ends:
    """MSMs whose ends were queued on the calling thread's side stream: each entry is the event
    that marks its ends done and the blocks of the caller's stream they read, kept from reuse
    until then. :meth:`join` makes the
    current stream wait for them all, so their results are ready there, and hands back the kept
    blocks: drop them once that stream has synchronized (or where only that stream reuses them)."""

    pending: list[tuple[Any, list[Any]]] = field(default_factory=list)

    def __del__(self) -> None:
        # dropped unjoined (a handle whose results were never read): the kept blocks go back to
        # the pool only once the ends that read them are done
        for done, _ in self.pending:
            try:
                done.synchronize()
            except Exception:  # the context is gone (interpreter exit): nothing to reuse them
                break

    def release_done(self) -> None:
        """Let go of the blocks of MSMs whose ends have run (their events complete): the next
        MSM may reuse them (H's work items are ~2 GB at porep-32g)."""
        self.pending = [(done, [] if done.done else keep) for done, keep in self.pending]

    def join(self) -> list[Any]:
        cur = _cp().cuda.get_current_stream()
        held = []
        for done, keep in self.pending:
            cur.wait_event(done)
            held.append(keep)
        self.pending.clear()
        return held
