"""The worker processes: synthesis workers, and one prover per GPU (or one on the CPU backend).

Both are started with ``spawn`` by the orchestrator and talk to it through two queues of their
own: tasks in, replies out (engine.pipeline.replies merges the replies). Large vectors never pass through
the queues: tasks name shared-memory segments (engine.pipeline.shm) that the orchestrator created.
Synthesis workers map them and write a, b, c and z in place; a GPU prover reads them from their
files straight into its upload (kernels/stored.py) and never maps them; a cpu prover maps them.

The messages are the typed dataclasses of engine.pipeline.messages: a synthesis worker takes
SynthTask and answers Ready (once warm, before its first task), SynthDone or TaskFailed; a
prover takes LoadKey (answered KeyLoaded / KeyFailed) and ProveTask (answered GpuDone once H and
the G1 MSMs are done and a, b, c are no longer needed, AbcUnmapped, then Proved, or TaskFailed).
Stop ends a worker.

The prover runs ``gpu_slots_per_device`` slot threads that share one loaded proving key, and one
finalize thread per process that runs the B2/assembly half so a slot is free for the next
partition as soon as its GPU half is done. With ``gpu_calls = "serial"`` the slots take turns at
the GPU (one call at a time per process): a slot reads, parses and (compact witness, device
backend) uploads its next partition before it waits for its turn, so that host work overlaps
another slot's call, and only one call's working set is on the GPU at a time.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from engine.pipeline import prover_trace
from engine.pipeline.latency import quicken_handoffs
from engine.pipeline.messages import (
    AbcUnmapped,
    GpuDone,
    KeyFailed,
    KeyLoaded,
    KeyProgress,
    LoadKey,
    PartKey,
    Proved,
    ProveTask,
    Ready,
    Stop,
    SynthDone,
    SynthTask,
    TaskFailed,
    WorkerFailed,
)
from engine.pipeline.shm import Attached, SegmentSpec, segment_path
from engine.pipeline.turn import Turn
from kernels.stored import StoredArray


def _ms(t0: float, t1: float) -> float:
    return (t1 - t0) * 1000.0


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text.splitlines()[0] if text else type(exc).__name__


def _ignore_interrupts() -> None:
    """Ctrl-C (and a terminal's hangup) reaches the whole process group; the orchestrator
    decides how workers stop. SIGTERM keeps its default: a worker sent it alone is meant to go."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None) -> None:
    """Have the kernel SIGKILL this worker when its parent goes, however it goes (a crash, a
    SIGKILL), so a dead orchestrator never leaves a worker holding its key and partitions.

    Linux sends the parent-death signal when the *thread* that forked this process exits; the
    engine forks every worker from one spawner thread that outlives them all
    (engine.pipeline.spawner). The parent may already be gone by the time this runs (start-up
    takes a while): then getppid() is no longer ``parent_pid`` and the worker exits at once."""
    if parent_pid is None:
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent_pid:
        os._exit(1)


def synthesis_main(
    name: str, tasks: Any, results: Any, threads: int | None = None, parent_pid: int | None = None,
    cpus: tuple[int, ...] | None = None,
) -> None:
    """Entry point of a synthesis worker process. ``threads`` caps its numba threads: the
    engine gives each worker a share of the cores, so that N workers do not run N × cores
    threads and starve the prover and the orchestrator of CPU. ``cpus`` (NUMA placement, see
    engine.pipeline.placement) binds it to its GPU's node before any thread starts, so numba's
    pool and the queue's feeder thread inherit the binding."""
    die_with_parent(parent_pid)
    if cpus:
        from engine.pipeline.placement import pin

        pin(cpus)
    _ignore_interrupts()
    from engine.pipeline.circuits import resolve
    from engine.synthesis import eval_plan, evaluate

    if threads:
        import numba

        most = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]  # set at import
        numba.set_num_threads(max(1, min(threads, most)))
    plans: dict[str, Any] = {}
    buffers: dict[str, Any] = {}  # abc_eval = "gpu": this worker's own z, kept per circuit
    _warm_synthesis()
    results.put(Ready(name))
    while True:
        task = tasks.get()
        if not isinstance(task, SynthTask):
            return  # Stop
        key = task.key
        attached: list[Attached] = []
        views: dict[str, Any] = {}
        try:
            circuit = resolve(task.preset, task.cache_dir)
            segs: dict[str, SegmentSpec] = task.segs
            if task.abc_eval == "gpu":  # the witness alone, in compact form
                from engine.synthesis import synthesize_to_segment

                att = Attached(segs["w"])
                attached.append(att)
                w_ms, c_ms = synthesize_to_segment(circuit, task.seed, key.index, task.partitions,
                                                   att.array, buffers, task.source, task.inputs)
                results.put(SynthDone(name, key, w_ms, c_ms))
                continue
            for k in ("a", "b", "c", "z"):
                att = Attached(segs[k])
                attached.append(att)
                views[k] = att.array
            t0 = time.perf_counter()
            circuit.witness(task.seed, key.index, task.partitions, views["z"], task.source, task.inputs)
            t1 = time.perf_counter()
            r1cs = circuit.r1cs
            if task.preset not in plans:
                plans[task.preset] = eval_plan(r1cs)
            evaluate(r1cs, views["z"], out=(views["a"], views["b"], views["c"]),
                     plan=plans[task.preset])
            t2 = time.perf_counter()
            results.put(SynthDone(name, key, _ms(t0, t1), _ms(t1, t2)))
        except Exception as exc:  # reported to the orchestrator, which fails the partition
            results.put(TaskFailed(name, key, _one_line(exc)))
        finally:
            views.clear()
            for att in attached:
                att.close()


def _warm_synthesis() -> None:
    """Load the evaluation kernels (numba's cache) before the first real partition, so the
    first partition's eval timer measures evaluation, not compilation."""
    try:
        from engine.pipeline.circuits import resolve
        from engine.synthesis import evaluate

        c = resolve("cubic")
        evaluate(c.r1cs, c.witness(1, 0, 1))
    except Exception:
        pass


@dataclass(frozen=True)
class ProverSpec:
    """Everything a prover process is started with, in one typed value: its name (``gpu<N>``,
    or ``cpu0``), the backend it loads, the device it selects (None on a host backend), how
    many partitions it holds at once, its two queues (tasks in, replies out), the
    orchestrator's pid, which it dies with, and how its slots share the GPU (``gpu_calls``:
    "parallel", calls side by side, or "serial", one call at a time). The supervisor builds it
    (Supervisor.prover_spec); it crosses into the process as the one argument of :func:`prover_main`, so it must pickle:
    plain values, and multiprocessing queues, which pickle while a process is being spawned."""

    name: str
    backend: str
    device: int | None
    slots: int
    tasks: Any
    results: Any
    parent_pid: int | None = None
    gpu_calls: str = "parallel"


B2_MODES = ("beside", "turn", "call")


class _ProverState:
    """What one prover process holds: the backend, loaded keys, the finalize queue and the
    turn at the GPU (a lock the slots take around their call with gpu_calls = "serial", a null
    context with "parallel")."""

    def __init__(self, spec: ProverSpec):
        from kernels.backend import backend_class, get_backend

        self.name = spec.name
        self.device = spec.device
        if spec.device is not None:  # before the backend starts here (a host backend ignores it)
            backend_class(spec.backend).select_device(spec.device)
        self.backend = get_backend(spec.backend)
        self.results = spec.results
        self.keys: dict[str, Any] = {}
        self.compacts: dict[str, Any] = {}  # preset -> resident compact matrices
        self.vks: dict[str, Any] = {}  # verifying keys of keys generated here (device sources)
        self.slots = spec.slots
        self.gpu_calls = spec.gpu_calls
        self.serial = spec.gpu_calls == "serial"
        self.turn: Turn | None = Turn() if self.serial else None
        # Where B2's G2 MSM runs on the prover's backend (SEALTOP_B2): "beside", in the finalize
        # thread beside the next call; "turn", there but holding the turn (serial slots), ahead
        # of the next call; "call", in the slot's own call (before L, so that its ends run
        # beside L). On the H200 (docs/BENCHMARKS.md, thirteenth round) with the MSM ends beside:
        # "call" 1.045 s a partition, "turn" 1.054; "beside" ran out of GPU memory with the pairs.
        self.b2 = os.environ.get("SEALTOP_B2", "call")
        if self.b2 not in B2_MODES:
            raise ValueError(f"SEALTOP_B2 is {self.b2!r}; it takes one of {', '.join(B2_MODES)}")
        self.b2_turn = self.serial and self.b2 == "turn"
        # the turn's calls share one stream, so CuPy's pool (per stream) hands each call the
        # blocks the previous one freed (kernels/cuda/stream.py); each slot's own stream else
        self.call_stream: Callable[[], AbstractContextManager[Any]] = nullcontext
        if self.serial and self.backend.is_device:
            from kernels.cuda.stream import turn_stream

            self.call_stream = turn_stream
        self.keys_lock = threading.Lock()
        self.finalize_q: queue.Queue = queue.Queue()
        self.unmap_q: queue.Queue = queue.Queue()

    @contextmanager
    def gpu_turn(self, first: bool = False) -> Iterator[None]:
        """Hold the prover's turn at the GPU, on the turn's stream (gpu_calls = "serial"; with
        "parallel" neither): what a call and a key load run inside; ``first`` goes ahead of
        the slots waiting (the finalize thread's B2)."""
        with self.turn.hold(first) if self.turn else nullcontext(), self.call_stream():
            yield

    def say(self, path: str) -> Callable[[str], None]:
        """A progress callback whose lines reach the engine's log as KeyProgress of ``path``."""

        def say(line: str) -> None:
            self.results.put(KeyProgress(self.name, path, line))

        return say

    def load(self, path: str) -> float:
        """Load a key once (under the keys lock); ms it took, 0 if it was already loaded."""
        from engine.pipeline import proving

        with self.keys_lock:
            if path in self.keys:
                return 0.0
            t0 = time.perf_counter()
            self.keys[path], self.vks[path] = proving.load_source(
                path, self.backend, self.slots, self.say(path), gpu_calls=self.gpu_calls)
            return _ms(t0, time.perf_counter())

    def compact(self, preset: str, cache_dir: str,
                progress: Callable[[str], None] | None = None) -> Any:
        """The circuit's compact matrices where this prover evaluates (abc_eval = "gpu"),
        made from the circuit cache on the first partition that needs them, then kept.
        ``progress``: one line per step with its seconds (the circuit when this process had not
        resolved it yet, the compact form, its upload)."""
        from engine.groth16.compact import compact_r1cs
        from engine.groth16.resident import resident_compact
        from engine.pipeline.circuits import resolve

        say = progress or (lambda _msg: None)
        with self.keys_lock:
            rc = self.compacts.get(preset)
            if rc is None:
                t0 = time.perf_counter()
                hits = resolve.cache_info().hits
                circuit = resolve(preset, cache_dir or None)
                if resolve.cache_info().hits == hits:  # not resolved in this process before
                    say(f"circuit {preset}: {circuit.r1cs.num_constraints} constraints, from "
                        f"{cache_dir} ({time.perf_counter() - t0:.2f} s)")
                t0 = time.perf_counter()
                cm = compact_r1cs(circuit.r1cs)
                say(f"compact matrices: {cm.nnz} nonzeros, {len(cm.coefs)} coefficients, "
                    f"{cm.nbytes() / 2**30:.2f} GiB ({time.perf_counter() - t0:.2f} s)")
                t0 = time.perf_counter()
                rc = self.compacts[preset] = resident_compact(cm, self.backend)
                say(f"compact matrices resident in {self.backend.name} memory "
                    f"({time.perf_counter() - t0:.2f} s)")
            return rc

    def key(self, path: str) -> Any:
        """A loaded key; the orchestrator sends a load task first, so this normally only looks up."""
        self.load(path)
        return self.keys[path]


def _load_task(state: _ProverState, task: LoadKey) -> None:
    """Load (or make) a key, and with abc_eval = "gpu" the circuit's matrices, on the device.
    With gpu_calls = "serial" this takes the turn and its stream like a call: the blocks the load
    frees (a device-made key's scratch, tens of GB at porep-32g) then stay in the pool where the
    calls allocate. Loaded on the slot's own stream, they sat where no call could reuse them; the
    likely cause of what an H200 showed at porep-32g (2026-12-04): the card at 140.6 GB for a
    second at the first calls, the first call 1.87 s against 1.08 after it."""
    path = task.source
    try:
        with state.gpu_turn():
            ms = state.load(path)
            if task.compact is not None:  # abc_eval = "gpu": the matrices too, before any partition
                t0 = time.perf_counter()
                state.compact(*task.compact, progress=state.say(path))
                ms += _ms(t0, time.perf_counter())
        state.results.put(KeyLoaded(state.name, path, ms, os.getpid(), state.vks.get(path)))
    except Exception as exc:
        if os.environ.get("SEALTOP_WORKER_TRACEBACK"):
            traceback.print_exc()
        state.results.put(KeyFailed(state.name, path, _one_line(exc), os.getpid()))


def _slot_loop(state: _ProverState, tasks: Any, slot: int) -> None:
    from engine.groth16.prove import START_GROUPS
    from engine.pipeline import proving

    while True:
        task = tasks.get()
        if isinstance(task, LoadKey):
            _load_task(state, task)
            continue
        if not isinstance(task, ProveTask):  # Stop
            tasks.put(Stop())  # let the sibling slots see it too
            state.finalize_q.put(None)
            return
        t_recv = time.monotonic()  # the orchestrator splits its wrapper with this and t_sent
        key = task.key
        trace = prover_trace.SlotTrace(key)
        trace.stamp("received")
        mapped: dict[str, Attached] = {}
        inputs: dict[str, Any] = {}
        handle = None
        try:
            pk = state.key(task.key_source)
            trace.stamp("key")
            if task.abc_eval == "gpu":
                _prove_compact(state, task, pk, trace, t_recv, mapped)
                continue
            for k in ("a", "b", "c", "z"):
                spec = task.segs[k]
                if _reads_segment(state, k, task.b_g2):
                    inputs[k] = StoredArray(segment_path(spec.name), spec.shape)
                else:
                    mapped[k] = Attached(spec)
                    inputs[k] = mapped[k].array
            trace.stamp("attach")
            handle, wait_ms, call_ms = _take_turn(state, trace, proving.start, pk, inputs["a"],
                                                  inputs["b"], inputs["c"], inputs["z"],
                                                  state.backend, b2=_b2_in_call(state, task.b_g2))
            timings = dict(proving.kernel_timings(handle))
            timings["gpu_call"], timings["gpu_wait"] = call_ms, wait_ms
            if prover_trace.ENABLED:
                trace.extra["kernels_ms"] = sum(timings.get(g, 0.0) for g in START_GROUPS)
            _reply_gpu_done(state, key, timings, t_recv, trace)
            inputs.clear()
            _pass_on(state, task, handle, [mapped.pop(k) for k in ("a", "b", "c") if k in mapped],
                     mapped.pop("z", None), pk, trace)
        except Exception as exc:
            detail = _one_line(exc)
            if os.environ.get("SEALTOP_WORKER_TRACEBACK"):
                traceback.print_exc()
            state.results.put(TaskFailed(state.name, key, detail))
        finally:
            inputs.clear()
            handle = None  # it holds views of what this slot mapped
            for att in mapped.values():
                att.close()


def _take_turn(state: _ProverState, trace: Any, call: Callable[..., Any], *args: Any,
               **kwargs: Any) -> tuple[Any, float, float]:
    """(what ``call(*args, **kwargs)`` returned, ms waited for the turn at the GPU, ms of the
    call): the call runs holding the prover's turn (gpu_calls = "serial": one call at a time,
    on the turn's shared stream on a device; "parallel": no wait, the slot's own stream). The
    wait is reported apart (gpu_wait), so gpu_host stays the slot's own host time."""
    t_wait = time.perf_counter()
    with state.gpu_turn():
        t0 = time.perf_counter()
        trace.stamp("turn")
        e_pre = state.backend.mark() if prover_trace.ENABLED else None  # on the call's stream
        out = call(*args, **kwargs)
        t1 = time.perf_counter()
        if e_pre is not None:
            trace.extra["gpu_span_ms"] = state.backend.elapsed_ms(e_pre, state.backend.mark())
    trace.stamp("call")
    return out, _ms(t_wait, t0), _ms(t0, t1)


def _prove_compact(state: _ProverState, task: ProveTask, pk: Any, trace: Any, t_recv: float,
                   mapped: dict[str, Attached]) -> None:
    """The GPU half from the compact witness (abc_eval = "gpu"): the segment read (a GPU
    prover) or mapped (cpu), a, b, c evaluated where H runs; replies as the a, b, c path does.
    With gpu_calls = "serial" the witness is placed on the device (uploaded on this slot's
    stream) before the slot waits for its turn, so the upload overlaps another slot's call;
    with "parallel" the call uploads it, as it always has."""
    from engine.groth16 import compact, resident
    from engine.pipeline import proving

    spec = task.segs["w"]
    if not state.backend.is_device:
        mapped["w"] = Attached(spec)
        words = mapped["w"].array
    else:
        words = StoredArray(segment_path(spec.name), spec.shape).read()
    w = compact.read_compact(words, compact.layout_of(words))
    rc = state.compact(task.preset, task.cache_dir)
    # B2 on the cpu reads z on the host: expanded there, the device keeps its own
    host_z = compact.expand_witness(w) if task.b_g2 == "cpu" and state.backend.is_device else None
    placed = resident.place_witness(w, state.backend) if state.serial else w
    trace.stamp("attach")
    handle, wait_ms, call_ms = _take_turn(state, trace, proving.start, pk, None, None, None,
                                          host_z, state.backend, compact=(rc, placed),
                                          b2=_b2_in_call(state, task.b_g2))
    timings = dict(proving.kernel_timings(handle))
    timings["gpu_call"], timings["gpu_wait"] = call_ms, wait_ms
    del w, words, placed  # views of the mapping (the unmap thread drops it next), the upload
    _reply_gpu_done(state, task.key, timings, t_recv, trace)
    _pass_on(state, task, handle, [mapped.pop("w")] if "w" in mapped else [], None, pk, trace)


@dataclass
class _Unmap:
    """Mappings for the unmap thread to drop. ``key`` names the partition whose a, b and c
    they are (said with AbcUnmapped, which the orchestrator's dealloc step waits for before it
    unlinks); None for a z the finalize half is done with."""

    key: PartKey | None
    mapped: list[Attached]


@dataclass
class _Finish:
    """A partition's B2/assembly half for the finalize thread: the GPU half's ``handle``, the
    mapping of z where the slot mapped it (dropped once the proof is made), where B2 runs and
    the loaded key."""

    key: PartKey
    handle: Any
    z: Attached | None
    b_g2: str
    pk: Any


def _reply_gpu_done(state: _ProverState, key: PartKey, timings: dict[str, float],
                    t_recv: float, trace: Any) -> None:
    """GpuDone for ``key``, with the slot's host time around the call (its wait for the turn at
    the GPU, gpu_wait, left out) and its monotonic stamps, from which the orchestrator splits its
    wrapper timer."""
    t_sent = time.monotonic()
    timings["gpu_host"] = max(0.0, (t_sent - t_recv) * 1000.0 - timings["gpu_call"]
                              - timings.get("gpu_wait", 0.0))
    timings["recv_mono"], timings["sent_mono"] = t_recv, t_sent
    state.results.put(GpuDone(state.name, key, timings))
    trace.stamp("sent")


def _pass_on(state: _ProverState, task: ProveTask, handle: Any, abc: list[Attached],
             z: Attached | None, pk: Any, trace: Any) -> None:
    """After GpuDone: what the slot mapped of a, b and c to the unmap thread (unmapping GBs
    of touched pages is deallocation, and must not hold the slot from its next partition), the
    finalize half to the finalize thread (z stays mapped for it), then the slot's trace line."""
    state.unmap_q.put(_Unmap(task.key, abc))
    state.finalize_q.put(_Finish(task.key, handle, z, task.b_g2, pk))
    trace.emit()


def _b2_in_call(state: _ProverState, b_g2: str) -> bool:
    """Whether the slot's call makes B2 too (SEALTOP_B2=call, B2 on the prover's own backend)."""
    return state.b2 == "call" and b_g2 != "cpu"


def _reads_segment(state: _ProverState, name: str, b_g2: str) -> bool:
    """Whether the slot reads segment ``name`` from its file rather than mapping it. A GPU
    prover reads: its backend copies the data to the device anyway, and a mapping would cost a
    fault per page, an unmap of every page and contention on the process's map lock (see
    kernels/stored.py). The cpu backend computes on the mapping itself. z stays mapped when B2
    runs on the cpu, whose finalize half reads z after the orchestrator has unlinked it."""
    if not state.backend.is_device:
        return False
    return not (name == "z" and b_g2 == "cpu")


def _unmap_loop(state: _ProverState) -> None:
    """Drop the mappings of partitions whose GPU half (a, b, c) or finalize half (z) is done;
    say so for a, b, c (mapped or not), which the orchestrator's dealloc step waits for."""
    while True:
        item: _Unmap | None = state.unmap_q.get()
        if item is None:
            return
        for att in item.mapped:
            att.close()
        if item.key is not None:
            state.results.put(AbcUnmapped(state.name, item.key))


def _finalize_loop(state: _ProverState, slots: int) -> None:
    from engine.pipeline import proving

    remaining = slots
    while remaining:
        item: _Finish | None = state.finalize_q.get()
        if item is None:
            remaining -= 1
            continue
        key, handle, z_att, b_g2, loaded = item.key, item.handle, item.z, item.b_g2, item.pk
        del item  # the handle holds a view of z: every reference must go before z is unmapped
        try:
            t0 = time.perf_counter()
            proof = proving.finish(handle, b_g2, loaded,
                                   turn=(lambda: state.gpu_turn(first=True)) if state.b2_turn else None)
            t1 = time.perf_counter()
            # B2's MSM as prove_b2 or the call that made it timed it; the half's wall where neither did
            b2_ms = handle.timings_ms.get("b2", _ms(t0, t1))
            state.results.put(Proved(state.name, key, proof, b2_ms))
        except Exception as exc:
            state.results.put(TaskFailed(state.name, key, _one_line(exc)))
        finally:
            del handle
            if z_att is not None:
                state.unmap_q.put(_Unmap(None, [z_att]))


def prover_main(spec: ProverSpec) -> None:
    """Entry point of a prover process (one per GPU, or one on the CPU backend)."""
    die_with_parent(spec.parent_pid)
    _ignore_interrupts()
    quicken_handoffs()
    name, slots, tasks = spec.name, spec.slots, spec.tasks
    try:
        state = _ProverState(spec)
    except Exception as exc:
        spec.results.put(WorkerFailed(name, _one_line(exc)))
        return
    prover_trace.install()
    spec.results.put(Ready(name, state.backend.name))
    threads = [
        threading.Thread(target=_slot_loop, args=(state, tasks, s), name=f"slot{s}")
        for s in range(slots)
    ]
    fin = threading.Thread(target=_finalize_loop, args=(state, slots), name="finalize")
    unmap = threading.Thread(target=_unmap_loop, args=(state,), name="unmap")
    for t in threads:
        t.start()
    fin.start()
    unmap.start()
    for t in threads:
        t.join()
    fin.join()
    state.unmap_q.put(None)
    unmap.join()
