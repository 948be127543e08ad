"""Whether a circuit's witness program writes every variable, so that a reused witness buffer
need not be zeroed before it runs.

Why: a synthesis worker keeps its z from one partition to the next (4.2 GB at porep-32g), and
fill_inputs zeroed it whole, on one thread, before every witness: ~0.15 s a GiB on the 2-core
machine, 13 % of c2-2KiB's witness there. Every op of the numba interpreter (witness.py) writes
its outputs unconditionally (a bit as one or zero, a field element whole, every S-box wire of a
Poseidon), so when each template's ops write all of its local slots, and the instances' locals
with the regions fill_inputs sets tile the aux variables exactly, no stale value of the last
partition survives the program. Both are checked here from the shape alone, conservatively:
anything not understood (an unknown op, an output outside the template's locals, regions that
overlap or leave a gap) answers False, and the buffer is zeroed as before.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from engine.circuit import template as T
from engine.circuit.builder import CircuitShape
from engine.circuit.poseidon_native import poseidon_tables
from engine.circuit.template import Template

_ONE_OUTPUT = (T.OP_LIN, T.OP_MUL, T.OP_XOR, T.OP_AND, T.OP_CH, T.OP_MAJ)


def outputs(t: Template, op: int) -> int:
    """How many consecutive slots op ``op`` of template ``t`` writes from its out slot (as
    witness._run_instance does); -1 for an op this module does not know."""
    code, _out, a0, _na = (int(x) for x in t.ops[op])
    if code in _ONE_OUTPUT:
        return 1
    if code in (T.OP_ADDW, T.OP_UNPACK):
        return int(t.args[a0])  # nbits
    if code == T.OP_POSEIDON:  # x^2, x^4, x^5 of every S-box (poseidon_native.permute), then the hash
        _, meta = poseidon_tables()
        width, rf, rp = (int(x) for x in meta[int(t.args[a0]), :3])
        return 3 * (rf * width + rp) + 1
    return -1


def writes_all_locals(t: Template) -> bool:
    """Whether the ops of ``t`` write every one of its local slots."""
    seen = np.zeros(t.n_loc, bool)
    for op in range(len(t.ops)):
        n = outputs(t, op)
        lo = int(t.ops[op, 1]) - 1 - t.n_in  # local index of the out slot
        if n < 0 or lo < 0 or lo + n > t.n_loc:
            return False
        seen[lo:lo + n] = True
    return bool(seen.all())


def _runs(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, lengths) of the runs of consecutive values of sorted ``idx``."""
    cut = np.flatnonzero(np.diff(idx) != 1) + 1
    first = np.concatenate([[0], cut])
    last = np.concatenate([cut - 1, [idx.size - 1]])
    return idx[first], idx[last] - idx[first] + 1


def tiles_aux(shape: CircuitShape, regions: Iterable[str]) -> bool:
    """Whether the instances' local variables and the named regions together cover the aux
    variables (after the one and the public inputs) exactly once each."""
    starts: list[np.ndarray] = []
    lens: list[np.ndarray] = []
    for st in shape.stages:
        n_loc = shape.templates[st.template].n_loc
        if n_loc and st.count:
            starts.append(np.asarray(st.bases, np.int64).reshape(-1))
            lens.append(np.full(st.count, n_loc, np.int64))
    for name in regions:
        if name not in shape.regions:
            return False  # fill_inputs refuses it in one line
        idx = np.sort(np.asarray(shape.regions[name], np.int64).reshape(-1))
        if idx.size:
            s, n = _runs(idx)
            starts.append(s)
            lens.append(n)
    lo, hi = 1 + shape.num_public, shape.num_vars
    if not starts:
        return lo == hi
    s = np.concatenate(starts)
    order = np.argsort(s, kind="stable")
    s = s[order]
    e = s + np.concatenate(lens)[order]
    return bool(s[0] == lo and e[-1] == hi and np.array_equal(s[1:], e[:-1]))


def writes_every_variable(shape: CircuitShape, regions: Iterable[str]) -> bool:
    """Whether, with the one, the public inputs and the named regions set by fill_inputs, the
    witness program writes every other variable of ``shape`` (cached on the shape)."""
    key = tuple(sorted(regions))
    cache: dict[tuple[str, ...], bool] = shape.__dict__.setdefault("_writes_every_variable", {})
    if key not in cache:
        cache[key] = all(writes_all_locals(t) for t in shape.templates) and tiles_aux(shape, key)
    return cache[key]
