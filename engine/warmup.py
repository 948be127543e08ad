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
from typing import Any

import numba

ROOT = Path(__file__).resolve().parent.parent
# Sources whose numba functions the workers run; a change to any of them means a recompile.
_SOURCES = ("kernels/cpu", "engine/synthesis.py", "engine/circuit", "engine/groth16/sparse.py")
WARM_PRESET = "tiny"  # the smallest porep preset: every synthesis function, in a second or two


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


def compile_all(say: Callable[[str], None]) -> float:
    """Compile (or load from numba's on-disk cache) every numba function the workers run and
    return the seconds it took: the CPU kernels on tiny inputs (kernels.warm), then one witness
    and a/b/c evaluation of the smallest preset's first partition, which is each synthesis
    function called once. Each finished step is a line that starts with two spaces (the
    console's first-run bar counts them)."""
    from kernels.warm import warm

    t0 = time.perf_counter()
    warm(log=say)
    t = time.perf_counter()
    shape, z = _compile_synthesis()
    say(f"  {'synthesis':<10} {time.perf_counter() - t:6.1f} s")
    t = time.perf_counter()
    _compile_key_and_proof(shape, z)
    say(f"  {'key+proof':<10} {time.perf_counter() - t:6.1f} s")
    return time.perf_counter() - t0


def _compile_synthesis() -> tuple[Any, Any]:
    """One partition of the smallest preset synthesized (and its a/b/c evaluated both ways);
    returns the circuit and its witness."""
    import numpy as np

    from engine.circuit.porep import build_porep, generate_partitions
    from engine.synthesis import alloc_abc, eval_plan, synthesize_partition

    shape = build_porep(WARM_PRESET)
    r = shape.r1cs
    _, parts = generate_partitions(WARM_PRESET, 1)
    z = np.empty((r.num_vars, 4), np.uint64)
    synthesize_partition(shape, parts[0], z, alloc_abc(r), eval_plan(r))
    # what every preset past tiny runs: the multi-threaded variants (each a numba function of
    # its own to compile), which a tiny input left to its size would never take
    synthesize_partition(shape, parts[0], np.empty_like(z), alloc_abc(r), eval_plan(r),
                         parallel=True)
    # abc_eval = "gpu": the compact witness (synthesis side), the matrices and their
    # evaluation into H's input (the prover side on the cpu backend)
    from engine.groth16.compact import (
        WitnessLayout,
        compact_r1cs,
        compact_witness,
        evaluate_abc_host,
        read_compact,
        write_compact,
    )
    from engine.synthesis import general_capacity

    layout = WitnessLayout(r.num_vars, general_capacity(shape))
    words = np.zeros(layout.words, np.uint64)
    write_compact(z, words, layout)
    compact_witness(z)
    abc = np.empty((3, 1 << (r.num_constraints - 1).bit_length(), 4), np.uint64)
    evaluate_abc_host(compact_r1cs(r), read_compact(words, layout), abc)
    return shape, z


def _compile_key_and_proof(shape: Any, z: Any) -> None:
    """What a first run does next on the cpu backend: make the preset's key (the QAP, the
    fixed-base tables), check the witness, prove and verify-encode the proof."""
    from engine.groth16.prove import prove
    from engine.groth16.setup import setup
    from engine.groth16.vkey import verifying_key
    from engine.synthesis import is_satisfied
    from kernels.backend import get_backend

    be = get_backend("cpu")
    r = shape.r1cs
    is_satisfied(r, z, parallel=True)
    pk = setup(r, "warm-up", be)
    verifying_key(pk)
    prove(pk, r, z, be)


def ensure_warm(progress: Callable[[str], None] | None = None) -> float:
    """Compile the CPU kernels and synthesis once if this install has not yet; returns seconds
    spent (0.0 when already warm)."""
    if is_warm():
        return 0.0
    say = progress or (lambda _m: None)
    say("first run: compiling the CPU kernels and synthesis (numba, cached on disk; once per install)")
    secs = compile_all(say)
    say(f"first run: compiled in {secs:.1f} s")
    d = _stamp_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        (d / _fingerprint()).write_text(f"{secs:.1f}\n")
    except OSError:
        pass  # a read-only home only costs the check next time
    return secs


def main(argv: list[str] | None = None) -> int:
    """`python -m engine.warmup`: compile now (CI does this once) and print the cold-compile time."""
    from kernels.textfmt import OneLineParser

    OneLineParser(prog="python -m engine.warmup", description=(
        "Compile (or load from numba's cache) every numba function the engine's workers run, "
        "and print how long it took.")).parse_args(argv)
    secs = compile_all(print)
    print(f"numba cold compile: {secs:.1f} s (kernels and synthesis; later runs load the cache)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
