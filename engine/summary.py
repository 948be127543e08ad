"""Summaries computed only from the event stream: the per-proof table, the final counters, the
run summary, and the exact concurrency maxima the pipeline's bound is checked on.

Nothing here reads engine state. The live ``run`` and ``replay --summary`` call the same
functions on the same events, so their output is identical by construction.

Stage intervals. A partition's stage events split its life into intervals; the interval of a
stage runs from its event to the partition's next stage event. Concurrency maxima are computed by
walking the stream in order and counting partitions by their current stage, which is exact: the
engine emits each transition under the lock that makes it happen.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from engine import events as ev

# Stages in which a partition holds its a, b, c buffers (synthesis start to buffer release).
HOLDING = frozenset(("synthesizing", "waiting_gpu", "gpu", "deallocating"))
TERMINAL = frozenset(("done", ev.FAILED))

Key = tuple[int, int]  # (job, partition)


@dataclass
class PartitionRecord:
    """Everything the events say about one partition."""

    job: int
    partition: int
    stages: list[tuple[float, str, str]] = field(default_factory=list)  # (t, stage, worker)
    ms: dict[str, float] = field(default_factory=dict)
    bytes_held: int = 0

    def first(self, stage: str) -> float | None:
        for t, s, _ in self.stages:
            if s == stage:
                return t
        return None

    def last(self, stage: str) -> float | None:
        found = None
        for t, s, _ in self.stages:
            if s == stage:
                found = t
        return found

    def interval(self, stage: str) -> tuple[float, float] | None:
        """[start, end) of the last time the partition entered ``stage``."""
        for i in range(len(self.stages) - 1, -1, -1):
            t, s, _ = self.stages[i]
            if s == stage:
                end = self.stages[i + 1][0] if i + 1 < len(self.stages) else None
                return (t, end) if end is not None else None
        return None

    @property
    def final_stage(self) -> str | None:
        return self.stages[-1][1] if self.stages else None

    @property
    def total_ms(self) -> float | None:
        t0, t1 = self.first("queued"), self.last("done")
        return None if t0 is None or t1 is None else (t1 - t0) * 1000.0


def partitions(events: Iterable[dict]) -> dict[Key, PartitionRecord]:
    out: dict[Key, PartitionRecord] = {}
    for e in events:
        k = e.get("kind")
        if k == "stage":
            key = (e["job"], e["partition"])
            rec = out.setdefault(key, PartitionRecord(*key))
            rec.stages.append((e["t"], e["stage"], e.get("worker", "")))
        elif k == "partition_timings":
            key = (e["job"], e["partition"])
            rec = out.setdefault(key, PartitionRecord(*key))
            rec.ms.update(e["ms"])
            rec.bytes_held = e["bytes_held"]
    return out


def jobs(events: Iterable[dict]) -> dict[int, dict]:
    """job id → {"preset", "partitions", "constraints", "submitted_t", "verified", "done_t",
    "total_ms"} from job_submitted and proof_done events."""
    out: dict[int, dict] = {}
    for e in events:
        if e.get("kind") == "job_submitted":
            out[e["job"]] = {
                "preset": e["preset"],
                "partitions": e["partitions"],
                "constraints": e["constraints"],
                "submitted_t": e["t"],
                "verified": None,
                "done_t": None,
                "total_ms": None,
            }
        elif e.get("kind") == "proof_done" and e["job"] in out:
            out[e["job"]].update(verified=e["verified"], done_t=e["t"], total_ms=e["total_ms"])
    return out


def max_concurrent(events: Iterable[dict], stages: frozenset[str] | set[str]) -> int:
    """The exact maximum number of partitions whose current stage is in ``stages``."""
    current: dict[Key, str] = {}
    count = best = 0
    for e in events:
        if e.get("kind") != "stage":
            continue
        key = (e["job"], e["partition"])
        old = current.get(key)
        new = e["stage"]
        current[key] = new
        count += (new in stages) - (old in stages if old is not None else 0)
        best = max(best, count)
    return best


def bound_excess(events: Iterable[dict], workers: int, capacity: int, slots: int) -> int:
    """max over the stream of holding − (workers + capacity + slots + deallocating).

    design.md's bound holds exactly when this is ≤ 0.
    """
    current: dict[Key, str] = {}
    holding = dealloc = 0
    worst = -(workers + capacity + slots)
    for e in events:
        if e.get("kind") != "stage":
            continue
        key = (e["job"], e["partition"])
        old, new = current.get(key), e["stage"]
        current[key] = new
        holding += (new in HOLDING) - (old in HOLDING if old else 0)
        dealloc += (new == "deallocating") - (old == "deallocating" if old else 0)
        worst = max(worst, holding - (workers + capacity + slots + dealloc))
    return worst


def stage_counts(events: Iterable[dict]) -> dict[str, int]:
    """How many partitions are in each stage at the end of the stream (every stage listed)."""
    current: dict[Key, str] = {}
    for e in events:
        if e.get("kind") == "stage":
            current[(e["job"], e["partition"])] = e["stage"]
    counts = {s: 0 for s in (*ev.STAGES, ev.FAILED)}
    for s in current.values():
        counts[s] += 1
    return counts


def final_counters(events: list[dict]) -> dict[str, int]:
    """The engine's counters from the last sample, with the stage counts and submissions."""
    out: dict[str, int] = {}
    for e in events:
        if e.get("kind") == "sample":
            out = dict(e["counters"])
    out["partitions_submitted_events"] = sum(
        e["partitions"] for e in events if e.get("kind") == "job_submitted"
    )
    for s, n in stage_counts(events).items():
        out[f"stage_{s}"] = n
    return out


def peak_memory(events: Iterable[dict]) -> tuple[int, int]:
    """(peak total = ΣRssAnon + shm, peak shm bytes) over the samples; (0, 0) if none."""
    peak_total = peak_shm = 0
    for e in events:
        if e.get("kind") == "sample":
            total = sum((p.get("rss_anon") or 0) for p in e["processes"]) + e["shm_bytes"]
            peak_total = max(peak_total, total)
            peak_shm = max(peak_shm, e["shm_bytes"])
    return peak_total, peak_shm


def _rss_anon(sample: dict) -> int:
    return sum((p.get("rss_anon") or 0) for p in sample["processes"])


def baseline_rss_anon(events: Iterable[dict]) -> int:
    """ΣRssAnon of the engine's processes before any partition data exists: the last sample
    before the first partition enters ``synthesizing`` (the minimum over the samples if none
    precedes it; 0 without samples). Each process's Python/numba/CuPy footprint, which a model of
    partition buffers alone leaves out."""
    last: int | None = None
    lowest: int | None = None
    started = False
    for e in events:
        k = e.get("kind")
        if k == "sample":
            last = _rss_anon(e)
            lowest = last if lowest is None else min(lowest, last)
        elif k == "stage" and e["stage"] == "synthesizing" and not started:
            if last is not None:
                return last
            started = True
    return lowest or 0


def gpu_intervals(recs: Iterable[PartitionRecord]) -> dict[str, list[tuple[float, float]]]:
    """worker → [start, end) of each GPU wrapper call (gpu stage event + gpu_wrapper ms)."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in recs:
        for t, s, w in r.stages:
            if s == "gpu" and "gpu_wrapper" in r.ms:
                out[w.split("/")[0]].append((t, t + r.ms["gpu_wrapper"] / 1000.0))
    return out


def kernel_ms_by_worker(recs: Iterable[PartitionRecord]) -> dict[str, float]:
    """worker → the kernel milliseconds (upload, ntt and MSMs, by the worker's own timers)."""
    out: dict[str, float] = defaultdict(float)
    for r in recs:
        for _t, s, w in r.stages:
            if s == "gpu":
                out[w.split("/")[0]] += sum(r.ms.get(k, 0.0) for k in ev.KERNEL_KEYS)
    return out


def _union_length(spans: list[tuple[float, float]]) -> float:
    total = 0.0
    end = float("-inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


@dataclass
class RunSummary:
    partitions_done: int
    jobs_done: int
    jobs_verified: int
    wall_s: float
    s_per_proof: float | None
    steady_s_per_proof: float | None  # see steady_interval()
    s_per_job: float | None
    constraints_per_s: float | None
    gpu_busy_pct: dict[str, float]  # share of the GPU window covered by wrapper calls
    kernel_busy_pct: dict[str, float]  # kernel time over the same window (the stricter figure)
    wrapper_ms: float
    call_ms: float
    kernel_ms: float
    gap_split_ms: dict[str, float]  # see gap_split()
    peak_total: int
    peak_shm: int
    baseline_rss_anon: int  # see baseline_rss_anon()


def steady_interval(done: Iterable[PartitionRecord]) -> float | None:
    """Seconds between consecutive partition completions, from the first to the last: the
    pipeline's throughput once it is running, without the start-up (worker spawn, key loading,
    the first synthesis) that seconds-per-proof over the whole run includes. None below 3."""
    ts = sorted(t for t in (r.first("done") for r in done) if t is not None)
    if len(ts) < 3:
        return None
    return (ts[-1] - ts[0]) / (len(ts) - 1)


def gap_split(done: Iterable[PartitionRecord], dealloc_in_wrapper: bool = False) -> dict[str, float]:
    """Where the wrapper's time beyond the kernels went, summed over partitions (ms): handing the
    task to the prover (dispatch), the prover's host work around its call (host), the call's own
    time outside the kernel groups (call - kernels), the gpu_done message back (return), and,
    with ``dealloc_in_wrapper`` (dealloc = "sync"), deallocation. Parts a run did not record are
    left out; "other" is what the recorded parts do not explain."""
    recs = [r for r in done if "gpu_wrapper" in r.ms]
    out: dict[str, float] = {}
    for key, name in (("gpu_dispatch", "dispatch"), ("gpu_host", "host"), ("gpu_return", "return")):
        if any(key in r.ms for r in recs):
            out[name] = sum(r.ms.get(key, 0.0) for r in recs)
    if any("gpu_call" in r.ms for r in recs):
        out["call - kernels"] = sum(
            r.ms["gpu_call"] - sum(r.ms.get(k, 0.0) for k in ev.KERNEL_KEYS) for r in recs if "gpu_call" in r.ms
        )
    if dealloc_in_wrapper and any("dealloc" in r.ms for r in recs):
        out["dealloc"] = sum(r.ms.get("dealloc", 0.0) for r in recs)
    if out:
        wrapper = sum(r.ms["gpu_wrapper"] for r in recs)
        kernels = sum(sum(r.ms.get(k, 0.0) for k in ev.KERNEL_KEYS) for r in recs)
        out["other"] = wrapper - kernels - sum(out.values())
    return out


def _session_config(events: Iterable[dict]) -> dict:
    return next((e.get("config") or {} for e in events if e.get("kind") == "session_start"), {})


def run_summary(events: list[dict]) -> RunSummary:
    recs = partitions(events)
    js = jobs(events)
    done = [r for r in recs.values() if r.final_stage == "done"]
    jobs_done = [j for j in js.values() if j["done_t"] is not None]
    t0 = min((j["submitted_t"] for j in js.values()), default=0.0)
    t1 = max((j["done_t"] for j in jobs_done), default=t0)
    wall = max(t1 - t0, 0.0)
    constraints = sum(j["constraints"] * j["partitions"] for j in jobs_done)
    busy, kbusy = {}, {}
    kernel_ms = kernel_ms_by_worker(recs.values())
    for worker, spans in sorted(gpu_intervals(recs.values()).items()):
        lo = min(a for a, _ in spans)
        hi = max(b for _, b in spans)
        busy[worker] = 100.0 * _union_length(spans) / (hi - lo) if hi > lo else 100.0
        kbusy[worker] = min(100.0, 0.1 * kernel_ms[worker] / (hi - lo)) if hi > lo else 100.0
    peak_total, peak_shm = peak_memory(events)
    return RunSummary(
        partitions_done=len(done),
        jobs_done=len(jobs_done),
        jobs_verified=sum(1 for j in jobs_done if j["verified"]),
        wall_s=wall,
        s_per_proof=wall / len(done) if done and wall > 0 else None,
        steady_s_per_proof=steady_interval(done),
        s_per_job=wall / len(jobs_done) if jobs_done and wall > 0 else None,
        constraints_per_s=constraints / wall if wall > 0 else None,
        gpu_busy_pct=busy,
        kernel_busy_pct=kbusy,
        wrapper_ms=sum(r.ms.get("gpu_wrapper", 0.0) for r in done),
        call_ms=sum(r.ms.get("gpu_call", 0.0) for r in done),
        kernel_ms=sum(sum(r.ms.get(k, 0.0) for k in ev.KERNEL_KEYS) for r in done),
        gap_split_ms=gap_split(done, _session_config(events).get("dealloc") == "sync"),
        peak_total=peak_total,
        peak_shm=peak_shm,
        baseline_rss_anon=baseline_rss_anon(events),
    )


# -- rendering ---------------------------------------------------------------------------------

TABLE_COLUMNS = (
    ("job", 4),
    ("part", 4),
    ("queue", 9),
    ("synth", 9),
    ("chan", 9),
    ("wrapper", 9),
    ("call", 9),
    ("kernels", 9),
    ("b2", 9),
    ("dealloc", 9),
    ("total", 10),
    ("verified", 8),
)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _bytes(n: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} B"


def render_table(events: list[dict]) -> str:
    """The per-proof breakdown: one row per partition proof, times in ms."""
    recs = partitions(events)
    js = jobs(events)
    head = " ".join(name.rjust(w) for name, w in TABLE_COLUMNS)
    lines = [head, "-" * len(head)]
    for key in sorted(recs):
        r = recs[key]
        m = r.ms
        synth = (
            m.get("witness", 0.0) + m.get("eval", 0.0)
            if ("witness" in m or "eval" in m)
            else None
        )
        kernels = sum(m[k] for k in ev.KERNEL_KEYS if k in m) if any(
            k in m for k in ev.KERNEL_KEYS
        ) else None
        j = js.get(r.job, {})
        if r.final_stage == ev.FAILED:
            verified = "failed"
        elif j.get("verified") is None:
            verified = "-"
        else:
            verified = "yes" if j["verified"] else "NO"
        cells = (
            str(r.job),
            str(r.partition),
            _ms(m.get("queue")),
            _ms(synth),
            _ms(m.get("channel_wait")),
            _ms(m.get("gpu_wrapper")),
            _ms(m.get("gpu_call")),
            _ms(kernels),
            _ms(m.get("b2")),
            _ms(m.get("dealloc")),
            _ms(r.total_ms),
            verified,
        )
        lines.append(" ".join(c.rjust(w) for c, (_, w) in zip(cells, TABLE_COLUMNS)))
    return "\n".join(lines)


def render_counters(events: list[dict]) -> str:
    c = final_counters(events)
    return "final counters: " + ", ".join(f"{k}={v}" for k, v in c.items())


def render_summary(events: list[dict]) -> str:
    s = run_summary(events)
    busy = (
        ", ".join(f"{w} {p:.1f}% (kernels {s.kernel_busy_pct[w]:.1f}%)" for w, p in s.gpu_busy_pct.items())
        if s.gpu_busy_pct else "-"
    )
    gap = s.wrapper_ms - s.kernel_ms
    lines = [
        f"proofs: {s.partitions_done} partitions in {s.jobs_done} jobs "
        f"({s.jobs_verified} verified) over {s.wall_s:.3f} s",
        "seconds per proof: "
        + ("-" if s.s_per_proof is None else f"{s.s_per_proof:.3f}")
        + "  steady (between completions): "
        + ("-" if s.steady_s_per_proof is None else f"{s.steady_s_per_proof:.3f}")
        + "  seconds per job: "
        + ("-" if s.s_per_job is None else f"{s.s_per_job:.3f}")
        + "  constraints/s: "
        + ("-" if s.constraints_per_s is None else f"{s.constraints_per_s:.0f}"),
        f"GPU busy (wrapper calls over the GPU's active window): {busy}",
        f"GPU wrapper {s.wrapper_ms:.1f} ms, call {s.call_ms:.1f} ms, kernels {s.kernel_ms:.1f} ms"
        f" (wrapper - kernels = {gap:.1f} ms"
        + (f", {100.0 * gap / s.wrapper_ms:.1f}% of wrapper)" if s.wrapper_ms > 0 else ")"),
    ]
    if s.gap_split_ms:
        lines.append("  wrapper - kernels by part: "
                     + ", ".join(f"{k} {v:.1f} ms" for k, v in s.gap_split_ms.items()))
    lines += [
        f"peak memory: {_bytes(s.peak_total)} (RssAnon sum + shm), peak shm {_bytes(s.peak_shm)}"
        f", baseline {_bytes(s.baseline_rss_anon)} (RssAnon sum before the first synthesis)",
    ]
    return "\n".join(lines)


def render_all(events: list[dict]) -> str:
    """Table, summary and counters: what `run` and `replay --summary` both print."""
    return "\n".join((render_table(events), "", render_summary(events), render_counters(events)))
