"""The way from a synthesized partition to its prover's GPU: delivery into the bounded GPU
channel and the slot threads that take from it.

* ``deliver``: puts synthesized partitions into the channel (with permit_release =
  "delivered", releasing the permit at the moment of entry) once every prover holds the
  partition's key, so whichever slot takes it finds the key loaded;
* one ``slot`` thread per GPU slot: takes a partition from the channel, sends it to its
  device's prover process and waits for the GPU half (the "wrapper" timer); then releases a,
  b, c and z either inline (dealloc = "sync", inside the wrapper) or through the dealloc
  thread (engine.pipeline.finalize). A slot takes nothing from the channel until its prover
  has loaded the key of every unfinished job (engine.pipeline.key_loads), so no wrapper
  contains a key upload; a failed load fails the jobs of that key, with the reason.

The two halves share the channel and the key waits, so they are one class; the prover's own
turn at the GPU (how its slots share the device) is kept inside the prover process
(engine.pipeline.workers).
"""

from __future__ import annotations

import queue

from engine.pipeline import endings, key_loads
from engine.pipeline.channel import ChannelClosed
from engine.pipeline.core import Core
from engine.pipeline.finalize import Finalizer, await_unmapped
from engine.pipeline.messages import GpuDone, ProveTask
from engine.pipeline.records import Part, Setback
from engine.pipeline.supervisor import prover_name
from engine.stream import schema as events


class GpuSlots:
    """The deliver thread and the slot threads of one Engine."""

    def __init__(self, core: Core, finalizer: Finalizer) -> None:
        self._core = core
        self._finalizer = finalizer
        self._deliver_q: queue.Queue[Part | None] = queue.Queue()

    def synthesized(self, p: Part) -> None:
        """Synthesis of ``p`` ended: deliver it (the results thread calls this)."""
        if self._core.config.permit_release == "synthesized":
            # the cuzk bug: the permit goes back before the partition is delivered
            self._enter_waiting(p)
        self._deliver_q.put(p)

    def close(self) -> None:
        """End the deliver thread (the slots end with the channel's close)."""
        self._deliver_q.put(None)

    def _enter_waiting(self, p: Part) -> None:
        def enter() -> None:
            t = self._core.stage(p, "waiting_gpu", "scheduler")
            p.timers.mark("synthesized", t)

        self._core.release_permit(p, enter)

    # -- delivery ------------------------------------------------------------------------------
    def deliver_loop(self) -> None:
        core = self._core
        while True:
            p = self._deliver_q.get()
            if p is None:
                return
            if p.cancelled:
                continue
            attempt = p.attempt
            reason = self._await_key_everywhere(p, attempt)
            if reason is not None:
                endings.fail(core, p, reason)
                continue
            if p.cancelled or p.attempt != attempt or core.closed:
                continue

            def on_enter(item: tuple[Part, int]) -> None:
                part = item[0]
                if not part.cancelled and core.config.permit_release == "delivered":
                    self._enter_waiting(part)

            try:
                core.channel.put(
                    (p, attempt),
                    on_enter,
                    cancelled=lambda: p.cancelled or p.attempt != attempt or core.closed,
                )
            except ChannelClosed:
                return

    def _await_key_everywhere(self, p: Part, attempt: int) -> str | None:
        """Hold a synthesized partition out of the channel until every prover (not given up on)
        has loaded its job's key, so whichever slot takes it finds the key loaded; returns the
        job's key error, if any. Slots also wait (keys_ready), but a slot already blocked in
        channel.get when a new job arrives could otherwise take its partition first."""
        core = self._core
        js = core.records.jobs[p.job]
        names = [prover_name(d) for d in core.devices]
        with core.lock:
            while not (
                js.key_error is not None
                or core.closed
                or p.cancelled
                or p.attempt != attempt
                or all(n in core.workers.broken or core.keys.holds(n, js.key_path)
                       for n in names)
            ):
                core.changed.wait()
            return js.key_error

    # -- slots ---------------------------------------------------------------------------------
    def slot_loop(self, dev: int | None, slot: int) -> None:
        core = self._core
        prover = prover_name(dev)
        label = f"{prover}/{slot}"
        while True:
            with core.lock:
                while not core.closed and not key_loads.keys_ready(core, prover):
                    core.changed.wait()
            if core.closed:
                return
            box: dict[str, Part] = {}

            def on_leave(item: tuple[Part, int]) -> None:
                p, attempt = item
                if p.cancelled or p.attempt != attempt:
                    return
                box["p"] = p
                p.worker = prover
                t = core.stage(p, "gpu", label)
                p.timers.mark("gpu", t)
                p.timers.span("channel_wait", "synthesized", t)

            try:
                core.channel.get(on_leave=on_leave)  # ChannelClosed once stopped
            except ChannelClosed:
                return
            if "p" in box:
                self._run_on_gpu(box["p"], prover, label)

    def _run_on_gpu(self, p: Part, prover: str, label: str) -> None:
        core = self._core
        with core.lock:
            js = core.records.jobs[p.job]

            def ready() -> bool:
                # the prover is up and holds the key; this only waits when the prover died and
                # is restarting after the slot last checked keys_ready (a fault path)
                return (
                    core.closed
                    or prover in core.workers.broken
                    or js.key_error is not None
                    or (prover in core.workers.provers and core.keys.holds(prover, js.key_path))
                )

            while not ready():
                core.changed.wait()
            w = core.workers.provers.get(prover)
            broken = core.workers.broken.get(prover)
        if broken is not None:
            endings.fail(core, p, f"{prover} unavailable: {broken}")
            return
        if js.key_error is not None:
            endings.fail(core, p, js.key_error)
            return
        if w is None or core.closed:
            return
        w.send(ProveTask(p.key, p.preset, js.key_path, p.segs or {}, core.config.b_g2,
                         core.config.abc_eval, core.circuit_cache()))
        p.gpu_done.wait()  # set by the reply, a setback, a cancel or a stop
        if p.cancelled:
            return
        res = p.gpu_result
        if not isinstance(res, GpuDone):
            endings.settle(core, p, res or Setback("no result"))
            return
        timings = res.timings
        p.timers.set("gpu_call", timings.get("gpu_call"))
        p.timers.set("gpu_host", timings.get("gpu_host"))
        p.timers.set("gpu_wait", timings.get("gpu_wait"))
        for k in events.KERNEL_KEYS:
            p.timers.set(k, timings.get(k))
        if core.config.dealloc == "sync":
            t_dealloc = core.stage(p, "deallocating", label)
            self._handoff_timers(p, timings, t_dealloc)
            await_unmapped(p)
            if p.cancelled:
                return
            core.release_buffers(p)
            t_end = core.stage(p, "finalizing", label)
            core.counters.add("dealloc_done")
            p.timers.ms["dealloc"] = (t_end - t_dealloc) * 1000.0
            p.timers.span("gpu_wrapper", "gpu", t_end)
            p.timers.mark("finalizing", t_end)
            self._finalizer.finalize(p)
        else:
            t_end = core.stage(p, "deallocating", label)
            self._handoff_timers(p, timings, t_end)
            p.timers.span("gpu_wrapper", "gpu", t_end)
            self._finalizer.dealloc(p)

    def _handoff_timers(self, p: Part, timings: dict[str, float], t_back: float) -> None:
        """Split the wrapper's time outside the prover's call: gpu_dispatch (the partition left
        the channel -> the prover took its task) and gpu_return (the prover sent gpu_done -> the
        orchestrator acted on it at ``t_back``). The prover stamps both ends with the system-wide
        monotonic clock that the session clock also reads."""
        recv, sent = timings.get("recv_mono"), timings.get("sent_mono")
        origin = self._core.clock.origin
        if recv is not None and "gpu" in p.timers.marks:
            p.timers.set("gpu_dispatch", max(0.0, (recv - origin - p.timers.marks["gpu"]) * 1000.0))
        if sent is not None:
            p.timers.set("gpu_return", max(0.0, (t_back - (sent - origin)) * 1000.0))
