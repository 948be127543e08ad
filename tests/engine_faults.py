"""Faults injected into a real Engine from outside, for tests only.

Production code has no fault hooks. A test builds the engine with ``engine(config, Faults(...))``,
which passes the Engine worker entry points (``mains``) that wrap the real prover's: they run
inside the real prover process, install the faults there and then call
engine.pipeline.workers.prover_main unchanged. The entry point is a partial of a function of
this module, so the spawned process imports it by name (the test's sys.path travels with it).

* ``corrupt_proof``: (job, partition) pairs whose proof gets its first byte flipped on its way
  to the orchestrator, which must then report the job unverified;
* ``key_load_delay_s``: every key load in the prover sleeps this long first (inside the load's
  own timer, as a slow disk would);
* ``key_load_fail``: provers (``cpu0``, ``gpu1``...) whose key loads raise;
* ``die_holding_reply_lock``: synthesis workers (``synth-0``...) that, at their first finished
  partition, take their reply queue's write lock and SIGKILL themselves holding it (what a kill
  at the wrong moment does to a queue's feeder thread).

``signal_worker_at`` sends a signal to one of a running engine's workers at a chosen moment of
its stream (SIGKILL after the first proven partition, SIGSTOP while one is on the GPU).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import queue
import time
from dataclasses import dataclass, field
from typing import Any

from engine.config import EngineConfig
from engine.pipeline import Engine
from engine.pipeline.supervisor import WorkerMains
from engine.pipeline.workers import ProverSpec

INJECTED_KEY_FAILURE = "injected key load failure"


@dataclass(frozen=True)
class Faults:
    corrupt_proof: frozenset[tuple[int, int]] = field(default_factory=frozenset)
    key_load_delay_s: float = 0.0
    key_load_fail: frozenset[str] = field(default_factory=frozenset)
    die_holding_reply_lock: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:  # sets are fine to pass in; frozen ones pickle the same
        object.__setattr__(self, "corrupt_proof", frozenset(self.corrupt_proof))
        object.__setattr__(self, "key_load_fail", frozenset(self.key_load_fail))
        object.__setattr__(self, "die_holding_reply_lock", frozenset(self.die_holding_reply_lock))

    def mains(self) -> WorkerMains:
        """Worker entry points with these faults (the real ones where none applies)."""
        return WorkerMains(prover=functools.partial(faulty_prover_main, self),
                           synthesis=functools.partial(faulty_synthesis_main, self))


def engine(config: EngineConfig, faults: Faults | None = None, **kw: Any) -> Engine:
    """An Engine whose prover processes carry ``faults`` (none: a plain Engine)."""
    if faults is None:
        return Engine(config, **kw)
    return Engine(config, mains=faults.mains(), **kw)


def signal_worker_at(eng: Engine, q: queue.Queue[Any], worker: str, stage: str, sig: int,
                     timeout: float) -> tuple[int, list[dict]]:
    """Read the subscription ``q`` until a partition enters ``stage``, then send ``sig`` to the
    worker named ``worker`` (``cpu0``, ``gpu0``...); (its pid, the events read until then)."""
    evs: list[dict] = []
    while True:
        e = q.get(timeout=timeout)
        evs.append(e)
        if e["kind"] == "stage" and e["stage"] == stage:
            pid = eng.worker_pids()[worker]
            os.kill(pid, sig)
            return pid, evs


class _CorruptingResults:
    """The prover's result queue, with the proofs of chosen partitions damaged in passing."""

    def __init__(self, results: Any, chosen: frozenset[tuple[int, int]]) -> None:
        self._results = results
        self._chosen = chosen

    def put(self, msg: Any) -> None:
        from engine.pipeline.messages import Proved

        if isinstance(msg, Proved) and (msg.key.job, msg.key.index) in self._chosen:
            msg = dataclasses.replace(msg, proof=bytes([msg.proof[0] ^ 0x01]) + msg.proof[1:])
        self._results.put(msg)


def faulty_prover_main(faults: Faults, spec: ProverSpec) -> None:
    """The real prover's entry point, run with ``faults`` installed in this process."""
    from engine.pipeline import proving, workers

    name = spec.name

    if faults.key_load_delay_s or name in faults.key_load_fail:
        real_load = proving.load_key

        def load_key(*args: Any, **kw: Any) -> Any:
            time.sleep(faults.key_load_delay_s)
            if name in faults.key_load_fail:
                raise RuntimeError(INJECTED_KEY_FAILURE)
            return real_load(*args, **kw)

        proving.load_key = load_key
    if faults.corrupt_proof:
        spec = dataclasses.replace(spec, results=_CorruptingResults(spec.results, faults.corrupt_proof))
    workers.prover_main(spec)


class _DyingReplies:
    """A synthesis worker's reply queue that, at the first SynthDone, takes the queue's write
    lock and kills its own process holding it."""

    def __init__(self, results: Any) -> None:
        self._results = results

    def put(self, msg: Any) -> None:
        import signal

        from engine.pipeline.messages import SynthDone

        if isinstance(msg, SynthDone):
            self._results._wlock.acquire()  # as the feeder thread holds it while it writes
            os.kill(os.getpid(), signal.SIGKILL)
        self._results.put(msg)


def faulty_synthesis_main(faults: Faults, name: str, tasks: Any, results: Any, *rest: Any) -> None:
    """synthesis_main, in the worker process, with ``faults`` applied to it."""
    from engine.pipeline import workers

    if name in faults.die_holding_reply_lock:
        results = _DyingReplies(results)
    workers.synthesis_main(name, tasks, results, *rest)
