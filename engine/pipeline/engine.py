"""The Engine: the orchestrator of the proving pipeline, behind design.md's Engine API.

    eng = Engine(config); q = eng.subscribe(); eng.start()
    eng.submit(Job("chain-1024", partitions=2)); ...; eng.stop(drain=True)

Why this module is longer than the house's ~600 lines: beside the API and the stage loops it
holds the reply routing of the results thread, which acts on the same stage state (a reply or
a worker's death moves a partition to its next stage, or back to the queue); splitting the two
apart would only pass that state back and forth. Everything else has a room of its own.

This module keeps the API, the event hub and the stage loops; the rest of the orchestrator has
rooms of its own: the records of jobs and partitions (engine.pipeline.records), the key registry
and its protocol with the provers (engine.pipeline.keys), the worker processes
(engine.pipeline.supervisor) and the typed messages between them (engine.pipeline.messages).
One state lock guards records, keys and workers, and one condition on it (``_changed``) wakes
every thread that waits for the state to change: each change notifies it, so no loop polls.

The orchestrator runs in the engine's own threads, in the calling process:

* ``admit``: takes queued partitions in order, waits for admission (a partition permit, memory
  budget, not paused), creates the partition's shared-memory segments and hands it to an idle
  synthesis worker process;
* ``results``: reads every worker's replies and asks the supervisor for dead workers: a dead
  worker's partitions are retried (their segments unlinked, queued again at the front);
* ``deliver``: puts synthesized partitions into the bounded GPU channel (and, with
  permit_release = "delivered", releases the permit at the moment of entry), once every prover
  holds the partition's key;
* one ``slot`` thread per GPU slot: takes a partition from the channel, sends it to its device's
  prover process and waits for the GPU half (the "wrapper" timer); then releases a, b, c and z
  either inline (dealloc = "sync", inside the wrapper) or through the ``dealloc`` thread. A slot
  takes nothing from the channel until its prover has loaded the key of every unfinished job,
  so no wrapper contains a key upload; a failed load fails the jobs of that key, with the reason;
* ``finalize``: waits for the proof, verifies it, and closes the partition and the job;
* the sampler (engine.telemetry.sampler).

The results thread also watches each busy worker's CPU time and reports a stalled one
(engine.pipeline.stall). A stop that does not drain ends every unfinished partition in
``cancelled`` (never ``failed``), and a job with a cancelled partition gets no proof_done.

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
from engine.pipeline import proving
from engine.pipeline.channel import BoundedChannel, ChannelClosed
from engine.pipeline.circuits import circuit_cache_dir, resolve
from engine.pipeline.job_inputs import JobInputs, one_line
from engine.pipeline.keys import KeyRegistry
from engine.pipeline.latency import quicken_handoffs
from engine.pipeline.messages import (
    AbcUnmapped,
    GpuDone,
    KeyFailed,
    KeyLoaded,
    KeyProgress,
    Proved,
    ProveTask,
    Ready,
    Reply,
    SynthDone,
    SynthTask,
    TaskFailed,
    WorkerFailed,
)
from engine.pipeline.placement import Placement, host_plan
from engine.pipeline.records import ENDED, Job, JobRecord, Part, Records, Setback
from engine.pipeline.replies import Replies
from engine.pipeline.scheduler import Admission, AdmissionClosed
from engine.pipeline.shm import SegmentRegistry, sweep_stale, sweep_stale_semaphores
from engine.pipeline.stall import StallWatch
from engine.pipeline.supervisor import Supervisor, Worker, WorkerMains, prover_name
from engine.stream import schema as events
from engine.synthesis import compact_layout
from engine.telemetry.counters import Counters
from engine.telemetry.memory import host_info
from engine.telemetry.nvml import gpu_list
from engine.telemetry.sampler import Sampler
from engine.telemetry.timers import SessionClock
from engine.warmup import ensure_warm
from kernels.backend import BackendUnavailable, backend_class, pick_backend

__all__ = ["Engine", "EngineError", "Job"]

STALL_CHECK_S = 1.0  # how often the results thread looks for stalled workers
RESULTS_POLL_S = 0.1  # how often the results thread, between replies, looks for dead workers
MAX_ATTEMPTS = 3  # a partition whose worker dies this many times fails
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
        self.progress = progress
        self.clock = SessionClock()
        self.counters = Counters()
        self.segments = SegmentRegistry()
        self._ctx = mp.get_context("spawn")
        self._emit_lock = threading.Lock()
        self._knob_lock = threading.Lock()  # one knob change at a time: old values agree
        self._subscribers: list[queue.Queue[dict[str, Any]]] = []
        self._state = threading.RLock()  # guards records, keys and workers
        self._changed = threading.Condition(self._state)  # notified on every change of them
        self._records = Records()
        self._keys = KeyRegistry()
        self._replies = Replies(self._ctx)  # a reply queue per worker (engine.pipeline.replies)
        self._deliver_q: queue.Queue[Part | None] = queue.Queue()
        self._dealloc_q: queue.Queue[Part | None] = queue.Queue()
        self._finalize_q: queue.Queue[Part | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._inputs = JobInputs()  # each job's input made once, the next one's ahead
        self._started = False
        self._stopping = False
        self._closed = False
        self._backend = self._pick_backend()
        self._on_device = backend_class(self._backend).is_device  # keys go up to a device
        self._devices: list[int | None] = (
            list(config.devices) if self._on_device and config.devices else [None]
        )
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
        self._stall = StallWatch(self.config.stall_after_s)
        self._hurry = False  # a second stop signal: do not wait for workers to exit

    # -- events ------------------------------------------------------------------------------
    def subscribe(self) -> queue.Queue[dict[str, Any]]:
        """A new thread-safe queue that receives every event from now on."""
        q: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._emit_lock:
            self._subscribers.append(q)
        return q

    def _emit(self, make: Callable[[float], dict[str, Any]]) -> float:
        """Build an event at the current time and publish it; returns its t. Events are emitted
        under one lock, so stream order and t order agree."""
        with self._emit_lock:
            t = self.clock.now()
            ev = make(t)
            for q in self._subscribers:
                q.put(ev)
            return t

    def _stage(self, p: Part, stage: str, worker: str, reason: str | None = None) -> float:
        p.stage = stage
        return self._emit(lambda t: events.stage(t, p.job, p.index, stage, worker, reason))

    def _publish_sample(self, ev: dict[str, Any]) -> None:
        """A sampler's event, stamped with the time it is published at."""
        self._emit(lambda t: {**ev, "t": t})

    def _error(self, where: str, message: str) -> None:
        self._emit(lambda t: events.error(t, where, message))

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

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
        self._switch_before = sys.getswitchinterval()  # restored by stop()
        switch_s = quicken_handoffs()
        self._sweep_leftovers()
        ensure_warm(self.progress)  # compile once here, not in every worker at once
        gpus = gpu_list()
        cfg = self.config.to_dict()
        cfg["backend_in_use"] = self._backend
        cfg["switch_interval_ms"] = switch_s * 1000.0
        wall = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self._emit(lambda t: events.session_start(t, cfg, host_info(), gpus, wall))
        if self.config.abc_eval == "gpu" and not self._on_device:
            self._say('abc_eval = "gpu" on the cpu backend: synthesis sends the compact witness '
                      "and the prover process evaluates a, b, c on the CPU (there is no device)")
        self.placement = host_plan(self._devices, self.config.numa_placement)
        if self.placement is not None and self.placement.nodes > 1:
            self._say(self.placement.describe())
        self._workers.open()
        with self._state:
            # With a memory budget, synthesis workers start only as partitions are admitted
            # (_dispatch_synthesis), so idle workers never hold memory the budget did not admit.
            upfront = 1 if self.config.memory_budget else self.config.partition_workers
            for _ in range(upfront):
                self._spawn_synth()
            for dev in self._devices:
                self._workers.spawn_prover(dev)
        self._thread(self._admit_loop, "admit")
        self._thread(self._results_loop, "results")
        self._thread(self._deliver_loop, "deliver")
        self._thread(self._dealloc_loop, "dealloc")
        for i in range(2):
            self._thread(self._finalize_loop, f"finalize{i}")
        for dev in self._devices:
            for s in range(self.config.gpu_slots_per_device):
                self._thread(self._slot_loop, f"slot-{dev}-{s}", args=(dev, s))
        self._sampler = Sampler(
            self.config.sample_interval_s,
            self.clock.now,
            self._publish_sample,
            self._process_list,
            self.segments.live_bytes,
            self.counters.snapshot,
            [d for d in self._devices if d is not None],
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
        with self._state:
            while self._workers.starting():
                left = deadline - self.clock.now()
                if left <= 0:
                    return
                self._changed.wait(left)

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
            self._say(f"swept what dead runs left: {len(segs)} shared-memory segment(s), "
                      f"{len(sems)} semaphore(s)")

    def hurry(self) -> None:
        """Stop now: a stop in progress kills the workers instead of waiting for them (a second
        stop signal). The session is still completed."""
        self._hurry = True
        with self._changed:  # reentrant: a signal handler may run in a thread that holds it
            self._changed.notify_all()

    def sample_now(self) -> dict[str, Any] | None:
        """Emit a sample now (memory, counters) and return it; None before start. A farm host
        takes one as each job ends, so its last sample counts every job it finished."""
        return self._sampler.sample_now() if self._sampler is not None else None

    def _at_exit(self) -> None:
        """A program that forgets stop() still leaves no worker and no segment behind."""
        if self._started and not self._closed:
            self.stop(drain=False)

    def _thread(self, target: Callable[..., None], name: str, args: tuple[Any, ...] = ()) -> None:
        t = threading.Thread(target=target, args=args, name=f"sealtop-{name}", daemon=True)
        t.start()
        self._threads.append(t)

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

    def _spawn_synth(self) -> Worker:
        w = self._workers.spawn_synth()
        self._changed.notify_all()
        return w

    def _prover_started(self, w: Worker) -> None:
        """A new (or restarted) prover loads the key of every unfinished job first."""
        self._keys.add_prover(w.name)
        for js in self._records.live():
            if js.key_error is None:
                self._request_key(w, js.key_path, js.job.preset)

    def _gave_up(self, w: Worker, reason: str) -> None:
        self._changed.notify_all()
        self._error(w.name, f"giving up on {w.name}: {reason}")

    def _request_key(self, w: Worker, path: str, preset: str) -> None:
        """Send ``w`` a load of ``path`` unless it has it or is loading it (under _state)."""
        compact = (preset, self._circuit_cache()) if self.config.abc_eval == "gpu" else None
        if self._keys.request(w.name, path, preset, w.send, compact) and self._on_device:
            self._say(f"{w.name}: loading the proving key for {preset} onto the device...")

    def _keys_ready(self, prover: str) -> bool:
        """Whether ``prover`` holds the key of every unfinished job (under _state). A job whose
        key failed to load, or a prover given up on, needs no wait: the slot fails the partition."""
        return prover in self._workers.broken or self._keys.holds_all(prover, self._records.live())

    def _key_reply(self, msg: KeyLoaded | KeyFailed) -> None:
        """A prover's answer to a key load."""
        failed: list[Part] = []
        mismatch: str | None = None
        worker = msg.worker
        with self._state:
            w = self._workers.provers.get(worker)
            if w is None or w.process.pid != msg.pid:
                return  # from a process that has since died
            preset = self._keys.settle(msg)
            if isinstance(msg, KeyLoaded):
                if not self._keys.loading(worker):
                    self._workers.loaded_all(worker)
                where = "loaded onto the device" if self._on_device else "memory-mapped"
                if msg.vk is not None:  # generated by the prover (a device source)
                    where = "generated on the device" if self._on_device else "generated in memory"
                    vk = self._keys.learn_vk(msg.source, msg.vk)
                    for js in self._records.jobs.values():
                        if js.key_path == msg.source and js.vk is None:
                            js.vk = vk
                    if vk != msg.vk:  # same seed, same circuit: the same key, or a broken GPU
                        mismatch = (f"{worker} generated a proving key for {preset} that "
                                    "differs from the first one (its proofs fail)")
                line = f"{worker}: proving key for {preset} {where} in {msg.ms / 1000:.1f} s"
            else:
                line = f"{worker}: proving key for {preset} could not be loaded: {msg.message}"
                for js in self._records.live():
                    if js.key_path == msg.source and js.key_error is None:
                        js.key_error = line
                        failed += [p for p in self._records.pending if p.job == js.id]
                for p in failed:
                    self._records.pending.remove(p)
            self._changed.notify_all()
        if isinstance(msg, KeyFailed):
            self._error(worker, line)
        if mismatch is not None:
            self._error(worker, mismatch)
        self._say(line)
        for p in failed:
            self._fail(p, line)

    def _circuit_cache(self) -> str:
        """Where compiled circuits are kept, shared by the orchestrator and the workers."""
        return circuit_cache_dir(self.config.param_cache_path())

    def _process_list(self) -> list[tuple[int, str]]:
        with self._state:
            return [(os.getpid(), "orchestrator")] + self._workers.process_list()

    def worker_pids(self) -> dict[str, int]:
        """name → pid of every live worker process (for operators and fault tests)."""
        return {name: pid for pid, name in self._process_list()[1:]}

    # -- API ---------------------------------------------------------------------------------
    def submit(self, job: Job) -> int:
        """Queue a job's partitions; returns the job id. Raises EngineError/ValueError if the job
        cannot run (unknown preset, a partition bigger than the memory budget)."""
        if not self._started or self._stopping:
            raise EngineError("submit needs a started engine that is not stopping")
        if job.partitions < 1:
            raise ValueError("a job needs at least one partition")
        circuit = resolve(job.preset, self._circuit_cache())
        nbytes = circuit.partition_bytes(self.config.abc_eval)
        if not self.admission.fits(nbytes):
            raise ValueError(
                f"a partition of {job.preset} holds {nbytes} bytes, more than the memory budget "
                f"of {self.admission.budget} bytes"
            )
        from engine.c2.preset import PRESETS as C2_PRESETS

        params = self.config.filecoin_params if job.preset in C2_PRESETS else ""
        key = self._keys.ensure(job.preset, circuit, self.config.param_cache_path(),
                                self._backend, self.progress, self.config.damaged_key,
                                self.config.devices, self.config.gpu_slots_per_device, params,
                                self.config.gpu_calls)
        jid = self._records.next_id()
        t = self._emit(
            lambda t: events.job_submitted(t, jid, job.preset, job.partitions, circuit.constraints,
                                           nbytes)
        )
        with self._state:
            js = JobRecord(jid, job, circuit, key.source, key.vk, t)
            self._records.add_job(js)
            for w in self._workers.provers.values():
                self._request_key(w, js.key_path, job.preset)
            for i in range(job.partitions):
                p = Part(jid, i, job.preset, job.seed, nbytes)
                self._records.parts[(jid, i)] = p
                self.counters.add("partitions_submitted")
                tq = self._stage(p, "queued", "scheduler")
                p.timers.mark("queued", tq)
                self._records.pending.append(p)
            self._changed.notify_all()
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
            self._emit(lambda t: events.knob(t, name, old, value, source))
            setattr(self.config, name, value)
            getattr(self, knob.apply)(value)

    # the appliers and guards the settings table names for its live knobs

    def _apply_workers(self, value: int) -> None:
        self.admission.resize(value)
        with self._state:
            self._changed.notify_all()

    def _apply_channel(self, value: int) -> None:
        self.channel.resize(value)

    def _apply_budget(self, value: int) -> None:
        self.admission.set_budget(value)

    def _guard_budget(self, value: int) -> None:
        """A budget (0 is none) must hold the largest partition not yet ended."""
        if not value:
            return
        with self._state:
            need = max((p.nbytes for p in self._records.unended()), default=0)
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
        with self._state:
            busy = len(self._records.unended())
            if busy:
                raise ValueError(f"{name} changes only between jobs ({busy} partition(s) in flight)")
            old = getattr(self.config, name)
            setattr(self.config, name, value)
        self._emit(lambda t: events.knob(t, name, old, value, source))

    def pause(self) -> None:
        """Stop admitting new syntheses; in-flight partitions continue."""
        if not self.admission.paused:
            self.admission.pause()
            self._emit(lambda t: events.knob(t, "paused", False, True, "operator"))

    def resume(self) -> None:
        if self.admission.paused:
            self.admission.resume()
            self._emit(lambda t: events.knob(t, "paused", True, False, "operator"))

    def idle(self) -> bool:
        with self._state:
            return self._records.all_finished()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every submitted job has finished (proof_done emitted)."""
        with self._changed:
            return self._changed.wait_for(self.idle, timeout)

    def stop(self, drain: bool = True, timeout: float | None = None) -> None:
        """Stop the engine. drain=True finishes queued and in-flight partitions first;
        drain=False cancels them: each such partition ends in stage ``cancelled`` and its job
        gets no proof_done (cancelled is not failed). A call to hurry() meanwhile cuts the
        drain short and kills the workers instead of waiting for them. Afterwards no worker
        process survives and none of our segments is left in /dev/shm."""
        if not self._started or self._closed:
            return
        self._stopping = True
        if self.admission.paused and drain:
            self.resume()
        if drain:
            with self._changed:
                self._changed.wait_for(lambda: self._hurry or self.idle(), timeout)
        self._cancel_all("engine stopped without draining" if not drain else "engine stopped")
        self._closed = True
        self.admission.close()
        self.channel.close()
        with self._state:
            self._changed.notify_all()
            workers = self._workers.workers()
        self._workers.stop(workers, 0 if self._hurry else 5 if drain else 0.5)
        self._deliver_q.put(None)
        self._dealloc_q.put(None)
        for _ in range(2):
            self._finalize_q.put(None)
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

    # -- admission and synthesis -------------------------------------------------------------
    def _admit_loop(self) -> None:
        pending = self._records.pending
        while True:
            with self._state:
                while not pending and not self._closed:
                    self._changed.wait()
                if self._closed:
                    return
                p = pending[0]

            def on_admit(p: Part = p) -> None:
                p.permit = True
                p.reserved = True

            try:
                with self._state:
                    # pop now so a retried partition can go to the front meanwhile
                    if not pending or pending[0] is not p:
                        continue
                    pending.popleft()
                self.admission.acquire(p.nbytes, on_admit)  # AdmissionClosed once stopped
                if p.cancelled or not p.permit:
                    continue
            except AdmissionClosed:
                return
            with self._state:
                js, after = self._records.jobs[p.job], self._records.jobs.get(p.job + 1)
            if js.key_error is not None:
                self._fail(p, js.key_error)
                continue
            self._inputs.look_ahead(after)
            try:
                inputs = self._inputs.partition(js, p.index)
            except Exception as exc:  # the job's input cannot be read or made: one line
                self._fail(p, one_line(exc))
                continue
            self._dispatch_synthesis(p, inputs)

    def _dispatch_synthesis(self, p: Part, inputs: Any = None) -> None:
        with self._state:
            while not self._workers.idle_synth and not self._closed:
                if self._workers.live_synth() < self.admission.limit:
                    self._spawn_synth()
                    break
                self._changed.wait()
            if self._closed:
                return
            w = self._workers.idle_synth.popleft()
            js = self._records.jobs[p.job]
            m, n = js.circuit.r1cs.num_constraints, js.circuit.r1cs.num_vars
            tag = p.key.tag()
            if self.config.abc_eval == "gpu":  # the compact witness alone (engine.synthesis)
                p.segs = {"w": self.segments.create(tag + "w", (compact_layout(js.circuit).words,))}
            else:
                p.segs = {
                    "a": self.segments.create(tag + "a", (m, 4)),
                    "b": self.segments.create(tag + "b", (m, 4)),
                    "c": self.segments.create(tag + "c", (m, 4)),
                    "z": self.segments.create(tag + "z", (n, 4)),
                }
            self.counters.add("synth_started")
            self.counters.add("holding_abc")
            p.worker = w.name
            w.busy.add(p.key)
            t = self._stage(p, "synthesizing", w.name)
            p.timers.mark("synthesizing", t)
            p.timers.span("queue", "queued", t)
            w.send(SynthTask(p.key, p.preset, self._circuit_cache(), p.seed, js.job.partitions,
                             p.segs, self.config.abc_eval, js.job.source, inputs))

    def _await_unmapped(self, p: Part, limit_s: float = 60.0) -> None:
        """Wait until the prover has let go of a, b and c (a cpu prover unmaps them right after
        gpu_done, in its own unmap thread; a GPU prover never maps them, and says so through
        the same thread, behind any unmap queued before), so that the unlink that follows is
        what returns the pages and the dealloc interval holds the whole cost of freeing them.
        A stop, a cancel and the prover's death also set the event (a dead prover's mappings
        are gone with it); ``limit_s`` bounds the wait in any case."""
        p.abc_unmapped.wait(limit_s)

    def _release_buffers(self, p: Part) -> int:
        """Unlink a partition's segments and return its budget bytes; idempotent."""
        freed = 0
        with self._state:  # the dealloc thread and a retry may race for the same partition
            segs, p.segs = p.segs, None
            reserved, p.reserved = p.reserved, False
        if segs is not None:
            freed = self.segments.release_many(list(segs.values()))
            self.counters.add("holding_abc", -1)
            self.counters.add("abc_freed")
        if reserved:
            self.admission.release_bytes(p.nbytes)
        return freed

    def _release_permit(self, p: Part, on_release: Callable[[], None] | None = None) -> None:
        """Give back the partition's synthesis permit (if it holds one); ``on_release`` runs
        under the admission lock, so the stage change and the free permit are one step."""
        with self._state:
            held, p.permit = p.permit, False
        if held:
            self.admission.release_permit(on_release)
        elif on_release is not None:
            on_release()

    # -- replies and worker deaths -----------------------------------------------------------
    def _results_loop(self) -> None:
        """The one thread that acts on replies and deaths, so the two never race. Between
        replies it looks for dead workers every RESULTS_POLL_S (a process's death has no
        message) and for stalled ones every STALL_CHECK_S."""
        next_stall_check = 0.0
        while not self._closed:
            try:
                msg = self._replies.get(timeout=RESULTS_POLL_S)
            except queue.Empty:
                msg = None
            if msg is not None:
                self._handle(msg)
            self._check_workers()
            if self.clock.now() >= next_stall_check:
                next_stall_check = self.clock.now() + STALL_CHECK_S
                self._check_stalls()

    def _held_by(self, w: Worker) -> list[Part]:
        """The partitions whose progress waits on worker ``w`` now (under _state)."""
        if w.role == "synth":
            return [p for k in w.busy if (p := self._records.of_key(k)) is not None]
        return [
            p for p in self._records.parts.values()
            if p.worker == w.name and not p.cancelled and (
                (p.stage == "gpu" and not p.gpu_done.is_set())
                or (p.stage in ("deallocating", "finalizing") and not p.proved.is_set())
            )
        ]

    def _check_stalls(self) -> None:
        """Report partitions whose worker makes no progress (engine.pipeline.stall); with
        stall_action = "retry" the worker is killed, so its partitions run elsewhere."""
        if not self.config.stall_after_s or self._stopping:
            return
        with self._state:
            found = self._workers.stalled(self._stall, self._held_by, self.clock.now())
        for w, held, why in found:
            retry = self.config.stall_action == "retry"
            then = "; killing it, the partition is retried" if retry else ""
            for p in held:
                self.counters.add("stalls")
                self._error(w.name, f"job {p.job} partition {p.index} stalled: {w.name} "
                                    f"(pid {w.process.pid}) {why}{then}")
            if retry:
                self._workers.kill(w)

    def _handle(self, msg: Reply) -> None:
        if isinstance(msg, Ready):
            with self._state:
                self._workers.ready(msg.worker, self._keys.loading(msg.worker))
                self._changed.notify_all()
            return
        if isinstance(msg, (KeyLoaded, KeyFailed)):
            self._key_reply(msg)
            return
        if isinstance(msg, KeyProgress):  # a prover generating a key on its device
            self._say(f"{msg.worker}: {msg.line}")
            return
        if isinstance(msg, WorkerFailed):
            self._error(msg.worker, f"worker could not start: {msg.message}")
            with self._state:
                self._workers.give_up(msg.worker, msg.message)
                self._changed.notify_all()
            return
        with self._state:
            if isinstance(msg, (SynthDone, TaskFailed, Proved)):
                self._workers.idle(msg.worker, msg.key)
                self._changed.notify_all()
            p = self._records.lookup(msg.key)
        if p is None:
            return
        if isinstance(msg, SynthDone):
            p.timers.set("witness", msg.witness_ms)
            p.timers.set("eval", msg.eval_ms)
            reason = self._records.jobs[p.job].key_error
            if reason is not None:
                self._fail(p, reason)
            else:  # synthesis ended; delivery may wait for the job's key or for the channel
                with self._state:  # a stop's cancelled stage is never followed by this one
                    if not p.cancelled:
                        self._stage(p, "synthesized", msg.worker)
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
            self._error(msg.worker, f"job {p.job} partition {p.index}: {msg.message}")
            if p.stage == "synthesizing":
                self._fail(p, reason)
            elif p.stage == "gpu":
                p.gpu_result = Setback(reason)
                p.gpu_done.set()
            else:
                p.proof_result = Setback(reason)
                p.proved.set()

    def _check_workers(self) -> None:
        if self._closed or self._stopping and self.idle():
            return
        with self._state:
            dead = self._workers.reap()
            was_loading = {w.name: self._keys.forget(w.name) for w in dead if w.role == "prover"}
        for w in dead:
            self._worker_died(w, was_loading.get(w.name, False))

    def _worker_died(self, w: Worker, was_loading: bool) -> None:
        """Retry what dead worker ``w`` held, then let the supervisor restart or give up."""
        how = w.how_it_died()
        with self._state:
            if w.role == "synth":
                held = [p for k in w.busy if (p := self._records.of_key(k)) is not None]
            else:  # every partition in its GPU half or its finalize half
                held = self._records.on_prover(w.name)
        self.counters.add("worker_deaths")
        self._error(w.name, f"worker pid {w.process.pid} died ({how})")
        for p in held:
            if p.cancelled:
                continue
            why = Setback(f"{w.name} died ({how})", retry=True)
            if w.role == "synth":
                self._retry(p, why.reason)
                continue
            if p.stage == "gpu" and not p.gpu_done.is_set():
                p.gpu_result = why
                p.gpu_done.set()
            elif not p.proved.is_set():
                p.proof_result = why
                p.proved.set()
            p.abc_unmapped.set()  # its mappings went with it
        if self._closed:
            return
        with self._state:
            self._workers.after_death(w, was_loading)
            self._changed.notify_all()

    def _settle(self, p: Part, setback: Setback) -> None:
        if setback.retry:
            self._retry(p, setback.reason)
        else:
            self._fail(p, setback.reason)

    def _retry(self, p: Part, reason: str) -> None:
        """Free a partition's buffers and permit, and queue it again at the front; after
        MAX_ATTEMPTS attempts the partition fails instead."""
        if p.attempt + 1 >= MAX_ATTEMPTS:
            self._fail(p, f"gave up after {MAX_ATTEMPTS} attempts: {reason}")
            return
        self._release_buffers(p)
        self._release_permit(p)
        self.counters.add("retries")
        with self._state:
            p.next_attempt()
            t = self._stage(p, "queued", "scheduler", reason=f"retry: {reason}")
            p.timers.mark("queued", t)
            self._records.pending.appendleft(p)
            self._changed.notify_all()

    def _fail(self, p: Part, reason: str) -> None:
        if p.cancelled:
            return  # _cancel_all reports it
        self._release_buffers(p)
        self._release_permit(p)
        with self._state:
            if p.stage in ENDED or p.cancelled:
                return
            self._stage(p, events.FAILED, p.worker or "scheduler", reason=reason)
            self.counters.add("partitions_failed")
            self._records.jobs[p.job].failed[p.index] = reason
        self._maybe_finish_job(p.job)

    # -- channel and GPU slots ---------------------------------------------------------------
    def _enter_waiting(self, p: Part) -> None:
        def enter() -> None:
            t = self._stage(p, "waiting_gpu", "scheduler")
            p.timers.mark("synthesized", t)

        self._release_permit(p, enter)

    def _synthesized(self, p: Part) -> None:
        if self.config.permit_release == "synthesized":
            # the cuzk bug: the permit goes back before the partition is delivered
            self._enter_waiting(p)
        self._deliver_q.put(p)

    def _deliver_loop(self) -> None:
        while True:
            p = self._deliver_q.get()
            if p is None:
                return
            if p.cancelled:
                continue
            attempt = p.attempt
            reason = self._await_key_everywhere(p, attempt)
            if reason is not None:
                self._fail(p, reason)
                continue
            if p.cancelled or p.attempt != attempt or self._closed:
                continue

            def on_enter(item: tuple[Part, int]) -> None:
                part = item[0]
                if not part.cancelled and self.config.permit_release == "delivered":
                    self._enter_waiting(part)

            try:
                self.channel.put(
                    (p, attempt),
                    on_enter,
                    cancelled=lambda: p.cancelled or p.attempt != attempt or self._closed,
                )
            except ChannelClosed:
                return

    def _await_key_everywhere(self, p: Part, attempt: int) -> str | None:
        """Hold a synthesized partition out of the channel until every prover (not given up on)
        has loaded its job's key, so whichever slot takes it finds the key loaded; returns the
        job's key error, if any. Slots also wait (_keys_ready), but a slot already blocked in
        channel.get when a new job arrives could otherwise take its partition first."""
        js = self._records.jobs[p.job]
        names = [prover_name(d) for d in self._devices]
        with self._state:
            while not (
                js.key_error is not None
                or self._closed
                or p.cancelled
                or p.attempt != attempt
                or all(n in self._workers.broken or self._keys.holds(n, js.key_path)
                       for n in names)
            ):
                self._changed.wait()
            return js.key_error

    def _slot_loop(self, dev: int | None, slot: int) -> None:
        prover = prover_name(dev)
        label = f"{prover}/{slot}"
        while True:
            with self._state:
                while not self._closed and not self._keys_ready(prover):
                    self._changed.wait()
            if self._closed:
                return
            box: dict[str, Part] = {}

            def on_leave(item: tuple[Part, int]) -> None:
                p, attempt = item
                if p.cancelled or p.attempt != attempt:
                    return
                box["p"] = p
                p.worker = prover
                t = self._stage(p, "gpu", label)
                p.timers.mark("gpu", t)
                p.timers.span("channel_wait", "synthesized", t)

            try:
                self.channel.get(on_leave=on_leave)  # ChannelClosed once stopped
            except ChannelClosed:
                return
            if "p" in box:
                self._run_on_gpu(box["p"], prover, label)

    def _run_on_gpu(self, p: Part, prover: str, label: str) -> None:
        with self._state:
            js = self._records.jobs[p.job]

            def ready() -> bool:
                # the prover is up and holds the key; this only waits when the prover died and
                # is restarting after the slot last checked _keys_ready (a fault path)
                return (
                    self._closed
                    or prover in self._workers.broken
                    or js.key_error is not None
                    or (prover in self._workers.provers and self._keys.holds(prover, js.key_path))
                )

            while not ready():
                self._changed.wait()
            w = self._workers.provers.get(prover)
            broken = self._workers.broken.get(prover)
        if broken is not None:
            self._fail(p, f"{prover} unavailable: {broken}")
            return
        if js.key_error is not None:
            self._fail(p, js.key_error)
            return
        if w is None or self._closed:
            return
        w.send(ProveTask(p.key, p.preset, js.key_path, p.segs or {}, self.config.b_g2,
                         self.config.abc_eval, self._circuit_cache()))
        p.gpu_done.wait()  # set by the reply, a setback, a cancel or a stop
        if p.cancelled:
            return
        res = p.gpu_result
        if not isinstance(res, GpuDone):
            self._settle(p, res or Setback("no result"))
            return
        timings = res.timings
        p.timers.set("gpu_call", timings.get("gpu_call"))
        p.timers.set("gpu_host", timings.get("gpu_host"))
        p.timers.set("gpu_wait", timings.get("gpu_wait"))
        for k in events.KERNEL_KEYS:
            p.timers.set(k, timings.get(k))
        if self.config.dealloc == "sync":
            t_dealloc = self._stage(p, "deallocating", label)
            self._handoff_timers(p, timings, t_dealloc)
            self._await_unmapped(p)
            if p.cancelled:
                return
            self._release_buffers(p)
            t_end = self._stage(p, "finalizing", label)
            self.counters.add("dealloc_done")
            p.timers.ms["dealloc"] = (t_end - t_dealloc) * 1000.0
            p.timers.span("gpu_wrapper", "gpu", t_end)
            p.timers.mark("finalizing", t_end)
            self._finalize_q.put(p)
        else:
            t_end = self._stage(p, "deallocating", label)
            self._handoff_timers(p, timings, t_end)
            p.timers.span("gpu_wrapper", "gpu", t_end)
            self._dealloc_q.put(p)

    def _handoff_timers(self, p: Part, timings: dict[str, float], t_back: float) -> None:
        """Split the wrapper's time outside the prover's call: gpu_dispatch (the partition left
        the channel -> the prover took its task) and gpu_return (the prover sent gpu_done -> the
        orchestrator acted on it at ``t_back``). The prover stamps both ends with the system-wide
        monotonic clock that the session clock also reads."""
        recv, sent = timings.get("recv_mono"), timings.get("sent_mono")
        origin = self.clock.origin
        if recv is not None and "gpu" in p.timers.marks:
            p.timers.set("gpu_dispatch", max(0.0, (recv - origin - p.timers.marks["gpu"]) * 1000.0))
        if sent is not None:
            p.timers.set("gpu_return", max(0.0, (t_back - (sent - origin)) * 1000.0))

    def _dealloc_loop(self) -> None:
        while True:
            p = self._dealloc_q.get()
            if p is None:
                return
            if p.cancelled:
                continue
            t0 = self.clock.now()
            self._await_unmapped(p)
            if p.cancelled:
                continue
            self._release_buffers(p)
            t1 = self.clock.now()
            p.timers.ms["dealloc"] = (t1 - t0) * 1000.0
            self.counters.add("dealloc_done")
            t = self._stage(p, "finalizing", "dealloc")
            p.timers.mark("finalizing", t)
            self._finalize_q.put(p)

    # -- finalize ----------------------------------------------------------------------------
    def _finalize_loop(self) -> None:
        while True:
            p = self._finalize_q.get()
            if p is None:
                return
            p.proved.wait()  # set by the proof, a setback, a cancel or a stop
            if p.cancelled or self._closed:
                continue
            res = p.proof_result
            if not isinstance(res, Proved):
                self._settle(p, res or Setback("no proof"))
                continue
            p.timers.set("b2", res.b2_ms)
            proof = res.proof
            with self._state:
                js = self._records.jobs[p.job]
            try:  # the verifier's inputs come from the job (seeds, graph), not the prover's z
                public = js.circuit.public_inputs(js.job.seed, p.index, js.job.partitions,
                                                  js.job.source)
            except Exception:  # a statement that cannot be derived verifies nothing
                public = []
            ok = proving.verify(js.vk, public, proof)
            with self._state:
                if p.cancelled:
                    continue
                t = self._stage(p, "done", "finalize")
            p.timers.span("finalize", "finalizing", t)
            ms = {k: v for k, v in p.timers.ms.items() if k in events.TIMER_KEYS}
            held = p.nbytes
            self._emit(lambda t: events.partition_timings(t, p.job, p.index, ms, held))
            self.counters.add("partitions_done")
            with self._state:
                js.proofs[p.index] = proof
                js.verified[p.index] = ok
            self._maybe_finish_job(p.job)

    def _maybe_finish_job(self, jid: int) -> None:
        """Close a job once every partition has ended: proof_done (verified or not) when none
        was cancelled; a job with a cancelled partition will not be proven and gets none."""
        with self._state:
            js = self._records.jobs[jid]
            if js.finished or js.ended() < js.job.partitions:
                return
            js.finished = True
            self._records.live_jobs.discard(jid)
            self._changed.notify_all()
            if js.cancelled:
                self.counters.add("jobs_cancelled")
                js.announced = True
                return
            proof_hex = b"".join(js.proofs.get(i, b"") for i in range(js.job.partitions)).hex()
            ok = not js.failed and all(js.verified.values())
        self.counters.add("proofs_done")
        self.counters.add("proofs_verified" if ok else "proofs_failed")
        t_sub = js.t_submit
        self._emit(
            lambda t: events.proof_done(t, jid, proof_hex, ok, (t - t_sub) * 1000.0)
        )
        with self._changed:
            js.announced = True  # idle() only once proof_done is in the stream
            self._changed.notify_all()

    # -- cancellation ------------------------------------------------------------------------
    def _cancel_all(self, reason: str) -> None:
        """Every partition not yet ended (queued ones included) will not be proven: stage
        ``cancelled`` with the reason, never counted as failed."""
        with self._state:
            live = self._records.unended()
            for p in live:
                p.cancelled = True
            self._records.pending.clear()
            self._changed.notify_all()
        if not live:
            return
        self.channel.drain()
        for p in live:
            p.wake()
        for p in live:
            self._release_buffers(p)
            self._release_permit(p)
            with self._state:
                self._stage(p, events.CANCELLED, p.worker or "scheduler", reason=reason)
                self.counters.add("partitions_cancelled")
                self._records.jobs[p.job].cancelled[p.index] = reason
            self._maybe_finish_job(p.job)
