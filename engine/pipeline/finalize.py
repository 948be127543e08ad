"""The last stages of a partition, after its GPU half: dealloc and finalize.

* ``dealloc`` (with dealloc = "async"; "sync" does the same inside the GPU slot's wrapper):
  waits until the prover has let go of a, b and c, unlinks the partition's segments and
  returns its budget bytes, then hands it to finalize;
* ``finalize`` (two threads): waits for the proof, verifies it against the statement derived
  from the job (never the prover's z), ends the partition in ``done`` with its timings and
  closes the job once every partition has ended (engine.pipeline.endings).

Buffers are released before finalization (the prover no longer needs them once its GPU half is
done), so "holding a/b/c" is exactly the stages synthesizing..deallocating. A class, for the two
queues its threads read.
"""

from __future__ import annotations

import queue

from engine.pipeline import endings, proving
from engine.pipeline.core import Core
from engine.pipeline.messages import Proved
from engine.pipeline.records import Part, Setback
from engine.stream import schema as events

FINALIZERS = 2  # finalize threads: a proof's verification waits on no other's


def await_unmapped(p: Part, limit_s: float = 60.0) -> None:
    """Wait until the prover has let go of a, b and c (a cpu prover unmaps them right after
    gpu_done, in its own unmap thread; a GPU prover never maps them, and says so through
    the same thread, behind any unmap queued before), so that the unlink that follows is
    what returns the pages and the dealloc interval holds the whole cost of freeing them.
    A stop, a cancel and the prover's death also set the event (a dead prover's mappings
    are gone with it); ``limit_s`` bounds the wait in any case."""
    p.abc_unmapped.wait(limit_s)


class Finalizer:
    """The dealloc thread and the finalize threads of one Engine."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._dealloc_q: queue.Queue[Part | None] = queue.Queue()
        self._finalize_q: queue.Queue[Part | None] = queue.Queue()

    def dealloc(self, p: Part) -> None:
        """Hand a partition in stage ``deallocating`` to the dealloc thread."""
        self._dealloc_q.put(p)

    def finalize(self, p: Part) -> None:
        """Hand a partition in stage ``finalizing`` to a finalize thread."""
        self._finalize_q.put(p)

    def close(self) -> None:
        """End the dealloc and finalize threads once they reach the end of their queues."""
        self._dealloc_q.put(None)
        for _ in range(FINALIZERS):
            self._finalize_q.put(None)

    def dealloc_loop(self) -> None:
        core = self._core
        while True:
            p = self._dealloc_q.get()
            if p is None:
                return
            if p.cancelled:
                continue
            t0 = core.clock.now()
            await_unmapped(p)
            if p.cancelled:
                continue
            core.release_buffers(p)
            t1 = core.clock.now()
            p.timers.ms["dealloc"] = (t1 - t0) * 1000.0
            core.counters.add("dealloc_done")
            t = core.stage(p, "finalizing", "dealloc")
            p.timers.mark("finalizing", t)
            self._finalize_q.put(p)

    def finalize_loop(self) -> None:
        core = self._core
        while True:
            p = self._finalize_q.get()
            if p is None:
                return
            p.proved.wait()  # set by the proof, a setback, a cancel or a stop
            if p.cancelled or core.closed:
                continue
            res = p.proof_result
            if not isinstance(res, Proved):
                endings.settle(core, p, res or Setback("no proof"))
                continue
            p.timers.set("b2", res.b2_ms)
            proof = res.proof
            with core.lock:
                js = core.records.jobs[p.job]
            try:  # the verifier's inputs come from the job (seeds, graph), not the prover's z
                public = js.circuit.public_inputs(js.job.seed, p.index, js.job.partitions,
                                                  js.job.source)
            except Exception:  # a statement that cannot be derived verifies nothing
                public = []
            ok = proving.verify(js.vk, public, proof)
            with core.lock:
                if p.cancelled:
                    continue
                t = core.stage(p, "done", "finalize")
            p.timers.span("finalize", "finalizing", t)
            ms = {k: v for k, v in p.timers.ms.items() if k in events.TIMER_KEYS}
            held = p.nbytes
            core.emit(lambda t: events.partition_timings(t, p.job, p.index, ms, held))
            core.counters.add("partitions_done")
            with core.lock:
                js.proofs[p.index] = proof
                js.verified[p.index] = ok
            endings.finish_job(core, p.job)
