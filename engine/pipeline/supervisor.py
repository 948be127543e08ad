"""The supervisor of an Engine's worker processes: it starts them, notices when one dies,
restarts a dead prover or gives up on it, watches busy workers for stalls, and stops them all.

Workers are started with ``spawn`` from one spawner thread (engine.pipeline.spawner) and die
with the orchestrator (engine.pipeline.workers.die_with_parent). Synthesis workers are a pool
that grows up to the admission limit; there is one prover per device (``gpu<N>``), or ``cpu0``
on the CPU backend. What a death means for the partitions a worker held is the business of
the Engine's results thread (engine.pipeline.results): :meth:`Supervisor.reap` hands it the dead
workers, and after it has dealt with their partitions :meth:`Supervisor.after_death` restarts a
prover, or reports through the ``on_give_up`` callback that it gave up on it (a prover that
dies MAX_PROVER_START_FAILURES times before it is ready, or while loading its keys, is not
restarted forever).

State (the worker lists, failures, the provers given up on) is guarded by the Engine's state
lock, which the caller holds for every method except :meth:`stop` and :meth:`close`.
"""

from __future__ import annotations

import itertools
import os
import signal
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.pipeline.messages import PartKey, Stop, Task
from engine.pipeline.placement import bind_process
from engine.pipeline.replies import Replies
from engine.pipeline.spawner import Spawner
from engine.pipeline.stall import StallWatch
from engine.pipeline.workers import ProverSpec, prover_main, synthesis_main

MAX_PROVER_START_FAILURES = 3  # a device whose prover dies this often before it is ready is
# given up on (its partitions fail with the reason) rather than restarted forever


@dataclass
class Worker:
    """One worker process, its task queue and the partitions it holds."""

    name: str
    role: str  # "synth" or "prover"
    process: Any
    tasks: Any
    device: int | None = None
    replies: Any = None  # its own reply queue (engine.pipeline.replies), None where none is kept
    busy: set[PartKey] = field(default_factory=set)  # keys of partitions it holds
    ready: bool = False  # started: backend loaded (prover) or kernels warm (synthesis)

    def send(self, task: Task) -> None:
        self.tasks.put(task)

    def how_it_died(self) -> str:
        code = self.process.exitcode
        return f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"


@dataclass(frozen=True)
class WorkerMains:
    """The entry points of the worker processes (importable, picklable callables)."""

    synthesis: Callable[..., None] = synthesis_main
    prover: Callable[[ProverSpec], None] = prover_main


def prover_name(dev: int | None) -> str:
    """The prover of device ``dev``: ``gpu<dev>``, or ``cpu0`` for the CPU backend."""
    return "cpu0" if dev is None else f"gpu{dev}"


class Supervisor:
    """Starts, watches, restarts and stops the worker processes of one Engine."""

    def __init__(
        self,
        ctx: Any,
        replies: Replies | None,
        backend: str,
        slots: int,
        synth_threads: Callable[[], int],
        on_prover_started: Callable[[Worker], None],
        on_give_up: Callable[[Worker, str], None],
        mains: WorkerMains | None = None,
        synth_cpus: Callable[[int], tuple[int, ...] | None] | None = None,
        prover_cpus: Callable[[int | None], tuple[int, ...] | None] | None = None,
        gpu_calls: str = "parallel",
    ) -> None:
        """``synth_cpus(n)`` is the CPU set of the n-th synthesis worker started (NUMA
        placement; None = unbound): its numba threads are capped at that set's size too.
        ``prover_cpus(dev)`` is the CPU set device ``dev``'s prover is bound to once started.
        ``gpu_calls`` is how each prover's slots share its GPU (the setting of that name).
        ``replies`` gives each worker started its own reply queue (None: workers get none,
        for tests that start no real process)."""
        self._ctx = ctx
        self._replies = replies
        self._backend = backend
        self._slots = slots
        self._gpu_calls = gpu_calls
        self._synth_threads = synth_threads
        self._on_prover_started = on_prover_started
        self._on_give_up = on_give_up
        self._mains = mains or WorkerMains()
        self._synth_cpus = synth_cpus
        self._prover_cpus = prover_cpus
        self._ids = itertools.count(0)
        self._spawner: Spawner | None = None
        self.synth: list[Worker] = []
        self.idle_synth: deque[Worker] = deque()
        self.provers: dict[str, Worker] = {}
        self._failures: dict[str, int] = {}
        self.broken: dict[str, str] = {}  # prover given up on → why

    # -- starting ------------------------------------------------------------------------------
    def open(self) -> None:
        """Start the spawner thread; workers start only after this."""
        self._spawner = Spawner()

    def _start(self, proc: Any) -> None:
        if self._spawner is None:
            raise RuntimeError("workers start only in a started engine")
        self._spawner.start(proc)

    def spawn_synth(self) -> Worker:
        n = next(self._ids)
        name = f"synth-{n}"
        tasks = self._ctx.Queue()
        cpus = self._synth_cpus(n) if self._synth_cpus is not None else None
        threads = self._synth_threads()
        replies = self._route()
        args: tuple[Any, ...] = (name, tasks, replies, threads, os.getpid())
        if cpus:
            args = (name, tasks, replies, max(1, min(threads, len(cpus))), os.getpid(),
                    tuple(cpus))
        proc = self._ctx.Process(target=self._mains.synthesis, args=args, name=name, daemon=True)
        self._start(proc)
        w = Worker(name, "synth", proc, tasks, replies=replies)
        self.synth.append(w)
        self.idle_synth.append(w)
        return w

    def _route(self) -> Any:
        """A reply queue of its own for a worker about to start."""
        return self._replies.route() if self._replies is not None else None

    def prover_spec(self, dev: int | None, tasks: Any, replies: Any = None) -> ProverSpec:
        """What device ``dev``'s prover is started with, reading its tasks from ``tasks`` and
        answering on ``replies``: the one place a prover's start is decided."""
        return ProverSpec(name=prover_name(dev), backend=self._backend, device=dev,
                          slots=self._slots, tasks=tasks, results=replies,
                          parent_pid=os.getpid(), gpu_calls=self._gpu_calls)

    def spawn_prover(self, dev: int | None) -> Worker:
        tasks = self._ctx.Queue()
        replies = self._route()
        spec = self.prover_spec(dev, tasks, replies)
        name = spec.name
        proc = self._ctx.Process(target=self._mains.prover, args=(spec,), name=name, daemon=True)
        self._start(proc)
        cpus = self._prover_cpus(dev) if self._prover_cpus is not None else None
        if cpus and proc.pid is not None:  # before its backend starts threads (they inherit it)
            bind_process(proc.pid, cpus)
        w = Worker(name, "prover", proc, tasks, device=dev, replies=replies)
        self.provers[name] = w
        self._on_prover_started(w)
        return w

    # -- what is running -----------------------------------------------------------------------
    def workers(self) -> list[Worker]:
        return self.synth + list(self.provers.values())

    def by_name(self, name: str) -> Worker | None:
        for w in self.synth:
            if w.name == name:
                return w
        return self.provers.get(name)

    def live_synth(self) -> int:
        return sum(1 for w in self.synth if w.process.is_alive())

    def starting(self) -> list[Worker]:
        """Workers not yet ready that are alive and not given up on."""
        return [w for w in self.workers()
                if not w.ready and w.process.is_alive() and w.name not in self.broken]

    def process_list(self) -> list[tuple[int, str]]:
        """(pid, name) of every live worker process."""
        return [(w.process.pid, w.name) for w in self.workers()
                if w.process.pid is not None and w.process.is_alive()]

    # -- what workers say ----------------------------------------------------------------------
    def ready(self, name: str, loading: bool) -> None:
        """Worker ``name`` is up; a prover that is not loading a key has started well."""
        w = self.by_name(name)
        if w is not None:
            w.ready = True
            if w.role == "prover" and not loading:
                self._failures[name] = 0

    def loaded_all(self, name: str) -> None:
        """Prover ``name`` has loaded every key asked of it: it has started well."""
        w = self.provers.get(name)
        if w is not None and w.ready:
            self._failures[name] = 0

    def give_up(self, name: str, reason: str) -> None:
        """Prover ``name`` cannot work (its backend would not start): never restart it."""
        self.broken.setdefault(name, reason)

    def idle(self, name: str, key: PartKey) -> None:
        """Worker ``name`` is done with partition ``key``; an idle synthesis worker rejoins
        the pool."""
        w = self.by_name(name)
        if w is None:
            return
        w.busy.discard(key)
        if w.role == "synth" and w.process.is_alive() and w not in self.idle_synth:
            self.idle_synth.append(w)

    # -- deaths --------------------------------------------------------------------------------
    def reap(self) -> list[Worker]:
        """The workers that died since the last call, removed from the pool."""
        dead = [w for w in self.workers()
                if not w.process.is_alive() and w.process.exitcode is not None]
        for w in dead:
            if self._replies is not None and w.replies is not None:
                self._replies.end(w.replies)  # what it sent before it died still arrives
            if w.role == "synth":
                self.synth.remove(w)
                if w in self.idle_synth:
                    self.idle_synth.remove(w)
            else:
                self.provers.pop(w.name, None)
        return dead

    def after_death(self, w: Worker, was_loading: bool) -> None:
        """Restart dead prover ``w``, or give up on it (on_give_up) if it keeps dying before it
        is ready or while it loads its keys. Dead synthesis workers are replaced on demand."""
        if w.role == "synth":
            return
        if not w.ready or was_loading:
            n = self._failures.get(w.name, 0) + 1
            self._failures[w.name] = n
            if n >= MAX_PROVER_START_FAILURES:
                self.broken.setdefault(
                    w.name, f"prover died {n} times before it was ready (or loading its keys)")
        if w.name in self.broken:
            self._on_give_up(w, self.broken[w.name])
        else:
            self.spawn_prover(w.device)

    def stalled(
        self, watch: StallWatch, held_by: Callable[[Worker], list[Any]], now: float
    ) -> list[tuple[Worker, list[Any], str]]:
        """(worker, what it holds, why) for each busy worker that makes no progress."""
        found = []
        for w in self.workers():
            pid = w.process.pid
            if pid is None or not w.process.is_alive():
                continue
            held = held_by(w)
            if not held:
                watch.idle(pid)
                continue
            why = watch.observe(pid, frozenset(p.key for p in held), now)
            if why is not None:
                found.append((w, held, why))
        return found

    @staticmethod
    def kill(w: Worker) -> None:
        try:
            os.kill(w.process.pid, signal.SIGKILL)
        except OSError:
            pass

    # -- stopping (without the state lock) -----------------------------------------------------
    def stop(self, workers: list[Worker], wait_s: float) -> None:
        """Tell every worker to end, wait up to ``wait_s`` for each, kill what is left."""
        for w in workers:
            try:
                w.send(Stop())
            except Exception:
                pass
        for w in workers:
            w.process.join(timeout=wait_s)
            if w.process.is_alive():
                w.process.kill()
                w.process.join(timeout=5)

    def close(self, workers: list[Worker]) -> None:
        """Close the task queues of the (joined) workers and end the spawner thread."""
        for w in workers:
            w.tasks.close()
            w.tasks.join_thread()
        if self._spawner is not None:
            self._spawner.close()  # every worker it started has exited (joined by stop)
