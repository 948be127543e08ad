"""The ``admit`` thread: admission of queued partitions and the dispatch of their synthesis.

It takes queued partitions in order, waits for admission (a partition permit, the memory
budget, not paused: engine.pipeline.scheduler), reads or makes the job's input
(engine.pipeline.job_inputs, the next job's ahead), creates the partition's shared-memory
segments and hands it to an idle synthesis worker process, starting one while the pool is
smaller than the admission limit. With a memory budget, synthesis workers start only here, as
partitions are admitted, so idle workers never hold memory the budget did not admit.

A class, for the one thing it keeps of its own: the job inputs made ahead.
"""

from __future__ import annotations

from typing import Any

from engine.pipeline import endings
from engine.pipeline.core import Core
from engine.pipeline.job_inputs import JobInputs, one_line
from engine.pipeline.messages import SynthTask
from engine.pipeline.records import Part
from engine.pipeline.scheduler import AdmissionClosed
from engine.synthesis import compact_layout


class Admitter:
    """The admit thread of one Engine (``loop`` is its target)."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._inputs = JobInputs()  # each job's input made once, the next one's ahead

    def loop(self) -> None:
        core = self._core
        pending = core.records.pending
        while True:
            with core.lock:
                while not pending and not core.closed:
                    core.changed.wait()
                if core.closed:
                    return
                p = pending[0]

            def on_admit(p: Part = p) -> None:
                p.permit = True
                p.reserved = True

            try:
                with core.lock:
                    # pop now so a retried partition can go to the front meanwhile
                    if not pending or pending[0] is not p:
                        continue
                    pending.popleft()
                core.admission.acquire(p.nbytes, on_admit)  # AdmissionClosed once stopped
                if p.cancelled or not p.permit:
                    continue
            except AdmissionClosed:
                return
            with core.lock:
                js, after = core.records.jobs[p.job], core.records.jobs.get(p.job + 1)
            if js.key_error is not None:
                endings.fail(core, p, js.key_error)
                continue
            self._inputs.look_ahead(after)
            t = core.clock.now()
            try:
                inputs = self._inputs.partition(js, p.index)
            except Exception as exc:  # the job's input cannot be read or made: one line
                endings.fail(core, p, one_line(exc))
                continue
            if inputs is not None:
                p.timers.set("inputs", (core.clock.now() - t) * 1000.0)
            self._dispatch(p, inputs)

    def _dispatch(self, p: Part, inputs: Any = None) -> None:
        """Give ``p`` its segments and an idle synthesis worker (started if the pool may grow)."""
        core = self._core
        with core.lock:
            while not core.workers.idle_synth and not core.closed:
                if core.workers.live_synth() < core.admission.limit:
                    core.spawn_synth()
                    break
                core.changed.wait()
            if core.closed:
                return
            w = core.workers.idle_synth.popleft()
            js = core.records.jobs[p.job]
            m, n = js.circuit.r1cs.num_constraints, js.circuit.r1cs.num_vars
            tag = p.key.tag()
            if core.config.abc_eval == "gpu":  # the compact witness alone (engine.synthesis)
                p.segs = {"w": core.segments.create(tag + "w", (compact_layout(js.circuit).words,))}
            else:
                p.segs = {
                    "a": core.segments.create(tag + "a", (m, 4)),
                    "b": core.segments.create(tag + "b", (m, 4)),
                    "c": core.segments.create(tag + "c", (m, 4)),
                    "z": core.segments.create(tag + "z", (n, 4)),
                }
            core.counters.add("synth_started")
            core.counters.add("holding_abc")
            p.worker = w.name
            w.busy.add(p.key)
            t = core.stage(p, "synthesizing", w.name)
            p.timers.mark("synthesizing", t)
            p.timers.span("queue", "queued", t)
            w.send(SynthTask(p.key, p.preset, core.circuit_cache(), p.seed, js.job.partitions,
                             p.segs, core.config.abc_eval, js.job.source, inputs))
