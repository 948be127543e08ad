"""Synthesis: witness, then a = A·z, b = B·z, c = C·z into preallocated buffers.

The evaluation is a sparse matrix-vector product per matrix, one row per constraint, rows in
parallel (numba prange). Two fast paths keep it close to pure memory traffic:
- per variable, a flag says whether its value is 0 (skip), 1 (add the coefficient as it is) or
  general; most of a PoRep witness is bits;
- per nonzero, a tag says whether the coefficient is +1 or −1 (add or subtract the value) or
  general (one Montgomery multiplication).
The output buffers may be views of shared memory: nothing here allocates them unless asked.

With abc_eval = "gpu" synthesis stops at the witness: :func:`synthesize_to_segment` writes its
compact form (engine.groth16.compact) into the partition's one segment, sized from the circuit
by :func:`general_capacity`, and the prover evaluates a, b, c where H runs.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit, prange

from engine.groth16.compact import WitnessLayout, classify_values, value_kinds
from engine.groth16.r1cs import CSR, R1CS
from kernels.cpu.convert import to_mont_fr
from kernels.cpu.fr import FR_ONE, FR_ZERO, fr_add, fr_eq, fr_load, fr_mul, fr_store, fr_sub

_ONE = np.array(FR_ONE, np.uint64)
_NEG_ONE = to_mont_fr([-1])[0]


def value_flags(z: np.ndarray, flags: np.ndarray, parallel: bool | None = None) -> None:
    """flags[i] = 0 if z[i] == 0, 1 if z[i] == 1, else 2. ``parallel``: the multi-threaded
    variant or not; None picks by size (:data:`PARALLEL_MIN_ROWS`)."""
    if parallel is None:
        parallel = len(z) >= PARALLEL_MIN_ROWS
    if parallel:
        classify_values(z, flags)
    else:
        value_kinds(z, flags, 0, len(z))


@njit(cache=True, parallel=True)
def _coef_tags(data, one, neg_one, tags):
    for k in prange(data.shape[0]):
        if data[k, 0] == one[0] and data[k, 1] == one[1] and data[k, 2] == one[2] and data[k, 3] == one[3]:
            tags[k] = 1
        elif (
            data[k, 0] == neg_one[0] and data[k, 1] == neg_one[1]
            and data[k, 2] == neg_one[2] and data[k, 3] == neg_one[3]
        ):
            tags[k] = 2
        else:
            tags[k] = 0


def coef_tags(m: CSR) -> np.ndarray:
    """Per nonzero: 1 for a +1 coefficient, 2 for −1, 0 otherwise (once per circuit)."""
    tags = np.empty(m.nnz, np.int8)
    if m.nnz:
        _coef_tags(np.asarray(m.data), _ONE, _NEG_ONE, tags)
    return tags


@njit(cache=True, inline="always")
def _row(indptr, indices, data, tags, flags, z, r):
    acc = FR_ZERO
    for k in range(indptr[r], indptr[r + 1]):
        col = indices[k]
        f = flags[col]
        if f == 0:
            continue
        if f == 1:
            acc = fr_add(acc, fr_load(data, k))
            continue
        t = tags[k]
        if t == 1:
            acc = fr_add(acc, fr_load(z, col))
        elif t == 2:
            acc = fr_sub(acc, fr_load(z, col))
        else:
            acc = fr_add(acc, fr_mul(fr_load(data, k), fr_load(z, col)))
    return acc


@njit(cache=True, parallel=True)
def _spmv(indptr, indices, data, tags, flags, z, out):
    for r in prange(indptr.shape[0] - 1):
        fr_store(out, r, _row(indptr, indices, data, tags, flags, z, r))


@njit(cache=True)
def _spmv_serial(indptr, indices, data, tags, flags, z, out):
    # below PARALLEL_MIN_ROWS only: _row inlined here keeps numba's reference counts of its
    # arrays in the loop (~1 ms more at 2^15 rows), which the parallel loop does not; one row
    # body for both is worth more than that millisecond
    for r in range(indptr.shape[0] - 1):
        fr_store(out, r, _row(indptr, indices, data, tags, flags, z, r))


PARALLEL_MIN_ROWS = 1 << 15  # below this one thread is faster than a parallel launch


@dataclass
class EvalPlan:
    """Per-matrix coefficient tags, computed once per circuit and reused for every witness."""

    tags: tuple[np.ndarray, np.ndarray, np.ndarray]


def eval_plan(r: R1CS) -> EvalPlan:
    """The circuit's coefficient tags. When the matrices are memory-mapped from a circuit cache
    entry (engine.circuit.cache.load_shape), the tags are kept in that entry too and mapped:
    every synthesis worker then shares one copy in the page cache (1 B per nonzero: 0.72 GiB of
    anonymous memory per worker at porep-32g otherwise) and only the first process ever makes
    them."""
    return EvalPlan((_cached_tags(r.A, "A"), _cached_tags(r.B, "B"), _cached_tags(r.C, "C")))


def _cached_tags(m: CSR, name: str) -> np.ndarray:
    """coef_tags(m), read from ``{name}_tags.npy`` beside the mapped matrix when it is there
    (made and saved there when not); plain coef_tags where the matrix is not a mapped file or
    the entry cannot be written."""
    filename = getattr(m.data, "filename", None)
    if not filename or not m.nnz:
        return coef_tags(m)
    path = Path(filename).with_name(f"{name}_tags.npy")
    try:
        tags = np.load(path, mmap_mode="r")
        if tags.shape == (m.nnz,) and tags.dtype == np.int8:
            return tags
    except (OSError, ValueError):  # not made yet (or unreadable): make it
        pass
    tags = coef_tags(m)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:  # written whole under another name, then renamed: a reader never sees half a file
        with open(tmp, "wb") as f:
            np.save(f, tags)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        return tags
    return np.load(path, mmap_mode="r")


def alloc_abc(r: R1CS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = r.num_constraints
    return tuple(np.empty((n, 4), np.uint64) for _ in range(3))  # type: ignore[return-value]


def evaluate(
    r: R1CS,
    z: np.ndarray,
    out: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    plan: EvalPlan | None = None,
    flags: np.ndarray | None = None,
    parallel: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a = A·z, b = B·z, c = C·z (Fr Montgomery, uint64[constraints, 4] each) into ``out``.
    ``parallel``: the multi-threaded variants or not; None picks by the number of constraints
    (:data:`PARALLEL_MIN_ROWS`), below which one thread is faster."""
    if z.shape != (r.num_vars, 4) or z.dtype != np.uint64:
        raise ValueError(f"witness must be uint64[{r.num_vars}, 4], got {z.dtype}{list(z.shape)}")
    if out is None:
        out = alloc_abc(r)
    for o in out:
        if o.shape != (r.num_constraints, 4) or o.dtype != np.uint64:
            raise ValueError(f"evaluation buffers must be uint64[{r.num_constraints}, 4]")
    plan = plan or eval_plan(r)
    if flags is None:
        flags = np.empty(r.num_vars, np.int8)
        value_flags(z, flags, parallel)
    if parallel is None:
        parallel = r.num_constraints >= PARALLEL_MIN_ROWS
    spmv = _spmv if parallel else _spmv_serial
    for m, tags, o in zip((r.A, r.B, r.C), plan.tags, out):
        spmv(m.indptr, m.indices, m.data, tags, flags, z, o)
    return out


@njit(cache=True)
def first_unsatisfied(a, b, c):
    """Index of the first row with a·b != c, or -1."""
    for i in range(a.shape[0]):
        if not fr_eq(fr_mul(fr_load(a, i), fr_load(b, i)), fr_load(c, i)):
            return i
    return -1


def is_satisfied(r: R1CS, z: np.ndarray, parallel: bool | None = None) -> bool:
    """Whether ``z`` satisfies every constraint (``parallel`` as for :func:`evaluate`)."""
    a, b, c = evaluate(r, z, parallel=parallel)
    return first_unsatisfied(a, b, c) < 0


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def now_ms() -> float:
    return time.perf_counter() * 1000.0


def bench_synth(preset: str, cache_dir: str | None = None, seed: int = 1, repeats: int = 1) -> dict:
    """Synthesize one partition of ``preset`` and report its figures: constraints, variables,
    nonzeros, the 0/1 share of the aux witness, witness ms, eval ms (best of ``repeats``, after
    a warm-up round that also compiles), constraints per second per core, bytes per constraint,
    and the process's peak RSS."""
    import numba

    from engine.circuit.porep import build_porep, generate_partitions

    if repeats < 1:
        raise ValueError("bench synth: repeats must be at least 1")
    t0 = now_ms()
    shape = build_porep(preset, cache_dir)
    build_ms = now_ms() - t0
    r = shape.r1cs
    _, parts = generate_partitions(preset, seed)
    plan = eval_plan(r)
    z = np.empty((r.num_vars, 4), np.uint64)
    abc = alloc_abc(r)
    # the first round warms up (JIT, page faults) and is not counted
    rounds = [synthesize_partition(shape, parts[0], z, abc, plan) for _ in range(repeats + 1)][1:]
    best = min(rounds, key=lambda syn: syn.witness_ms + syn.eval_ms)
    n = r.num_constraints
    cores = numba.get_num_threads()
    total_s = (best.witness_ms + best.eval_ms) / 1000.0
    held = 3 * abc[0].nbytes + z.nbytes
    return {
        "preset": preset,
        "constraints": n,
        "variables": r.num_vars,
        "nonzeros": r.nnz,
        "aux_01_share": best.aux_01_share,
        "build_ms": build_ms,
        "from_cache": shape.from_cache,
        "witness_ms": best.witness_ms,
        "eval_ms": best.eval_ms,
        "threads": cores,
        "constraints_per_s_per_core": n / total_s / cores if total_s > 0 else float("inf"),
        "bytes_per_constraint": held / n,
        "partition_bytes": held,
        "peak_rss_bytes": peak_rss_bytes(),
        "satisfied": bool(first_unsatisfied(*abc) < 0),
    }


@dataclass
class Synthesis:
    """One synthesized partition: its public inputs, witness, a/b/c and the figures."""

    public: list[int]
    z: np.ndarray
    abc: tuple[np.ndarray, np.ndarray, np.ndarray]
    constraints: int
    variables: int
    nonzeros: int
    aux_01_share: float
    witness_ms: float
    eval_ms: float


def synthesize_partition(
    shape,
    part,
    z: np.ndarray | None = None,
    abc: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    plan: EvalPlan | None = None,
    parallel: bool | None = None,
) -> Synthesis:
    """Witness then evaluation of one porep partition, into ``z`` and ``abc`` when given
    (preallocated, e.g. shared memory) or fresh arrays. ``plan`` (from :func:`eval_plan`) can
    be kept per circuit and reused. ``parallel``: the multi-threaded variants of every step or
    not; None (what the engine runs) picks each by its size."""
    from engine.circuit.porep import porep_witness

    r = shape.r1cs
    t0 = now_ms()
    public, z = porep_witness(shape, part, z, parallel)
    t1 = now_ms()
    flags = np.empty(r.num_vars, np.int8)
    value_flags(z, flags, parallel)
    abc = evaluate(r, z, abc, plan, flags, parallel)
    t2 = now_ms()
    aux = flags[r.num_inputs :]
    return Synthesis(
        public, z, abc, r.num_constraints, r.num_vars, r.nnz,
        float(np.count_nonzero(aux < 2) / max(len(aux), 1)), t1 - t0, t2 - t1,
    )


# -- abc_eval = "gpu": the witness alone, sent in compact form --------------------------------
# Witness-program opcodes whose outputs are bits (engine/circuit/template.py): XOR, AND, CH and
# MAJ write one bit at ``out``; ADDW and UNPACK write ``args[a0]`` bits from ``out``.
_ONE_BIT_OPS = (2, 3, 4, 5)
_MANY_BIT_OPS = (6, 7)


def template_bit_slots(t) -> int:
    """How many local slots of template ``t`` only bit operations write (always 0 or 1)."""
    bits: set[int] = set()
    other: set[int] = set()
    for code, out, a0, _na in np.asarray(t.ops).tolist():
        if code in _ONE_BIT_OPS:
            bits.add(out)
        elif code in _MANY_BIT_OPS:
            bits.update(range(out, out + int(t.args[a0])))
        else:
            other.add(out)
    return len(bits - other)


def general_capacity(shape) -> int:
    """The most variables of a witness of this circuit shape that can be neither 0 nor 1: all
    but those only a bit operation writes (the public inputs, the job's free values and every
    field-valued slot count). The compact witness's segment reserves exactly this many general
    values (engine.groth16.compact.WitnessLayout), so its size is known from the circuit."""
    per_template = [template_bit_slots(t) for t in shape.templates]
    bit_vars = sum(st.count * per_template[st.template] for st in shape.stages)
    return int(shape.num_vars - bit_vars)


def synthesize_compact(witness, r: R1CS, z: np.ndarray, words: np.ndarray, layout,
                       known: np.ndarray | None = None) -> tuple[float, float, int]:
    """abc_eval = "gpu"'s synthesis: ``witness(z)`` fills the worker's own buffer ``z`` (no
    a, b, c are evaluated here), and ``known`` where the circuit keeps bits apart (the
    witness's own, passed to it by the caller), then its compact form is written into the
    segment words ``words`` laid out by ``layout``. Returns (witness ms, compaction ms, general
    values)."""
    from engine.groth16.compact import write_compact

    if z.shape != (r.num_vars, 4) or z.dtype != np.uint64:
        raise ValueError(f"witness buffer must be uint64[{r.num_vars}, 4], got {z.dtype}{list(z.shape)}")
    t0 = now_ms()
    witness(z)
    t1 = now_ms()
    g = write_compact(z, words, layout, known)
    return t1 - t0, now_ms() - t1, g


def compact_layout(circuit) -> WitnessLayout:
    """The compact witness segment's layout for a pipeline circuit (engine.pipeline.circuits):
    its ``general_capacity`` where the preset knows one (porep), else every variable."""
    nv = circuit.r1cs.num_vars
    cap = getattr(circuit, "general_capacity", None)
    return WitnessLayout(nv, nv if cap is None else int(cap))


def synthesize_to_segment(circuit, seed: int, partition: int, partitions: int, words: np.ndarray,
                          buffers: dict[str, np.ndarray], source: Any = None,
                          inputs: Any = None) -> tuple[float, float]:
    """A synthesis worker's task with abc_eval = "gpu": the witness into the worker's own z and
    known bits (kept in ``buffers`` for the next partition of the same circuit, the last
    circuit's only), its compact form into the segment ``words``. Returns (witness ms,
    compaction ms)."""
    nv = circuit.r1cs.num_vars
    z = buffers.get(circuit.name)
    if z is None or z.shape[0] != nv:
        buffers.clear()
        z = buffers[circuit.name] = np.empty((nv, 4), np.uint64)
        buffers[circuit.name + "/known"] = np.full(nv, 2, np.uint8)  # nothing known apart yet
    known = buffers[circuit.name + "/known"]
    w_ms, c_ms, _ = synthesize_compact(
        lambda out: circuit.witness(seed, partition, partitions, out, source, inputs, known=known), circuit.r1cs,
        z, words, compact_layout(circuit), known,
    )
    return w_ms, c_ms
