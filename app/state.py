"""The dashboard state: a reducer that folds the event stream into what the console shows.

Live and replay render through this one reducer, so a replayed session ends in exactly the state
the live run ended in. It is plain Python (no Textual import) and is tested without a terminal.

Everything shown (per-stage counts, throughput, peaks, per-proof timings) is computed here from
events; nothing is read from anywhere else.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from app import history as _history
from engine.settings import find, knob_names
from engine.stream.fold import (
    Fold,
    JobRecord,
    PartitionRecord,
    StageChange,
)
from engine.stream.schema import (
    ALL_STAGES,
    CANCELLED,
    FAILED,
    HOLDING_STAGES,
    STAGES,  # noqa: F401 - the widgets read it from here (app/widgets/gantt.py)
    TIMER_KEYS,
    Event,
)
from kernels.textfmt import fmt_bytes

# The console's names for the fold's records (engine/stream/fold.py): one record type each,
# shared with the headless summaries.
PartitionState = PartitionRecord
JobState = JobRecord

# Other config values worth showing beside them when present.
SHOWN_CONFIG = ("gpu_slots_per_device", "permit_release", "dealloc", "abc_eval", "backend", "preset")
# Accepted spellings of the memory budget in a config.
HISTORY = 120  # points kept per sparkline: one per sample event
LOG_LINES = 500  # event-log entries kept
THROUGHPUT_WINDOW_S = 60.0  # proofs/min is measured over this trailing window


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
    """Everything the dashboard renders, derived from events only.

    Jobs, partitions, per-stage counts and proof counters are the stream's one fold
    (:attr:`fold`, shared with the headless summaries); the rest is what only a dashboard keeps:
    the latest sample, histories for sparklines, and the log.
    """

    schema: int | None = None
    config: dict = field(default_factory=dict)
    host: dict = field(default_factory=dict)
    wall_start: str = ""
    started: bool = False  # a session_start was seen
    t: float = 0.0  # time of the latest event
    events: int = 0  # the engine's events folded (console lines are counted apart)
    console_lines: int = 0  # console events folded
    paused: bool = False
    stopped: bool = False
    knobs: dict[str, Any] = field(default_factory=dict)
    fold: Fold = field(default_factory=Fold)
    gpus: dict[int, GpuState] = field(default_factory=dict)
    processes: list[dict] = field(default_factory=list)
    shm_bytes: int = 0
    mem_total: int = 0
    mem_peak: int = 0
    mem_peak_t: float = 0.0
    errors: int = 0
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
    # the last hour and more per host (app/history.py), keyed by the events' host field
    history: dict[str, _history.HostHistory] = field(default_factory=dict)

    # ---- the fold's records and counts ---------------------------------------------------

    @property
    def jobs(self) -> dict[int, JobRecord]:
        return self.fold.jobs

    @property
    def counts(self) -> dict[str, int]:
        return self.fold.counts

    @property
    def active(self) -> set[int]:
        """Jobs with a partition not yet done, failed or cancelled."""
        return self.fold.active

    @property
    def done_times(self) -> list[float]:
        return self.fold.done_times

    @property
    def proofs_done(self) -> int:
        return self.fold.proofs_done

    @property
    def proofs_bad(self) -> int:
        """Proofs that failed verification (not jobs whose partitions failed)."""
        return self.fold.proofs_bad

    @property
    def proofs_verified(self) -> int:
        return self.fold.proofs_verified

    @property
    def proofs_failed(self) -> int:
        """Jobs that ended failed: a failed partition or a proof that failed verification."""
        return self.fold.proofs_failed

    @property
    def proofs_cancelled(self) -> int:
        """Jobs a stop cancelled before they were proven (never among the failed)."""
        return self.fold.proofs_cancelled

    @property
    def partitions_done(self) -> int:
        return self.fold.partitions_done

    @property
    def partitions_failed(self) -> int:
        return self.fold.partitions_failed

    @property
    def partitions_cancelled(self) -> int:
        return self.fold.partitions_cancelled

    @property
    def max_holding(self) -> int:
        """Exact maximum of partitions holding buffers, from stage events."""
        return self.fold.max_holding

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
            job = self.jobs[jid]
            for p in job.parts.values():
                if p.stage in held:
                    held[p.stage] += job.footprint(p)
        return held

    def holding(self) -> int:
        """Partitions holding a, b, c buffers now (start of synthesis until release)."""
        return self.fold.holding()

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

    def eta_s(self) -> float | None:
        """Seconds until the proofs in flight and queued are done at the measured rate (the
        trailing window's proofs/min); None when nothing is queued or no rate is measured."""
        left = len(self.active)
        rate = self.throughput()
        if not left or rate <= 0:
            return None
        return left * 60.0 / rate

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
            "partitions_cancelled": self.partitions_cancelled,
            "proofs_cancelled": self.proofs_cancelled,
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
    """Initial values of the live knobs (the settings table's) from a session's config."""
    knobs: dict[str, Any] = {}
    for k in knob_names():
        v = find_config_value(config, k)
        if v is not None:
            knobs[k] = v
    return knobs


# ---- the reducer -----------------------------------------------------------------------------


def _log(state: DashboardState, t: float, level: str, text: str) -> None:
    state.log.append(LogEntry(t, level, text))


def _fmt_val(name: str, v: Any) -> str:
    s = find(name)
    if (s is not None and s.knob is not None and s.unit == "bytes"
            and isinstance(v, (int, float)) and not isinstance(v, bool)):
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
    if kind == "console":
        state.console_lines += 1
    else:
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
    js = state.fold.apply(ev)
    assert isinstance(js, JobRecord)
    _log(state, t, "info",
         f"job {js.job} submitted: {js.preset}, {js.partitions} partitions × {js.constraints:,}")


def _stage(state: DashboardState, ev: Event, t: float) -> None:
    ch = state.fold.apply(ev)
    assert isinstance(ch, StageChange)
    _history.on_stage(state.history, ev)
    job, p = ch.job, ch.part
    if ch.retried:
        _log(state, t, "warn", f"job {job.job} p{p.index} retried (attempt {p.attempts})")
    if ch.new == FAILED and ch.old != FAILED:
        _log(state, t, "error", f"job {job.job} p{p.index} failed on {p.worker}: {p.reason or '?'}")
    elif ch.new == CANCELLED and ch.old != CANCELLED:
        if job.job not in state.active and job.outcome == "cancelled":
            _log(state, t, "warn", f"job {job.job} cancelled, never proven"
                 + (f" ({p.reason})" if p.reason else ""))


def _partition_timings(state: DashboardState, ev: Event, t: float) -> None:
    state.fold.apply(ev)


def _proof_done(state: DashboardState, ev: Event, t: float) -> None:
    job = state.fold.apply(ev)
    _history.on_proof_done(state.history, ev, t)
    assert isinstance(job, JobRecord)
    if job.verified:
        _log(state, t, "info", f"job {job.job} proved ✓ in {fmt_s(job.total_ms)}")
    elif job.failed:
        _log(state, t, "error", f"job {job.job} failed ✗: {job.reason}")
    elif job.cancelled:
        _log(state, t, "warn", f"job {job.job} cancelled, never proven")
    else:
        _log(state, t, "error", f"job {job.job} proof FAILED verification ✗")


def _console(state: DashboardState, ev: Event, t: float) -> None:
    """A console-side line (an operator's action, its outcome, a notice) as the stream
    recorded it, so a replay shows it where the live console did."""
    level = str(ev["level"])
    _log(state, t, level, str(ev["text"]))
    if ev.get("engine_state") == "stopped":
        state.stopped = True


def _sample(state: DashboardState, ev: Event, t: float) -> None:
    _history.on_sample(state.history, ev, t)
    procs = list(ev.get("processes") or [])
    state.processes = procs
    state.shm_bytes = int(ev.get("shm_bytes") or 0)
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
    if name == "paused":
        state.paused = bool(new)
        _log(state, t, "knob", f"{_on_host(ev)}engine {'paused' if state.paused else 'resumed'} "
             f"({source})")
        return
    state.knobs[name] = new
    _log(state, t, "knob", f"{_on_host(ev)}{name}: {_fmt_val(name, old)} → {_fmt_val(name, new)} "
         f"({source})")


def _error(state: DashboardState, ev: Event, t: float) -> None:
    state.errors += 1
    where = str(ev.get("where", "?"))
    who = "" if where.startswith("host ") else _on_host(ev)
    _log(state, t, "error", f"{who}{where}: {ev.get('message', '')}")


def _host(state: DashboardState, ev: Event, t: float) -> None:
    """A farm host joined or left (its rows are the hosts view's, engine/cluster/hosts.py)."""
    where = f" ({ev['address']})" if ev.get("address") else ""
    _log(state, t, "info" if ev["state"] == "joined" else "warn",
         f"host {ev['host']} {ev['state']}{where}")


def _on_host(ev: Event) -> str:
    """The prefix naming the farm host that sent an event ("hA: "); empty for a local one."""
    host = ev.get("host")
    return f"{host}: " if isinstance(host, str) and host else ""


_HANDLERS = {
    "session_start": _session_start,
    "job_submitted": _job_submitted,
    "stage": _stage,
    "partition_timings": _partition_timings,
    "proof_done": _proof_done,
    "sample": _sample,
    "knob": _knob,
    "error": _error,
    "console": _console,
    "host": _host,
}


# ---- formatting shared by widgets and summaries ---------------------------------------------


def proc_label(p: dict) -> str:
    role = p.get("role") or "proc"
    return f"{role}:{p.get('pid', '?')}"


def fmt_ms(ms: float | None) -> str:
    """Milliseconds for a table cell, always in ms (a column never changes its unit): 12.3,
    850, 10123; – when not measured. The column header or title names the unit."""
    if ms is None:
        return "–"
    if ms >= 100:
        return f"{ms:.0f}"
    return f"{ms:.1f}"


def fmt_s(ms: float | None) -> str:
    """A duration given in ms, shown in seconds with its unit: 0.85 s, 36.2 s; – when none."""
    if ms is None:
        return "–"
    s = ms / 1000
    return f"{s:.2f} s" if s < 10 else f"{s:.1f} s"
