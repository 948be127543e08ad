"""The Engine: the orchestrator of the proving pipeline, behind design.md's Engine API.

    eng = Engine(config); q = eng.subscribe(); eng.start()
    eng.submit(Job("chain-1024", partitions=2)); ...; eng.stop(drain=True)

This module holds the API (submit, the live knobs and the policies, pause, idle, stop) and the
engine's life: it builds the orchestrator's parts, starts the worker processes and the parts'
threads, and stops them all. The orchestrator runs in the engine's own threads, in the calling
process, each part in a module of its own:

* ``admit`` (engine.pipeline.admit): takes queued partitions in order, waits for admission
  (a partition permit, memory budget, not paused), creates the partition's shared-memory
  segments and hands it to an idle synthesis worker process;
* ``results`` (engine.pipeline.results): reads every worker's replies and acts on them, and
  on dead and stalled workers: a dead worker's partitions are retried;
* ``deliver`` and one ``slot`` thread per GPU slot (engine.pipeline.gpu_slots): synthesized
  partitions go through the bounded GPU channel to their device's prover, once every prover
  holds the partition's key;
* ``dealloc`` and ``finalize`` (engine.pipeline.finalize): a, b, c and z are released, the
  proof is verified, and the partition and its job are closed;
* the sampler (engine.telemetry.sampler).

The parts share one state, not one class: each is a small class or plain functions over the
Core (engine.pipeline.core: the records, keys and workers under one lock, the event hub)
rather than a mixin of the Engine, so each module reads in one sitting, without the API, and
what one part asks of another is a call by name (the results thread hands a synthesized
partition to the GPU slots, a slot hands it to dealloc or finalize). How partitions and jobs
end (a retry, a failure, a cancellation, proof_done) is engine.pipeline.endings, the
orchestrator's half of the key protocol engine.pipeline.key_loads, the worker processes
engine.pipeline.supervisor. The appliers of the live knobs stay methods here: the settings
table names them (engine/settings.py, ``Knob.apply``). A stop that does not drain ends every
unfinished partition in ``cancelled`` (never ``failed``), and a job with a cancelled partition
gets no proof_done.

Stage order of a partition: queued → synthesizing → synthesized (the worker's reply; delivery
waits for the job's key on every prover and for room) → waiting_gpu → gpu → deallocating →
finalizing → done. Buffers are released before finalization (the prover no longer needs them
once its GPU half is done), so "holding a/b/c" is exactly the stages synthesizing..deallocating
and design.md's bound can be checked on the stage events alone.
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import queue
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from engine import settings
from engine.config import EngineConfig, check_knob, check_policy, validate_config
from engine.pipeline import endings, key_loads
from engine.pipeline.admit import Admitter
from engine.pipeline.channel import BoundedChannel
from engine.pipeline.circuits import resolve
from engine.pipeline.core import Core
from engine.pipeline.finalize import FINALIZERS, Finalizer
from engine.pipeline.gpu_slots import GpuSlots
from engine.pipeline.hub import EventHub
from engine.pipeline.latency import quicken_handoffs
from engine.pipeline.placement import Placement, host_plan
from engine.pipeline.records import Job, JobRecord, Part
from engine.pipeline.replies import Replies
from engine.pipeline.results import Results
from engine.pipeline.scheduler import Admission
from engine.pipeline.shm import SegmentRegistry, sweep_stale, sweep_stale_semaphores
from engine.pipeline.supervisor import Supervisor, Worker, WorkerMains
from engine.stream import schema as events
from engine.telemetry.counters import Counters
from engine.telemetry.memory import host_info
from engine.telemetry.nvml import gpu_list
from engine.telemetry.sampler import Sampler
from engine.telemetry.timers import SessionClock
from engine.warmup import ensure_warm
from kernels.backend import BackendUnavailable, backend_class, pick_backend

__all__ = ["Engine", "EngineError", "Job"]

STARTUP_WAIT_S = 120.0  # start() waits at most this long for the workers to come up


class EngineError(RuntimeError):
    """A misuse of the Engine API (submit before start, after stop, ...)."""


class Engine:
    """The embedded multi-process proving engine (design.md, "The Engine API")."""

    def __init__(
        self,
        config: EngineConfig,
        progress: Callable[[str], None] | None = None,
        *,
        mains: WorkerMains | None = None,
    ):
        """``progress`` receives lines about long preparations (setup of a missing key).
        The engine keeps its own copy of ``config``: live knob changes never reach the caller's.
        Every field is checked as the config file's keys are (ConfigError, one line).
        ``mains`` replaces the worker processes' entry points; production never sets it (tests
        inject faults through it, inside the real worker processes)."""
        self.config = validate_config(config)
        config = self.config
        self.clock = SessionClock()
        self.counters = Counters()
        self.segments = SegmentRegistry()
        self._ctx = mp.get_context("spawn")
        self._knob_lock = threading.Lock()  # one knob change at a time: old values agree
        self._hub = EventHub(self.clock)
        self._replies = Replies(self._ctx)  # a reply queue per worker (engine.pipeline.replies)
        self._threads: list[threading.Thread] = []
        self._started = False
        self._backend = self._pick_backend()
        on_device = backend_class(self._backend).is_device  # keys go up to a device
        devices: list[int | None] = list(config.devices) if on_device and config.devices else [None]
        self.admission = Admission(config.partition_workers, config.memory_budget)
        self.channel = BoundedChannel(config.gpu_channel_capacity)
        self._sampler: Sampler | None = None
        self._workers = Supervisor(
            self._ctx, self._replies, self._backend, config.gpu_slots_per_device,
            self._synth_threads, self._prover_started, self._gave_up, mains,
            synth_cpus=self._synth_cpus, prover_cpus=self._prover_cpus,
            gpu_calls=config.gpu_calls,
        )
        self.placement: Placement | None = None  # set by start() (numa_placement = "auto")
        self._hurry = False  # a second stop signal: do not wait for workers to exit
        self._core = Core(config, self._hub, self.counters, self.segments, self._workers,
                          self.admission, self.channel, devices, on_device, progress)
        self._admitter = Admitter(self._core)
        self._finalizer = Finalizer(self._core)
        self._slots = GpuSlots(self._core, self._finalizer)
        self._results = Results(self._core, self._replies, self._slots.synthesized)

    @property
    def progress(self) -> Callable[[str], None] | None:
        """Where lines about long preparations go; a caller may set it after construction."""
        return self._core.progress

    @progress.setter
    def progress(self, fn: Callable[[str], None] | None) -> None:
        self._core.progress = fn

    # -- events ------------------------------------------------------------------------------
    def subscribe(self) -> queue.Queue[dict[str, Any]]:
        """A new thread-safe queue that receives every event from now on (engine.pipeline.hub:
        stream order and t order agree)."""
        return self._hub.subscribe()

    # -- lifecycle ---------------------------------------------------------------------------
    def _pick_backend(self) -> str:
        """The backend the config's choice runs on here (``auto``: a device where there is one)."""
        try:
            return pick_backend(self.config.backend)
        except BackendUnavailable as exc:
            raise EngineError(f"backend = \"{self.config.backend}\" but {exc}") from None

    def start(self) -> None:
        """Start worker processes, orchestrator threads and the sampler; emits session_start."""
        if self._started:
            raise EngineError("engine already started")
        self._started = True
        core = self._core
        self._switch_before = sys.getswitchinterval()  # restored by stop()
        switch_s = quicken_handoffs()
        self._sweep_leftovers()
        ensure_warm(self.progress)  # compile once here, not in every worker at once
        gpus = gpu_list()
        cfg = self.config.to_dict()
        cfg["backend_in_use"] = self._backend
        cfg["switch_interval_ms"] = switch_s * 1000.0
        wall = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        core.emit(lambda t: events.session_start(t, cfg, host_info(), gpus, wall))
        if self.config.abc_eval == "gpu" and not core.on_device:
            core.say('abc_eval = "gpu" on the cpu backend: synthesis sends the compact witness '
                     "and the prover process evaluates a, b, c on the CPU (there is no device)")
        self.placement = host_plan(core.devices, self.config.numa_placement)
        if self.placement is not None and self.placement.nodes > 1:
            core.say(self.placement.describe())
        self._workers.open()
        with core.lock:
            # With a memory budget, synthesis workers start only as partitions are admitted
            # (engine.pipeline.admit), so idle workers never hold memory the budget did not admit.
            upfront = 1 if self.config.memory_budget else self.config.partition_workers
            for _ in range(upfront):
                core.spawn_synth()
            for dev in core.devices:
                self._workers.spawn_prover(dev)
        self._thread(self._admitter.loop, "admit")
        self._thread(self._results.loop, "results")
        self._thread(self._slots.deliver_loop, "deliver")
        self._thread(self._finalizer.dealloc_loop, "dealloc")
        for i in range(FINALIZERS):
            self._thread(self._finalizer.finalize_loop, f"finalize{i}")
        for dev in core.devices:
            for s in range(self.config.gpu_slots_per_device):
                self._thread(self._slots.slot_loop, f"slot-{dev}-{s}", args=(dev, s))
        self._sampler = Sampler(
            self.config.sample_interval_s,
            self.clock.now,
            self._hub.publish,
            self._process_list,
            self.segments.live_bytes,
            self.counters.snapshot,
            [d for d in core.devices if d is not None],
        )
        self._sampler.sample_now()
        atexit.register(self._at_exit)
        self._await_workers()
        # a sample of the started, warm processes before any partition exists: the memory
        # baseline that engine.stream.summary.baseline_rss_anon reads
        self._sampler.sample_now()
        self._sampler.start()

    def _await_workers(self, timeout: float = STARTUP_WAIT_S) -> None:
        """Wait until every worker has started (or died, or given up), so the first
        partition's timers and the memory baseline do not include process start-up."""
        deadline = self.clock.now() + timeout
        with self._core.lock:
            while self._workers.starting():
                left = deadline - self.clock.now()
                if left <= 0:
                    return
                self._core.changed.wait(left)

    def _sweep_leftovers(self) -> None:
        """Unlink what dead orchestrators left: segments with our prefix whose pid is gone, and
        multiprocessing semaphores that no live process maps. Says what it swept."""
        segs = sweep_stale()
        sems = sweep_stale_semaphores()
        if segs:
            self.counters.add("stale_segments_swept", len(segs))
        if sems:
            self.counters.add("stale_semaphores_swept", len(sems))
        if segs or sems:
            self._core.say(f"swept what dead runs left: {len(segs)} shared-memory segment(s), "
                           f"{len(sems)} semaphore(s)")

    def hurry(self) -> None:
        """Stop now: a stop in progress kills the workers instead of waiting for them (a second
        stop signal). The session is still completed."""
        self._hurry = True
        with self._core.changed:  # reentrant: a signal handler may run in a thread that holds it
            self._core.changed.notify_all()

    def sample_now(self) -> dict[str, Any] | None:
        """Emit a sample now (memory, counters) and return it; None before start. A farm host
        takes one as each job ends, so its last sample counts every job it finished."""
        return self._sampler.sample_now() if self._sampler is not None else None

    def _at_exit(self) -> None:
        """A program that forgets stop() still leaves no worker and no segment behind."""
        if self._started and not self._core.closed:
            self.stop(drain=False)

    def _thread(self, target: Callable[..., None], name: str, args: tuple[Any, ...] = ()) -> None:
        t = threading.Thread(target=target, args=args, name=f"sealtop-{name}", daemon=True)
        t.start()
        self._threads.append(t)

    # -- what the supervisor asks of the engine ----------------------------------------------
    def _synth_threads(self) -> int:
        """Numba threads per synthesis worker: a share of the cores each (at least one), so N
        workers do not oversubscribe the cores."""
        return max(1, (os.cpu_count() or 1) // max(1, self.config.partition_workers))

    def _synth_cpus(self, n: int) -> tuple[int, ...] | None:
        """The CPUs of the n-th synthesis worker: its GPU's share of its NUMA node (placement
        off: None, unbound)."""
        return self.placement.worker_cpus(n) if self.placement is not None else None

    def _prover_cpus(self, dev: int | None) -> tuple[int, ...] | None:
        """The CPUs of device ``dev``'s prover: its NUMA node's (None: unbound)."""
        return self.placement.prover_cpus(dev) if self.placement is not None else None

    def _prover_started(self, w: Worker) -> None:
        """A new (or restarted) prover loads the key of every unfinished job first."""
        key_loads.prover_started(self._core, w)

    def _gave_up(self, w: Worker, reason: str) -> None:
        self._core.changed.notify_all()
        self._core.error(w.name, f"giving up on {w.name}: {reason}")

    def _process_list(self) -> list[tuple[int, str]]:
        with self._core.lock:
            return [(os.getpid(), "orchestrator")] + self._workers.process_list()

    def worker_pids(self) -> dict[str, int]:
        """name → pid of every live worker process (for operators and fault tests)."""
        return {name: pid for pid, name in self._process_list()[1:]}

    # -- API ---------------------------------------------------------------------------------
    def submit(self, job: Job) -> int:
        """Queue a job's partitions; returns the job id. Raises EngineError/ValueError if the job
        cannot run (unknown preset, a partition bigger than the memory budget)."""
        core = self._core
        if not self._started or core.stopping:
            raise EngineError("submit needs a started engine that is not stopping")
        circuit = resolve(job.preset, core.circuit_cache())
        circuit.check_partitions(job.partitions)
        nbytes = circuit.partition_bytes(self.config.abc_eval)
        if not self.admission.fits(nbytes):
            raise ValueError(
                f"a partition of {job.preset} holds {nbytes} bytes, more than the memory budget "
                f"of {self.admission.budget} bytes"
            )
        from engine.c2.preset import PRESETS as C2_PRESETS

        params = self.config.filecoin_params if job.preset in C2_PRESETS else ""
        key = core.keys.ensure(job.preset, circuit, self.config.param_cache_path(),
                               self._backend, self.progress, self.config.damaged_key,
                               self.config.devices, self.config.gpu_slots_per_device, params,
                               self.config.gpu_calls)
        jid = core.records.next_id()
        t = core.emit(
            lambda t: events.job_submitted(t, jid, job.preset, job.partitions, circuit.constraints,
                                           nbytes)
        )
        with core.lock:
            js = JobRecord(jid, job, circuit, key.source, key.vk, t)
            core.records.add_job(js)
            for w in self._workers.provers.values():
                key_loads.request_key(core, w, js.key_path, job.preset)
            for i in range(job.partitions):
                p = Part(jid, i, job.preset, job.seed, nbytes)
                core.records.parts[(jid, i)] = p
                self.counters.add("partitions_submitted")
                tq = core.stage(p, "queued", "scheduler")
                p.timers.mark("queued", tq)
                core.records.pending.append(p)
            core.changed.notify_all()
        return jid

    def set_knob(self, name: str, value: Any, source: str = "operator") -> None:
        """Change a live knob of the settings table (engine/settings.py) while running: its
        check, its guard, the knob event, the config's value, then its applier."""
        value = check_knob(name, value)
        knob = settings.knob_of(name)
        if knob.guard:
            getattr(self, knob.guard)(value)
        with self._knob_lock:
            # the event goes out before the change takes effect, so no stage it allows (a new
            # synthesis, a fuller channel) precedes it in the stream
            old = getattr(self.config, name)
            self._core.emit(lambda t: events.knob(t, name, old, value, source))
            setattr(self.config, name, value)
            getattr(self, knob.apply)(value)

    # the appliers and guards the settings table names for its live knobs

    def _apply_workers(self, value: int) -> None:
        self.admission.resize(value)
        with self._core.lock:
            self._core.changed.notify_all()

    def _apply_channel(self, value: int) -> None:
        self.channel.resize(value)

    def _apply_budget(self, value: int) -> None:
        self.admission.set_budget(value)

    def _guard_budget(self, value: int) -> None:
        """A budget (0 is none) must hold the largest partition not yet ended."""
        if not value:
            return
        with self._core.lock:
            need = max((p.nbytes for p in self._core.records.unended()), default=0)
        if value < need:
            raise ValueError(
                f"memory_budget {value} is smaller than one queued partition ({need} bytes)"
            )

    def set_policy(self, name: str, value: str, source: str = "operator") -> None:
        """Change permit_release or dealloc between jobs: a benchmark's variants run in one
        engine that keeps its keys (at a 32 GiB sector a device key takes minutes to make).
        Refused while a job is in flight, whose permits and buffers follow the policy they were
        admitted under. A ``knob`` event records the change."""
        value = check_policy(name, value)
        with self._core.lock:
            busy = len(self._core.records.unended())
            if busy:
                raise ValueError(f"{name} changes only between jobs ({busy} partition(s) in flight)")
            old = getattr(self.config, name)
            setattr(self.config, name, value)
        self._core.emit(lambda t: events.knob(t, name, old, value, source))

    def pause(self) -> None:
        """Stop admitting new syntheses; in-flight partitions continue."""
        if not self.admission.paused:
            self.admission.pause()
            self._core.emit(lambda t: events.knob(t, "paused", False, True, "operator"))

    def resume(self) -> None:
        if self.admission.paused:
            self.admission.resume()
            self._core.emit(lambda t: events.knob(t, "paused", True, False, "operator"))

    def idle(self) -> bool:
        return self._core.idle()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every submitted job has finished (proof_done emitted)."""
        with self._core.changed:
            return self._core.changed.wait_for(self.idle, timeout)

    def stop(self, drain: bool = True, timeout: float | None = None) -> None:
        """Stop the engine. drain=True finishes queued and in-flight partitions first;
        drain=False cancels them: each such partition ends in stage ``cancelled`` and its job
        gets no proof_done (cancelled is not failed). A call to hurry() meanwhile cuts the
        drain short and kills the workers instead of waiting for them. Afterwards no worker
        process survives and none of our segments is left in /dev/shm."""
        core = self._core
        if not self._started or core.closed:
            return
        core.stopping = True
        if self.admission.paused and drain:
            self.resume()
        if drain:
            with core.changed:
                core.changed.wait_for(lambda: self._hurry or self.idle(), timeout)
        endings.cancel_all(core, "engine stopped without draining" if not drain
                           else "engine stopped")
        core.closed = True
        self.admission.close()
        self.channel.close()
        with core.lock:
            core.changed.notify_all()
            workers = self._workers.workers()
        self._workers.stop(workers, 0 if self._hurry else 5 if drain else 0.5)
        self._slots.close()
        self._finalizer.close()
        for t in self._threads:
            t.join(timeout=5)
        self.segments.sweep()
        if self._sampler is not None:
            self._sampler.stop()
            self._sampler.sample_now()
        self._workers.close(workers)
        self._replies.close()
        sys.setswitchinterval(self._switch_before)
        atexit.unregister(self._at_exit)
