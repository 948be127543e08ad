"""The dashboard state: a reducer that folds the event stream into what the console shows.

Live and replay render through this one reducer, so a replayed session ends in exactly the state
the live run ended in. It is plain Python (no Textual import) and is tested without a terminal.

Everything shown (per-stage counts, throughput, peaks, per-proof timings) is computed here from
events; nothing is read from anywhere else.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable

from engine.events import FAILED, KERNEL_KEYS, STAGES, TIMER_KEYS, Event

# Stages in which a partition holds its a, b and c buffers (start of synthesis until release;
# the GPU slot frees them when H is done, so finalizing holds none). Same set as engine/summary.
HOLDING_STAGES = ("synthesizing", "waiting_gpu", "gpu", "deallocating")
ALL_STAGES = STAGES + (FAILED,)
# Bytes of the a, b and c evaluation vectors per constraint (three Fr elements of 32 bytes),
# used for a partition's footprint until its partition_timings event reports bytes_held.
ABC_BYTES_PER_CONSTRAINT = 3 * 32

# Knobs the console can change live (design.md "Live knobs"), in header order.
LIVE_KNOBS = ("partition_workers", "gpu_channel_capacity", "memory_budget")
# Other config values worth showing beside them when present.
SHOWN_CONFIG = ("gpu_slots_per_device", "permit_release", "dealloc", "backend", "preset")
# Accepted spellings of the memory budget in a config.
BUDGET_KEYS = ("memory_budget", "memory_budget_bytes")

HISTORY = 120  # points kept per sparkline: one per sample event
LOG_LINES = 500  # event-log entries kept
THROUGHPUT_WINDOW_S = 60.0  # proofs/min is measured over this trailing window


@dataclass
class PartitionState:
    """One partition of one job: where it is, when it entered each stage, and its timers."""

    job: int
    index: int
    constraints: int
    stage: str = "queued"
    worker: str = ""
    entered: dict[str, float] = field(default_factory=dict)  # stage -> first entry time (s)
    ms: dict[str, float] = field(default_factory=dict)  # TIMER_KEYS -> milliseconds
    bytes_held: int | None = None
    reason: str | None = None
    attempts: int = 0  # times the partition (re)entered synthesis; > 1 means a retry

    @property
    def footprint(self) -> int:
        """Bytes this partition's buffers take while it holds them."""
        if self.bytes_held is not None:
            return self.bytes_held
        return self.constraints * ABC_BYTES_PER_CONSTRAINT

    @property
    def kernel_ms(self) -> float | None:
        vals = [self.ms[k] for k in KERNEL_KEYS if k in self.ms]
        return sum(vals) if vals else None


@dataclass
class JobState:
    """One proof (a job of P partitions) as the proofs table and detail screen see it."""

    job: int
    preset: str
    partitions: int
    constraints: int
    submitted: float
    parts: dict[int, PartitionState] = field(default_factory=dict)
    done_t: float | None = None
    verified: bool | None = None  # None until proof_done
    total_ms: float | None = None
    proof_bytes: int = 0
    failed: bool = False  # some partition ended in `failed` and was not retried
    version: int = 0  # bumped on every change, so views redraw only the proofs that changed

    @property
    def status(self) -> str:
        """A one-word status: done, failed, bad (verification failed) or the furthest stage."""
        if self.verified is True:
            return "done"
        if self.verified is False:
            return "bad"
        if self.failed:
            return "failed"
        stages = [p.stage for p in self.parts.values()]
        if not stages:
            return "queued"
        return min(stages, key=lambda s: ALL_STAGES.index(s) if s in ALL_STAGES else 0)

    @property
    def done_partitions(self) -> int:
        return sum(1 for p in self.parts.values() if p.stage == "done")

    def mean_ms(self, key: str) -> float | None:
        """Mean over partitions of one timer (ms); None when no partition measured it.

        The table shows per-partition means because partitions overlap: a sum would exceed the
        proof's wall time and mislead.
        """
        vals = [p.ms[key] for p in self.parts.values() if key in p.ms]
        return sum(vals) / len(vals) if vals else None

    def mean_derived(self, name: str) -> float | None:
        """Mean of a derived per-partition value: synth (witness+eval) or kernel (sum)."""
        vals: list[float] = []
        for p in self.parts.values():
            if name == "synth":
                parts = [p.ms[k] for k in ("witness", "eval") if k in p.ms]
                if parts:
                    vals.append(sum(parts))
            elif name == "kernel":
                k = p.kernel_ms
                if k is not None:
                    vals.append(k)
        return sum(vals) / len(vals) if vals else None


@dataclass
class GpuState:
    """Latest sample and history of one GPU; None in a field means N/A."""

    index: int
    name: str = "GPU"
    memory_total: int | None = None
    util: float | None = None
    mem_used: int | None = None
    power_w: float | None = None
    temp_c: float | None = None
    sm_clock_mhz: float | None = None
    util_hist: deque = field(default_factory=lambda: deque(maxlen=HISTORY))
    mem_hist: deque = field(default_factory=lambda: deque(maxlen=HISTORY))
    power_hist: deque = field(default_factory=lambda: deque(maxlen=HISTORY))
    temp_hist: deque = field(default_factory=lambda: deque(maxlen=HISTORY))


@dataclass
class LogEntry:
    t: float
    level: str  # info, knob, warn, error
    text: str


@dataclass
class DashboardState:
    """Everything the dashboard renders, derived from events only."""

    schema: int | None = None
    config: dict = field(default_factory=dict)
    host: dict = field(default_factory=dict)
    wall_start: str = ""
    started: bool = False  # a session_start was seen
    t: float = 0.0  # time of the latest event
    events: int = 0
    paused: bool = False
    stopped: bool = False
    knobs: dict[str, Any] = field(default_factory=dict)
    jobs: dict[int, JobState] = field(default_factory=dict)
    gpus: dict[int, GpuState] = field(default_factory=dict)
    processes: list[dict] = field(default_factory=list)
    shm_bytes: int = 0
    mem_total: int = 0
    mem_peak: int = 0
    mem_peak_t: float = 0.0
    counters: dict[str, int] = field(default_factory=dict)
    proofs_done: int = 0
    proofs_bad: int = 0
    partitions_done: int = 0
    partitions_failed: int = 0
    errors: int = 0
    done_times: list[float] = field(default_factory=list)
    max_holding: int = 0  # exact maximum of partitions holding buffers, from stage events
    counts: dict[str, int] = field(default_factory=lambda: {s: 0 for s in ALL_STAGES})
    active: set[int] = field(default_factory=set)  # jobs with a partition not yet done/failed
    stage_hist: dict[str, deque] = field(
        default_factory=lambda: {s: deque(maxlen=HISTORY) for s in ALL_STAGES}
    )
    bytes_hist: dict[str, deque] = field(
        default_factory=lambda: {s: deque(maxlen=HISTORY) for s in HOLDING_STAGES}
    )
    mem_hist: deque = field(default_factory=lambda: deque(maxlen=HISTORY))
    shm_hist: deque = field(default_factory=lambda: deque(maxlen=HISTORY))
    proc_hist: dict[str, deque] = field(default_factory=dict)  # role/pid label -> history
    throughput_hist: deque = field(default_factory=lambda: deque(maxlen=HISTORY))
    log: deque = field(default_factory=lambda: deque(maxlen=LOG_LINES))

    # ---- derived views -------------------------------------------------------------------

    @property
    def backend(self) -> str:
        b = find_config_value(self.config, "backend_in_use") or find_config_value(self.config, "backend")
        if b:
            return str(b)
        return "gpu" if any(g.name for g in self.gpus.values()) and self.gpus else "cpu"

    @property
    def engine_state(self) -> str:
        if not self.started:
            return "starting"
        if self.stopped:
            return "stopped"
        return "paused" if self.paused else "running"

    @property
    def memory_budget(self) -> int | None:
        """The budget in bytes, from the live knob or the config (GiB spellings converted)."""
        v = self.knobs.get("memory_budget")
        return budget_bytes(v) if v is not None else None

    def stage_counts(self) -> dict[str, int]:
        """Partitions currently in each stage (kept incrementally by the reducer)."""
        return dict(self.counts)

    def stage_bytes(self) -> dict[str, int]:
        """Bytes of a, b, c buffers held by partitions in each holding stage."""
        held = {s: 0 for s in HOLDING_STAGES}
        for jid in self.active:
            for p in self.jobs[jid].parts.values():
                if p.stage in held:
                    held[p.stage] += p.footprint
        return held

    def holding(self) -> int:
        """Partitions holding a, b, c buffers now (start of synthesis until release)."""
        return sum(self.counts[s] for s in HOLDING_STAGES)

    def throughput(self, window: float = THROUGHPUT_WINDOW_S) -> float:
        """Proofs per minute over the trailing window ending at the latest event time."""
        if not self.done_times:
            return 0.0
        start = max(0.0, self.t - window)
        span = self.t - start
        if span <= 0:
            return 0.0
        n = len(self.done_times) - bisect.bisect_left(self.done_times, start)  # times are sorted
        return n * 60.0 / span

    def overall_throughput(self) -> float:
        """Proofs per minute over the whole session (first submission to the last proof)."""
        if not self.done_times or not self.jobs:
            return 0.0
        first = min(j.submitted for j in self.jobs.values())
        span = max(self.done_times) - first
        return len(self.done_times) * 60.0 / span if span > 0 else 0.0

    def stage_mean_ms(self) -> dict[str, float]:
        """Mean per partition of every timer over finished partitions (compare screen)."""
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        for job in self.jobs.values():
            for p in job.parts.values():
                for k, v in p.ms.items():
                    sums[k] = sums.get(k, 0.0) + v
                    counts[k] = counts.get(k, 0) + 1
        return {k: sums[k] / counts[k] for k in TIMER_KEYS if k in sums}

    def mean_total_ms(self) -> float | None:
        vals = [j.total_ms for j in self.jobs.values() if j.total_ms is not None]
        return sum(vals) / len(vals) if vals else None

    def final_counters(self) -> dict[str, Any]:
        """The counters that must match between a live run and its replay."""
        return {
            "events": self.events,
            "jobs": len(self.jobs),
            "proofs_done": self.proofs_done,
            "proofs_bad": self.proofs_bad,
            "partitions_done": self.partitions_done,
            "partitions_failed": self.partitions_failed,
            "errors": self.errors,
            "stage_counts": self.stage_counts(),
            "mem_peak": self.mem_peak,
            "max_holding": self.max_holding,
            "knobs": dict(self.knobs),
            "t": self.t,
        }


# ---- config helpers --------------------------------------------------------------------------


def find_config_value(config: dict, key: str) -> Any:
    """A key from the config, whether it sits at the top level or one table down."""
    if not isinstance(config, dict):
        return None
    if key in config:
        return config[key]
    for v in config.values():
        if isinstance(v, dict) and key in v:
            return v[key]
    return None


def budget_bytes(value: Any) -> int | None:
    """A memory budget as bytes (ints are bytes, strings like "64GiB" are parsed); None when
    unset or 0, which the engine's config means as unlimited."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            from engine.config import parse_size

            value = parse_size(value)
        except (ImportError, ValueError):
            return None
    try:
        v = int(value)
    except (TypeError, ValueError):
        return None
    return v if v > 0 else None


def knobs_from_config(config: dict) -> dict[str, Any]:
    """Initial values of the live knobs (and a few shown settings) from a session's config."""
    knobs: dict[str, Any] = {}
    for k in ("partition_workers", "gpu_channel_capacity"):
        v = find_config_value(config, k)
        if v is not None:
            knobs[k] = v
    for k in BUDGET_KEYS:
        v = find_config_value(config, k)
        if v is not None:
            knobs["memory_budget"] = v
            break
    return knobs


# ---- the reducer -----------------------------------------------------------------------------


def _log(state: DashboardState, t: float, level: str, text: str) -> None:
    state.log.append(LogEntry(t, level, text))


def _fmt_val(name: str, v: Any) -> str:
    if name == "memory_budget" and isinstance(v, (int, float)) and not isinstance(v, bool):
        b = budget_bytes(v)
        return fmt_bytes(b) if b else "unlimited"
    return str(v)


def apply(state: DashboardState, ev: Event) -> DashboardState:
    """Fold one event into the state (in place) and return it.

    Unknown kinds and malformed events are logged, never raised: a session written by a newer
    engine still replays.
    """
    kind = ev.get("kind")
    t = float(ev.get("t", state.t) or 0.0)
    state.t = max(state.t, t)
    state.events += 1
    try:
        handler = _HANDLERS.get(kind)  # type: ignore[arg-type]
        if handler is None:
            _log(state, t, "warn", f"unknown event kind {kind!r}")
        else:
            handler(state, ev, t)
    except (KeyError, TypeError, ValueError) as exc:
        _log(state, t, "warn", f"malformed {kind} event: {exc!r}")
    return state


def reduce(events: Iterable[Event], state: DashboardState | None = None) -> DashboardState:
    """Fold a whole stream; the state a dashboard shows after seeing these events."""
    state = state if state is not None else DashboardState()
    for ev in events:
        apply(state, ev)
    return state


def _session_start(state: DashboardState, ev: Event, t: float) -> None:
    state.started = True
    state.schema = ev.get("schema")
    state.config = ev.get("config") or {}
    state.host = ev.get("host") or {}
    state.wall_start = ev.get("wall_start", "")
    state.knobs.update(knobs_from_config(state.config))
    for g in ev.get("gpus") or []:
        idx = int(g.get("index", len(state.gpus)))
        state.gpus[idx] = GpuState(
            index=idx, name=str(g.get("name", f"GPU {idx}")), memory_total=g.get("memory_total")
        )
    gpus = ", ".join(g.name for g in state.gpus.values()) or "no GPU"
    _log(state, t, "info", f"session started ({gpus}; {state.host.get('cpus', '?')} CPUs)")


def _job_submitted(state: DashboardState, ev: Event, t: float) -> None:
    job = int(ev["job"])
    n = int(ev["partitions"])
    constraints = int(ev.get("constraints", 0))
    js = JobState(job, str(ev.get("preset", "")), n, constraints, submitted=t)
    old = state.jobs.get(job)
    if old is not None:  # a resubmitted id replaces the old job; keep counts consistent
        for p in old.parts.values():
            state.counts[p.stage] -= 1
    for i in range(n):
        js.parts[i] = PartitionState(job, i, constraints, entered={"queued": t})
    state.counts["queued"] += n
    state.jobs[job] = js
    if n:
        state.active.add(job)
    _log(state, t, "info", f"job {job} submitted: {js.preset}, {n} partitions × {constraints:,}")


def _stage(state: DashboardState, ev: Event, t: float) -> None:
    job = state.jobs.get(int(ev["job"]))
    if job is None:
        raise ValueError(f"stage for unknown job {ev['job']}")
    idx = int(ev["partition"])
    p = job.parts.get(idx)
    if p is None:
        p = job.parts[idx] = PartitionState(job.job, idx, job.constraints)
        state.counts["queued"] += 1
    new = str(ev["stage"])
    if new not in ALL_STAGES:
        raise ValueError(f"unknown stage {new!r}")
    old = p.stage
    if new == "synthesizing":
        p.attempts += 1
        if p.attempts > 1:
            # A retry: the stage history starts over from this synthesis.
            p.entered = {k: v for k, v in p.entered.items() if k == "queued"}
            p.reason = None
            if old == FAILED:
                state.partitions_failed -= 1
                job.failed = any(q.stage == FAILED for q in job.parts.values() if q is not p)
            _log(state, t, "warn", f"job {job.job} p{idx} retried (attempt {p.attempts})")
    p.stage = new
    job.version += 1
    state.counts[old] -= 1
    state.counts[new] += 1
    if all(q.stage in ("done", FAILED) for q in job.parts.values()):
        state.active.discard(job.job)
    else:
        state.active.add(job.job)
    p.worker = str(ev.get("worker", ""))
    p.entered.setdefault(new, t)
    if new == "done" and old != "done":
        state.partitions_done += 1
    elif new == FAILED and old != FAILED:
        state.partitions_failed += 1
        p.reason = ev.get("reason")
        job.failed = True
        _log(state, t, "error", f"job {job.job} p{idx} failed on {p.worker}: {p.reason or '?'}")
    state.max_holding = max(state.max_holding, state.holding())


def _partition_timings(state: DashboardState, ev: Event, t: float) -> None:
    job = state.jobs.get(int(ev["job"]))
    if job is None:
        raise ValueError(f"timings for unknown job {ev['job']}")
    idx = int(ev["partition"])
    p = job.parts.get(idx)
    if p is None:
        raise ValueError(f"timings for unknown partition {job.job}/{idx}")
    p.ms.update({k: float(v) for k, v in (ev.get("ms") or {}).items() if v is not None})
    job.version += 1
    if ev.get("bytes_held") is not None:
        p.bytes_held = int(ev["bytes_held"])


def _proof_done(state: DashboardState, ev: Event, t: float) -> None:
    job = state.jobs.get(int(ev["job"]))
    if job is None:
        raise ValueError(f"proof for unknown job {ev['job']}")
    job.done_t = t
    job.version += 1
    job.verified = bool(ev["verified"])
    job.total_ms = float(ev["total_ms"]) if ev.get("total_ms") is not None else None
    job.proof_bytes = len(str(ev.get("proof") or "")) // 2
    state.proofs_done += 1
    state.done_times.append(t)
    if job.verified:
        _log(state, t, "info", f"job {job.job} proved ✓ in {fmt_ms(job.total_ms)} ms")
    else:
        state.proofs_bad += 1
        _log(state, t, "error", f"job {job.job} proof FAILED verification ✗")


def _sample(state: DashboardState, ev: Event, t: float) -> None:
    procs = list(ev.get("processes") or [])
    state.processes = procs
    state.shm_bytes = int(ev.get("shm_bytes") or 0)
    state.counters = dict(ev.get("counters") or {})
    total = sum(int(p.get("rss_anon") or 0) for p in procs) + state.shm_bytes
    state.mem_total = total
    if total > state.mem_peak:
        state.mem_peak = total
        state.mem_peak_t = t
    state.mem_hist.append(total)
    state.shm_hist.append(state.shm_bytes)
    seen = set()
    for p in procs:
        label = proc_label(p)
        seen.add(label)
        state.proc_hist.setdefault(label, deque(maxlen=HISTORY)).append(int(p.get("rss_anon") or 0))
    for label, hist in state.proc_hist.items():
        if label not in seen:
            hist.append(0)
    for g in ev.get("gpus") or []:
        idx = int(g.get("index", 0))
        gs = state.gpus.get(idx)
        if gs is None:
            gs = state.gpus[idx] = GpuState(index=idx)
        gs.util = g.get("util")
        gs.mem_used = g.get("mem_used")
        if g.get("mem_total") is not None:
            gs.memory_total = g.get("mem_total")
        gs.power_w = g.get("power_w")
        gs.temp_c = g.get("temp_c")
        gs.sm_clock_mhz = g.get("sm_clock_mhz")
        gs.util_hist.append(gs.util or 0)
        gs.mem_hist.append(gs.mem_used or 0)
        gs.power_hist.append(gs.power_w or 0)
        gs.temp_hist.append(gs.temp_c or 0)
    counts = state.stage_counts()
    for s in ALL_STAGES:
        state.stage_hist[s].append(counts.get(s, 0))
    held = state.stage_bytes()
    for s in HOLDING_STAGES:
        state.bytes_hist[s].append(held[s])
    state.throughput_hist.append(state.throughput())


def _knob(state: DashboardState, ev: Event, t: float) -> None:
    name = str(ev["name"])
    new = ev.get("new")
    old = ev.get("old")
    source = ev.get("source", "operator")
    if name in ("paused", "pause"):
        state.paused = bool(new)
        _log(state, t, "knob", f"engine {'paused' if state.paused else 'resumed'} ({source})")
        return
    if name in ("state", "engine_state"):
        state.paused = new == "paused"
        state.stopped = new == "stopped"
        _log(state, t, "knob", f"engine {new} ({source})")
        return
    if name in BUDGET_KEYS and name != "memory_budget":
        new, old, name = budget_bytes(new), budget_bytes(old), "memory_budget"
    state.knobs[name] = new
    _log(state, t, "knob", f"{name}: {_fmt_val(name, old)} → {_fmt_val(name, new)} ({source})")


def _error(state: DashboardState, ev: Event, t: float) -> None:
    state.errors += 1
    _log(state, t, "error", f"{ev.get('where', '?')}: {ev.get('message', '')}")


_HANDLERS = {
    "session_start": _session_start,
    "job_submitted": _job_submitted,
    "stage": _stage,
    "partition_timings": _partition_timings,
    "proof_done": _proof_done,
    "sample": _sample,
    "knob": _knob,
    "error": _error,
}


# ---- formatting shared by widgets and summaries ---------------------------------------------


def proc_label(p: dict) -> str:
    role = p.get("role") or "proc"
    return f"{role}:{p.get('pid', '?')}"


def fmt_bytes(n: int | float | None) -> str:
    """Binary units, three significant figures: 1.50 GiB, 768 MiB, N/A for None."""
    if n is None:
        return "N/A"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            if unit == "B":
                return f"{int(n)} B"
            return f"{n:.3g} {unit}" if abs(n) >= 100 else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"


def fmt_ms(ms: float | None) -> str:
    """Milliseconds for a table cell: 850 ms, 12.3 s, – when not measured."""
    if ms is None:
        return "–"
    if ms >= 10_000:
        return f"{ms / 1000:.1f} s"
    if ms >= 100:
        return f"{ms:.0f}"
    return f"{ms:.1f}"
