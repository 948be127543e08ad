"""The event schema: kinds, their fields, stage names, timer keys and kernel groups.

Events are plain JSON-able dicts with ``t`` (seconds since the session started, monotonic) and
``kind``. The live engine publishes them, the recorder writes them one per line, the reader
reads them back, and the fold turns them into partition and job records. Keeping them as dicts
means a session file line *is* an event, with no translation layer.

The constructors below are the one place that names the fields of each kind; every producer
goes through them so that consumers can rely on the keys. :func:`check_event` is the one
validation of an event read from outside (a session file).

Schema versions: 1 had no ``console`` kind and no ``cancelled`` stage; 2 adds both; 3 adds the
``host`` kind (a farm session: which hosts joined or left, with each host's own session_start)
and an optional ``host`` field on any event (the host it came from); 4 adds the
``synthesized`` stage (synthesis ended, its partition not yet in the channel: waiting for every
prover to hold the job's key, or for room) and an optional ``bytes`` field of ``job_submitted``
(what one partition holds, as the engine's memory budget counts it). A reader of version 4
reads versions 1 to 3 as they are (everything in them is still valid in 4); the fold derives
what it can of the new stage from their timers (engine/stream/fold.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeGuard

SCHEMA_VERSION = 4
SUPPORTED_SCHEMAS = (1, 2, 3, 4)

# Stages in the order the engine moves a partition through them: `synthesized` from the
# synthesis worker's reply until the partition enters the channel (`waiting_gpu`), which waits
# for every prover to hold the job's key and, with permit_release = "delivered", for room in the
# channel; buffers are released (deallocating) before finalize, which needs only the GPU's
# outputs.
STAGES = ("queued", "synthesizing", "synthesized", "waiting_gpu", "gpu", "deallocating",
          "finalizing", "done")
FAILED = "failed"  # ended without a proof, with a reason
CANCELLED = "cancelled"  # will not be proven because of a stop; never counted as failed
ALL_STAGES = STAGES + (FAILED, CANCELLED)
TERMINAL = frozenset(("done", FAILED, CANCELLED))
# Stages in which a partition holds its a, b and c buffers (start of synthesis until release).
HOLDING = frozenset(("synthesizing", "synthesized", "waiting_gpu", "gpu", "deallocating"))
HOLDING_STAGES = tuple(s for s in STAGES if s in HOLDING)

KINDS = (
    "session_start",
    "job_submitted",
    "stage",
    "partition_timings",
    "proof_done",
    "sample",
    "knob",
    "error",
    "console",
    "host",
)

# Kernel groups timed on the device, in the order the prover runs them: "upload" is the
# host→device copy of a, b, c and z (with abc_eval = "gpu", of the compact witness), "abc" the
# evaluation of a, b and c where H runs (abc_eval = "gpu" only; with "cpu" synthesis's "eval"
# timer holds it). The prover marks its timers against this tuple; a group a backend or mode
# does not report (the CPU backend may skip "upload") counts as 0.
KERNEL_GROUPS = ("upload", "abc", "ntt", "msm_h", "msm_a", "msm_b1", "msm_l")
KERNEL_KEYS = KERNEL_GROUPS  # the name the summaries and widgets have always used

# Timer keys of a partition_timings event, in display order (milliseconds). "inputs" is the part
# of "queue" spent reading or making the partition's share of its job's input (absent where the
# circuit needs none, and in sessions recorded before it). The GPU wrapper (the
# partition leaving the channel -> its GPU half done; dealloc too when dealloc = "sync") splits
# into gpu_dispatch (handing the task to the prover process), gpu_host (the prover's own host
# work around the call: attaching buffers, public inputs), gpu_wait (the prover slot's wait for
# its turn at the GPU: gpu_calls = "serial"; ~0 with "parallel"; absent in sessions recorded
# before it), gpu_call (the prover's call, whose device time is the kernel groups) and
# gpu_return (the gpu_done message back).
TIMER_KEYS = (
    "queue",
    "inputs",
    "witness",
    "eval",
    "channel_wait",
    "gpu_wrapper",
    "gpu_dispatch",
    "gpu_host",
    "gpu_wait",
    "gpu_call",
    "gpu_return",
    *KERNEL_GROUPS,
    "b2",
    "finalize",
    "dealloc",
)

# What a host event says happened to a host of the farm.
HOST_STATES = ("joined", "left")

# Levels of a console line, as the log panel colours them.
CONSOLE_LEVELS = ("info", "knob", "warn", "error")
# What a console line may say happened to the engine, beyond its text.
CONSOLE_ENGINE_STATES = ("stopped",)

Event = dict[str, Any]

# Fields each kind must carry (beyond t and kind).
REQUIRED: dict[str, tuple[str, ...]] = {
    "session_start": ("schema", "config", "host", "gpus", "wall_start"),
    "job_submitted": ("job", "preset", "partitions", "constraints"),
    "stage": ("job", "partition", "stage", "worker"),
    "partition_timings": ("job", "partition", "ms", "bytes_held"),
    "proof_done": ("job", "proof", "verified", "total_ms"),
    "sample": ("processes", "shm_bytes", "counters", "gpus"),
    "knob": ("name", "old", "new", "source"),
    "error": ("where", "message"),
    "console": ("level", "text"),
    "host": ("host", "state", "address", "session_start", "resources", "offset_s"),
}


def session_start(
    t: float,
    config: dict[str, Any],
    host: dict[str, Any],
    gpus: list[dict[str, Any]],
    wall_start: str,
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


def job_submitted(t: float, job: int, preset: str, partitions: int, constraints: int,
                  nbytes: int | None = None) -> Event:
    """constraints: per partition; nbytes: the bytes one partition holds from synthesis to its
    release, as the memory budget counts them (absent in sessions before schema 4)."""
    ev: Event = {
        "t": t,
        "kind": "job_submitted",
        "job": job,
        "preset": preset,
        "partitions": partitions,
        "constraints": constraints,
    }
    if nbytes is not None:
        ev["bytes"] = nbytes
    return ev


def stage(
    t: float, job: int, partition: int, stage_name: str, worker: str, reason: str | None = None
) -> Event:
    """A partition entered ``stage_name`` (one of ALL_STAGES); reason says why it failed or
    was cancelled."""
    if stage_name not in ALL_STAGES:
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
    """proof_hex: the job's partition proofs, 192 bytes each, concatenated, as hex. Never
    emitted for a cancelled job."""
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
    processes: list[dict[str, Any]],
    shm_bytes: int,
    counters: dict[str, int],
    gpus: list[dict[str, Any]],
) -> Event:
    """processes: [{"pid", "role", "rss_anon", "cpu_pct" (optional: % of one core since the
    previous sample, null on a process's first)}]; gpus: [{"index", "util", "mem_used",
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


def console(t: float, level: str, text: str, engine_state: str | None = None) -> Event:
    """A console-side line: an operator's action and its outcome, or a notice of the console
    (engine built, stopped, a refused knob). ``engine_state`` "stopped" marks the line that
    says the engine has stopped, so a replay shows the stopped engine too."""
    if level not in CONSOLE_LEVELS:
        raise ValueError(f"console level must be one of {CONSOLE_LEVELS}, not {level!r}")
    ev: Event = {"t": t, "kind": "console", "level": level, "text": text}
    if engine_state is not None:
        if engine_state not in CONSOLE_ENGINE_STATES:
            raise ValueError(f"unknown console engine state {engine_state!r}")
        ev["engine_state"] = engine_state
    return ev


def host(t: float, name: str, state: str, address: str, session_start: dict[str, Any],
         resources: dict[str, float], offset_s: float) -> Event:
    """A host of the farm joined (``session_start``: that host's own session_start event,
    without t and kind) or left (``session_start`` empty). ``offset_s`` is what was added to
    the host's clock to put its events on this session's clock."""
    if state not in HOST_STATES:
        raise ValueError(f"host state must be one of {HOST_STATES}, not {state!r}")
    return {"t": t, "kind": "host", "host": name, "state": state, "address": address,
            "session_start": dict(session_start), "resources": dict(resources),
            "offset_s": offset_s}


# ---- validation of events read from outside ---------------------------------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_stage(obj: Event) -> str | None:
    st = obj["stage"]
    if not isinstance(st, str) or st not in ALL_STAGES:
        return f"unknown stage {st!r}"
    if not isinstance(obj["worker"], str):
        return "stage event field 'worker' must be a string"
    return None


def _check_timings(obj: Event) -> str | None:
    if not _is_int(obj["bytes_held"]):
        return "partition_timings field 'bytes_held' must be an integer"
    ms = obj["ms"]
    if not isinstance(ms, dict) or any(k not in TIMER_KEYS or not _is_num(v) for k, v in ms.items()):
        return "partition_timings field 'ms' must map timer names to numbers"
    return None


def _check_job(obj: Event) -> str | None:
    if not isinstance(obj["preset"], str):
        return "job_submitted field 'preset' must be a string"
    for k in ("partitions", "constraints", "bytes"):
        if k in obj and (not _is_int(obj[k]) or obj[k] < 0):
            return f"job_submitted field {k!r} must be a non-negative integer"
    return None


def _check_proof(obj: Event) -> str | None:
    if not isinstance(obj["verified"], bool):
        return "proof_done field 'verified' must be true or false"
    if not isinstance(obj["proof"], str):
        return "proof_done field 'proof' must be a hex string"
    if not _is_num(obj["total_ms"]):
        return "proof_done field 'total_ms' must be a number"
    return None


def _check_sample(obj: Event) -> str | None:
    procs = obj["processes"]
    if not isinstance(procs, list) or not isinstance(obj["counters"], dict):
        return "sample event has malformed processes or counters"
    for p in procs:
        if not isinstance(p, dict):
            return "sample event field 'processes' must hold objects"
        r = p.get("rss_anon")
        if r is not None and not _is_int(r):
            return "sample event rss_anon must be an integer or null"
        c = p.get("cpu_pct")
        if c is not None and (isinstance(c, bool) or not isinstance(c, (int, float))):
            return "sample event cpu_pct must be a number or null"
    if not isinstance(obj["gpus"], list):
        return "sample event field 'gpus' must be a list"
    if not _is_int(obj["shm_bytes"]):
        return "sample event field 'shm_bytes' must be an integer"
    return None


def _check_console(obj: Event) -> str | None:
    if obj["level"] not in CONSOLE_LEVELS:
        return f"console event level must be one of {', '.join(CONSOLE_LEVELS)}"
    if not isinstance(obj["text"], str):
        return "console event field 'text' must be a string"
    es = obj.get("engine_state")
    if es is not None and es not in CONSOLE_ENGINE_STATES:
        return f"unknown console engine state {es!r}"
    return None


def _check_host(obj: Event) -> str | None:
    if not isinstance(obj["host"], str) or not obj["host"]:
        return "host event field 'host' must be a non-empty string"
    if obj["state"] not in HOST_STATES:
        return f"host event state must be one of {', '.join(HOST_STATES)}"
    start = obj["session_start"]
    if not isinstance(start, dict):
        return "host event field 'session_start' must be an object"
    if obj["state"] == "joined":
        missing = [k for k in REQUIRED["session_start"] if k not in start]
        if missing:
            return f"host event session_start lacks field {missing[0]!r}"
    res = obj["resources"]
    if not isinstance(res, dict) or not all(_is_num(v) for v in res.values()):
        return "host event field 'resources' must map names to numbers"
    if not _is_num(obj["offset_s"]):
        return "host event field 'offset_s' must be a number"
    return None


_CHECKS: dict[str, Callable[[Event], str | None]] = {
    "stage": _check_stage,
    "partition_timings": _check_timings,
    "job_submitted": _check_job,
    "proof_done": _check_proof,
    "sample": _check_sample,
    "console": _check_console,
    "host": _check_host,
}


def check_event(obj: Any) -> str | None:
    """None if obj is a well-formed event, else what is wrong (one phrase)."""
    if not isinstance(obj, dict):
        return "an event must be a JSON object"
    t = obj.get("t")
    if not _is_num(t) or not math.isfinite(t) or t < 0:
        return "event field 't' must be a non-negative number"
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in REQUIRED:
        return f"unknown event kind {kind!r}"
    missing = [k for k in REQUIRED[kind] if k not in obj]
    if missing:
        return f"{kind} event lacks field {missing[0]!r}"
    if kind in ("stage", "partition_timings", "job_submitted", "proof_done") and not _is_int(obj["job"]):
        return f"{kind} event field 'job' must be an integer"
    if kind in ("stage", "partition_timings") and not _is_int(obj["partition"]):
        return f"{kind} event field 'partition' must be an integer"
    if "host" in obj and kind not in ("host", "session_start") and not isinstance(obj["host"], str):
        return f"{kind} event field 'host' must be a string"
    check = _CHECKS.get(kind)
    return check(obj) if check is not None else None
