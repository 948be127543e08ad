"""How quickly a thread that was woken by the other process gets to run.

Every handoff between the orchestrator and a prover (a task out, gpu_done back) ends with a
thread waking from a pipe read and taking the GIL. With CPython's default switch interval of
5 ms, a thread that wakes while another thread of its process runs Python code (a prover slot
launching kernels, the finalize half, the session writer) waits up to 5 ms for the GIL, and
every hop of a handoff can pay that again. Those waits sit inside the GPU wrapper's interval and
outside its kernels. The orchestrator and every prover therefore ask for a short interval:
CPU-bound threads then give the GIL up every SWITCH_INTERVAL_S instead.

`python scripts/handoff_latency.py` times a task/reply round trip between two processes that
each run one busy Python thread. On the 2-core machine (median of 200): 10.4 ms at the default,
1.3 ms at 0.5 ms, 0.7 ms at 0.2 ms; 0.06 ms with no busy thread.

In the headless benchmark at `large` on the H200 the setting made no difference that shows
(dispatch and return stayed under 1 ms a partition either way, docs/BENCHMARKS.md): its
orchestrator's threads are mostly idle. It is for processes whose other threads are busy, such
as the console, where the orchestrator shares the process with Textual's rendering.

SEALTOP_SWITCH_INTERVAL_MS overrides the value (0 or less leaves CPython's default), so the
benchmark can compare both in one machine session.
"""

from __future__ import annotations

import os
import sys

SWITCH_INTERVAL_S = 0.0002


def switch_interval_s() -> float | None:
    """The interval to use, or None to leave the interpreter's own setting."""
    raw = os.environ.get("SEALTOP_SWITCH_INTERVAL_MS")
    if raw is None:
        return SWITCH_INTERVAL_S
    try:
        ms = float(raw)
    except ValueError:
        return SWITCH_INTERVAL_S
    return ms / 1000.0 if ms > 0 else None


def quicken_handoffs() -> float:
    """Apply the interval to this process; returns the interval now in force, in seconds."""
    s = switch_interval_s()
    if s is not None:
        sys.setswitchinterval(s)
    return sys.getswitchinterval()

