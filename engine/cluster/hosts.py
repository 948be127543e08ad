"""The farm's hosts folded from the merged stream: one row per host, and the farm's rate.

Plain Python with no Textual import (the console's hosts view draws it, tests check it
without a terminal). Everything comes from events of a farm session: ``host`` events (who
joined, with its own session_start: GPUs, memory budget), and the ``host`` tag on stage,
sample, error and proof_done events.

Per host: its GPUs, busy % (the share of time since it joined during which one of its
partitions was in the ``gpu`` stage: its prover, GPU or CPU, was working), partitions per
stage now, seconds per proof (since its first job), memory (RssAnon sum + shm of its latest
sample) against its budget, and its last error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.stream.fold import apply_all
from engine.stream.schema import ALL_STAGES, TERMINAL, Event
from kernels.backend import is_device_backend


@dataclass
class HostRow:
    name: str
    address: str = ""
    present: bool = True
    joined_t: float = 0.0
    left_t: float | None = None
    gpus: list[str] = field(default_factory=list)  # names; empty = a CPU host
    backend: str = ""
    memory_budget: int = 0  # bytes; 0 = unlimited
    memory: int = 0  # RssAnon sum + shm of the latest sample
    stages: dict[str, int] = field(default_factory=lambda: {s: 0 for s in ALL_STAGES})
    in_gpu: int = 0
    busy_s: float = 0.0
    busy_since: float | None = None
    first_job_t: float | None = None
    proofs: int = 0
    last_error: str = ""
    last_t: float = 0.0

    def busy_pct(self, now: float) -> float | None:
        end = self.left_t if self.left_t is not None else now
        span = end - self.joined_t
        if span <= 0:
            return None
        busy = self.busy_s + (end - self.busy_since if self.busy_since is not None else 0.0)
        return min(100.0, 100.0 * busy / span)

    def s_per_proof(self, now: float) -> float | None:
        if not self.proofs or self.first_job_t is None:
            return None
        end = self.left_t if self.left_t is not None else now
        return (end - self.first_job_t) / self.proofs

    def active(self) -> int:
        """Partitions of this host not yet ended."""
        return sum(n for s, n in self.stages.items() if s not in TERMINAL)


@dataclass
class HostsState:
    """Hosts of a farm session, fed event by event (:meth:`apply`)."""

    hosts: dict[str, HostRow] = field(default_factory=dict)
    where: dict[tuple[int, int], tuple[str, str]] = field(default_factory=dict)  # part -> host, stage
    t: float = 0.0
    proofs: int = 0
    first_job_t: float | None = None

    def apply(self, ev: Event) -> None:
        kind = ev.get("kind")
        t = float(ev.get("t", self.t))
        self.t = max(self.t, t)
        if kind == "host":
            self._host(ev, t)
            return
        name = ev.get("host")
        if not isinstance(name, str):
            return
        row = self.hosts.get(name)
        if row is None:
            row = self.hosts[name] = HostRow(name, joined_t=t)
        row.last_t = t
        if kind == "stage":
            self._stage(row, ev, t)
        elif kind == "sample":
            procs = ev.get("processes") or []
            row.memory = sum(int(p.get("rss_anon") or 0) for p in procs) + int(ev.get("shm_bytes") or 0)
        elif kind == "error":
            row.last_error = str(ev.get("message", ""))
        elif kind == "proof_done":
            row.proofs += 1
            self.proofs += 1
        elif kind == "job_submitted":
            if row.first_job_t is None:
                row.first_job_t = t
            if self.first_job_t is None:
                self.first_job_t = t

    def _host(self, ev: Event, t: float) -> None:
        name = str(ev["host"])
        row = self.hosts.get(name)
        if ev["state"] == "joined":
            start = ev.get("session_start") or {}
            cfg = start.get("config") or {}
            row = HostRow(name, str(ev.get("address", "")), True, t)
            row.gpus = [str(g.get("name", "GPU")) for g in start.get("gpus") or []
                        if is_device_backend(cfg.get("backend_in_use"))]
            row.backend = str(cfg.get("backend_in_use", ""))
            row.memory_budget = int(cfg.get("memory_budget") or 0)
            old = self.hosts.get(name)
            if old is not None:  # a host that came back: keep what it did before
                row.proofs, row.first_job_t = old.proofs, old.first_job_t
            self.hosts[name] = row
        elif row is not None:
            row.present = False
            row.left_t = t
            if row.busy_since is not None:
                row.busy_s += t - row.busy_since
                row.busy_since = None

    def _stage(self, row: HostRow, ev: Event, t: float) -> None:
        key = (int(ev["job"]), int(ev["partition"]))
        new = str(ev["stage"])
        old = self.where.get(key)
        if old is not None:
            h = self.hosts.get(old[0])
            if h is not None:
                h.stages[old[1]] -= 1
                if old[1] == "gpu":
                    self._gpu(h, -1, t)
        row.stages[new] = row.stages.get(new, 0) + 1
        if new == "gpu":
            self._gpu(row, +1, t)
        self.where[key] = (row.name, new)

    @staticmethod
    def _gpu(row: HostRow, delta: int, t: float) -> None:
        before = row.in_gpu
        row.in_gpu = max(0, row.in_gpu + delta)
        if before == 0 and row.in_gpu > 0:
            row.busy_since = t
        elif before > 0 and row.in_gpu == 0 and row.busy_since is not None:
            row.busy_s += t - row.busy_since
            row.busy_since = None

    def rows(self) -> list[HostRow]:
        return [self.hosts[n] for n in sorted(self.hosts)]

    def s_per_proof(self) -> float | None:
        """The farm's rate: seconds per proof since its first job."""
        if not self.proofs or self.first_job_t is None:
            return None
        return (self.t - self.first_job_t) / self.proofs


def fold_hosts(events: Iterable[Event], into: HostsState | None = None) -> HostsState:
    return apply_all(into if into is not None else HostsState(), events)
