"""The ``results`` thread: every worker's replies, and the deaths and stalls of workers.

Replies and deaths are acted on by this one thread so that the two never race: a reply or a
worker's death moves a partition to its next stage, or back to the queue. A synthesis
worker's death retries the partitions it held (their segments unlinked, queued again at the
front, up to engine.pipeline.endings.MAX_ATTEMPTS); a prover's death sets back the partitions
in its GPU or finalize half (the slot or finalize thread waiting on them retries them), and the
supervisor (engine.pipeline.supervisor) then restarts it or gives up on it. The thread also
watches each busy worker's CPU time and reports a stalled one (engine.pipeline.stall); with
stall_action = "retry" it kills it, so its partitions run elsewhere.

A class, for what it keeps of its own: the reply queues and the stall watch.
"""

from __future__ import annotations

import queue
from collections.abc import Callable

from engine.pipeline import endings, key_loads
from engine.pipeline.core import Core
from engine.pipeline.messages import (
    AbcUnmapped,
    GpuDone,
    KeyFailed,
    KeyLoaded,
    KeyProgress,
    Proved,
    Ready,
    Reply,
    SynthDone,
    TaskFailed,
    WorkerFailed,
)
from engine.pipeline.records import Part, Setback
from engine.pipeline.replies import Replies
from engine.pipeline.stall import StallWatch
from engine.pipeline.supervisor import Worker

STALL_CHECK_S = 1.0  # how often the results thread looks for stalled workers
RESULTS_POLL_S = 0.1  # how often the results thread, between replies, looks for dead workers


class Results:
    """The results thread of one Engine (``loop`` is its target)."""

    def __init__(self, core: Core, replies: Replies,
                 synthesized: Callable[[Part], None]) -> None:
        """``synthesized`` takes a partition whose synthesis ended on to delivery."""
        self._core = core
        self._replies = replies
        self._synthesized = synthesized
        self._stall = StallWatch(core.config.stall_after_s)

    def loop(self) -> None:
        """Between replies, look for dead workers every RESULTS_POLL_S (a process's death has
        no message) and for stalled ones every STALL_CHECK_S."""
        core = self._core
        next_stall_check = 0.0
        while not core.closed:
            try:
                msg = self._replies.get(timeout=RESULTS_POLL_S)
            except queue.Empty:
                msg = None
            if msg is not None:
                self._handle(msg)
            self._check_workers()
            if core.clock.now() >= next_stall_check:
                next_stall_check = core.clock.now() + STALL_CHECK_S
                self._check_stalls()

    # -- replies -------------------------------------------------------------------------------
    def _handle(self, msg: Reply) -> None:
        core = self._core
        if isinstance(msg, Ready):
            with core.lock:
                core.workers.ready(msg.worker, core.keys.loading(msg.worker))
                core.changed.notify_all()
            return
        if isinstance(msg, (KeyLoaded, KeyFailed)):
            key_loads.key_reply(core, msg)
            return
        if isinstance(msg, KeyProgress):  # a prover generating a key on its device
            core.say(f"{msg.worker}: {msg.line}")
            return
        if isinstance(msg, WorkerFailed):
            core.error(msg.worker, f"worker could not start: {msg.message}")
            with core.lock:
                core.workers.give_up(msg.worker, msg.message)
                core.changed.notify_all()
            return
        with core.lock:
            if isinstance(msg, (SynthDone, TaskFailed, Proved)):
                core.workers.idle(msg.worker, msg.key)
                core.changed.notify_all()
            p = core.records.lookup(msg.key)
        if p is None:
            return
        if isinstance(msg, SynthDone):
            p.timers.set("witness", msg.witness_ms)
            p.timers.set("eval", msg.eval_ms)
            reason = core.records.jobs[p.job].key_error
            if reason is not None:
                endings.fail(core, p, reason)
            else:  # synthesis ended; delivery may wait for the job's key or for the channel
                with core.lock:  # a stop's cancelled stage is never followed by this one
                    if not p.cancelled:
                        core.stage(p, "synthesized", msg.worker)
                self._synthesized(p)
        elif isinstance(msg, GpuDone):
            p.gpu_result = msg
            p.gpu_done.set()
        elif isinstance(msg, AbcUnmapped):
            p.abc_unmapped.set()
        elif isinstance(msg, Proved):
            p.proof_result = msg
            p.proved.set()
        else:
            reason = f"{msg.worker}: {msg.message}"
            core.error(msg.worker, f"job {p.job} partition {p.index}: {msg.message}")
            if p.stage == "synthesizing":
                endings.fail(core, p, reason)
            elif p.stage == "gpu":
                p.gpu_result = Setback(reason)
                p.gpu_done.set()
            else:
                p.proof_result = Setback(reason)
                p.proved.set()

    # -- deaths --------------------------------------------------------------------------------
    def _check_workers(self) -> None:
        core = self._core
        if core.closed or core.stopping and core.idle():
            return
        with core.lock:
            dead = core.workers.reap()
            was_loading = {w.name: core.keys.forget(w.name) for w in dead if w.role == "prover"}
        for w in dead:
            self._worker_died(w, was_loading.get(w.name, False))

    def _worker_died(self, w: Worker, was_loading: bool) -> None:
        """Retry what dead worker ``w`` held, then let the supervisor restart or give up."""
        core = self._core
        how = w.how_it_died()
        with core.lock:
            if w.role == "synth":
                held = [p for k in w.busy if (p := core.records.of_key(k)) is not None]
            else:  # every partition in its GPU half or its finalize half
                held = core.records.on_prover(w.name)
        core.counters.add("worker_deaths")
        core.error(w.name, f"worker pid {w.process.pid} died ({how})")
        for p in held:
            if p.cancelled:
                continue
            why = Setback(f"{w.name} died ({how})", retry=True)
            if w.role == "synth":
                endings.retry(core, p, why.reason)
                continue
            if p.stage == "gpu" and not p.gpu_done.is_set():
                p.gpu_result = why
                p.gpu_done.set()
            elif not p.proved.is_set():
                p.proof_result = why
                p.proved.set()
            p.abc_unmapped.set()  # its mappings went with it
        if core.closed:
            return
        with core.lock:
            core.workers.after_death(w, was_loading)
            core.changed.notify_all()

    # -- stalls --------------------------------------------------------------------------------
    def _held_by(self, w: Worker) -> list[Part]:
        """The partitions whose progress waits on worker ``w`` now (under core.lock)."""
        records = self._core.records
        if w.role == "synth":
            return [p for k in w.busy if (p := records.of_key(k)) is not None]
        return [
            p for p in records.parts.values()
            if p.worker == w.name and not p.cancelled and (
                (p.stage == "gpu" and not p.gpu_done.is_set())
                or (p.stage in ("deallocating", "finalizing") and not p.proved.is_set())
            )
        ]

    def _check_stalls(self) -> None:
        """Report partitions whose worker makes no progress (engine.pipeline.stall); with
        stall_action = "retry" the worker is killed, so its partitions run elsewhere."""
        core = self._core
        if not core.config.stall_after_s or core.stopping:
            return
        with core.lock:
            found = core.workers.stalled(self._stall, self._held_by, core.clock.now())
        for w, held, why in found:
            retry = core.config.stall_action == "retry"
            then = "; killing it, the partition is retried" if retry else ""
            for p in held:
                core.counters.add("stalls")
                core.error(w.name, f"job {p.job} partition {p.index} stalled: {w.name} "
                                   f"(pid {w.process.pid}) {why}{then}")
            if retry:
                core.workers.kill(w)
