"""The headless verbs behind `run`, `bench pipeline` and `replay --summary`.

Each is a plain function that prints and returns an exit code, so engine/cli.py only parses
arguments. Every table printed here comes from engine.stream.summary over the event stream, so a live
run and the replay of its recorded session print the same thing.

Exit codes: 0 every proof verified; 1 a proof failed verification or a partition failed;
2 bad input (config, session file, preset, record target), printed as one line on stderr;
3 the recording failed mid-run (the run still finished and printed its summary);
130 interrupted.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TextIO

from engine import signals
from engine.atomic import atomic_write
from engine.config import ConfigError, EngineConfig, load_config
from engine.stream.fold import Fold, JobRecord, StageChange
from engine.stream.reader import SessionError, read_recording
from engine.stream.recorder import RecordingError, SessionRecorder, check_target
from engine.stream.schema import CANCELLED
from engine.stream.summary import partitions, render_all, run_summary
from engine.stream.tap import SinkStats, Tap
from engine.watchers import AddressError, Watch, Watchers, start_watchers
from kernels.textfmt import fmt_bytes, table


class _Progress:
    """The headless progress lines, from the stream's fold: one line per finished job (verified,
    failed with its reason, or failed verification), each engine error, and at the end one line
    for the jobs a stop cancelled (never proven, never counted as failed)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.fold = Fold()
        self.cancelled: list[int] = []

    def _line(self, t: float, text: str) -> None:
        print(f"[{t:8.2f}s] {text}", file=self.out, flush=True)

    def take(self, batch: list[dict]) -> None:
        for ev in batch:
            try:
                rec = self.fold.apply(ev)
            except (KeyError, TypeError, ValueError):
                continue
            kind = ev["kind"]
            if kind == "proof_done" and isinstance(rec, JobRecord):
                took = f"done in {ev['total_ms'] / 1000:.2f} s"
                if rec.outcome == "verified":
                    self._line(ev["t"], f"job {rec.job} {took}: verified")
                elif rec.failed:
                    self._line(ev["t"], f"job {rec.job} failed: {rec.reason}")
                elif rec.outcome == "failed":
                    self._line(ev["t"], f"job {rec.job} {took}: FAILED verification")
            elif kind == "stage" and isinstance(rec, StageChange) and rec.new == CANCELLED:
                job = rec.job
                if job.job not in self.fold.active and job.outcome == "cancelled":
                    self.cancelled.append(job.job)
            elif kind == "error":
                self._line(ev["t"], f"{ev['where']}: {ev['message']}")

    def close(self) -> None:
        if self.cancelled:
            print(f"{len(self.cancelled)} job(s) cancelled, never proven: "
                  f"{_id_ranges(self.cancelled)}", file=self.out, flush=True)


def _id_ranges(ids: list[int]) -> str:
    """3, 4, 5, 9 -> '3-5, 9'."""
    out: list[str] = []
    for i in sorted(set(ids)):
        if out and out[-1].split("-")[-1] == str(i - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ", ".join(out)


class Sinks:
    """The headless run's tap: every event into a list (the summaries) and, when asked, a
    session file and the progress lines. A recording that fails is said in one line and the run
    goes on; ``record_failed`` tells the exit status."""

    def __init__(self, q: queue.Queue, recorder: SessionRecorder | None,
                 progress: TextIO | None, watchers: Watchers | None = None) -> None:
        self.events: list[dict] = []
        self.recorder = recorder
        self.record_failed = False
        self.tap = Tap(q, on_error=self._sink_failed)
        self.tap.add("events", self.events.extend, essential=True)
        for name, take in (watchers.sinks() if watchers is not None else []):
            self.tap.add(name, take, essential=True)
        if recorder is not None:
            rec = recorder

            def record(batch: list[dict[str, Any]]) -> None:
                for e in batch:
                    rec.write(e)

            def close() -> None:
                rec.close()

            self.tap.add("recorder", record, essential=True, idle=rec.tick, close=close)
        if progress is not None:
            p = _Progress(progress)
            self.tap.add("progress", p.take, capacity=100_000, close=p.close)
        self.tap.start()

    def _sink_failed(self, sink: SinkStats, exc: BaseException) -> None:
        if sink.name == "recorder":
            self.record_failed = True
            say(f"sealtop: {sink.error}; the run goes on without its recording")
        else:
            say(f"sealtop: warning: the {sink.name} output stopped: {sink.error}")

    def finish(self) -> list[dict]:
        """Deliver what is left, close the sinks (the recorder is synced and closed)."""
        self.tap.close()
        if self.recorder is not None and self.recorder.error is not None and not self.record_failed:
            self.record_failed = True
            say(f"sealtop: {self.recorder.error}; the run goes on without its recording")
        return self.events

    def abort(self) -> None:
        self.finish()


def say(msg: str) -> None:
    """One line on stderr, flushed (the headless verbs' notices and refusals)."""
    print(msg, file=sys.stderr, flush=True)


def run_engine(
    cfg: EngineConfig,
    jobs: int,
    record: str | os.PathLike[str] | None = None,
    progress: TextIO | None = sys.stderr,
    watch: Watch = Watch(),
    plan: Callable[[Any], None] | None = None,
) -> tuple[int, list[dict]]:
    """Run ``jobs`` jobs of the config's preset to completion; (exit code, events). ``watch``
    says whether /metrics is served and whether the engine offers its socket to
    `sealtop attach` and `sealtop serve` for the run. ``plan``, when given, submits the
    ``jobs`` jobs itself (it is handed the started Engine) in place of submitting them at once."""
    from engine.pipeline.circuits import PresetError, circuit_cache_dir, resolve
    from engine.pipeline.engine import Engine, EngineError, Job

    if jobs < 1:
        say("sealtop: --jobs must be at least 1")
        return 2, []
    try:
        if record is not None:
            check_target(record)
        resolve(cfg.preset, circuit_cache_dir(cfg.param_cache_path()))
    except (PresetError, RecordingError) as exc:
        say(f"sealtop: {exc}")
        return 2, []
    note = (lambda msg: print(f"  {msg}", file=progress, flush=True)) if progress else None
    try:
        eng = Engine(cfg, progress=note)
    except EngineError as exc:
        say(f"sealtop: {exc}")
        return 2, []
    try:
        recorder = SessionRecorder(record) if record is not None else None
    except RecordingError as exc:
        say(f"sealtop: {exc}")
        return 2, []
    try:
        watchers = start_watchers(eng, watch, cfg)
    except AddressError as exc:
        say(f"sealtop: {exc}")
        return 2, []
    for line in watchers.lines:
        say(line)

    def submit() -> None:
        if progress is not None:
            print(f"engine started ({cfg.preset}, {jobs} job(s) of {cfg.partitions} partitions); "
                  "making or loading the proving key...", file=progress, flush=True)
        if plan is not None:
            plan(eng)
            return
        for i in range(jobs):
            eng.submit(Job(cfg.preset, cfg.partitions, cfg.seed + i))

    try:
        return drive(eng, Sinks(eng.subscribe(), recorder, progress, watchers), jobs, submit,
                     (ValueError, EngineError), "cancelling in-flight partitions")
    finally:
        watchers.close()


class Driven(Protocol):
    """What a headless run drives: the Engine, or the farm's client (engine/cluster/farm.py)."""

    def start(self) -> None: ...

    def wait_idle(self, timeout: float | None = None) -> bool: ...

    def stop(self, drain: bool = True, timeout: float | None = None) -> None: ...

    def hurry(self) -> None: ...


def drive(src: Driven, sinks: Sinks, jobs: int, submit: Callable[[], None],
          refused: tuple[type[BaseException], ...], cancelling: str,
          late_error: Callable[[], object] = lambda: None) -> tuple[int, list[dict]]:
    """Start ``src``, ``submit`` the jobs, wait for them and stop; (exit code, events).

    The one shape of a headless run, local or on a farm: a stop signal cancels what is in
    flight (a second one hurries), an exception of ``refused`` is bad input (one line, exit 2),
    anything else stops ``src`` and is raised. ``late_error`` is an error ``src`` reports after
    its stream ended (the farm lost; exit 2 unless the run was interrupted)."""
    signals.on_again(src.hurry)  # a second stop signal: stop now (still completing the session)
    interrupted = False
    try:
        src.start()
        submit()
        while not src.wait_idle(0.5):
            pass
        with signals.shielded():
            src.stop(drain=True)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP (engine.signals)
        interrupted = True
        say(f"interrupted: {cancelling}")
        with signals.shielded():
            src.stop(drain=False)
    except refused as exc:
        say(f"sealtop: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        src.stop(drain=False)
        return 2, sinks.finish()
    except BaseException:
        src.stop(drain=False)
        sinks.abort()
        raise
    with signals.shielded():
        events = sinks.finish()
    error = late_error()
    if error is not None and not interrupted:
        say(f"sealtop: {error}")
        return 2, events
    if interrupted or signals.received():
        return 130, events
    if sinks.record_failed:
        return 3, events
    done = [e for e in events if e["kind"] == "proof_done"]
    ok = len(done) == jobs and all(e["verified"] for e in done)
    return (0 if ok else 1), events


def run_headless(config_path: str, jobs: int, record: str | None = None,
                 watch: Watch = Watch()) -> int:
    """`sealtop run --config F --jobs N [--record FILE]`: prints the per-proof table, the
    summary and the final counters."""
    try:
        cfg = load_config(config_path)
    except ConfigError as exc:
        say(f"sealtop: {exc}")
        return 2
    code, events = run_engine(cfg, jobs, record, watch=watch)
    if events:
        print(render_all(events))
    if record is not None and code not in (2, 3):
        say(f"session recorded to {record}")
    return code


def replay_summary(path: str) -> int:
    """`sealtop replay FILE --summary`: the same table and counters as the live run printed."""
    try:
        rec = read_recording(path)
    except SessionError as exc:
        say(f"sealtop: {exc}")
        return 2
    for line in rec.warnings:
        say(line)
    print(render_all(rec.events))
    return 0


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
            say(f"sealtop: {exc}")
            return None
        cfg.preset = self.preset
        for k, v in self.overrides.items():
            if not hasattr(cfg, k):
                say(f"sealtop: unknown setting {k!r}")
                return None
            setattr(cfg, k, v)
        return cfg


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
        say(f"sealtop: {exc}")
        return 2
    t0 = time.perf_counter()
    code, events = run_engine(cfg, jobs, b.record, watch=b.watch)
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
    the run (engine/cli.py), as every output file's is."""
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
        "s_per_proof": s.s_per_proof,
        "steady_s_per_proof": s.steady_s_per_proof,
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


def _bench_rows_one_engine(b: Bench, variants: list[tuple[str, dict[str, Any]]]
                           ) -> tuple[int, list[dict]]:
    """Every variant in one engine that keeps its keys: before each variant's jobs the live
    knobs (gpu_channel_capacity, ...) and the between-jobs policies (permit_release, dealloc)
    are set, and the variant's jobs run to the end before the next. At a 32 GiB sector this
    makes the device key once, not once per variant: one warm-up job first makes or loads the
    keys and is no variant's row. Each row is computed from the events of its own stretch of
    the one session (the session's start, then what follows the previous variant's last proof
    up to its own last one); with a recording, the one session file."""
    from engine.config import KNOBS, POLICIES
    from engine.pipeline.circuits import PresetError, circuit_cache_dir, resolve
    from engine.pipeline.engine import Job

    cfg = b.config()
    if cfg is None:
        return 2, []
    bad = sorted({k for _, over in variants for k in over} - set(KNOBS) - set(POLICIES))
    if bad:
        say(f"sealtop: {', '.join(bad)} cannot change within one engine")
        return 2, []
    try:
        circuit = resolve(b.preset, circuit_cache_dir(cfg.param_cache_path()))
    except PresetError as exc:
        say(f"sealtop: {exc}")
        return 2, []
    owned: list[tuple[str, dict[str, Any], list[int]]] = []

    def plan(eng: Any) -> None:
        say("--- warm-up: one job makes or loads the keys and warms the provers (not a row)")
        eng.submit(Job(cfg.preset, cfg.partitions, cfg.seed))
        while not eng.wait_idle(0.5):
            pass
        seed = cfg.seed + 1
        for label, over in variants:
            if signals.received():
                break
            say(f"--- {label} (same engine)")
            for name, value in over.items():
                (eng.set_knob if name in KNOBS else eng.set_policy)(name, value, "config")
            ids = [eng.submit(Job(cfg.preset, cfg.partitions, seed + i)) for i in range(b.jobs)]
            seed += b.jobs
            owned.append((label, over, ids))
            while not eng.wait_idle(0.5):
                pass

    code, events = run_engine(cfg, 1 + b.jobs * len(variants), b.record, watch=b.watch, plan=plan)
    start = [e for e in events if e["kind"] == "session_start"]
    rows: list[dict[str, Any]] = []
    warm = min((e["job"] for e in events if e["kind"] == "job_submitted"), default=None)
    after = max((e["t"] for e in events if e["kind"] == "proof_done" and e.get("job") == warm),
                default=float("-inf"))
    for label, over, ids in owned:
        mine = set(ids)
        ends = [e["t"] for e in events if e["kind"] == "proof_done" and e.get("job") in mine]
        until = max(ends, default=float("inf"))
        stretch = start + [e for e in events if after < e["t"] <= until
                           and e["kind"] != "session_start"
                           and ("job" not in e or e["job"] in mine)]
        rows.append(_row(label, over, code, stretch, circuit.partition_bytes(cfg.abc_eval)))
        after = until
    return code, rows


def _bench_rows(b: Bench, variants: list[tuple[str, dict[str, Any]]]) -> tuple[int, list[dict]]:
    """Run one pipeline per variant (label, overrides on top of ``b``'s); rows of the numbers
    benchmarks report. With a recording, each variant's events go to their own session file
    (see variant_path). ``b.watch`` applies to each variant's run in turn (one engine at a
    time)."""
    from engine.pipeline.circuits import PresetError, circuit_cache_dir, resolve

    cfg0 = b.config()
    if cfg0 is None:
        return 2, []
    rows: list[dict[str, Any]] = []
    worst = 0
    for label, over in variants:
        if signals.received():  # a stop signal ended the last variant: run no more
            break
        cfg = dataclasses.replace(cfg0, **over)
        try:
            circuit = resolve(b.preset, circuit_cache_dir(cfg.param_cache_path()))
        except PresetError as exc:
            say(f"sealtop: {exc}")
            return 2, rows
        say(f"--- {label}")
        code, events = run_engine(cfg, b.jobs,
                                  variant_path(b.record, label) if b.record else None,
                                  watch=b.watch)
        worst = max(worst, code)
        if not events:
            return code, rows
        rows.append(_row(label, over, code, events, circuit.partition_bytes(cfg.abc_eval)))
    return worst, rows


def variant_path(record: str, label: str) -> str:
    """``record`` with the variant label inserted before its extension(s):
    runs.jsonl.gz + 'dealloc=sync' -> runs.dealloc-sync.jsonl.gz."""
    slug = "".join(ch if ch.isalnum() else "-" for ch in label).strip("-")
    path = Path(record)
    name = path.name
    stem, dot, ext = name.partition(".")
    return str(path.with_name(f"{stem}.{slug}{dot}{ext}" if dot else f"{stem}.{slug}"))


def _print_rows(rows: list[dict]) -> None:
    """The comparison table: one row per variant, seconds per proof and milliseconds."""
    head = ["variant", "s/proof", "steady", "peak mem", "peak shm", "wrapper ms", "kernels ms",
            "dealloc ms", "verified"]
    body = []
    for r in rows:
        spp = "-" if r["s_per_proof"] is None else f"{r['s_per_proof']:.3f}"
        steady = "-" if r.get("steady_s_per_proof") is None else f"{r['steady_s_per_proof']:.3f}"
        body.append([r["variant"], spp, steady, fmt_bytes(r["peak_total"]), fmt_bytes(r["peak_shm"]),
                     f"{r['mean_wrapper_ms']:.1f}", f"{r['mean_kernel_ms']:.1f}",
                     f"{r['mean_dealloc_ms']:.2f}", str(r["jobs_verified"])])
    print("\n".join(table(head, body, left=1, rule=True)))


def bench_matrix(kind: str, b: Bench) -> int:
    """The comparison tables, each a set of pipeline runs:

    * ``cuzk``: gpu_channel_capacity {1, partition_workers} × permit_release {delivered,
      synthesized}: peak memory and seconds per proof (the cuzk lesson);
    * ``dealloc``: dealloc sync against async: how much the wrapper time grows.
    """
    workers = int(b.overrides.get("partition_workers", EngineConfig().partition_workers))
    if kind == "cuzk":
        variants = [
            (f"capacity={cap} permit={pr}", {"gpu_channel_capacity": cap, "permit_release": pr})
            for cap in sorted({1, workers})
            for pr in ("delivered", "synthesized")
        ]
    elif kind == "dealloc":
        variants = [(f"dealloc={m}", {"dealloc": m}) for m in ("async", "sync")]
    else:
        say(f"sealtop: unknown comparison {kind!r} (choose cuzk or dealloc)")
        return 2
    code, rows = (_bench_rows_one_engine if b.one_engine else _bench_rows)(b, variants)
    if rows:
        print(f"{kind} comparison, preset {b.preset}, {b.jobs} job(s) per variant")
        _print_rows(rows)
    if b.json_out and rows:
        write_report(b.json_out, {"kind": kind, "preset": b.preset, "jobs": b.jobs, "rows": rows})
    return code
