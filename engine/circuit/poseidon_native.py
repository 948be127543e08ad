"""The one native Poseidon permutation (neptune, arity 2, 8 or 11) over the storage layout, in
numba, shared by the witness interpreter (which also records every S-box wire into z) and the
batch hashing of sector trees (which does not).

The constants of every arity live in one Montgomery pool; ``meta[arity]`` gives t, R_F, R_P and
the offsets of the round constants, the MDS matrix and the domain tag in it. The Python-int
reference that tests compare against is engine/circuit/poseidon_params.py.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

from engine.circuit.poseidon_params import ARITIES, poseidon_params
from kernels.cpu.convert import to_mont_fr
from kernels.cpu.fr import FR_ZERO, fr_add, fr_load, fr_mul, fr_store


@lru_cache(maxsize=1)
def poseidon_tables() -> tuple[np.ndarray, np.ndarray]:
    """Montgomery constants of every arity in one pool, and meta[arity] = (t, R_F, R_P,
    offset of the round constants, offset of the MDS matrix, offset of the domain tag)."""
    pool: list[int] = []
    meta = np.zeros((12, 6), np.int64)
    for a in ARITIES:
        p = poseidon_params(a)
        meta[a] = (p.t, p.full_rounds, p.partial_rounds, len(pool), len(pool) + len(p.round_constants), 0)
        pool += list(p.round_constants)
        pool += [x for row in p.mds for x in row]
        meta[a, 5] = len(pool)
        pool.append(p.domain_tag)
    return to_mont_fr(pool), meta


@njit(cache=True)
def permute(s, arity, pool, meta, wires, w, record):
    """Neptune's permutation of the state ``s`` (uint64[t, 4], Montgomery; s[0] the domain tag,
    s[1..] the inputs) in place. With ``record``, (x^2, x^4, x^5) of every S-box are written to
    ``wires`` from row ``w`` on, in round order (the wires the gadget allocates). Returns the
    row after the last one written."""
    t = meta[arity, 0]
    rf = meta[arity, 1]
    rp = meta[arity, 2]
    rc_off = meta[arity, 3]
    mds_off = meta[arity, 4]
    half = rf // 2
    ns = np.empty((t, 4), np.uint64)
    for rnd in range(rf + rp):
        for i in range(t):
            fr_store(s, i, fr_add(fr_load(s, i), fr_load(pool, rc_off + rnd * t + i)))
        nsb = t if (rnd < half or rnd >= half + rp) else 1
        for i in range(nsb):
            x = fr_load(s, i)
            x2 = fr_mul(x, x)
            x4 = fr_mul(x2, x2)
            x5 = fr_mul(x4, x)
            if record:
                fr_store(wires, w, x2)
                fr_store(wires, w + 1, x4)
                fr_store(wires, w + 2, x5)
                w += 3
            fr_store(s, i, x5)
        for i in range(t):
            acc = FR_ZERO
            for j in range(t):
                acc = fr_add(acc, fr_mul(fr_load(pool, mds_off + i * t + j), fr_load(s, j)))
            fr_store(ns, i, acc)
        s[:] = ns
    return w
