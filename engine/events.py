"""The event stream: the one record of everything the engine does.

Events are plain JSON-able dicts with ``t`` (seconds since session start, monotonic) and
``kind``. The live engine publishes them, the session recorder writes them one per line, the
replayer reads them back, and the console's reducer folds them into dashboard state. Keeping them
as dicts (not classes) means a session file line *is* an event, with no translation layer.

The constructors below are the single place that names the fields of each kind (design.md's
table); every producer goes through them so that consumers can rely on the keys.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1

STAGES = ("queued", "synthesizing", "waiting_gpu", "gpu", "finalizing", "deallocating", "done")
FAILED = "failed"
KINDS = (
    "session_start",
    "job_submitted",
    "stage",
    "partition_timings",
    "proof_done",
    "sample",
    "knob",
    "error",
)
# Timer keys of a partition_timings event, in display order (milliseconds). The GPU wrapper (the
# partition leaving the channel -> its GPU half done; dealloc too when dealloc = "sync") splits
# into gpu_dispatch (handing the task to the prover process), gpu_host (the prover's own host
# work around the call: attaching buffers, public inputs), gpu_call (the prover's call, whose
# device time is the kernel groups) and gpu_return (the gpu_done message back).
TIMER_KEYS = (
    "queue",
    "witness",
    "eval",
    "channel_wait",
    "gpu_wrapper",
    "gpu_dispatch",
    "gpu_host",
    "gpu_call",
    "gpu_return",
    "upload",
    "ntt",
    "msm_h",
    "msm_a",
    "msm_b1",
    "msm_l",
    "b2",
    "finalize",
    "dealloc",
)
# Kernel groups timed on the device (CUDA events): "upload" is the host→device copy of a, b, c
# and z. A group a backend does not report (the CPU backend may skip "upload") counts as 0.
KERNEL_KEYS = ("upload", "ntt", "msm_h", "msm_a", "msm_b1", "msm_l")

Event = dict[str, Any]


def session_start(
    t: float, config: dict, host: dict, gpus: list[dict], wall_start: str
) -> Event:
    """host: {"cpus": int, "ram_bytes": int}; gpus: [{"index", "name", "memory_total"}]."""
    return {
        "t": t,
        "kind": "session_start",
        "schema": SCHEMA_VERSION,
        "config": config,
        "host": host,
        "gpus": gpus,
        "wall_start": wall_start,
    }


def job_submitted(t: float, job: int, preset: str, partitions: int, constraints: int) -> Event:
    """constraints: per partition."""
    return {
        "t": t,
        "kind": "job_submitted",
        "job": job,
        "preset": preset,
        "partitions": partitions,
        "constraints": constraints,
    }


def stage(
    t: float, job: int, partition: int, stage_name: str, worker: str, reason: str | None = None
) -> Event:
    if stage_name not in STAGES and stage_name != FAILED:
        raise ValueError(f"unknown stage {stage_name!r}")
    ev: Event = {
        "t": t,
        "kind": "stage",
        "job": job,
        "partition": partition,
        "stage": stage_name,
        "worker": worker,
    }
    if reason is not None:
        ev["reason"] = reason
    return ev


def partition_timings(
    t: float, job: int, partition: int, ms: dict[str, float], bytes_held: int
) -> Event:
    """ms: a subset of TIMER_KEYS mapped to milliseconds (missing keys mean not measured)."""
    unknown = set(ms) - set(TIMER_KEYS)
    if unknown:
        raise ValueError(f"unknown timer keys {sorted(unknown)}")
    return {
        "t": t,
        "kind": "partition_timings",
        "job": job,
        "partition": partition,
        "ms": dict(ms),
        "bytes_held": bytes_held,
    }


def proof_done(t: float, job: int, proof_hex: str, verified: bool, total_ms: float) -> Event:
    """proof_hex: the job's partition proofs, 192 bytes each, concatenated, as hex."""
    return {
        "t": t,
        "kind": "proof_done",
        "job": job,
        "proof": proof_hex,
        "verified": verified,
        "total_ms": total_ms,
    }


def sample(
    t: float,
    processes: list[dict],
    shm_bytes: int,
    counters: dict[str, int],
    gpus: list[dict],
) -> Event:
    """processes: [{"pid", "role", "rss_anon"}]; gpus: [{"index", "util", "mem_used",
    "mem_total", "power_w", "temp_c", "sm_clock_mhz"}] where None means N/A."""
    return {
        "t": t,
        "kind": "sample",
        "processes": processes,
        "shm_bytes": shm_bytes,
        "counters": counters,
        "gpus": gpus,
    }


def knob(t: float, name: str, old: Any, new: Any, source: str) -> Event:
    if source not in ("operator", "config"):
        raise ValueError(f"knob source must be operator or config, not {source!r}")
    return {"t": t, "kind": "knob", "name": name, "old": old, "new": new, "source": source}


def error(t: float, where: str, message: str) -> Event:
    return {"t": t, "kind": "error", "where": where, "message": message}
