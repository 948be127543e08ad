"""Summaries computed only from the event stream: the per-proof table, the final counters, the
run summary, and the exact concurrency maxima the pipeline's bound is checked on.

Nothing here reads engine state, and every record comes from the one fold
(engine/stream/fold.py) the console reads too. The live ``run`` and ``replay --summary`` call the
same functions on the same events, so their output is identical by construction.

Stage intervals. A partition's stage events split its life into intervals; the interval of a
stage runs from its event to the partition's next stage event. Concurrency maxima are computed by
walking the fold's stage changes in order and counting partitions by their current stage, which
is exact: the engine emits each transition under the lock that makes it happen.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from engine.stream.fold import Fold, JobRecord, Key, PartitionRecord, StageChange, fold, kernel_sum
from engine.stream.schema import ALL_STAGES, CANCELLED, FAILED, HOLDING, TERMINAL, Event
from kernels.textfmt import fmt_bytes, table

__all__ = [
    "HOLDING", "TERMINAL", "Key", "PartitionRecord", "JobRecord", "partitions", "jobs",
    "max_concurrent", "bound_excess", "stage_counts", "final_counters", "peak_memory",
    "baseline_rss_anon", "gpu_intervals", "kernel_ms_by_worker", "RunSummary", "steady_interval",
    "gap_split", "run_summary", "render_table", "render_counters", "render_summary", "render_all",
]


def partitions(events: Iterable[Event]) -> dict[Key, PartitionRecord]:
    """(job, partition) → its record, for every partition with a stage or timing event."""
    return fold(events).records()


def jobs(events: Iterable[Event]) -> dict[int, JobRecord]:
    """job id → its record (submission, partitions, proof, outcome)."""
    return fold(events).jobs


def _changes(events: Iterable[Event]) -> Iterator[StageChange]:
    """Every stage change of the stream, in order, as the fold sees it."""
    f = Fold()
    for e in events:
        if e.get("kind") not in ("stage", "job_submitted"):
            continue
        try:
            ch = f.apply(e)
        except (KeyError, TypeError, ValueError):
            continue
        if isinstance(ch, StageChange):
            yield ch


def max_concurrent(events: Iterable[Event], stages: frozenset[str] | set[str]) -> int:
    """The exact maximum number of partitions whose current stage is in ``stages``."""
    count = best = 0
    for ch in _changes(events):
        count += (ch.new in stages) - (ch.old in stages)
        best = max(best, count)
    return best


def bound_excess(events: Iterable[Event], workers: int, capacity: int, slots: int) -> int:
    """max over the stream of holding − (workers + capacity + slots + deallocating).

    design.md's bound holds exactly when this is ≤ 0.
    """
    holding = dealloc = 0
    worst = -(workers + capacity + slots)
    for ch in _changes(events):
        holding += (ch.new in HOLDING) - (ch.old in HOLDING)
        dealloc += (ch.new == "deallocating") - (ch.old == "deallocating")
        worst = max(worst, holding - (workers + capacity + slots + dealloc))
    return worst


def stage_counts(events: Iterable[Event]) -> dict[str, int]:
    """How many partitions are in each stage at the end of the stream (every stage listed)."""
    return dict(fold(events).counts)


def final_counters(events: list[Event]) -> dict[str, int]:
    """The engine's counters from the last sample (a farm's: each host's last sample, summed;
    the merge made them count that session only), with the stage counts, submissions and
    cancelled proofs (jobs stopped before they were proven: never counted as failed)."""
    last: dict[Any, dict[str, int]] = {}
    for e in events:
        if e.get("kind") == "sample":
            last[e.get("host")] = e["counters"]
    out: dict[str, int] = {}
    for counters in last.values():
        for k, v in counters.items():
            out[k] = out.get(k, 0) + v
    f = fold(events)
    out["partitions_submitted_events"] = sum(
        e["partitions"] for e in events if e.get("kind") == "job_submitted"
    )
    out["proofs_cancelled"] = f.proofs_cancelled
    for s in ALL_STAGES:
        out[f"stage_{s}"] = f.counts[s]
    return out


def peak_memory(events: Iterable[Event]) -> tuple[int, int]:
    """(peak total = ΣRssAnon + shm, peak shm bytes) over the samples; (0, 0) if none."""
    peak_total = peak_shm = 0
    for e in events:
        if e.get("kind") == "sample":
            total = _rss_anon(e) + e["shm_bytes"]
            peak_total = max(peak_total, total)
            peak_shm = max(peak_shm, e["shm_bytes"])
    return peak_total, peak_shm


def _rss_anon(sample: Event) -> int:
    return sum((p.get("rss_anon") or 0) for p in sample["processes"])


def baseline_rss_anon(events: Iterable[Event]) -> int:
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
                out[w.split("/")[0]] += r.kernel_ms or 0.0
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
    jobs_done: int  # jobs with a proof_done
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
    jobs_failed: int = 0  # a partition failed, or the proof failed verification
    jobs_failed_verification: int = 0  # of jobs_failed: the proof did not verify
    jobs_cancelled: int = 0  # stopped before they were proven; never among the failed


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
    task to the prover (dispatch), the prover's host work around its call (host), its wait for
    its turn at the GPU (wait: gpu_calls = "serial"), the call's own time outside the kernel
    groups (call - kernels), the gpu_done message back (return), and, with
    ``dealloc_in_wrapper`` (dealloc = "sync"), deallocation. Parts a run did not record are left
    out; "other" is what the recorded parts do not explain."""
    recs = [r for r in done if "gpu_wrapper" in r.ms]
    out: dict[str, float] = {}
    for key, name in (("gpu_dispatch", "dispatch"), ("gpu_host", "host"), ("gpu_wait", "wait"),
                      ("gpu_return", "return")):
        if any(key in r.ms for r in recs):
            out[name] = sum(r.ms.get(key, 0.0) for r in recs)
    if any("gpu_call" in r.ms for r in recs):
        out["call - kernels"] = sum(
            r.ms["gpu_call"] - (r.kernel_ms or 0.0) for r in recs if "gpu_call" in r.ms
        )
    if dealloc_in_wrapper and any("dealloc" in r.ms for r in recs):
        out["dealloc"] = sum(r.ms.get("dealloc", 0.0) for r in recs)
    if out:
        wrapper = sum(r.ms["gpu_wrapper"] for r in recs)
        kernels = sum(r.kernel_ms or 0.0 for r in recs)
        out["other"] = wrapper - kernels - sum(out.values())
    return out


def setting(events: Iterable[Event], name: str) -> Any:
    """The value of setting ``name`` in force at the end of ``events``: the session's config,
    changed by any ``knob`` event of that name (a live knob, or a policy switched between jobs)."""
    value = None
    for e in events:
        k = e.get("kind")
        if k == "session_start" and value is None:
            value = (e.get("config") or {}).get(name)
        elif k == "knob" and e.get("name") == name:
            value = e.get("new")
    return value


def run_summary(events: list[Event]) -> RunSummary:
    f = fold(events)
    recs = f.records()
    done = [r for r in recs.values() if r.final_stage == "done"]
    jobs_done = [j for j in f.jobs.values() if j.done_t is not None]
    t0 = min((j.submitted for j in f.jobs.values()), default=0.0)
    t1 = max((j.done_t for j in jobs_done if j.done_t is not None), default=t0)
    wall = max(t1 - t0, 0.0)
    constraints = sum(j.constraints * j.partitions for j in jobs_done)
    busy, kbusy = {}, {}
    kernel_ms = kernel_ms_by_worker(recs.values())
    for worker, spans in sorted(gpu_intervals(recs.values()).items()):
        lo = min(a for a, _ in spans)
        hi = max(b for _, b in spans)
        busy[worker] = 100.0 * _union_length(spans) / (hi - lo) if hi > lo else 100.0
        kbusy[worker] = min(100.0, 0.1 * kernel_ms[worker] / (hi - lo)) if hi > lo else 100.0
    peak_total, peak_shm = peak_memory(events)
    outcomes = f.outcome_counts()
    return RunSummary(
        partitions_done=len(done),
        jobs_done=len(jobs_done),
        jobs_verified=sum(1 for j in jobs_done if j.verified),
        wall_s=wall,
        s_per_proof=wall / len(done) if done and wall > 0 else None,
        steady_s_per_proof=steady_interval(done),
        s_per_job=wall / len(jobs_done) if jobs_done and wall > 0 else None,
        constraints_per_s=constraints / wall if wall > 0 else None,
        gpu_busy_pct=busy,
        kernel_busy_pct=kbusy,
        wrapper_ms=sum(r.ms.get("gpu_wrapper", 0.0) for r in done),
        call_ms=sum(r.ms.get("gpu_call", 0.0) for r in done),
        kernel_ms=sum(r.kernel_ms or 0.0 for r in done),
        gap_split_ms=gap_split(done, setting(events, "dealloc") == "sync"),
        peak_total=peak_total,
        peak_shm=peak_shm,
        baseline_rss_anon=baseline_rss_anon(events),
        jobs_failed=outcomes["failed"],
        jobs_failed_verification=f.proofs_bad,
        jobs_cancelled=outcomes["cancelled"],
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
    ("verified", 9),
)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _verified_cell(r: PartitionRecord, j: JobRecord | None) -> str:
    if r.final_stage == FAILED:
        return "failed"
    if r.final_stage == CANCELLED:
        return "cancelled"
    if j is None or j.verified is None:
        return "-"
    return "yes" if j.verified else "NO"


def render_table(events: list[Event]) -> str:
    """The per-proof breakdown: one row per partition proof, times in ms."""
    f = fold(events)
    recs = f.records()
    rows = []
    for key in sorted(recs):
        r = recs[key]
        m = r.ms
        synth = (
            m.get("witness", 0.0) + m.get("eval", 0.0)
            if ("witness" in m or "eval" in m)
            else None
        )
        cells = (
            str(r.job),
            str(r.partition),
            _ms(m.get("queue")),
            _ms(synth),
            _ms(m.get("channel_wait")),
            _ms(m.get("gpu_wrapper")),
            _ms(m.get("gpu_call")),
            _ms(kernel_sum(m)),
            _ms(m.get("b2")),
            _ms(m.get("dealloc")),
            _ms(r.total_ms),
            _verified_cell(r, f.jobs.get(r.job)),
        )
        rows.append(cells)
    head = [name for name, _ in TABLE_COLUMNS]
    return "\n".join(table(head, rows, sep=" ", rule=True, widths=[w for _, w in TABLE_COLUMNS]))


def render_counters(events: list[Event]) -> str:
    c = final_counters(events)
    return "final counters: " + ", ".join(f"{k}={v}" for k, v in c.items())


def _outcome_phrase(s: RunSummary) -> str:
    parts = [f"{s.jobs_verified} verified"]
    if s.jobs_failed:
        why = (f", {s.jobs_failed_verification} of them failed verification"
               if s.jobs_failed_verification else "")
        parts.append(f"{s.jobs_failed} failed{why}")
    if s.jobs_cancelled:
        parts.append(f"{s.jobs_cancelled} cancelled, never proven")
    return "; ".join(parts)


def render_summary(events: list[Event]) -> str:
    s = run_summary(events)
    busy = (
        ", ".join(f"{w} {p:.1f}% (kernels {s.kernel_busy_pct[w]:.1f}%)" for w, p in s.gpu_busy_pct.items())
        if s.gpu_busy_pct else "-"
    )
    gap = s.wrapper_ms - s.kernel_ms
    lines = [
        f"proofs: {s.partitions_done} partitions in {s.jobs_done} jobs "
        f"({_outcome_phrase(s)}) over {s.wall_s:.3f} s",
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
        f"peak memory: {fmt_bytes(s.peak_total)} (RssAnon sum + shm), peak shm {fmt_bytes(s.peak_shm)}"
        f", baseline {fmt_bytes(s.baseline_rss_anon)} (RssAnon sum before the first synthesis)",
    ]
    return "\n".join(lines)


def render_all(events: list[Event]) -> str:
    """Table, summary and counters: what `run` and `replay --summary` both print."""
    return "\n".join((render_table(events), "", render_summary(events), render_counters(events)))
