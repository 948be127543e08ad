"""One long-lived Engine per farm host, as a Dask worker plugin, and the task that proves a job.

The plugin starts the host's Engine once, when the Dask worker starts (before the worker
registers with the scheduler, so no job arrives before the Engine is ready), keeps it (its
synthesis workers, its provers, its keys) for every job, and stops it when the worker closes:
the Engine's own stop leaves no worker process and no /dev/shm segment. Its worker processes
die with the engine's process as always (engine/pipeline/spawner.py).

A tap on the Engine's stream has one essential sink that forwards each batch of events through
Dask's structured events (``Worker.log_event`` on :data:`TOPIC`, the worker's own connection
to the scheduler: no transport of ours), job events tagged with the client's session and job
id, and then wakes the tasks whose jobs ended. So a task returns only after its job's events
were handed to the worker's connection, ahead of its result.

:func:`prove_job` is the Dask task: a job spec in (bytes), the job's proofs out
(:class:`engine.cluster.jobs.JobResult`). A job cancelled on the host (the worker is closing)
raises Dask's Reschedule, so the scheduler runs it elsewhere.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributed import WorkerPlugin

from engine.cluster.jobs import JobResult, JobSpec
from engine.cluster.merge import TAG, wall_seconds
from engine.config import EngineConfig
from engine.settings import live_settings
from engine.stream.schema import CANCELLED, TERMINAL
from engine.stream.tap import Tap
from kernels.textfmt import exc_line

TOPIC = "sealtop-events"
PLUGIN = "sealtop-engine"
BASELINES_KEPT = 64  # sessions whose starting counters a host remembers
SAMPLE_WAIT_S = 2.0  # a job's closing sample waits this long at most to be forwarded


@dataclass
class _Waiter:
    spec: JobSpec
    received_wall: float
    done: threading.Event = field(default_factory=threading.Event)
    first_synthesis_wall: float | None = None
    ended: dict[int, str] = field(default_factory=dict)  # partition -> its terminal stage
    outcome: str | None = None
    proof_hex: str = ""
    total_ms: float = 0.0


class HostEngine(WorkerPlugin):
    """The Dask worker plugin holding the host's Engine."""

    name = PLUGIN

    def __init__(self, config: EngineConfig, host: str) -> None:
        self.config = config
        self.host = host
        self.engine: Any = None
        self.session_start: dict[str, Any] | None = None
        self.worker: Any = None
        self.error: str | None = None
        self._tap: Tap | None = None
        self._submit = threading.Lock()  # held across Engine.submit and storing the job's tag
        self._tags: dict[int, tuple[str, int]] = {}  # local job -> (session, client job)
        self._waiters: dict[int, _Waiter] = {}
        self._lock = threading.Lock()
        # session -> the Engine's counters before that session's first job here (or when its
        # client first saw this host): the client's merge counts from them
        self._baselines: dict[str, dict[str, int]] = {}
        self._sent = threading.Condition()  # a sample was handed to the worker's connection
        self._sent_t = float("-inf")  # the latest such sample's t

    # ---- Dask's plugin hooks ---------------------------------------------------------------

    async def setup(self, worker: Any) -> None:
        self.worker = worker
        if self.engine is None:  # not started ahead of the worker (engine.cluster.serve does)
            await asyncio.get_running_loop().run_in_executor(None, self.start)

    async def teardown(self, worker: Any) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.stop)

    # ---- the engine ------------------------------------------------------------------------

    def start(self) -> None:
        from engine.pipeline.engine import Engine

        self.engine = Engine(self.config)
        self._tap = Tap(self.engine.subscribe(), name="sealtop-farm-tap")
        self._tap.add("forward", self._forward, essential=True)
        self._tap.start()
        self.engine.start()

    def stop(self) -> None:
        eng, self.engine = self.engine, None
        if eng is not None:
            eng.stop(drain=False)
        with self._lock:
            for w in self._waiters.values():
                w.outcome = w.outcome or "cancelled"
                w.done.set()
        if self._tap is not None:
            self._tap.close()

    def hurry(self) -> None:
        """A second stop signal: the stop kills the engine's workers instead of waiting."""
        if self.engine is not None:
            self.engine.hurry()

    # ---- the stream ------------------------------------------------------------------------

    def _tag(self, ev: dict[str, Any]) -> dict[str, Any]:
        job = ev.get("job")
        if not isinstance(job, int) or ev.get("kind") not in (
                "job_submitted", "stage", "partition_timings", "proof_done"):
            return ev
        tag = self._tags.get(job)
        if tag is None:  # emitted inside a submit that has not stored its tag yet
            with self._submit:
                tag = self._tags.get(job)
        return {**ev, TAG: list(tag)} if tag is not None else ev

    def _forward(self, batch: list[dict[str, Any]]) -> None:
        if self.session_start is None:
            self.session_start = next((e for e in batch if e["kind"] == "session_start"), None)
        out = [self._tag(e) for e in batch]
        worker = self.worker
        if worker is not None:
            worker.log_event(TOPIC, {"host": self.host, "events": out})
        sampled = [float(e["t"]) for e in batch if e["kind"] == "sample"]
        if sampled:
            with self._sent:
                self._sent_t = max(self._sent_t, *sampled)
                self._sent.notify_all()
        for ev in batch:
            try:
                self._note(ev)
            except (KeyError, TypeError, ValueError):
                continue

    def _wall(self, t: float) -> float:
        """time.time() of the host engine's session time ``t``."""
        start = self.session_start
        if start is None:
            return time.time()
        return wall_seconds(start["wall_start"]) + t - float(start["t"])

    def _note(self, ev: dict[str, Any]) -> None:
        """Wake the task whose job this event ends: its proof_done, or the last partition of a
        job with a cancelled one (a cancelled job gets no proof_done)."""
        job = ev.get("job")
        with self._lock:
            w = self._waiters.get(job) if isinstance(job, int) else None
        if w is None:
            return
        kind = ev["kind"]
        if kind == "stage":
            st = ev["stage"]
            if st == "synthesizing" and w.first_synthesis_wall is None:
                w.first_synthesis_wall = self._wall(float(ev["t"]))
            if st in TERMINAL:
                w.ended[int(ev["partition"])] = st
            else:
                w.ended.pop(int(ev["partition"]), None)
            if len(w.ended) == w.spec.partitions and CANCELLED in w.ended.values():
                w.outcome = "cancelled"
                w.done.set()
        elif kind == "proof_done":
            w.outcome = "verified" if ev["verified"] else "failed"
            w.proof_hex, w.total_ms = ev["proof"], float(ev["total_ms"])
            w.done.set()

    # ---- counters --------------------------------------------------------------------------

    def _c1_job(self, spec: JobSpec) -> Any:
        """A C1 output's job: its bytes written once to this host's disk (named by their digest,
        atomically), then the job that proves every partition of it."""
        import base64
        import hashlib
        import zlib

        from engine.atomic import atomic_write
        from engine.c2.job import c1_job

        data = zlib.decompress(base64.b64decode(spec.c1))
        where = Path(self.config.param_cache_path()) / "c1"
        where.mkdir(parents=True, exist_ok=True)
        path = where / f"{hashlib.sha256(data).hexdigest()[:32]}.json"
        if not path.exists():
            with atomic_write(path, "wb", encoding=None) as f:
                f.write(data)
        return c1_job(str(path), spec.prover_id, spec.sector_id)

    def baseline(self, session: str) -> dict[str, int]:
        """The Engine's counters when ``session`` began here: taken the first time it is asked
        for (the client seeing this host) or before the session's first job, whichever is first,
        so a farm session's counters are its own, not the long-lived Engine's whole life."""
        eng = self.engine
        with self._lock:
            base = self._baselines.get(session)
            if base is None:
                base = self._baselines[session] = eng.counters.snapshot() if eng else {}
                while len(self._baselines) > BASELINES_KEPT:
                    del self._baselines[next(iter(self._baselines))]
            return dict(base)

    def _sample_sent(self, eng: Any, timeout: float = SAMPLE_WAIT_S) -> None:
        """A sample now, waited for until it is handed to the worker's connection: it then
        reaches the client ahead of the task's result, so the farm's last sample of this host
        counts the job that just ended."""
        ev = eng.sample_now()
        if ev is None:
            return
        t = float(ev["t"])
        with self._sent:
            self._sent.wait_for(lambda: self._sent_t >= t, timeout)

    # ---- jobs ------------------------------------------------------------------------------

    def prove(self, spec: JobSpec) -> JobResult | None:
        """Run one job on this host's Engine and wait for it; None if it was cancelled here."""
        from engine.pipeline.engine import Job

        received = time.time()
        eng = self.engine
        if eng is None:
            return None
        job = self._c1_job(spec) if spec.c1 else Job(spec.preset, spec.partitions, spec.seed)
        self.baseline(spec.session)  # before the job: the session's counters count it
        with self._submit:
            local = eng.submit(job)
            self._tags[local] = (spec.session, spec.job)
            w = _Waiter(spec, received)
            with self._lock:
                self._waiters[local] = w
        # no event of the job passes the sink before this: _tag waits for the submit lock
        w.done.wait()
        self._sample_sent(eng)
        with self._lock:
            self._waiters.pop(local, None)
        with self._submit:  # the job's events are all forwarded: its tag is needed no more
            self._tags.pop(local, None)
        if w.outcome in (None, "cancelled"):
            return None
        return JobResult(spec.session, spec.job, self.host, local, w.outcome, w.proof_hex,
                         w.total_ms, received, w.first_synthesis_wall, time.time())


def prove_job(raw: bytes) -> dict[str, Any]:
    """The Dask task: prove the job ``raw`` (JobSpec bytes) on this worker's Engine; the
    JobResult as a dict. A job this host could not finish (it is closing) is rescheduled."""
    from distributed import Reschedule, get_worker

    spec = JobSpec.from_bytes(raw)
    plugin = get_worker().plugins.get(PLUGIN)
    if not isinstance(plugin, HostEngine):
        raise RuntimeError("this Dask worker holds no sealtop engine (start it with "
                           "`sealtop cluster worker`)")
    result = plugin.prove(spec)
    if result is None:
        raise Reschedule()
    return result.to_dict()


def host_start(session: str = "", dask_worker: Any = None) -> dict[str, Any] | None:
    """Run on a worker by the client (Client.run): the host's name, resources, its Engine's
    session_start and its counters when the client's ``session`` began here, or None where no
    sealtop engine runs."""
    plugin = dask_worker.plugins.get(PLUGIN)
    if plugin is None or plugin.session_start is None:
        return None
    return {"host": plugin.host, "session_start": plugin.session_start,
            "resources": dict(dask_worker.state.total_resources),
            "counters": plugin.baseline(session)}


CONTROLS = ("set_knob", "pause", "resume")


def slot_knobs() -> tuple[str, ...]:
    """The live knobs whose change resizes a farm host's Dask slots (the settings table says)."""
    return tuple(s.name for s in live_settings() if s.knob is not None and s.knob.farm_slots)


async def host_control(action: str, name: str = "", value: Any = None,
                       dask_worker: Any = None) -> dict[str, Any]:
    """Run on a worker by the client (Client.run): an operator's knob change, pause or resume
    on this host's Engine, which confirms it with its own ``knob`` event (forwarded like every
    other). A change of a knob that sizes the host's slots (farm_slots in engine/settings.py:
    partition_workers, gpu_channel_capacity) also resizes the host's Dask slots (up to its
    Dask threads) unless host_slots fixes them, so placement follows the knob.
    Returns {"host", "error"}: error is "" when done, else one line saying why not."""
    plugin = dask_worker.plugins.get(PLUGIN)
    eng = plugin.engine if plugin is not None else None
    host = plugin.host if plugin is not None else str(dask_worker.name)
    if eng is None:
        return {"host": host, "error": "no sealtop engine runs on this worker"}
    if action not in CONTROLS:
        return {"host": host, "error": f"unknown control {action!r}"}
    loop = asyncio.get_running_loop()
    try:
        if action == "set_knob":
            await loop.run_in_executor(None, eng.set_knob, name, value)
        else:
            await loop.run_in_executor(None, getattr(eng, action))
    except (ValueError, TypeError) as exc:
        return {"host": host, "error": exc_line(exc)}
    if action == "set_knob" and name in slot_knobs():
        await _resize_slots(dask_worker, eng.config)
    return {"host": host, "error": ""}


async def _resize_slots(dask_worker: Any, cfg: EngineConfig) -> None:
    """The host's slots (and its backend's) after a knob change, capped at its Dask threads."""
    from engine.cluster.jobs import SLOTS, host_slots

    if cfg.host_slots > 0:
        return
    slots = float(min(dask_worker.state.nthreads,
                      host_slots(cfg.partition_workers, cfg.gpu_channel_capacity)))
    now = dict(dask_worker.state.total_resources)
    new = {k: slots for k in now if k == SLOTS or k.endswith("_slots")}
    if new and any(now[k] != v for k, v in new.items()):
        await dask_worker.set_resources(**new)
