"""First-run JIT compilation, done once, in one process, with progress.

numba compiles each kernel on first use and caches it on disk. Left to itself, a fresh install's
first engine run would compile the same kernels in every worker process at once (minutes on a
small machine, with nothing on screen). The engine calls :func:`ensure_warm` before it spawns
workers: it compiles everything in this process, saying what it is doing, and leaves a stamp
keyed by the kernel sources and the interpreter so later starts skip it in milliseconds.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numba

ROOT = Path(__file__).resolve().parent.parent
# Sources whose numba functions the workers run; a change to any of them means a recompile.
_SOURCES = ("kernels/cpu", "engine/synthesis.py", "engine/circuit", "engine/groth16/sparse.py")


def _fingerprint() -> str:
    h = hashlib.sha256()
    h.update(f"{sys.version}|numba {numba.__version__}|{os.uname().machine}".encode())
    for rel in _SOURCES:
        p = ROOT / rel
        files = sorted(p.rglob("*.py")) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:24]


def _stamp_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sealtop" / "warm"


def is_warm() -> bool:
    return (_stamp_dir() / _fingerprint()).exists()


def ensure_warm(progress: Callable[[str], None] | None = None) -> float:
    """Compile the CPU kernels and synthesis once if this install has not yet; returns seconds
    spent (0.0 when already warm)."""
    if is_warm():
        return 0.0
    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    say("first run: compiling the CPU kernels (numba, cached on disk; once per install)")
    from kernels.warm import warm

    warm(log=say)
    t = time.perf_counter()
    say("first run: compiling synthesis (witness and a/b/c evaluation)")
    from engine.synthesis import bench_synth

    bench_synth("tiny")
    say(f"  synthesis {time.perf_counter() - t:.1f} s")
    secs = time.perf_counter() - t0
    say(f"first run: compiled in {secs:.1f} s")
    d = _stamp_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        (d / _fingerprint()).write_text(f"{secs:.1f}\n")
    except OSError:
        pass  # a read-only home only costs the check next time
    return secs


def main() -> int:
    """`python -m engine.warmup`: compile now (CI does this once) and print the cold-compile time."""
    from kernels.warm import warm

    t0 = time.perf_counter()
    warm(log=print)
    from engine.synthesis import bench_synth

    bench_synth("tiny")
    print(f"numba cold compile: {time.perf_counter() - t0:.1f} s (kernels and synthesis; later runs load the cache)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
