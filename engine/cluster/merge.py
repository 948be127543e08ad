"""The client's merge of every host's events into one stream on the client's session clock.

Each farm host runs one long-lived Engine whose clock started when that host did; its events
reach the client in batches (Dask structured events), job events tagged with the client's
session and job id (``farm_job``). :class:`Merge` turns them into events of the client's
session:

* every event gets ``host`` (where it came from) and ``host_t`` (its time on that host), and
  ``t`` re-based to the client's clock: host t + the host's offset, the offset coming from the
  two wall-clock starts (the host's ``session_start`` and the client's). The merged stream's
  t never goes backwards (stream order is t order, as in a local session): an event that the
  network delayed behind another host's later one takes that one's t;
* a stage's worker is named with its host (``hA/cpu0``), so per-worker figures (GPU busy)
  stay apart per host;
* a host's ``session_start`` is not repeated: the client's own session_start opens the stream
  and a ``host`` event per host carries the host's (that is where the offset is recorded);
* job events of another client's session are dropped; this session's carry the client's job
  id. A job that was run again elsewhere (its host died) starts over with the new host's
  ``job_submitted`` (the fold replaces the job), and what the old host still says of it is
  dropped, so a partition is never counted for two hosts;
* the hosts' own ``proof_done`` are dropped: the client reports a job's proof once, from the
  task's result (:meth:`Merge.proof`), so a job proven twice (its first host died after
  proving it, before the result was collected) is still reported once;
* host events from before the client's session (samples, knobs) are dropped;
* a host's sample counts this session: its counters less the host's counters when the session
  began there (the host's Engine is long-lived and counts every job it ever ran; gauges such as
  ``holding_abc`` stay as they are). Each host takes a sample as each job ends, so its last
  sample counts every job it finished; summary.final_counters sums the hosts' last samples.
  (Another client's jobs on the same host at the same time are counted too.)

Plain Python with no Dask import, so it is tested without a cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.stream import schema
from engine.stream.schema import TERMINAL, Event

JOB_KINDS = frozenset(("job_submitted", "stage", "partition_timings", "proof_done"))
TAG = "farm_job"  # [session, client job id] on a host's job events
GAUGES = frozenset(("holding_abc",))  # counters that are levels, not counts since a start


def wall_seconds(iso: str) -> float:
    """Seconds since the epoch of a session_start wall_start ("2026-...T...Z")."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@dataclass
class HostClock:
    """One host as the merge knows it."""

    name: str
    address: str
    offset_s: float  # client t = host t + offset_s
    session_start: dict[str, Any]
    resources: dict[str, float]
    present: bool = True
    counters: dict[str, int] = field(default_factory=dict)  # the host's when the session began


@dataclass
class Merge:
    """Host batches in, events of the client's session out (see the module docstring)."""

    session: str
    wall_start: float  # the client's session start, seconds since the epoch
    now: Callable[[], float]  # the client's session clock
    hosts: dict[str, HostClock] = field(default_factory=dict)
    current: dict[int, str] = field(default_factory=dict)  # job -> host of its latest attempt
    open_parts: dict[int, set[int]] = field(default_factory=dict)  # job -> unfinished partitions
    reported: set[int] = field(default_factory=set)  # jobs whose proof_done was emitted
    held: dict[str, list[Event]] = field(default_factory=dict)  # a host's events before it joined
    dropped: int = 0  # events that belonged to no job of this session or to a stale attempt
    last_t: float = 0.0

    def _t(self, t: float) -> float:
        t = max(float(t), self.last_t, 0.0)
        self.last_t = t
        return t

    def stamp(self, make: Callable[[float], Event]) -> Event:
        """An event of the client itself, at the client's clock now."""
        return make(self._t(self.now()))

    # ---- membership ----------------------------------------------------------------------

    def join(self, name: str, address: str, start: Event, resources: dict[str, float],
             counters: dict[str, int] | None = None) -> list[Event]:
        """A host joined (or was first seen): its ``host`` event, then what it said before.
        ``counters``: the host's counters when this session began there (none: from zero)."""
        offset = wall_seconds(start["wall_start"]) - float(start["t"]) - self.wall_start
        body = {k: v for k, v in start.items() if k not in ("t", "kind")}
        self.hosts[name] = HostClock(name, address, offset, body, dict(resources),
                                     counters=dict(counters or {}))
        out = [self.stamp(lambda t: schema.host(t, name, "joined", address, body, resources,
                                                 offset))]
        out += self.take(name, self.held.pop(name, []))
        return out

    def leave(self, name: str, reason: str) -> list[Event]:
        """A host left: its ``host`` event, an error saying so, and every unfinished partition
        of the jobs it was running back in ``queued`` (Dask runs them elsewhere)."""
        h = self.hosts.get(name)
        if h is None or not h.present:
            return []
        h.present = False
        out = [self.stamp(lambda t: schema.host(t, name, "left", h.address, {}, h.resources,
                                                 h.offset_s))]
        out.append({**self.stamp(lambda t: schema.error(t, f"host {name}", reason)), "host": name})
        for job, host in sorted(self.current.items()):
            if host != name or job in self.reported:
                continue
            del self.current[job]
            for part in sorted(self.open_parts.get(job, ())):
                out.append({**self.stamp(lambda t: schema.stage(t, job, part, "queued", "farm")),
                            "host": name})
        return out

    # ---- events ----------------------------------------------------------------------------

    def take(self, name: str, batch: list[Event]) -> list[Event]:
        """A batch of host ``name``'s events, in its order; returns the merged events."""
        h = self.hosts.get(name)
        if h is None:  # not joined yet: the offset is unknown, keep them for join()
            self.held.setdefault(name, []).extend(batch)
            return []
        out: list[Event] = []
        for raw in batch:
            ev = self._one(h, raw)
            if ev is None:
                self.dropped += 1
            else:
                out.append(ev)
        return out

    def _one(self, h: HostClock, raw: Event) -> Event | None:
        ev = dict(raw)
        kind = ev.get("kind")
        tag = ev.pop(TAG, None)
        if kind == "session_start" or kind == "host":
            return None
        rebased = float(ev["t"]) + h.offset_s
        if kind in JOB_KINDS:
            if not isinstance(tag, (list, tuple)) or len(tag) != 2 or tag[0] != self.session:
                return None
            job = int(tag[1])
            if kind == "job_submitted":
                if job in self.reported:
                    return None  # a late second run of a job already reported
                self.current[job] = h.name
                self.open_parts[job] = set(range(int(ev["partitions"])))
            elif self.current.get(job) != h.name:
                return None  # an attempt that was superseded or never started here
            if kind == "proof_done":
                return None  # reported once, from the task's result
            if kind == "stage":
                ev["worker"] = f"{h.name}/{ev['worker']}"  # cpu0 of one host is not another's
                parts = self.open_parts.setdefault(job, set())
                if ev["stage"] in TERMINAL:
                    parts.discard(int(ev["partition"]))
                else:
                    parts.add(int(ev["partition"]))
            ev["job"] = job
        elif rebased < 0:
            return None  # from before this session
        elif kind == "sample" and isinstance(ev.get("counters"), dict):
            base = h.counters
            ev["counters"] = {k: v if k in GAUGES else v - int(base.get(k, 0))
                              for k, v in ev["counters"].items()}
        ev["host_t"] = ev["t"]
        ev["t"] = self._t(rebased)
        ev["host"] = h.name
        return ev

    # ---- proofs ----------------------------------------------------------------------------

    def proof(self, job: int, host: str, proof_hex: str, verified: bool,
              total_ms: float) -> Event | None:
        """The job's proof_done, the first time its result arrives; None after that."""
        if job in self.reported:
            return None
        self.reported.add(job)
        self.current.pop(job, None)
        self.open_parts.pop(job, None)
        ev = self.stamp(lambda t: schema.proof_done(t, job, proof_hex, verified, total_ms))
        ev["host"] = host
        return ev

    def cancel(self, job: int, reason: str) -> list[Event]:
        """A job the client gave up on (a stop): its unfinished partitions end ``cancelled``."""
        if job in self.reported:
            return []
        host = self.current.pop(job, "")
        out = []
        for part in sorted(self.open_parts.pop(job, ())):
            ev = self.stamp(lambda t: schema.stage(t, job, part, schema.CANCELLED, "farm", reason))
            out.append({**ev, "host": host} if host else ev)
        return out
