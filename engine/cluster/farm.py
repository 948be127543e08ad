"""The farm's client: jobs out to the Dask scheduler, one merged stream and the proofs back.

:class:`Farm` looks like a small Engine to whoever drives it (``subscribe``, ``start``,
``submit``, ``wait_idle``, ``stop``), so the headless run's tap, recorder and summaries take
its stream as they take a local engine's:

* ``start`` connects to the scheduler (one line if there is none), opens the session with the
  client's own ``session_start``, subscribes to the hosts' events (Dask structured events on
  engine.cluster.hostengine.TOPIC) and emits a ``host`` event for every host present;
* ``submit`` sends a job spec (bytes) as a Dask task with the job's resources; Dask places it,
  keeps it within each host's slots, and runs it elsewhere if its host dies;
* a watcher thread collects results as they complete (each job's proof_done, once), notices
  hosts that join (a ``host`` event: a late host takes work at once) or leave (an error, and
  the lost host's unfinished partitions back in ``queued``), and says in one line when the
  scheduler is gone instead of waiting for it.
"""

from __future__ import annotations

import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from engine.cluster import ClusterError, require
from engine.cluster.jobs import JobResult, JobSpec
from engine.cluster.merge import Merge
from engine.stream import schema
from engine.telemetry.memory import host_info
from engine.telemetry.timers import SessionClock
from kernels.textfmt import exc_line

CONNECT_TIMEOUT_S = 10.0
POLL_S = 0.5  # how often the watcher looks at membership and the scheduler
GONE_AFTER_S = 5.0  # the scheduler unreachable this long is gone


@dataclass
class JobTiming:
    """Where a farm job's time went, in client wall-clock seconds (time.time())."""

    job: int
    submitted: float
    received: float | None = None  # the host's task began
    first_synthesis: float | None = None
    host_done: float | None = None  # the host's task returned
    collected: float | None = None  # the result reached the client
    host: str = ""


@dataclass
class _Pending:
    spec: JobSpec
    future: Any
    t_submit: float  # client session time
    timing: JobTiming


class Farm:
    """The farm behind an Engine-like API (see the module docstring)."""

    def __init__(self, address: str, config: Any, progress: Callable[[str], None] | None = None):
        require()
        self.address = address
        self.config = config
        self.progress = progress
        self.session = secrets.token_hex(4)
        self.clock = SessionClock()
        self.client: Any = None
        self.timings: dict[int, JobTiming] = {}
        self.error: str | None = None  # why the farm stopped under us (the scheduler went away)
        self._subscribers: list[queue.Queue] = []
        self._lock = threading.RLock()  # guards the merge and emission
        self._merge: Merge | None = None
        self._pending: dict[int, _Pending] = {}
        self._next_job = 1
        self._idle = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._known: dict[str, str] = {}  # worker address -> host name
        self._stopped = False

    # ---- the stream ------------------------------------------------------------------------

    def subscribe(self) -> queue.Queue:
        q: queue.Queue = queue.Queue()
        with self._lock:
            self._subscribers.append(q)
        return q

    def _publish(self, evs: list[dict]) -> None:
        with self._lock:
            for ev in evs:
                for q in self._subscribers:
                    q.put(ev)

    def _on_events(self, event: tuple[float, Any]) -> None:
        """Dask's handler for the hosts' topic (runs on the client's event loop)."""
        _, msg = event
        # msgpack hands lists back as tuples
        if not isinstance(msg, dict) or not isinstance(msg.get("events"), (list, tuple)):
            return
        batch = [_lists(e) for e in msg["events"] if isinstance(e, dict)]
        with self._lock:
            if self._merge is not None:
                self._publish(self._merge.take(str(msg.get("host")), batch))

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        from distributed import Client

        try:
            self.client = Client(self.address, timeout=CONNECT_TIMEOUT_S,
                                 set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"no scheduler at {self.address} ({exc_line(exc)})") from None
        wall = datetime.now(UTC)
        with self._lock:
            self._merge = Merge(self.session, wall.timestamp() - self.clock.now(), self.clock.now)
            cfg = {**self.config.to_dict(), "backend_in_use": "farm", "scheduler": self.address,
                   "farm_session": self.session}
            iso = wall.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            self._publish([self._merge.stamp(
                lambda t: schema.session_start(t, cfg, host_info(), [], iso))])
        self.client.subscribe_topic(_topic(), self._on_events)
        self._poll_hosts()
        self._watcher = threading.Thread(target=self._watch, name="sealtop-farm-watch",
                                         daemon=True)
        self._watcher.start()

    def hosts(self) -> list[str]:
        with self._lock:
            return sorted(self._known.values())

    def resources(self) -> dict[str, dict[str, float]]:
        """host -> the Dask resources it offers (slots, <backend>_slots), hosts present now."""
        with self._lock:
            if self._merge is None:
                return {}
            return {h.name: dict(h.resources) for h in self._merge.hosts.values() if h.present}

    def submit(self, preset: str, partitions: int, seed: int, source: Any = None) -> int:
        """Send one job to the farm; returns its id in this session's stream. ``source`` (a
        JobSource) sends a C1 output's job: the file's bytes go with it."""
        from engine.cluster.hostengine import prove_job

        c1 = ""
        if source is not None:
            import base64
            import zlib

            c1 = base64.b64encode(zlib.compress(Path(source.c1).read_bytes(), 6)).decode()

        if self.client is None or self._stopped:
            raise ClusterError("submit needs a started farm that is not stopping")
        with self._lock:
            job = self._next_job
            self._next_job += 1
            spec = JobSpec(self.session, job, preset, partitions, seed,
                           getattr(self.config, "needs", "any"), c1,
                           source.prover_id if source is not None else "",
                           source.sector_id if source is not None else 0)
            timing = JobTiming(job, time.time())
            fut = self.client.submit(prove_job, spec.to_bytes(), key=spec.key, pure=False,
                                     resources=spec.resources())
            self._pending[job] = _Pending(spec, fut, self.clock.now(), timing)
            self.timings[job] = timing
        return job

    def idle(self) -> bool:
        with self._lock:
            return not self._pending or self.error is not None

    def wait_idle(self, timeout: float | None = None) -> bool:
        with self._idle:
            return self._idle.wait_for(self.idle, timeout)

    def stop(self, drain: bool = True, timeout: float | None = None) -> None:
        """Stop the session: with drain, wait for every job first; jobs left unfinished are
        cancelled (their partitions end ``cancelled``) and the client disconnects."""
        if self._stopped or self.client is None:
            return
        if drain and self.error is None:
            self.wait_idle(timeout)
        self._stopped = True
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(5)
        with self._lock:
            left = dict(self._pending)
            self._pending.clear()
            evs: list[dict] = []
            if self._merge is not None:
                for job in sorted(left):
                    evs += self._merge.cancel(job, "farm session stopped")
            self._publish(evs)
            self._idle.notify_all()
        try:
            if left and self.error is None:
                self.client.cancel([p.future for p in left.values()], force=True)
            self.client.unsubscribe_topic(_topic())
        except Exception:  # noqa: BLE001 - a gone scheduler: nothing left to cancel there
            pass
        try:
            self.client.close(timeout=3)
        except Exception:  # noqa: BLE001
            pass

    def hurry(self) -> None:
        """A second stop signal: stop waiting for jobs."""
        with self._lock:
            self.error = self.error or "interrupted"
            self._idle.notify_all()

    # ---- the operator's controls ------------------------------------------------------------

    def control(self, action: str, name: str = "", value: Any = None,
                hosts: list[str] | None = None) -> dict[str, str]:
        """A knob change (``set_knob``), ``pause`` or ``resume`` on the named hosts (None: every
        host present), through Dask: hostengine.host_control runs on their workers. Each host's
        Engine confirms with its own ``knob`` event; a host that refused gets an ``error`` event
        (tagged with it) in the stream. Returns host -> "" (done) or why not."""
        from engine.cluster.hostengine import CONTROLS, host_control

        if action not in CONTROLS:
            raise ValueError(f"unknown control {action!r} (controls: {', '.join(CONTROLS)})")
        if self.client is None or self._stopped or self.error is not None:
            raise ClusterError(self.error or "the farm is not running")
        addrs = {a: n for a, n in dict(self._known).items() if hosts is None or n in hosts}
        missing = sorted(set(hosts or ()) - set(addrs.values()))
        out = {n: "not in the farm" for n in missing}
        got = self.client.run(host_control, action, name, value, workers=list(addrs),
                              on_error="return") if addrs else {}
        for addr, host in addrs.items():
            r = got.get(addr)
            out[host] = (str(r.get("error", "")) if isinstance(r, dict)
                         else exc_line(r) if isinstance(r, BaseException) else "no answer")
        what = f"{name} = {value}" if action == "set_knob" else action
        with self._lock:
            if self._merge is not None:
                for h, why in sorted(out.items()):
                    if not why:
                        continue
                    ev = self._merge.stamp(partial(schema.error, where=f"host {h}",
                                                   message=f"{what} refused: {why}"))
                    self._publish([{**ev, "host": h} if h in addrs.values() else ev])
        return out

    def report(self, where: str, message: str) -> None:
        """An error of the client's own (a control that could not be sent) into the stream."""
        with self._lock:
            if self._merge is not None:
                self._publish([self._merge.stamp(lambda t: schema.error(t, where, message))])

    # ---- the watcher -----------------------------------------------------------------------

    def _watch(self) -> None:
        unreachable_since: float | None = None
        while not self._stop.wait(POLL_S / 5):
            self._collect()
            if self.client.status != "running":
                unreachable_since = unreachable_since or time.monotonic()
                if time.monotonic() - unreachable_since > GONE_AFTER_S:
                    self._gone(f"the scheduler at {self.address} went away")
                    return
                continue
            unreachable_since = None
            try:
                self._poll_hosts()
            except Exception as exc:  # noqa: BLE001 - a scheduler that stopped answering
                unreachable_since = time.monotonic()
                if self.progress is not None:
                    self.progress(f"scheduler did not answer: {exc_line(exc)}")

    def _gone(self, why: str) -> None:
        """The scheduler went away: said once, in one error event."""
        with self._lock:
            if self.error is not None:
                return
            self.error = why
            if self._merge is not None:
                self._publish([self._merge.stamp(lambda t: schema.error(t, "farm", why))])
            self._idle.notify_all()

    def _collect(self) -> None:
        with self._lock:
            done = [(job, p) for job, p in self._pending.items() if p.future.done()]
        for job, p in done:
            if p.future.status == "cancelled" and not self._stopped:
                # nobody here cancelled it: the scheduler did, as it closed. One line says so;
                # the job's unfinished partitions end cancelled, with the reason
                self._gone(f"the scheduler at {self.address} went away")
                self._failed(job, p, "cancelled by the scheduler", say=False)
                continue
            try:
                res = JobResult(**p.future.result(timeout=5))
            except Exception as exc:  # noqa: BLE001 - a job Dask gave up on (KilledWorker...)
                self._failed(job, p, exc_line(exc))
                continue
            now = time.time()
            p.timing.received, p.timing.host = res.received_wall, res.host
            p.timing.first_synthesis, p.timing.host_done = res.first_synthesis_wall, res.done_wall
            p.timing.collected = now
            with self._lock:
                self._pending.pop(job, None)
                assert self._merge is not None
                total = (self.clock.now() - p.t_submit) * 1000.0
                ev = self._merge.proof(job, res.host, res.proof_hex, res.verified, total)
                self._publish([ev] if ev is not None else [])
                self._idle.notify_all()
            p.future.release()

    def _failed(self, job: int, p: _Pending, why: str, say: bool = True) -> None:
        with self._lock:
            self._pending.pop(job, None)
            assert self._merge is not None
            evs = ([self._merge.stamp(lambda t: schema.error(t, "farm", f"job {job}: {why}"))]
                   if say else [])
            evs += self._merge.cancel(job, f"the farm gave up on it: {why}")
            self._publish(evs)
            self._idle.notify_all()

    def _poll_hosts(self) -> None:
        from engine.cluster.hostengine import host_start

        # asked directly: Client.scheduler_info() returns a cache that the client's own periodic
        # refresh overwrites with no workers in it, which would read as every host leaving
        info = self.client.sync(self.client.scheduler.identity, n_workers=-1)
        workers = info.get("workers", {})
        now = set(workers)
        new = [a for a in now if a not in self._known]
        gone = [a for a in list(self._known) if a not in now]
        for addr in gone:
            name = self._known.pop(addr)
            with self._lock:
                assert self._merge is not None
                self._publish(self._merge.leave(name, f"host {name} ({addr}) left the farm"))
        if not new:
            return
        starts = self.client.run(host_start, self.session, workers=new, on_error="return")
        for addr in new:
            got = starts.get(addr)
            if not isinstance(got, dict):
                continue  # not a sealtop host (yet): looked at again next time
            self._known[addr] = got["host"]
            with self._lock:
                assert self._merge is not None
                self._publish(self._merge.join(got["host"], addr, got["session_start"],
                                               got["resources"], got.get("counters")))


def _lists(obj: Any) -> Any:
    """An event as the engine made it: msgpack turns its lists into tuples on the way."""
    if isinstance(obj, dict):
        return {k: _lists(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_lists(v) for v in obj]
    return obj


def _topic() -> str:
    from engine.cluster.hostengine import TOPIC

    return TOPIC
