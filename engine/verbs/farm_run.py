"""``sealtop run --cluster ADDR`` and ``bench pipeline --cluster ADDR``: the headless run, on
the farm.

The same sinks as a local run (engine/verbs/runner.py: the events for the summaries, the recorder,
the progress lines) take the farm's merged stream, and the same ``drive`` starts, waits for
and stops it, so the session file of a farm run replays (``sealtop replay FILE --summary``) to
the table printed here. Exit codes as `run`'s: 0 every proof verified, 1 a proof failed or a
job was lost, 2 bad input or no farm (one line), 3 the recording failed mid-run, 130
interrupted.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from engine.cluster import ClusterError
from engine.config import ConfigError, EngineConfig, load_config
from engine.stream.recorder import RecordingError, SessionRecorder, check_target
from engine.stream.summary import render_all, run_summary
from engine.verbs.bench_pipeline import VERB, Bench, write_report
from engine.verbs.runner import Sinks, drive, say
from kernels.textfmt import error_line


def run_farm(cfg: EngineConfig, jobs: int, address: str, record: str | None = None,
             progress: TextIO | None = sys.stderr, verb: str = "run") -> tuple[int, list[dict], Any]:
    """Run ``jobs`` jobs of the config's preset on the farm at ``address``;
    (exit code, merged events, the Farm for its timings). ``verb`` names the command in its
    error lines (``sealtop: VERB: ...``)."""
    from engine.cluster.farm import Farm

    if jobs < 1:
        say(error_line(f"sealtop {verb}", "--jobs must be at least 1"))
        return 2, [], None
    try:
        if record is not None:
            check_target(record)
        recorder = SessionRecorder(record) if record is not None else None
    except RecordingError as exc:
        say(error_line(f"sealtop {verb}", str(exc)))
        return 2, [], None
    note = (lambda msg: print(f"  {msg}", file=progress, flush=True)) if progress else None
    try:
        farm = Farm(address, cfg, progress=note)
    except ClusterError as exc:
        say(error_line(f"sealtop {verb}", str(exc)))
        return 2, [], None

    def submit() -> None:
        needs = getattr(cfg, "needs", "any")
        offered = farm.resources()
        if needs != "any" and not any(r.get(f"{needs}_slots") for r in offered.values()):
            hosts = ", ".join(sorted(offered)) or "none"
            raise ClusterError(f"no host of the farm takes jobs that need {needs} "
                               f"(hosts: {hosts}); Dask would hold them until one joins")
        if progress is not None:
            print(f"farm at {address}: {len(farm.hosts())} host(s) {', '.join(farm.hosts())}; "
                  f"{jobs} job(s) of {cfg.preset} x {cfg.partitions} partitions",
                  file=progress, flush=True)
        from engine.c2.job import config_job

        for i in range(jobs):
            job = config_job(cfg, cfg.seed + i)
            farm.submit(job.preset, job.partitions, job.seed, job.source)

    code, events = drive(farm, Sinks(farm.subscribe(), recorder, progress), jobs, submit,
                         (ClusterError,), "cancelling the farm's jobs", lambda: farm.error,
                         verb=verb)
    return code, events, farm


def overhead_ms(farm: Any) -> dict[str, float | None]:
    """The farm's per-job overhead in ms, over jobs: submission -> the host's task began
    (Dask's placement and transfer; includes waiting for a free slot when every slot was busy,
    so the minimum is the overhead of a job that found one), -> the host's first synthesis,
    and the host's task end -> the result at the client. Wall clocks: exact on one machine,
    within the clocks' skew across machines."""
    first, to_host, back = [], [], []
    for t in (farm.timings.values() if farm is not None else []):
        if t.first_synthesis is not None:
            first.append((t.first_synthesis - t.submitted) * 1000.0)
        if t.received is not None:
            to_host.append((t.received - t.submitted) * 1000.0)
        if t.collected is not None and t.host_done is not None:
            back.append((t.collected - t.host_done) * 1000.0)
    mean = lambda v: sum(v) / len(v) if v else None  # noqa: E731
    return {"submit_to_first_synthesis_ms": mean(first),
            "submit_to_first_synthesis_min_ms": min(first) if first else None,
            "submit_to_host_ms": mean(to_host),
            "submit_to_host_min_ms": min(to_host) if to_host else None,
            "proof_back_ms": mean(back), "proof_back_min_ms": min(back) if back else None}


def run_cluster(config_path: str | None, address: str | None, jobs: int,
                record: str | None = None) -> int:
    """`sealtop run --cluster ADDR --config F --jobs N`: the summary of a farm run."""
    try:
        cfg = load_config(config_path) if config_path else EngineConfig()
    except ConfigError as exc:
        say(error_line("sealtop run", str(exc)))
        return 2
    address = address or cfg.scheduler
    if not address:
        say(error_line("sealtop run",
                       "no scheduler: give --cluster ADDR or [cluster] scheduler in the config"))
        return 2
    code, events, farm = run_farm(cfg, jobs, address, record)
    if events:
        print(render_all(events))
        _print_hosts(events, farm)
    if record is not None and code not in (2, 3):
        say(f"session recorded to {record}")
    return code


def _proofs_per_host(events: list[dict]) -> dict[str, int]:
    """How many proofs each host of the farm sent back."""
    per: dict[str, int] = {}
    for e in events:
        if e["kind"] == "proof_done":
            per[e.get("host", "?")] = per.get(e.get("host", "?"), 0) + 1
    return per


def _print_hosts(events: list[dict], farm: Any) -> None:
    per = _proofs_per_host(events)
    if per:
        print("proofs per host: " + ", ".join(f"{h} {n}" for h, n in sorted(per.items())))
    o = overhead_ms(farm)
    if o["submit_to_first_synthesis_ms"] is not None:
        def ms(key: str) -> str:
            v, lo = o[key], o[key.replace("_ms", "_min_ms")]
            return "-" if v is None else f"{v:.1f} ms (min {lo:.1f})"

        print(f"farm overhead per job (mean, min): submission -> host {ms('submit_to_host_ms')}, "
              f"-> first synthesis {ms('submit_to_first_synthesis_ms')}, proof back "
              f"{ms('proof_back_ms')}")


def bench_cluster(b: Bench, address: str) -> int:
    """`bench pipeline --cluster ADDR`: a farm run and a JSON report (rate, per-host proofs,
    the cluster's per-job overhead)."""
    cfg = b.config()
    if cfg is None:
        return 2
    preset, jobs = b.preset, b.jobs
    t0 = time.perf_counter()
    code, events, farm = run_farm(cfg, jobs, address or cfg.scheduler, b.record, verb=VERB)
    wall = time.perf_counter() - t0
    if not events:
        return code
    print(render_all(events))
    _print_hosts(events, farm)
    s = run_summary(events)
    per = _proofs_per_host(events)
    report = {"preset": preset, "jobs": jobs, "scheduler": address, "wall_s": wall,
              "s_per_proof": s.s_per_proof, "steady_s_per_proof": s.steady_s_per_proof,
              "jobs_verified": s.jobs_verified, "proofs_per_host": per, **overhead_ms(farm),
              "exit_code": code}
    if b.json_out:
        write_report(b.json_out, report)
    return code
