"""First-run JIT compilation, done once, with progress, in the order a first run needs it.

numba compiles each kernel on first use and caches it on disk. Left to itself, a fresh install's
first engine run would compile the same kernels in every worker process at once (minutes on a
small machine, with nothing on screen). The engine calls :func:`ensure_warm` before it spawns
workers: it compiles everything in this process, saying what it is doing, and leaves a stamp
keyed by the kernel sources and the interpreter so later starts skip it in milliseconds.

The work is a list of named steps in two parts. ``first`` is what the console's first proof
needs (the tiny preset on the cpu backend: its synthesis, its key, a proof from the key file and
its check); ``rest`` is what other presets, the headless verbs and the other modes use (the
multi-threaded synthesis, the compact witness, the wide NTT, the batch-affine MSM buckets, the
MSMs over a memory-mapped key that ``prove`` runs). Each step's ``lane`` lets the first part run
as two processes at once (app/firstrun.py), one per core of a small machine. A step calls the
same functions with the same kinds of arrays (a key read back from its file is read-only, which
numba compiles apart) as the code it warms, so nothing is left to compile behind it.

Each part leaves its own stamp; :func:`is_warm` with no part means both. While a console compiles
the rest in the background it holds REST_LOCK, and an engine started meanwhile does not compile
it again in-process (:func:`ensure_warm`).

Lines said while compiling: ``compiling NAME`` as a step starts, ``  NAME  12.3 s`` (two spaces
first) as it ends; the console's first-run bar and the headless progress read them.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Sources whose numba functions the workers run; a change to any of them means a recompile.
_SOURCES = ("kernels/cpu", "engine/synthesis.py", "engine/circuit", "engine/groth16/sparse.py",
            "engine/seal", "engine/c2")
WARM_PRESET = "tiny"  # the console's first preset, the smallest porep one
PARTS = ("first", "rest")
REST_LOCK = "rest.lock"
STARTS = "compiling "  # a step's first line: STARTS + its name
PARAMS_ENV = "SEALTOP_WARM_PARAM_CACHE"  # where the first part's key+proof keeps the tiny key


@dataclass(frozen=True)
class Step:
    """One named piece of the warm-up: ``run()`` compiles (or loads) its functions."""

    name: str
    part: str  # "first" or "rest"
    lane: int  # which of the first part's two processes runs it
    run: Callable[[], None]


# ---------------------------------------------------------------------------- the steps


def _backend() -> Any:
    from kernels.backend import get_backend

    return get_backend("cpu")


def _scalars(n: int = 4) -> Any:
    import numpy as np

    from kernels.cpu.convert import to_mont_fr

    base = to_mont_fr([3, 5, 7, 11])
    return np.ascontiguousarray(np.tile(base, (max(1, n // 4), 1)))


def _readonly(a: Any) -> Any:
    """A read-only copy: what a memory-mapped key section is to numba (its own specialization)."""
    import numpy as np

    out = np.array(a)
    out.setflags(write=False)
    return out


def _fr_ntt() -> None:
    be = _backend()
    s = _scalars()
    be.fr_add(s, s), be.fr_sub(s, s), be.fr_mul(s, s), be.fr_batch_inv(s)
    for inverse in (False, True):
        for coset in (False, True):
            be.ntt(s, inverse=inverse, coset=coset)


def _points(group: str) -> tuple[Any, Any]:
    from kernels.constants import G1_GEN, G2_GEN
    from kernels.cpu.convert import g1_to_storage, g2_to_storage

    be = _backend()
    s = _scalars()
    if group == "g1":
        return be.fixed_base_g1(g1_to_storage([G1_GEN])[0], s), s
    return be.fixed_base_g2(g2_to_storage([G2_GEN])[0], s), s


def _msm(group: str, readonly: bool, batch: int) -> None:
    from kernels.cpu.msm import msm_g1, msm_g2

    points, s = _points(group)
    msm = msm_g1 if group == "g1" else msm_g2
    msm(_readonly(points) if readonly else points, s, c=11, batch=batch)


def _g1_first() -> None:
    """The fixed-base tables setup makes, and the XYZZ buckets over a key's read-only points."""
    _msm("g1", readonly=True, batch=0)


def _g2_msm_first() -> None:
    """B in G2 over the key's resident (copied) table: points made without the fixed-base
    kernels, so this lane does not compile those again beside the lane that does."""
    import numpy as np

    from kernels.constants import G2_GEN
    from kernels.cpu.convert import g2_to_storage
    from kernels.cpu.msm import msm_g2

    points = np.ascontiguousarray(g2_to_storage([G2_GEN] * 4))
    msm_g2(points, _scalars(), c=11, batch=0)


def _g2_first() -> None:
    """The fixed-base tables setup makes in G2."""
    _points("g2")


def _synthesis_first() -> None:
    """One partition of the preset as a synthesis worker makes it: the circuit read back from
    its cache (read-only arrays), the witness, a, b, c by the evaluation plan."""
    import numpy as np

    from engine.pipeline.circuits import resolve
    from engine.synthesis import eval_plan, evaluate

    with tempfile.TemporaryDirectory(prefix="sealtop-warm-") as d:
        c = resolve.__wrapped__(WARM_PRESET, d)  # not the per-process cache: a fresh build
        c = resolve.__wrapped__(WARM_PRESET, d)  # and read back, as every later process has it
        r = c.r1cs
        z = np.empty((r.num_vars, 4), np.uint64)
        c.witness(1, 0, 1, z)
        n = r.num_constraints
        a, b, cc = (np.empty((n, 4), np.uint64) for _ in range(3))
        evaluate(r, z, out=(a, b, cc), plan=eval_plan(r))


def _key_and_proof_first() -> None:
    """What the cpu prover does with the preset next: make its key and write it, load it back
    from the file, prove (H, the MSMs over the read-only key) and check the proof. The witness
    is left at zero: synthesis is the other lane's, and any a, b, c take the same paths."""
    import numpy as np

    from engine.pipeline import proving
    from engine.pipeline.circuits import circuit_cache_dir, resolve

    be = _backend()
    with tempfile.TemporaryDirectory(prefix="sealtop-warm-") as tmp:
        # the console's own key cache when it says so: the key made here is the one its engine
        # then loads instead of running setup again (the same seed, the same file)
        d = os.environ.get(PARAMS_ENV) or tmp
        c = resolve.__wrapped__(WARM_PRESET, circuit_cache_dir(Path(d)))
        r = c.r1cs
        z = np.zeros((r.num_vars, 4), np.uint64)
        a, b, cc = (np.zeros((r.num_constraints, 4), np.uint64) for _ in range(3))
        path, vk = proving.ensure_key(c, Path(d), "cpu")
        key = proving.load_key(str(path), be)
        proof = proving.finish(proving.start(key, a, b, cc, z, be), "auto", key)
        proving.verify(vk, proving.public_inputs(r.num_inputs, z), proof)  # its pairing code


def _ntt_wide() -> None:
    """2^15 takes the NTT's paths past its cache-sized blocks (the flat and paired stages)."""
    import numpy as np

    be = _backend()
    be.ntt(np.tile(_scalars(), (1 << 13, 1)))


def _msm_buckets() -> None:
    """Every MSM bucket kernel over both kinds of points: XYZZ and batch-affine, the points in
    memory (setup, benchmarks) and read back from a key file (``prove``, larger presets)."""
    for group in ("g1", "g2"):
        for readonly in (False, True):
            for batch in (0, 256):
                _msm(group, readonly, batch)


def _synthesis_rest() -> None:
    """The multi-threaded synthesis variants (each its own numba function), the satisfaction
    check, and abc_eval = "gpu": the compact witness and its evaluation on the host."""
    import numpy as np

    from engine.circuit.porep import build_porep, generate_partitions
    from engine.groth16.compact import (
        WitnessLayout,
        compact_r1cs,
        compact_witness,
        evaluate_abc_host,
        read_compact,
        write_compact,
    )
    from engine.synthesis import (
        alloc_abc,
        eval_plan,
        general_capacity,
        is_satisfied,
        synthesize_partition,
    )

    shape = build_porep(WARM_PRESET)
    r = shape.r1cs
    _, parts = generate_partitions(WARM_PRESET, 1)
    z = np.empty((r.num_vars, 4), np.uint64)
    synthesize_partition(shape, parts[0], z, alloc_abc(r), eval_plan(r))
    synthesize_partition(shape, parts[0], np.empty_like(z), alloc_abc(r), eval_plan(r),
                         parallel=True)
    is_satisfied(r, z, parallel=True)
    is_satisfied(r, z, parallel=False)
    layout = WitnessLayout(r.num_vars, general_capacity(shape))
    words = np.zeros(layout.words, np.uint64)
    write_compact(z, words, layout)
    compact_witness(z)
    abc = np.empty((3, 1 << (r.num_constraints - 1).bit_length(), 4), np.uint64)
    evaluate_abc_host(compact_r1cs(r), read_compact(words, layout), abc)


def _c2_input() -> None:
    """What the dispatcher runs before a C2 job's first partition can start: a synthetic
    sector's C1 output (the SDR graph's parents, labels, Poseidon trees), a partition's share of
    it and the verifier's public inputs. Left cold, the first job of a fresh install compiled
    them on its critical path (16.5 s on a 2-core machine)."""
    from engine.c2.assign import Partition
    from engine.c2.public import Statement, public_inputs
    from engine.c2.synthetic import synthetic_c1
    from engine.seal.registry import seal_proof

    proof = seal_proof("StackedDrg2KiBV1_1")
    prover = bytes(32)
    c1 = synthetic_c1(proof, 1, prover_id=prover)
    statement = Statement(proof, prover, 1, c1.ticket, c1.seed, c1.comm_d, c1.comm_r)
    public_inputs(statement, 0)
    Partition.of_c1(c1, 0)


def _prove_verb() -> None:
    """`sealtop setup` then `sealtop prove` of a chain: the key made in memory and written, read
    back memory-mapped (read-only sections), the proof with its precheck, and its check."""
    from engine.groth16.examples import chain_for_constraints, public_inputs
    from engine.groth16.keyfile import load_proving_key, save_proving_key
    from engine.groth16.prove import prove
    from engine.groth16.setup import setup
    from engine.groth16.verify import verify
    from engine.groth16.vkey import verifying_key

    be = _backend()
    circuit = chain_for_constraints(1 << 10)
    with tempfile.TemporaryDirectory(prefix="sealtop-warm-") as d:
        path = Path(d) / "chain.pk"
        save_proving_key(setup(circuit.r1cs, "warm-up", be), path)
        pk = load_proving_key(path)
        z = circuit.witness(12345)
        proof = prove(pk, circuit.r1cs, z, be, precheck=True, timings={})
        if not verify(verifying_key(pk), public_inputs(circuit.r1cs, z), proof):
            raise RuntimeError("the warm-up's proof of a chain did not verify")


STEPS: tuple[Step, ...] = (
    Step("fr+ntt", "first", 0, _fr_ntt),
    Step("g1", "first", 0, _g1_first),
    Step("g2", "first", 1, _g2_first),
    Step("g2 msm", "first", 0, _g2_msm_first),
    Step("synthesis", "first", 1, _synthesis_first),
    Step("key+proof", "first", 0, _key_and_proof_first),
    Step("wide ntt", "rest", 0, _ntt_wide),
    Step("msm buckets", "rest", 0, _msm_buckets),
    Step("synthesis+", "rest", 0, _synthesis_rest),
    Step("c2 input", "rest", 0, _c2_input),
    Step("prove", "rest", 0, _prove_verb),
)


def steps(part: str | None = None, lane: int | None = None) -> list[Step]:
    """The steps of ``part`` (None: all), of one lane of it (None: every lane), in order."""
    return [s for s in STEPS if (part is None or s.part == part) and (lane is None or s.lane == lane)]


def lanes(part: str) -> list[int]:
    return sorted({s.lane for s in steps(part)})


# ---------------------------------------------------------------------------- stamps


def _fingerprint() -> str:
    from importlib.metadata import version

    h = hashlib.sha256()
    h.update(f"{sys.version}|numba {version('numba')}|{os.uname().machine}".encode())
    for rel in _SOURCES:
        p = ROOT / rel
        files = sorted(p.rglob("*.py")) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    h.update(",".join(f"{s.name}:{s.part}" for s in STEPS).encode())
    return h.hexdigest()[:24]


def _stamp_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sealtop" / "warm"


def _stamp(part: str) -> Path:
    fp = _fingerprint()
    return _stamp_dir() / (fp if part == "rest" else f"{fp}.{part}")


def is_warm(part: str | None = None) -> bool:
    """Whether ``part`` has been compiled on this install (None: both parts)."""
    if part is None:
        return all(_stamp(p).exists() for p in PARTS)
    return _stamp(part).exists()


def mark_warm(part: str, secs: float) -> None:
    d = _stamp_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        _stamp(part).write_text(f"{secs:.1f}\n")
    except OSError:
        pass  # a read-only home only costs the check next time


def rest_compiling_elsewhere() -> bool:
    """Whether another process holds REST_LOCK: the console compiling the rest meanwhile."""
    try:
        fd = os.open(_stamp_dir() / REST_LOCK, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops a lock taken here
    return False


def hold_rest_lock() -> int | None:
    """Take REST_LOCK for this process's life (the kernel drops it when the process ends);
    its descriptor, or None where it cannot be taken."""
    d = _stamp_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd = os.open(d / REST_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return None
    return fd


# ---------------------------------------------------------------------------- running them


def run_steps(todo: list[Step], say: Callable[[str], None]) -> float:
    """Run ``todo`` in order, saying each step's start and end; the seconds it took."""
    t0 = time.perf_counter()
    for step in todo:
        say(f"{STARTS}{step.name}")
        t = time.perf_counter()
        step.run()
        say(f"  {step.name:<10} {time.perf_counter() - t:6.1f} s")
    return time.perf_counter() - t0


def compile_all(say: Callable[[str], None]) -> float:
    """Compile (or load from numba's on-disk cache) every numba function the engine, the
    headless verbs and the console's first run use; the seconds it took."""
    import numpy as np

    with np.errstate(all="ignore"):
        return run_steps(steps(), say)


def compile_part(part: str, say: Callable[[str], None], lane: int | None = None) -> float:
    """Compile one part (or one lane of it) and, for a whole part, stamp it."""
    import numpy as np

    with np.errstate(all="ignore"):
        secs = run_steps(steps(part, lane), say)
    if lane is None:
        mark_warm(part, secs)
    return secs


def ensure_warm(progress: Callable[[str], None] | None = None) -> float:
    """Compile what this install has not yet (both parts; not the rest while a console
    compiles it elsewhere); returns seconds spent (0.0 when there was nothing to do)."""
    todo = [p for p in PARTS if not is_warm(p)]
    if todo == ["rest"] and rest_compiling_elsewhere():
        return 0.0
    if not todo:
        return 0.0
    say = progress or (lambda _m: None)
    say("first run: compiling the CPU kernels and synthesis (numba, cached on disk; once per install)")
    secs = 0.0
    for part in todo:
        secs += compile_part(part, say)
    say(f"first run: compiled in {secs:.1f} s")
    return secs


def main(argv: list[str] | None = None) -> int:
    """`python -m engine.warmup`: compile now (CI does this once) and print the cold-compile time;
    ``--part first|rest [--lane N]`` compiles one part (the console's first run uses it)."""
    from kernels.textfmt import OneLineParser

    p = OneLineParser(prog="python -m engine.warmup", description=(
        "Compile (or load from numba's cache) every numba function the engine, its workers and "
        "the headless verbs run, and print how long it took."))
    p.add_argument("--part", choices=PARTS, help="only this part (first: what the console's "
                   "first proof needs; rest: everything else), stamped when done")
    p.add_argument("--lane", type=int, choices=(0, 1), help="only this lane of the part (not stamped)")
    a = p.parse_args(argv)
    if a.lane is not None and a.part is None:
        p.error("--lane needs --part")
    if a.part is not None:
        secs = compile_part(a.part, lambda m: print(m, flush=True), a.lane)
        print(f"numba cold compile ({a.part}{'' if a.lane is None else f', lane {a.lane}'}): "
              f"{secs:.1f} s", flush=True)
        return 0
    secs = compile_all(lambda m: print(m, flush=True))
    for part in PARTS:
        mark_warm(part, secs)
    print(f"numba cold compile: {secs:.1f} s (kernels and synthesis; later runs load the cache)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
