"""Generate tests/data/session_fixture.jsonl: a fixed, clearly synthetic session for UI tests.

It is a small deterministic simulation of the pipeline (design.md "The pipeline") with
realistic magnitudes: one H200-class GPU with two slots, partition_workers=2 raised to 3 by the
operator half-way, a channel of capacity 1, 8 jobs of 4 partitions of 2^16 constraints. One proof
fails verification (the ✗ row), one partition fails once and is retried, and the engine is
paused for a moment. Every event goes through engine/events.py's constructors.

Run:  python tests/data/make_session_fixture.py   (rewrites the file; snapshots depend on it)
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.stream import recorder as S  # noqa: E402
from engine.stream import schema as E  # noqa: E402

OUT = Path(__file__).with_name("session_fixture.jsonl")
# A second run of the same jobs with a wider channel and more workers, for the compare screen.
OUT_B = Path(__file__).with_name("session_fixture_b.jsonl")
DT = 0.01  # simulation step (s)
SAMPLE_EVERY = 0.1  # sampler period (s)
GiB = 2**30
MiB = 2**20

# The config as the engine puts it in session_start (EngineConfig.to_dict(): flat keys).
CONFIG = {
    "backend": "cuda",
    "devices": [0],
    "partition_workers": 2,
    "gpu_channel_capacity": 1,
    "gpu_slots_per_device": 2,
    "memory_budget": 8 * GiB,
    "permit_release": "delivered",
    "dealloc": "async",
    "b_g2": "cpu",
    "param_cache": "/fixture/params",
    "session_dir": "/fixture/sessions",
    "sample_interval_s": 0.1,
    "preset": "fixture-64k",
    "partitions": 4,
    "seed": 1,
}
CONSTRAINTS = 1 << 16
PARTS = 4
JOBS = 8
ABC = CONSTRAINTS * 3 * 32


def simulate(out: Path, workers: int, cap: int, raise_workers_to: int | None, seed: int) -> None:
    """Run the simulation with these knobs and write the session file."""
    rng = random.Random(seed)
    evs: list[dict] = []
    emit = evs.append
    config = dict(CONFIG, partition_workers=workers, gpu_channel_capacity=cap,
                  backend_in_use="cuda")
    emit(
        E.session_start(
            0.0,
            config,
            {"cpus": 16, "ram_bytes": 128 * GiB},
            [{"index": 0, "name": "NVIDIA H200 (fixture)", "memory_total": 141 * GiB}],
            "2026-11-30T09:00:00Z",
        )
    )
    slots = 2
    parts: list[dict] = []  # simulation records
    t = 0.0
    next_sample = SAMPLE_EVERY
    submit_at = [0.05 + j * 0.45 for j in range(JOBS)]
    submitted = 0
    paused_until = None
    fail_once = (2, 1)  # job 2 partition 1 fails in synthesis once
    bad_job = 4  # its proof fails verification
    job_done: dict[int, float] = {}
    job_start: dict[int, float] = {}
    knob_done = raise_workers_to is None

    def ev_stage(p: dict, name: str, worker: str, reason: str | None = None) -> None:
        emit(E.stage(round(t, 3), p["job"], p["idx"], name, worker, reason))

    while True:
        t = round(t + DT, 3)
        # operator actions
        if not knob_done and t >= 2.5:
            emit(E.knob(t, "partition_workers", workers, raise_workers_to, "operator"))
            workers = raise_workers_to
            knob_done = True
        if paused_until is None and t >= 4.0:
            emit(E.knob(t, "paused", False, True, "operator"))
            paused_until = 4.6
        if paused_until is not None and paused_until > 0 and t >= paused_until:
            emit(E.knob(t, "paused", True, False, "operator"))
            paused_until = -1.0
        paused = paused_until is not None and paused_until > 0
        while submitted < JOBS and t >= submit_at[submitted]:
            j = submitted + 1
            emit(E.job_submitted(t, j, "fixture-64k", PARTS, CONSTRAINTS))
            job_start[j] = t
            for i in range(PARTS):
                parts.append({"job": j, "idx": i, "stage": "queued", "t0": t, "ms": {}, "left": 0.0})
                ev_stage(parts[-1], "queued", "scheduler")
            submitted += 1
        # progress running work
        for p in parts:
            if p["stage"] in ("synthesizing", "gpu", "finalizing", "deallocating"):
                p["left"] -= DT
        # synthesis finished -> channel (permit held until delivered)
        for p in parts:
            if p["stage"] == "synthesizing" and p["left"] <= 0:
                if (p["job"], p["idx"]) == fail_once and not p.get("failed_once"):
                    p["failed_once"] = True
                    ev_stage(p, "failed", p["worker"], "worker exited with signal 9 (fixture)")
                    emit(E.error(t, p["worker"], "synthesis worker died; partition 2/1 will be retried"))
                    p["stage"] = "retry"
                    continue
                p["stage"] = "synth_done"
                p["synth_end"] = t
        in_channel = [p for p in parts if p["stage"] == "waiting_gpu"]
        for p in parts:
            if p["stage"] == "synth_done" and len(in_channel) < cap:
                p["stage"] = "waiting_gpu"
                in_channel.append(p)
                ev_stage(p, "waiting_gpu", "channel")
        # GPU slots take from the channel
        busy = [p for p in parts if p["stage"] == "gpu"]
        for p in parts:
            if p["stage"] == "gpu" and p["left"] <= 0:
                # as the engine does: buffers are released first, then the proof is finalized
                p["stage"] = "deallocating"
                p["left"] = p["ms"]["dealloc"] / 1000
                ev_stage(p, "deallocating", "dealloc")
        busy = [p for p in parts if p["stage"] == "gpu"]
        for p in sorted(in_channel, key=lambda q: q["chan_t"] if "chan_t" in q else t):
            if len(busy) < slots and not paused:
                slot = next(s for s in range(slots) if all(b.get("slot") != s for b in busy))
                p["slot"] = slot
                p["stage"] = "gpu"
                p["gpu_start"] = t
                wrapper = rng.uniform(230, 260)
                call = wrapper - rng.uniform(6, 14)
                kern = call - rng.uniform(8, 20)
                split = {"ntt": 0.22, "msm_h": 0.30, "msm_a": 0.18, "msm_b1": 0.16, "msm_l": 0.14}
                p["ms"].update({k: round(kern * f, 2) for k, f in split.items()})
                p["ms"].update(
                    gpu_wrapper=round(wrapper, 2),
                    gpu_call=round(call, 2),
                    channel_wait=round((t - p["synth_end"]) * 1000, 2),
                    b2=round(rng.uniform(35, 50), 2),
                    finalize=round(rng.uniform(12, 20), 2),
                    dealloc=round(rng.uniform(4, 9), 2),
                )
                p["left"] = wrapper / 1000
                busy.append(p)
                ev_stage(p, "gpu", f"gpu0/slot{slot}")
        for p in parts:
            if p["stage"] == "deallocating" and p["left"] <= 0:
                p["stage"] = "finalizing"
                p["left"] = p["ms"]["b2"] / 1000 + p["ms"]["finalize"] / 1000
                ev_stage(p, "finalizing", "finalize")
            elif p["stage"] == "finalizing" and p["left"] <= 0:
                p["stage"] = "done"
                ev_stage(p, "done", "finalize")
                emit(E.partition_timings(t, p["job"], p["idx"], p["ms"], ABC))
        # job completion
        for j in range(1, submitted + 1):
            ps = [p for p in parts if p["job"] == j]
            if j not in job_done and ps and all(p["stage"] == "done" for p in ps):
                job_done[j] = t
                proof = "".join(f"{rng.getrandbits(8):02x}" for _ in range(192 * PARTS))
                emit(E.proof_done(t, j, proof, j != bad_job, round((t - job_start[j]) * 1000, 1)))
        # synthesis starts: permits held from synthesis start until delivery into the channel
        holding_permit = [p for p in parts if p["stage"] in ("synthesizing", "synth_done")]
        for p in parts:
            if p["stage"] in ("queued", "retry") and len(holding_permit) < workers and not paused:
                p["stage"] = "synthesizing"
                p["worker"] = f"synth-{len(holding_permit) % workers}"
                p["ms"]["queue"] = round((t - p["t0"]) * 1000, 2)
                p["ms"]["witness"] = round(rng.uniform(180, 230), 2)
                p["ms"]["eval"] = round(rng.uniform(120, 160), 2)
                p["left"] = (p["ms"]["witness"] + p["ms"]["eval"]) / 1000
                holding_permit.append(p)
                ev_stage(p, "synthesizing", p["worker"])
        # sampler
        if t >= next_sample:
            next_sample = round(next_sample + SAMPLE_EVERY, 3)
            held = [p for p in parts if p["stage"] not in ("queued", "done", "retry")]
            synth = [p for p in parts if p["stage"] == "synthesizing"]
            gpu = [p for p in parts if p["stage"] == "gpu"]
            procs = [{"pid": 4100, "role": "console", "rss_anon": 212 * MiB + rng.randrange(4 * MiB)}]
            for w in range(3):
                active = sum(1 for p in synth if p["worker"] == f"synth-{w}")
                procs.append(
                    {"pid": 4111 + w, "role": f"synth-{w}",
                     "rss_anon": 96 * MiB + active * 40 * MiB + rng.randrange(2 * MiB)}
                )
            procs.append({"pid": 4120, "role": "gpu0", "rss_anon": 1310 * MiB + len(gpu) * 24 * MiB})
            util = min(100.0, 48.0 * len(gpu) + rng.uniform(0, 3)) if gpu else rng.uniform(0, 2)
            done_parts = sum(1 for p in parts if p["stage"] == "done")
            emit(
                E.sample(
                    t,
                    procs,
                    len(held) * ABC,
                    {"partitions_done": done_parts, "proofs_done": len(job_done),
                     "bytes_freed": done_parts * ABC},
                    [{"index": 0, "util": round(util, 1), "mem_used": 23 * GiB + len(gpu) * 310 * MiB,
                      "mem_total": 141 * GiB, "power_w": round(95 + util * 4.9, 1),
                      "temp_c": round(34 + min(t, 12) * 1.1 + util / 25, 1),
                      "sm_clock_mhz": 1980 if gpu else 345}],
                )
            )
        if len(job_done) == JOBS:
            break
    with out.open("w") as f:
        f.write(json.dumps(S.header(created="2026-11-30T09:00:00Z (fixture)")) + "\n")
        for ev in evs:
            f.write(json.dumps(ev, separators=(",", ":")) + "\n")
    print(f"wrote {len(evs)} events, {t:.2f} s, to {out}")


def main() -> None:
    simulate(OUT, workers=2, cap=1, raise_workers_to=3, seed=20261130)
    simulate(OUT_B, workers=3, cap=3, raise_workers_to=None, seed=20261130)


if __name__ == "__main__":
    main()
