"""`sealtop bench pipeline`: the engine on N jobs of a preset, with a JSON report of GPU busy %,
seconds per proof, the wrapper-kernel gap and peak memory against the model; and its
comparison tables (--matrix cuzk, --matrix dealloc), a run per variant or every variant in one
engine that keeps its keys. The runs themselves go through engine.verbs.runner.run_engine, so a
benchmark is a headless run with its numbers taken from the same event stream."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

from engine import signals
from engine.atomic import atomic_write
from engine.config import ConfigError, EngineConfig, load_config
from engine.stream.summary import partitions, render_all, run_summary
from engine.verbs.runner import run_engine, say
from engine.watchers import Watch
from kernels.textfmt import error_line, fmt_bytes, table

VERB = "bench pipeline"  # the command its error lines name


@dataclasses.dataclass(frozen=True)
class Bench:
    """What `sealtop bench pipeline` was asked, local or on a farm: the preset, how many jobs,
    where the JSON report goes, the config file and its ``--set`` overrides, a recording, and
    what watches the run, and whether a comparison's variants share one engine."""

    preset: str
    jobs: int
    json_out: str | None = None
    config_path: str | None = None
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)
    record: str | None = None
    watch: Watch = dataclasses.field(default_factory=Watch)
    one_engine: bool = False  # --matrix: every variant in one engine that keeps its keys

    def config(self) -> EngineConfig | None:
        """The config file (or the defaults) with the preset and the overrides set; None after
        saying in one line why there is none (a bad file, an unknown setting)."""
        try:
            cfg = load_config(self.config_path) if self.config_path else EngineConfig()
        except ConfigError as exc:
            say(error_line(f"sealtop {VERB}", str(exc)))
            return None
        cfg.preset = self.preset
        for k, v in self.overrides.items():
            if not hasattr(cfg, k):
                say(error_line(f"sealtop {VERB}", f"unknown setting {k!r}"))
                return None
            setattr(cfg, k, v)
        return cfg


@dataclasses.dataclass(frozen=True)
class Variant:
    """One row of a comparison: its label, the settings it changes, and how many jobs it runs
    (the bench's --jobs where None)."""

    label: str
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)
    jobs: int | None = None


def bench_pipeline(b: Bench) -> int:
    """`sealtop bench pipeline --preset P --jobs N --json OUT`: a run plus a JSON report with
    GPU busy %, seconds per proof, the wrapper-kernel gap and peak memory against the model
    baseline + (partition_workers + capacity + GPU slots) × bytes per partition + key (see
    :func:`memory_model`)."""
    from engine.pipeline.circuits import PresetError, circuit_cache_dir, resolve

    cfg = b.config()
    if cfg is None:
        return 2
    preset, jobs = b.preset, b.jobs
    try:
        circuit = resolve(preset, circuit_cache_dir(cfg.param_cache_path()))
    except PresetError as exc:
        say(error_line(f"sealtop {VERB}", str(exc)))
        return 2
    t0 = time.perf_counter()
    code, events = run_engine(cfg, jobs, b.record, watch=b.watch, verb=VERB)
    wall = time.perf_counter() - t0
    if not events:
        return code
    print(render_all(events))
    s = run_summary(events)
    from engine.pipeline.proving import key_path

    kp = key_path(cfg.param_cache_path(), circuit.name, circuit.r1cs)
    key_bytes = kp.stat().st_size if kp.exists() else 0
    per_part = circuit.partition_bytes(cfg.abc_eval)
    backend = next(
        (e["config"].get("backend_in_use") for e in events if e["kind"] == "session_start"),
        None,
    )
    from kernels.backend import is_device_backend

    devices = max(1, len(cfg.devices)) if is_device_backend(backend) else 1
    slots = cfg.gpu_slots_per_device * devices
    buffers = cfg.partition_workers + cfg.gpu_channel_capacity + slots
    if cfg.memory_budget and per_part:  # the budget admits no more partitions than fit in it
        buffers = min(buffers, cfg.memory_budget // per_part)
    model_shm = buffers * per_part
    mm = memory_model(s.baseline_rss_anon, buffers, per_part, key_bytes, backend)
    model = mm["model_peak_bytes"]
    old_model = model_shm + key_bytes
    gap = s.wrapper_ms - s.kernel_ms
    print(
        f"memory model: baseline {fmt_bytes(mm['baseline_bytes'])} + partitions {buffers} × "
        f"{fmt_bytes(per_part)} = {fmt_bytes(model_shm)} + key {fmt_bytes(mm['key_term_bytes'])} "
        f"= {fmt_bytes(model)}; peak {fmt_bytes(s.peak_total)}"
        + (f" = {s.peak_total / model:.2f}× model" if model else "")
    )
    print("  baseline: RssAnon sum of the engine's processes before the first synthesis")
    print(f"  key term: {mm['key_term_basis']}")
    report = {
        "preset": preset,
        "jobs": jobs,
        "partitions_per_job": cfg.partitions,
        "constraints_per_partition": circuit.constraints,
        "config": cfg.to_dict(),
        "backend_in_use": backend,
        "summary": dataclasses.asdict(s),
        "wrapper_minus_kernels_ms": gap,
        "wrapper_minus_kernels_pct": 100.0 * gap / s.wrapper_ms if s.wrapper_ms else None,
        "bytes_per_partition": per_part,
        "key_bytes": key_bytes,
        **mm,
        "model_peak_shm_bytes": model_shm,
        "peak_vs_model": s.peak_total / model if model else None,
        "old_model_peak_bytes": old_model,  # (workers + capacity + slots) × bytes + key file
        "peak_vs_old_model": s.peak_total / old_model if old_model else None,
        "peak_shm_vs_model": s.peak_shm / model_shm if model_shm else None,
        "partitions": [
            {"job": r.job, "partition": r.partition, "ms": r.ms, "total_ms": r.total_ms}
            for r in partitions(events).values()
        ],
        "wall_s": wall,
        "exit_code": code,
    }
    if b.json_out:
        write_report(b.json_out, report)
    return code


def write_report(path: str | os.PathLike[str], report: dict[str, Any]) -> None:
    """A bench run's JSON report, written whole or not at all. Its folder was checked before
    the run (engine/verbs/cli.py), as every output file's is."""
    with atomic_write(Path(path)) as f:
        f.write(json.dumps(report, indent=2) + "\n")
    say(f"report written to {path}")


def memory_model(
    baseline: int, buffers: int, per_part: int, key_bytes: int, backend: str | None
) -> dict[str, Any]:
    """Peak host memory (ΣRssAnon + shm) the pipeline should reach: the processes' measured
    baseline + the partition buffers + the part of the key that is anonymous host memory.

    The key term counts only what can be RssAnon. On a device backend (cuda) the key's tables
    are uploaded to GPU memory and the key file is memory-mapped (page cache), so the term is 0.
    On the cpu backend dense tables are read through the map (page cache) but sparse ones are
    copied into anonymous memory; the key file size is the term there, an upper bound."""
    from kernels.backend import is_device_backend

    on_device = is_device_backend(backend)
    if on_device:
        key_term = 0
        basis = (f"excluded (0 B): on {backend} the key's point tables live in GPU memory and the "
                 "key file is memory-mapped (page cache); neither is RssAnon")
    else:
        key_term = key_bytes
        basis = ("key file size, an upper bound: the cpu backend reads dense tables through the "
                 "memory map (page cache) and copies sparse ones into anonymous memory")
    return {
        "model_peak_bytes": baseline + buffers * per_part + key_term,
        "baseline_bytes": baseline,
        "partition_term_bytes": buffers * per_part,
        "key_term_bytes": key_term,
        "key_term_counted": not on_device,
        "key_term_basis": basis,
    }


def _row(label: str, over: dict[str, Any], code: int, events: list[dict],
         bytes_per_partition: int) -> dict[str, Any]:
    """One variant's numbers, from its events: what the comparison tables print and report."""
    s = run_summary(events)
    recs = partitions(events).values()
    n = max(1, len(recs))
    return {
        "variant": label,
        "overrides": over,
        "exit_code": code,
        "jobs": s.jobs_done,
        "s_per_proof": s.s_per_proof,
        "steady_s_per_proof": s.steady_s_per_proof,
        "s_per_job": s.s_per_job,
        "peak_total": s.peak_total,
        "peak_shm": s.peak_shm,
        "bytes_per_partition": bytes_per_partition,
        "gpu_busy_pct": s.gpu_busy_pct,
        "kernel_busy_pct": s.kernel_busy_pct,
        "mean_wrapper_ms": s.wrapper_ms / n,
        "mean_call_ms": s.call_ms / n,
        "mean_kernel_ms": s.kernel_ms / n,
        "mean_dealloc_ms": sum(r.ms.get("dealloc", 0.0) for r in recs) / n,
        "jobs_verified": s.jobs_verified,
        "partitions": [
            {"job": r.job, "partition": r.partition, "ms": r.ms, "total_ms": r.total_ms}
            for r in recs
        ],
    }


class _SaidJobs:
    """The run's progress output (stderr), noting which jobs' end lines have gone out.

    Progress lines are printed by their own sink thread, behind the stream; a variant's header,
    printed by the plan once the engine is idle, came before the previous variant's last lines
    and so sat above them. The plan waits here until every job of the previous stretch has had
    its line, so each line is under its own variant's header."""

    JOB_LINE = re.compile(r"^\[\s*[0-9.]+s\] job (\d+) ")
    WAIT_S = 30.0  # at most: a job that ends without a line (cancelled) must not hold the run

    def __init__(self, out: Any) -> None:
        self.out = out
        self._said: set[int] = set()
        self._cond = threading.Condition()

    def write(self, text: str) -> int:
        n = self.out.write(text)
        for line in text.splitlines():
            m = self.JOB_LINE.match(line)
            if m:
                with self._cond:
                    self._said.add(int(m.group(1)))
                    self._cond.notify_all()
        return n

    def flush(self) -> None:
        self.out.flush()

    def wait_for(self, jobs: list[int]) -> bool:
        """Until every job of ``jobs`` has had its line (True), or WAIT_S has passed."""
        deadline = time.monotonic() + self.WAIT_S
        with self._cond:
            while not self._said.issuperset(jobs):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))
        return True


def _bench_rows_one_engine(b: Bench, variants: list[Variant]) -> tuple[int, list[dict], dict | None]:
    """Every variant in one engine that keeps its keys: before each variant's jobs the live
    knobs (gpu_channel_capacity, ...) and the between-jobs policies (permit_release, dealloc)
    are set, and the variant's jobs run to the end before the next. At a 32 GiB sector this
    makes the device key once, not once per variant: one warm-up job first makes or loads the
    keys and is no variant's row (its numbers come back apart, as the third value: the first
    job's time, key included). Each row is computed from the events of its own stretch of the
    one session (the session's start, then what follows the previous variant's last proof up to
    its own last one); with a recording, the one session file."""
    from engine.c2.job import config_job
    from engine.config import KNOBS, POLICIES
    from engine.pipeline.circuits import PresetError, circuit_cache_dir, resolve

    cfg = b.config()
    if cfg is None:
        return 2, [], None
    bad = sorted({k for v in variants for k in v.overrides} - set(KNOBS) - set(POLICIES))
    if bad:
        say(error_line(f"sealtop {VERB}", f"{', '.join(bad)} cannot change within one engine"))
        return 2, [], None
    try:
        circuit = resolve(b.preset, circuit_cache_dir(cfg.param_cache_path()))
    except PresetError as exc:
        say(error_line(f"sealtop {VERB}", str(exc)))
        return 2, [], None
    owned: list[tuple[Variant, list[int]]] = []
    progress = _SaidJobs(sys.stderr)

    def plan(eng: Any) -> None:
        say("--- warm-up: one job makes or loads the keys and warms the provers (not a row)")
        ids = [eng.submit(config_job(cfg, cfg.seed))]
        while not eng.wait_idle(0.5):
            pass
        seed = cfg.seed + 1
        for v in variants:
            if signals.received():
                break
            progress.wait_for(ids)  # the last stretch's lines go out above this header
            say(f"--- {v.label} (same engine)")
            for name, value in v.overrides.items():
                (eng.set_knob if name in KNOBS else eng.set_policy)(name, value, "config")
            n = v.jobs or b.jobs
            ids = [eng.submit(config_job(cfg, seed + i)) for i in range(n)]
            seed += n
            owned.append((v, ids))
            while not eng.wait_idle(0.5):
                pass

    total = 1 + sum(v.jobs or b.jobs for v in variants)
    code, events = run_engine(cfg, total, b.record, progress=progress,  # type: ignore[arg-type]
                              watch=b.watch, plan=plan, verb=VERB)
    start = [e for e in events if e["kind"] == "session_start"]
    rows: list[dict[str, Any]] = []
    per_part = circuit.partition_bytes(cfg.abc_eval)
    warm = min((e["job"] for e in events if e["kind"] == "job_submitted"), default=None)
    after = max((e["t"] for e in events if e["kind"] == "proof_done" and e.get("job") == warm),
                default=float("-inf"))

    def stretch(mine: set[int], lo: float, hi: float) -> list[dict]:
        """The session's start, then its events in (lo, hi] that belong to no other job."""
        return start + [e for e in events if lo < e["t"] <= hi and e["kind"] != "session_start"
                        and ("job" not in e or e["job"] in mine)]

    warm_row = None
    if warm is not None and after > float("-inf"):
        warm_row = _row("warm-up", {}, code, stretch({warm}, float("-inf"), after), per_part)
    for v, ids in owned:
        mine = set(ids)
        ends = [e["t"] for e in events if e["kind"] == "proof_done" and e.get("job") in mine]
        until = max(ends, default=float("inf"))
        rows.append(_row(v.label, v.overrides, code, stretch(mine, after, until), per_part))
        after = until
    return code, rows, warm_row


def _bench_rows(b: Bench, variants: list[Variant]) -> tuple[int, list[dict], dict | None]:
    """Run one pipeline per variant (its overrides on top of ``b``'s); rows of the numbers
    benchmarks report (and no warm-up: each engine makes or loads its own keys). With a
    recording, each variant's events go to their own session file (see variant_path).
    ``b.watch`` applies to each variant's run in turn (one engine at a time)."""
    from engine.pipeline.circuits import PresetError, circuit_cache_dir, resolve

    cfg0 = b.config()
    if cfg0 is None:
        return 2, [], None
    rows: list[dict[str, Any]] = []
    worst = 0
    for v in variants:
        if signals.received():  # a stop signal ended the last variant: run no more
            break
        cfg = dataclasses.replace(cfg0, **v.overrides)
        try:
            circuit = resolve(b.preset, circuit_cache_dir(cfg.param_cache_path()))
        except PresetError as exc:
            say(error_line(f"sealtop {VERB}", str(exc)))
            return 2, rows, None
        say(f"--- {v.label}")
        code, events = run_engine(cfg, v.jobs or b.jobs,
                                  variant_path(b.record, v.label) if b.record else None,
                                  watch=b.watch, verb=VERB)
        worst = max(worst, code)
        if not events:
            return code, rows, None
        rows.append(_row(v.label, v.overrides, code, events, circuit.partition_bytes(cfg.abc_eval)))
    return worst, rows, None


def variant_path(record: str, label: str) -> str:
    """``record`` with the variant label inserted before its extension(s):
    runs.jsonl.gz + 'dealloc=sync' -> runs.dealloc-sync.jsonl.gz."""
    slug = "".join(ch if ch.isalnum() else "-" for ch in label).strip("-")
    path = Path(record)
    name = path.name
    stem, dot, ext = name.partition(".")
    return str(path.with_name(f"{stem}.{slug}{dot}{ext}" if dot else f"{stem}.{slug}"))


def _print_rows(rows: list[dict]) -> None:
    """The comparison table: one row per variant, seconds per proof (a partition's) and per
    job, and milliseconds."""
    head = ["variant", "jobs", "s/proof", "steady", "s/job", "peak mem", "peak shm", "wrapper ms",
            "kernels ms", "dealloc ms", "verified"]

    def secs(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    body = [[r["variant"], str(r["jobs"]), secs(r["s_per_proof"]), secs(r.get("steady_s_per_proof")),
             secs(r.get("s_per_job")), fmt_bytes(r["peak_total"]), fmt_bytes(r["peak_shm"]),
             f"{r['mean_wrapper_ms']:.1f}", f"{r['mean_kernel_ms']:.1f}", f"{r['mean_dealloc_ms']:.2f}",
             str(r["jobs_verified"])] for r in rows]
    print("\n".join(table(head, body, left=1, rule=True)))


def matrix_variants(kind: str, b: Bench) -> list[Variant] | None:
    """A comparison's rows, or None for a kind there is none of:

    * ``cuzk``: gpu_channel_capacity {1, partition_workers} × permit_release {delivered,
      synthesized}: peak memory and seconds per proof (the cuzk lesson);
    * ``dealloc``: dealloc sync against async: how much the wrapper time grows;
    * ``lone``: the --jobs jobs submitted together (the steady rate), then one job alone (its
      time from submission to the verified proof). With --one-engine both run on the keys the
      warm-up job made, and the warm-up is the first job's time, key included: the three
      figures an operator asks of a machine, for one making of the key.
    """
    workers = int(b.overrides.get("partition_workers", EngineConfig().partition_workers))
    if kind == "cuzk":
        return [Variant(f"capacity={cap} permit={pr}", {"gpu_channel_capacity": cap, "permit_release": pr})
                for cap in sorted({1, workers}) for pr in ("delivered", "synthesized")]
    if kind == "dealloc":
        return [Variant(f"dealloc={m}", {"dealloc": m}) for m in ("async", "sync")]
    if kind == "lone":
        return [Variant(f"{b.jobs} jobs at once"), Variant("one job alone", jobs=1)]
    return None


def bench_matrix(kind: str, b: Bench) -> int:
    """A comparison table (see :func:`matrix_variants`): its pipeline runs, one table, and the
    rows (and the warm-up's, in one engine) in the JSON report."""
    variants = matrix_variants(kind, b)
    if variants is None:
        say(error_line(f"sealtop {VERB}", f"unknown comparison {kind!r} (choose cuzk, dealloc or lone)"))
        return 2
    code, rows, warm = (_bench_rows_one_engine if b.one_engine else _bench_rows)(b, variants)
    if rows:
        print(f"{kind} comparison, preset {b.preset}")
        _print_rows(rows)
    if warm is not None and warm.get("s_per_job") is not None:
        print(f"warm-up job (makes or loads the keys): {warm['s_per_job']:.2f} s from its submission to its verified proof")
    if b.json_out and rows:
        report: dict[str, Any] = {"kind": kind, "preset": b.preset, "jobs": b.jobs, "rows": rows}
        if warm is not None:
            report["warm_up"] = warm
        write_report(b.json_out, report)
    return code
