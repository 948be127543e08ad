"""The Engine: the orchestrator of the proving pipeline, behind design.md's Engine API.

Why this module is long (about twice the house's ~600 lines): the Engine class still holds
worker supervision, the key-distribution protocol, reply routing and partition bookkeeping
beside the stage loops. Cutting it along those ideas (records, keys, a supervisor, typed
messages) is the open part of the house's clean-up; until then the sections below follow the
threads listed here.

    eng = Engine(config); q = eng.subscribe(); eng.start()
    eng.submit(Job("chain-1024", partitions=2)); ...; eng.stop(drain=True)

The orchestrator runs in the engine's own threads, in the calling process:

* ``admit``: takes queued partitions in order, waits for admission (a partition permit, memory
  budget, not paused), creates the partition's shared-memory segments and hands it to an idle
  synthesis worker process;
* ``results``: reads every worker's replies, and watches the worker processes: a worker that
  died has its partition's segments unlinked and the partition queued again;
* ``deliver``: puts synthesized partitions into the bounded GPU channel (and, with
  permit_release = "delivered", releases the permit at the moment of entry);
* one ``slot`` thread per GPU slot: takes a partition from the channel, sends it to its device's
  prover process and waits for the GPU half (the "wrapper" timer); then releases a, b, c and z
  either inline (dealloc = "sync", inside the wrapper) or through the ``dealloc`` thread;
* key loading: when a job is submitted (and when a prover is restarted) every prover gets a
  ``load`` task for the job's proving key. A slot takes nothing from the channel until its
  prover has loaded the key of every unfinished job, so no wrapper contains a key upload. A
  failed load fails the jobs of that key, with the reason;
* ``finalize``: waits for the proof, verifies it, and closes the partition and the job;
* the sampler (engine.telemetry.sampler).

Every worker process is started from one spawner thread (engine.pipeline.spawner) and dies
with the orchestrator (engine.pipeline.workers.die_with_parent); the results thread also
watches each busy worker's CPU time and reports a stalled one (engine.pipeline.stall). A stop
that does not drain ends every unfinished partition in ``cancelled`` (never ``failed``), and a
job with a cancelled partition gets no proof_done.

Stage order of a partition: queued → synthesizing → waiting_gpu → gpu → deallocating →
finalizing → done. Buffers are released before finalization (the prover no longer needs them
once its GPU half is done), so "holding a/b/c" is exactly the stages synthesizing..deallocating
and design.md's bound can be checked on the stage events alone.
"""

from __future__ import annotations

import atexit
import dataclasses
import itertools
import multiprocessing as mp
import os
import queue
import signal
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from engine.config import EngineConfig, check_knob, validate_config
from engine.pipeline import proving
from engine.pipeline.channel import BoundedChannel, ChannelClosed
from engine.pipeline.circuits import PartitionCircuit, circuit_cache_dir, resolve
from engine.pipeline.latency import quicken_handoffs
from engine.pipeline.scheduler import Admission, AdmissionClosed
from engine.pipeline.shm import SegmentRegistry, SegmentSpec, sweep_stale, sweep_stale_semaphores
from engine.pipeline.spawner import Spawner
from engine.pipeline.stall import StallWatch
from engine.pipeline.workers import prover_main, synthesis_main
from engine.stream import schema as events
from engine.telemetry.counters import Counters
from engine.telemetry.memory import host_info
from engine.telemetry.nvml import gpu_list
from engine.telemetry.sampler import Sampler
from engine.telemetry.timers import PartitionTimers, SessionClock
from engine.warmup import ensure_warm


_ENDED = ("done", events.FAILED, events.CANCELLED)  # a partition's last stage

STALL_CHECK_S = 1.0  # how often the results thread looks for stalled workers
MAX_ATTEMPTS = 3  # a partition whose worker dies this many times fails
STARTUP_WAIT_S = 120.0  # start() waits at most this long for the workers to come up
MAX_PROVER_START_FAILURES = 3  # a device whose prover dies this often before it is ready is
# given up on (its partitions fail with the reason) rather than restarted forever


class EngineError(RuntimeError):
    """A misuse of the Engine API (submit before start, after stop, ...)."""


@dataclass(frozen=True)
class Job:
    """A sealing job: P partition proofs of one preset's circuit."""

    preset: str
    partitions: int = 1
    seed: int = 1


@dataclass
class Faults:
    """Test-only fault hooks. corrupt_proof: (job, partition) pairs whose proof gets one byte
    flipped before verification."""

    corrupt_proof: set[tuple[int, int]] = field(default_factory=set)
    key_load_delay_s: float = 0.0  # every key load sleeps this long first (in the prover)
    key_load_fail: set[str] = field(default_factory=set)  # provers whose key loads fail


@dataclass
class _Part:
    job: int
    index: int
    preset: str
    seed: int
    nbytes: int
    timers: PartitionTimers = field(default_factory=PartitionTimers)
    attempt: int = 0
    stage: str = ""
    segs: dict[str, SegmentSpec] | None = None
    permit: bool = False
    reserved: bool = False
    worker: str | None = None
    gpu_done: threading.Event = field(default_factory=threading.Event)
    gpu_result: tuple | None = None  # ("ok", timings) or ("retry"|"fail", reason)
    proved: threading.Event = field(default_factory=threading.Event)
    proof_result: tuple | None = None  # ("ok", proof, public, timings) or ("retry"|"fail", why)
    abc_unmapped: threading.Event = field(default_factory=threading.Event)  # the prover let go
    cancelled: bool = False

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.job, self.index, self.attempt)


@dataclass
class _JobState:
    id: int
    job: Job
    circuit: PartitionCircuit
    key_path: str
    vk: Any
    t_submit: float
    proofs: dict[int, bytes] = field(default_factory=dict)
    verified: dict[int, bool] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    cancelled: dict[int, str] = field(default_factory=dict)  # partition -> why (a stop)
    finished: bool = False
    key_error: str | None = None  # set when a prover could not load the key: partitions fail


@dataclass
class _Worker:
    name: str
    role: str  # "synth" or "prover"
    process: Any
    tasks: Any
    device: int | None = None
    busy: set = field(default_factory=set)  # keys of partitions it holds
    ready: bool = False  # started: backend loaded (prover) or kernels warm (synthesis)


class Engine:
    """The embedded multi-process proving engine (design.md, "The Engine API")."""

    def __init__(
        self,
        config: EngineConfig,
        faults: Faults | None = None,
        progress: Callable[[str], None] | None = None,
    ):
        """``progress`` receives lines about long preparations (setup of a missing key).
        The engine keeps its own copy of ``config``: live knob changes never reach the caller's.
        Every field is checked as the config file's keys are (ConfigError, one line)."""
        self.config = validate_config(config)
        config = self.config
        self.faults = faults or Faults()
        self.progress = progress
        self.clock = SessionClock()
        self.counters = Counters()
        self.segments = SegmentRegistry()
        self._ctx = mp.get_context("spawn")
        self._emit_lock = threading.Lock()
        self._subscribers: list[queue.Queue] = []
        self._state = threading.RLock()  # guards parts, jobs, workers
        self._parts: dict[tuple[int, int], _Part] = {}
        self._jobs: dict[int, _JobState] = {}
        self._key_of: dict[str, tuple[Any, Any]] = {}  # preset -> (key path, verifying key)
        self._pending: deque[_Part] = deque()
        self._pending_cv = threading.Condition(self._state)
        self._synth_workers: list[_Worker] = []
        self._idle_synth: deque[_Worker] = deque()
        self._provers: dict[str, _Worker] = {}
        self._results = self._ctx.Queue()
        self._deliver_q: queue.Queue = queue.Queue()
        self._dealloc_q: queue.Queue = queue.Queue()
        self._finalize_q: queue.Queue = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._job_ids = itertools.count(1)
        self._worker_ids = itertools.count(0)
        self._started = False
        self._stopping = False
        self._closed = False
        self._idle = threading.Condition(self._state)
        self._backend = self._pick_backend()
        self._devices: list[int | None] = (
            list(config.devices) if self._backend == "cuda" and config.devices else [None]
        )
        self.admission = Admission(config.partition_workers, config.memory_budget)
        self.channel = BoundedChannel(config.gpu_channel_capacity)
        self._sampler: Sampler | None = None
        self._prover_failures: dict[str, int] = {}
        self._prover_broken: dict[str, str] = {}
        # Proving keys per prover process (reset when it is restarted), guarded by _state.
        self._keys_cv = threading.Condition(self._state)
        self._keys_loaded: dict[str, set[str]] = {}  # prover → key paths loaded
        self._keys_requested: dict[str, dict[str, str]] = {}  # prover → path → preset, in flight
        self._live_jobs: set[int] = set()  # jobs not finished
        self._spawner: Spawner | None = None
        self._stall = StallWatch(self.config.stall_after_s)
        self._hurry = False  # a second stop signal: do not wait for workers to exit

    # -- events ------------------------------------------------------------------------------
    def subscribe(self) -> queue.Queue:
        """A new thread-safe queue that receives every event from now on."""
        q: queue.Queue = queue.Queue()
        with self._emit_lock:
            self._subscribers.append(q)
        return q

    def _emit(self, make: Callable[[float], dict]) -> float:
        """Build an event at the current time and publish it; returns its t. Events are emitted
        under one lock, so stream order and t order agree."""
        with self._emit_lock:
            t = self.clock.now()
            ev = make(t)
            for q in self._subscribers:
                q.put(ev)
            return t

    def _stage(self, p: _Part, stage: str, worker: str, reason: str | None = None) -> float:
        p.stage = stage
        return self._emit(lambda t: events.stage(t, p.job, p.index, stage, worker, reason))

    def _error(self, where: str, message: str) -> None:
        self._emit(lambda t: events.error(t, where, message))

    # -- lifecycle ---------------------------------------------------------------------------
    def _pick_backend(self) -> str:
        from kernels.backend import cuda_unavailable_reason

        if self.config.backend == "cpu":
            return "cpu"
        reason = cuda_unavailable_reason()
        if reason is None:
            return "cuda"
        if self.config.backend == "cuda":
            raise EngineError(f"backend = \"cuda\" but {reason}")
        return "cpu"

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
        wall = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self._emit(lambda t: events.session_start(t, cfg, host_info(), gpus, wall))
        self._spawner = Spawner()
        with self._state:
            # With a memory budget, synthesis workers start only as partitions are admitted
            # (_dispatch_synthesis), so idle workers never hold memory the budget did not admit.
            upfront = 1 if self.config.memory_budget else self.config.partition_workers
            for _ in range(upfront):
                self._spawn_synth()
            for dev in self._devices:
                self._spawn_prover(dev)
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
            lambda ev: self._emit(lambda t: {**ev, "t": t}),
            self._process_list,
            self.segments.live_bytes,
            self.counters.snapshot,
            [d for d in self._devices if d is not None],
        )
        self._sampler.sample_now()
        atexit.register(self._at_exit)
        self._await_workers()
        # a sample of the started, warm processes before any partition exists: the memory
        # baseline that engine.summary.baseline_rss_anon reads
        self._sampler.sample_now()
        self._sampler.start()

    def _await_workers(self, timeout: float = STARTUP_WAIT_S) -> None:
        """Wait until every worker has started (or died, or given up), so the first
        partition's timers and the memory baseline do not include process start-up."""
        deadline = self.clock.now() + timeout
        with self._state:
            while self.clock.now() < deadline:
                pending = [
                    w for w in self._synth_workers + list(self._provers.values())
                    if not w.ready and w.process.is_alive() and w.name not in self._prover_broken
                ]
                if not pending:
                    return
                self._keys_cv.wait(0.1)

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

    def _at_exit(self) -> None:
        """A program that forgets stop() still leaves no worker and no segment behind."""
        if self._started and not self._closed:
            self.stop(drain=False)

    def _thread(self, target: Callable, name: str, args: tuple = ()) -> None:
        t = threading.Thread(target=target, args=args, name=f"sealtop-{name}", daemon=True)
        t.start()
        self._threads.append(t)

    def _spawn_synth(self) -> _Worker:
        name = f"synth-{next(self._worker_ids)}"
        tasks = self._ctx.Queue()
        # a share of the cores each (at least one), so N workers do not oversubscribe the cores
        threads = max(1, (os.cpu_count() or 1) // max(1, self.config.partition_workers))
        proc = self._ctx.Process(
            target=synthesis_main, args=(name, tasks, self._results, threads, os.getpid()),
            name=name, daemon=True,
        )
        self._start_process(proc)
        w = _Worker(name, "synth", proc, tasks)
        self._synth_workers.append(w)
        self._idle_synth.append(w)
        self._pending_cv.notify_all()
        return w

    def _start_process(self, proc: Any) -> None:
        """Start a worker from the spawner thread (see engine.pipeline.spawner)."""
        if self._spawner is None:
            raise EngineError("workers start only in a started engine")
        self._spawner.start(proc)

    def _prover_name(self, dev: int | None) -> str:
        return "cpu0" if dev is None else f"gpu{dev}"

    def _spawn_prover(self, dev: int | None) -> _Worker:
        name = self._prover_name(dev)
        tasks = self._ctx.Queue()
        proc = self._ctx.Process(
            target=prover_main,
            args=(name, self._backend, dev, self.config.gpu_slots_per_device, tasks, self._results,
                  os.getpid()),
            name=name,
            daemon=True,
        )
        self._start_process(proc)
        w = _Worker(name, "prover", proc, tasks, device=dev)
        self._provers[name] = w
        self._keys_loaded[name] = set()
        self._keys_requested[name] = {}
        for jid in sorted(self._live_jobs):  # a restarted prover loads the keys again first
            js = self._jobs[jid]
            if js.key_error is None:
                self._request_key(w, js.key_path, js.job.preset)
        return w

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    def _request_key(self, w: _Worker, path: str, preset: str) -> None:
        """Send ``w`` a load task for ``path`` unless it has it or is loading it (under _state)."""
        if path in self._keys_loaded[w.name] or path in self._keys_requested[w.name]:
            return
        self._keys_requested[w.name][path] = preset
        task: dict[str, Any] = {"op": "load", "key_path": path}
        if self.faults.key_load_delay_s:
            task["test_delay_s"] = self.faults.key_load_delay_s
        if w.name in self.faults.key_load_fail:
            task["test_fail"] = "injected key load failure"
        w.tasks.put(task)
        if self._backend == "cuda":
            self._say(f"{w.name}: loading the proving key for {preset} onto the device...")

    def _keys_ready(self, prover: str) -> bool:
        """Whether ``prover`` holds the key of every unfinished job (under _state). A job whose
        key failed to load, or a prover given up on, needs no wait: the slot fails the partition."""
        if prover in self._prover_broken:
            return True
        loaded = self._keys_loaded.get(prover, set())
        for jid in self._live_jobs:
            js = self._jobs[jid]
            if js.key_error is None and js.key_path not in loaded:
                return False
        return True

    def _key_reply(self, kind: str, worker: str, path: str, info: dict) -> None:
        """A prover's ``key_loaded`` / ``key_error`` reply."""
        failed: list[_Part] = []
        with self._state:
            w = self._provers.get(worker)
            if w is None or w.process.pid != info.get("pid"):
                return  # from a process that has since died
            preset = self._keys_requested[worker].pop(path, None) or path
            if kind == "key_loaded":
                self._keys_loaded[worker].add(path)
                if w.ready and not self._keys_requested[worker]:
                    self._prover_failures[worker] = 0
                where = "loaded onto the device" if self._backend == "cuda" else "memory-mapped"
                line = f"{worker}: proving key for {preset} {where} in {info['ms'] / 1000:.1f} s"
            else:
                line = f"{worker}: proving key for {preset} could not be loaded: {info['message']}"
                for jid in self._live_jobs:
                    js = self._jobs[jid]
                    if js.key_path == path and js.key_error is None:
                        js.key_error = line
                        failed += [p for p in self._pending if p.job == jid]
                for p in failed:
                    self._pending.remove(p)
            self._keys_cv.notify_all()
        if kind == "key_error":
            self._error(worker, line)
        self._say(line)
        for p in failed:
            self._fail(p, line)

    def _circuit_cache(self) -> str:
        """Where compiled circuits are kept, shared by the orchestrator and the workers."""
        return circuit_cache_dir(self.config.param_cache_path())

    def _process_list(self) -> list[tuple[int, str]]:
        out = [(os.getpid(), "orchestrator")]
        with self._state:
            for w in self._synth_workers + list(self._provers.values()):
                if w.process.pid is not None and w.process.is_alive():
                    out.append((w.process.pid, w.name))
        return out

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
        nbytes = circuit.partition_bytes()
        if not self.admission.fits(nbytes):
            raise ValueError(
                f"a partition of {job.preset} holds {nbytes} bytes, more than the memory budget "
                f"of {self.admission.budget} bytes"
            )
        if job.preset not in self._key_of:  # once per preset: reading the key takes seconds at large
            self._key_of[job.preset] = proving.ensure_key(
                circuit, self.config.param_cache_path(), self._backend, self.progress,
                damaged=self.config.damaged_key,
            )
        key_path, vk = self._key_of[job.preset]
        jid = next(self._job_ids)
        t = self._emit(
            lambda t: events.job_submitted(t, jid, job.preset, job.partitions, circuit.constraints)
        )
        with self._state:
            js = _JobState(jid, job, circuit, str(key_path), vk, t)
            self._jobs[jid] = js
            self._live_jobs.add(jid)
            for w in self._provers.values():
                self._request_key(w, js.key_path, job.preset)
            for i in range(job.partitions):
                p = _Part(jid, i, job.preset, job.seed, nbytes)
                self._parts[(jid, i)] = p
                self.counters.add("partitions_submitted")
                tq = self._stage(p, "queued", "scheduler")
                p.timers.mark("queued", tq)
                self._pending.append(p)
            self._pending_cv.notify_all()
        return jid

    def set_knob(self, name: str, value: Any, source: str = "operator") -> None:
        """Change partition_workers, gpu_channel_capacity or memory_budget while running."""
        value = check_knob(name, value)
        if name == "memory_budget" and value:
            with self._state:
                need = max(
                    (p.nbytes for p in self._parts.values()
                     if p.stage not in _ENDED),
                    default=0,
                )
            if value < need:
                raise ValueError(
                    f"memory_budget {value} is smaller than one queued partition ({need} bytes)"
                )
        if name == "partition_workers":
            old = self.admission.resize(value)
            with self._state:
                self._pending_cv.notify_all()
        elif name == "gpu_channel_capacity":
            old = self.channel.resize(value)
        else:
            old = self.admission.set_budget(value)
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
            return all(js.finished for js in self._jobs.values())

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every submitted job has finished (proof_done emitted)."""
        with self._idle:
            return self._idle.wait_for(self.idle, timeout)

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
            deadline = None if timeout is None else self.clock.now() + timeout
            while not self._hurry and not self.wait_idle(0.2):
                if deadline is not None and self.clock.now() > deadline:
                    break
        self._cancel_all("engine stopped without draining" if not drain else "engine stopped")
        self._closed = True
        self.admission.close()
        self.channel.close()
        with self._state:
            self._pending_cv.notify_all()
            workers = self._synth_workers + list(self._provers.values())
        for w in workers:
            try:
                w.tasks.put(None)
            except Exception:
                pass
        for w in workers:
            w.process.join(timeout=0 if self._hurry else 5 if drain else 0.5)
            if w.process.is_alive():
                w.process.kill()
                w.process.join(timeout=5)
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
        for w in workers:
            for q in (w.tasks,):
                q.close()
                q.join_thread()
        self._results.close()
        self._results.join_thread()
        if self._spawner is not None:
            self._spawner.close()  # every worker it started has exited (joined above)
        sys.setswitchinterval(self._switch_before)
        atexit.unregister(self._at_exit)

    # -- admission and synthesis -------------------------------------------------------------
    def _admit_loop(self) -> None:
        while True:
            with self._state:
                while not self._pending and not self._closed:
                    self._pending_cv.wait(0.2)
                if self._closed:
                    return
                p = self._pending[0]

            def on_admit(p: _Part = p) -> None:
                p.permit = True
                p.reserved = True

            try:
                with self._state:
                    # pop now so a retried partition can go to the front meanwhile
                    if not self._pending or self._pending[0] is not p:
                        continue
                    self._pending.popleft()
                while not self.admission.acquire(p.nbytes, on_admit, timeout=0.2):
                    if self._closed or p.cancelled:
                        break
                if p.cancelled or not p.permit:
                    continue
            except AdmissionClosed:
                return
            reason = self._jobs[p.job].key_error
            if reason is not None:
                self._fail(p, reason)
                continue
            self._dispatch_synthesis(p)

    def _dispatch_synthesis(self, p: _Part) -> None:
        with self._state:
            while not self._idle_synth and not self._closed:
                live = sum(1 for w in self._synth_workers if w.process.is_alive())
                if live < self.admission.limit:
                    self._spawn_synth()
                    break
                self._pending_cv.wait(0.2)
            if self._closed:
                return
            w = self._idle_synth.popleft()
            circuit = self._jobs[p.job].circuit
            m, n = circuit.r1cs.num_constraints, circuit.r1cs.num_vars
            tag = f"j{p.job}p{p.index}a{p.attempt}"
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
            w.tasks.put(
                {
                    "op": "synth",
                    "key": p.key,
                    "preset": p.preset,
                    "cache_dir": self._circuit_cache(),
                    "seed": p.seed,
                    "partition": p.index,
                    "partitions": self._jobs[p.job].job.partitions,
                    "segs": p.segs,
                }
            )

    def _await_unmapped(self, p: _Part, limit_s: float = 60.0) -> None:
        """Wait until the prover has let go of a, b and c (a cpu prover unmaps them right after
        gpu_done, in its own unmap thread; a GPU prover never maps them, and says so through
        the same thread, behind any unmap queued before),
        so that the unlink that follows is what returns the pages and the dealloc interval
        holds the whole cost of freeing them. Gives up on stop, on a
        cancelled or retried partition, and after ``limit_s`` (a dead prover's mappings are
        gone with it)."""
        attempt = p.attempt
        deadline = self.clock.now() + limit_s
        while not p.abc_unmapped.wait(0.05):
            if self._closed or p.cancelled or p.attempt != attempt or self.clock.now() > deadline:
                return
            with self._state:
                w = self._provers.get(p.worker or "")
            if w is None or not w.process.is_alive():
                return

    def _release_buffers(self, p: _Part) -> int:
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

    def _release_permit(self, p: _Part, on_release: Callable[[], None] | None = None) -> None:
        """Give back the partition's synthesis permit (if it holds one); ``on_release`` runs
        under the admission lock, so the stage change and the free permit are one step."""
        with self._state:
            held, p.permit = p.permit, False
        if held:
            self.admission.release_permit(on_release)
        elif on_release is not None:
            on_release()

    # -- results and worker deaths -----------------------------------------------------------
    def _results_loop(self) -> None:
        next_stall_check = 0.0
        while not self._closed:
            try:
                msg = self._results.get(timeout=0.1)
            except queue.Empty:
                msg = None
            except (EOFError, OSError, ValueError):
                return
            if msg is not None:
                self._handle(msg)
            self._check_workers()
            if self.clock.now() >= next_stall_check:
                next_stall_check = self.clock.now() + STALL_CHECK_S
                self._check_stalls()

    def _held_by(self, w: _Worker) -> list[_Part]:
        """The partitions whose progress waits on worker ``w`` now (under _state)."""
        if w.role == "synth":
            return [p for k in w.busy
                    if (p := self._parts.get((k[0], k[1]))) is not None and p.attempt == k[2]]
        return [
            p for p in self._parts.values()
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
        now = self.clock.now()
        found: list[tuple[_Worker, list[_Part], str]] = []
        with self._state:
            for w in self._synth_workers + list(self._provers.values()):
                pid = w.process.pid
                if pid is None or not w.process.is_alive():
                    continue
                held = self._held_by(w)
                if not held:
                    self._stall.idle(pid)
                    continue
                why = self._stall.observe(pid, frozenset(p.key for p in held), now)
                if why is not None:
                    found.append((w, held, why))
        for w, held, why in found:
            retry = self.config.stall_action == "retry"
            then = "; killing it, the partition is retried" if retry else ""
            for p in held:
                self.counters.add("stalls")
                self._error(w.name, f"job {p.job} partition {p.index} stalled: {w.name} "
                                    f"(pid {w.process.pid}) {why}{then}")
            if retry:
                try:
                    os.kill(w.process.pid, signal.SIGKILL)
                except OSError:
                    pass

    def _lookup(self, key: tuple | None) -> _Part | None:
        if key is None:
            return None
        with self._state:
            p = self._parts.get((key[0], key[1]))
            if p is None or p.attempt != key[2] or p.cancelled:
                return None
            return p

    def _handle(self, msg: tuple) -> None:
        kind, worker, key = msg[0], msg[1], msg[2]
        if kind == "ready":
            with self._state:
                w = self._worker_by_name(worker)
                if w is not None:
                    w.ready = True
                    if w.role == "prover" and not self._keys_requested.get(worker):
                        self._prover_failures[worker] = 0
                self._keys_cv.notify_all()
            return
        if kind in ("key_loaded", "key_error"):
            self._key_reply(kind, worker, key, msg[3])
            return
        if kind == "worker_error":
            self._error(worker, f"worker could not start: {msg[3]}")
            with self._state:
                self._prover_broken.setdefault(worker, msg[3])
                self._keys_cv.notify_all()
            return
        with self._state:
            w = self._worker_by_name(worker)
            if w is not None and kind in ("synth_done", "task_error", "proved"):
                w.busy.discard(key)
                if w.role == "synth" and w.process.is_alive() and w not in self._idle_synth:
                    self._idle_synth.append(w)
                    self._pending_cv.notify_all()
        p = self._lookup(key)
        if p is None:
            return
        if kind == "synth_done":
            p.timers.set("witness", msg[3]["witness"])
            p.timers.set("eval", msg[3]["eval"])
            reason = self._jobs[p.job].key_error
            if reason is not None:
                self._fail(p, reason)
            else:
                self._synthesized(p)
        elif kind == "gpu_done":
            p.gpu_result = ("ok", msg[3])
            p.gpu_done.set()
        elif kind == "abc_unmapped":
            p.abc_unmapped.set()
        elif kind == "proved":
            p.proof_result = ("ok", msg[3], msg[4], msg[5])
            p.proved.set()
        elif kind == "task_error":
            reason = f"{worker}: {msg[3]}"
            self._error(worker, f"job {p.job} partition {p.index}: {msg[3]}")
            if p.stage == "synthesizing":
                self._fail(p, reason)
            elif p.stage == "gpu":
                p.gpu_result = ("fail", reason)
                p.gpu_done.set()
            else:
                p.proof_result = ("fail", reason)
                p.proved.set()

    def _worker_by_name(self, name: str) -> _Worker | None:
        for w in self._synth_workers:
            if w.name == name:
                return w
        return self._provers.get(name)

    def _check_workers(self) -> None:
        if self._closed or self._stopping and self.idle():
            return
        dead: list[_Worker] = []
        with self._state:
            for w in self._synth_workers + list(self._provers.values()):
                if not w.process.is_alive() and w.process.exitcode is not None:
                    dead.append(w)
        for w in dead:
            self._worker_died(w)

    def _worker_died(self, w: _Worker) -> None:
        code = w.process.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        with self._state:
            if w.role == "synth":
                self._synth_workers.remove(w)
                if w in self._idle_synth:
                    self._idle_synth.remove(w)
            else:
                self._provers.pop(w.name, None)
                loading = bool(self._keys_requested.get(w.name))
                self._keys_loaded[w.name] = set()  # its slots wait for the restarted prover
                self._keys_requested[w.name] = {}
            held = [
                p
                for k in w.busy
                if (p := self._parts.get((k[0], k[1]))) is not None and p.attempt == k[2]
            ]
            if w.role == "prover":
                # every partition on that prover (in its GPU half or its finalize half)
                held = [
                    p
                    for p in self._parts.values()
                    if p.worker == w.name and p.stage in ("gpu", "deallocating", "finalizing")
                ]
        self.counters.add("worker_deaths")
        self._error(w.name, f"worker pid {w.process.pid} died ({how})")
        for p in held:
            if p is None or p.cancelled:
                continue
            if w.role == "synth":
                self._retry(p, f"{w.name} died ({how})")
            elif p.stage == "gpu":
                p.gpu_result = ("retry", f"{w.name} died ({how})")
                p.gpu_done.set()
            else:
                p.proof_result = ("retry", f"{w.name} died ({how})")
                p.proved.set()
        if self._closed:
            return
        with self._state:
            if w.role == "synth":
                self._pending_cv.notify_all()
                return
            if not w.ready or loading:
                n = self._prover_failures.get(w.name, 0) + 1
                self._prover_failures[w.name] = n
                if n >= MAX_PROVER_START_FAILURES:
                    self._prover_broken.setdefault(
                        w.name, f"prover died {n} times before it was ready (or loading its keys)"
                    )
            if w.name in self._prover_broken:
                reason = self._prover_broken[w.name]
                self._keys_cv.notify_all()
            else:
                self._spawn_prover(w.device)
                return
        self._error(w.name, f"giving up on {w.name}: {reason}")

    def _retry(self, p: _Part, reason: str) -> None:
        """Free a partition's buffers and permit, and queue it again at the front; after
        MAX_ATTEMPTS attempts the partition fails instead."""
        if p.attempt + 1 >= MAX_ATTEMPTS:
            self._fail(p, f"gave up after {MAX_ATTEMPTS} attempts: {reason}")
            return
        self._release_buffers(p)
        self._release_permit(p)
        self.counters.add("retries")
        with self._state:
            p.attempt += 1
            p.gpu_done = threading.Event()
            p.proved = threading.Event()
            p.abc_unmapped = threading.Event()
            p.gpu_result = p.proof_result = None
            p.worker = None
            p.timers = PartitionTimers()
            t = self._stage(p, "queued", "scheduler", reason=f"retry: {reason}")
            p.timers.mark("queued", t)
            self._pending.appendleft(p)
            self._pending_cv.notify_all()

    def _fail(self, p: _Part, reason: str) -> None:
        if p.cancelled:
            return  # _cancel_all reports it
        self._release_buffers(p)
        self._release_permit(p)
        with self._state:
            if p.stage in _ENDED or p.cancelled:
                return
            self._stage(p, events.FAILED, p.worker or "scheduler", reason=reason)
            self.counters.add("partitions_failed")
            js = self._jobs[p.job]
            js.failed[p.index] = reason
        self._maybe_finish_job(p.job)

    # -- channel -----------------------------------------------------------------------------
    def _synthesized(self, p: _Part) -> None:
        if self.config.permit_release == "synthesized":
            # the cuzk bug: the permit goes back before the partition is delivered
            def enter() -> None:
                t = self._stage(p, "waiting_gpu", "scheduler")
                p.timers.mark("synthesized", t)

            self._release_permit(p, enter)
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

            def on_enter(item: tuple[_Part, int]) -> None:
                part = item[0]
                if part.cancelled:
                    return
                if self.config.permit_release == "delivered":

                    def enter() -> None:
                        t = self._stage(part, "waiting_gpu", "scheduler")
                        part.timers.mark("synthesized", t)

                    self._release_permit(part, enter)

            try:
                self.channel.put(
                    (p, attempt),
                    on_enter,
                    cancelled=lambda: p.cancelled or p.attempt != attempt or self._closed,
                )
            except ChannelClosed:
                return

    def _await_key_everywhere(self, p: _Part, attempt: int) -> str | None:
        """Hold a synthesized partition out of the channel until every prover (not given up on)
        has loaded its job's key, so whichever slot takes it finds the key loaded; returns the
        job's key error, if any. Slots also wait (_keys_ready), but a slot already blocked in
        channel.get when a new job arrives could otherwise take its partition first."""
        js = self._jobs[p.job]
        names = [self._prover_name(d) for d in self._devices]
        with self._state:
            while not (
                js.key_error is not None
                or self._closed
                or p.cancelled
                or p.attempt != attempt
                or all(
                    n in self._prover_broken or js.key_path in self._keys_loaded.get(n, ())
                    for n in names
                )
            ):
                self._keys_cv.wait(0.2)
            return js.key_error

    def _slot_loop(self, dev: int | None, slot: int) -> None:
        prover = self._prover_name(dev)
        label = f"{prover}/{slot}"
        while True:
            with self._state:
                while not self._closed and not self._keys_ready(prover):
                    self._keys_cv.wait(0.2)
            if self._closed:
                return
            box: dict[str, _Part] = {}

            def on_leave(item: tuple[_Part, int]) -> None:
                p, attempt = item
                if p.cancelled or p.attempt != attempt:
                    return
                box["p"] = p
                p.worker = prover
                t = self._stage(p, "gpu", label)
                p.timers.mark("gpu", t)
                p.timers.span("channel_wait", "synthesized", t)

            try:
                item = self.channel.get(timeout=0.2, on_leave=on_leave)
            except ChannelClosed:
                return
            if item is None or "p" not in box:
                continue
            self._run_on_gpu(box["p"], prover, label)

    def _run_on_gpu(self, p: _Part, prover: str, label: str) -> None:
        with self._state:
            js = self._jobs[p.job]

            def ready() -> bool:
                # the prover is up and holds the key; this only waits when the prover died and
                # is restarting after the slot last checked _keys_ready (a fault path)
                return (
                    self._closed
                    or prover in self._prover_broken
                    or js.key_error is not None
                    or (prover in self._provers and js.key_path in self._keys_loaded[prover])
                )

            while not ready():
                self._keys_cv.wait(0.2)
            w = self._provers.get(prover)
        if prover in self._prover_broken:
            self._fail(p, f"{prover} unavailable: {self._prover_broken[prover]}")
            return
        if js.key_error is not None:
            self._fail(p, js.key_error)
            return
        if w is None or self._closed:
            return
        segs = p.segs
        w.tasks.put(
            {
                "op": "prove",
                "key": p.key,
                "preset": p.preset,
                "key_path": js.key_path,
                "segs": segs,
                "b_g2": self.config.b_g2,
            }
        )
        while not p.gpu_done.wait(0.2):
            if self._closed:
                return
        if p.cancelled:
            return
        status = p.gpu_result
        if status is None or status[0] != "ok":
            kind, reason = status if status else ("fail", "no result")
            if kind == "retry":
                self._retry(p, reason)
            else:
                self._fail(p, reason)
            return
        timings = status[1]
        p.timers.set("gpu_call", timings.get("gpu_call"))
        p.timers.set("gpu_host", timings.get("gpu_host"))
        for k in events.KERNEL_KEYS:
            p.timers.set(k, timings.get(k))
        if self.config.dealloc == "sync":
            t_dealloc = self._stage(p, "deallocating", label)
            self._handoff_timers(p, timings, t_dealloc)
            self._await_unmapped(p)
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

    def _handoff_timers(self, p: _Part, timings: dict, t_back: float) -> None:
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
            while not p.proved.wait(0.2):
                if self._closed or p.cancelled:
                    break
            if p.cancelled or self._closed:
                continue
            res = p.proof_result
            if res is None or res[0] != "ok":
                kind, reason = res if res else ("fail", "no proof")
                if kind == "retry":
                    self._retry(p, reason)
                else:
                    self._fail(p, reason)
                continue
            _, proof, public, ftimings = res
            p.timers.set("b2", ftimings.get("b2"))
            with self._state:
                js = self._jobs[p.job]
            if (p.job, p.index) in self.faults.corrupt_proof:
                proof = bytes([proof[0] ^ 0x01]) + bytes(proof[1:])
            try:  # the verifier's inputs come from the job (seeds, graph), not the prover's z
                public = js.circuit.public_inputs(js.job.seed, p.index, js.job.partitions)
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
            js = self._jobs[jid]
            ended = len(js.proofs) + len(js.failed) + len(js.cancelled)
            if js.finished or ended < js.job.partitions:
                return
            js.finished = True
            self._live_jobs.discard(jid)
            self._keys_cv.notify_all()
            if js.cancelled:
                self.counters.add("jobs_cancelled")
                with self._idle:
                    self._idle.notify_all()
                return
            proof_hex = b"".join(js.proofs.get(i, b"") for i in range(js.job.partitions)).hex()
            ok = not js.failed and all(js.verified.values())
        self.counters.add("proofs_done")
        self.counters.add("proofs_verified" if ok else "proofs_failed")
        t_sub = js.t_submit
        self._emit(
            lambda t: events.proof_done(t, jid, proof_hex, ok, (t - t_sub) * 1000.0)
        )
        with self._idle:
            self._idle.notify_all()

    # -- cancellation ------------------------------------------------------------------------
    def _cancel_all(self, reason: str) -> None:
        """Every partition not yet ended (queued ones included) will not be proven: stage
        ``cancelled`` with the reason, never counted as failed."""
        with self._state:
            live = [p for p in self._parts.values() if p.stage not in _ENDED]
            for p in live:
                p.cancelled = True
            self._pending.clear()
        if not live:
            return
        self.channel.drain()
        for p in live:
            p.gpu_done.set()
            p.proved.set()
        for p in live:
            self._release_buffers(p)
            self._release_permit(p)
            with self._state:
                self._stage(p, events.CANCELLED, p.worker or "scheduler", reason=reason)
                self.counters.add("partitions_cancelled")
                self._jobs[p.job].cancelled[p.index] = reason
            self._maybe_finish_job(p.job)
