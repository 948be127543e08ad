"""First-run compilation in a child process, with progress the console can keep drawing.

numba compiles while holding the GIL, so a compile inside the console's process freezes the
screen for seconds at a time. The console instead runs the engine's warm-up
(engine/warmup.py: the CPU kernels, then synthesis, cached on disk once per install) in a child
process before it builds the engine, reads the child's progress lines from a pipe, and ticks the
elapsed time at least every second while one long step runs. The engine's own warm-up then finds
the cache warm and skips. Plain Python (no Textual), tested with a real cold compile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# engine/warmup.py's steps: four kernel groups (fr vectors, ntt, g1, g2), then synthesis; each
# finished step is a line that starts with two spaces.
WARM_STEPS = 5
WARM_CODE = "from engine.warmup import ensure_warm; ensure_warm(lambda m: print(m, flush=True))"
TICK_S = 0.5


@dataclass
class Progress:
    """Where a first-run compile stands: steps done of total, the latest line, elapsed s."""

    done: int = 0
    total: int = WARM_STEPS
    line: str = ""
    elapsed: float = 0.0
    finished: bool = False
    failed: str = ""

    def text(self, width: int = 20) -> str:
        """One line: a bar with the step count, the elapsed time and what it is doing."""
        frac = min(1.0, self.done / self.total) if self.total else 0.0
        full = int(round(frac * width))
        bar = "█" * full + "░" * (width - full)
        what = self.line.strip() or "starting"
        return f"first run: compiling {bar} {self.done}/{self.total} steps · {self.elapsed:.0f} s · {what}"


def compile_in_child(report: Callable[[Progress], None], code: str = WARM_CODE,
                     total: int = WARM_STEPS, tick_s: float = TICK_S,
                     stop: threading.Event | None = None) -> Progress:
    """Run ``code`` in a child Python, calling ``report`` on every line it prints and at least
    every ``tick_s`` seconds with the elapsed time; returns the final Progress. A child that
    fails is reported (``failed``), not raised: the engine then compiles in-process as before."""
    p = Progress(total=total)
    t0 = time.monotonic()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    try:
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, env=env,
                                 stdin=subprocess.DEVNULL)
    except OSError as exc:
        p.failed = str(exc)
        report(p)
        return p
    lock = threading.Lock()
    tail: list[str] = []

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            with lock:
                tail.append(line.rstrip())
                del tail[:-5]
                if line.startswith("  "):
                    p.done = min(p.total, p.done + 1)
                p.line = line.strip()
                p.elapsed = time.monotonic() - t0
                report(p)

    reader = threading.Thread(target=read, name="sealtop-firstrun", daemon=True)
    reader.start()
    while child.poll() is None:
        if stop is not None and stop.is_set():
            child.terminate()
            child.wait()
            break
        time.sleep(tick_s)
        with lock:
            p.elapsed = time.monotonic() - t0
            report(p)
    reader.join(timeout=2)
    p.elapsed = time.monotonic() - t0
    p.finished = child.returncode == 0
    if not p.finished:
        p.failed = tail[-1] if tail else f"exit {child.returncode}"
    report(p)
    return p
