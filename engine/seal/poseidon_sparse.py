"""Neptune's Poseidon in its optimised form (the Poseidon paper's appendix B, as neptune hashes
natively): the same function as engine/circuit/poseidon_params.py's reference, with a partial
round costing about 2t multiplications instead of t^2. A sector's trees are millions of these
hashes, so this is their batch path; the circuit keeps the plain form (engine/circuit).

Two equivalences, derived here from the plain constants in Python ints:
- In a partial round only state[0] goes through the S-box, so the other elements' round
  constants can be added after it instead; pushed through the MDS matrix they join the next
  round's constants. Every partial round then adds one scalar, and the last carry joins the
  first full round after them.
- Each partial round's matrix N (the MDS matrix, times what the round after it passed back)
  factors as N = A * B, B = diag(1, N[1:, 1:]) and A = [[N00, N[0, 1:] B^-1], [N[1:, 0], I]]
  sparse. B commutes with the partial S-box and with adding to state[0], so it moves into the
  round before; the first partial round's B lands in the last full round before them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from numba import njit, prange

from engine.circuit.poseidon_params import ARITIES, poseidon_params
from kernels.constants import R_MOD
from kernels.cpu.convert import to_mont_fr
from kernels.cpu.fr import FR_ZERO, fr_add, fr_load, fr_mul, fr_store

Matrix = list[list[int]]


@dataclass(frozen=True)
class SparseConstants:
    """The optimised constants of one arity, canonical ints mod r."""

    arity: int
    t: int
    full_rounds: int
    partial_rounds: int
    domain_tag: int
    full_constants: tuple[tuple[int, ...], ...]  # one t-vector per full round, in order
    partial_constants: tuple[int, ...]  # one scalar (for state[0]) per partial round
    mds: tuple[tuple[int, ...], ...]
    pre_sparse: tuple[tuple[int, ...], ...]  # the last first-half full round's matrix
    sparse_rows: tuple[tuple[int, ...], ...]  # per partial round: A[0, 0..t-1]
    sparse_cols: tuple[tuple[int, ...], ...]  # per partial round: A[1..t-1, 0] (index 0 unused: 0)


def matmul_mod_r(a: Matrix, b: Matrix) -> Matrix:
    """The product a b of matrices over Fr (Python ints)."""
    n, k, m = len(a), len(b), len(b[0])
    return [[sum(a[i][x] * b[x][j] for x in range(k)) % R_MOD for j in range(m)] for i in range(n)]


def _matvec(a: Matrix, v: list[int]) -> list[int]:
    return [sum(a[i][j] * v[j] for j in range(len(v))) % R_MOD for i in range(len(a))]


def inverse_mod_r(m: Matrix) -> Matrix:
    """Inverse mod r by Gauss-Jordan elimination (ValueError if singular)."""
    n = len(m)
    a = [row[:] + [int(i == j) for j in range(n)] for i, row in enumerate(m)]
    for col in range(n):
        piv = next((r for r in range(col, n) if a[r][col] % R_MOD), None)
        if piv is None:
            raise ValueError("matrix is singular mod r")
        a[col], a[piv] = a[piv], a[col]
        inv = pow(a[col][col], -1, R_MOD)
        a[col] = [x * inv % R_MOD for x in a[col]]
        for r in range(n):
            if r != col and a[r][col]:
                f = a[r][col]
                a[r] = [(x - f * y) % R_MOD for x, y in zip(a[r], a[col], strict=True)]
    return [row[n:] for row in a]


@cache
def sparse_constants(arity: int) -> SparseConstants:
    """The optimised constants of ``arity`` (2, 8 or 11), derived from neptune's plain ones."""
    p = poseidon_params(arity)
    t, rf, rp = p.t, p.full_rounds, p.partial_rounds
    half = rf // 2
    mds: Matrix = [list(row) for row in p.mds]
    rc = [list(p.round_constants[r * t : (r + 1) * t]) for r in range(p.rounds)]
    # constants: every partial round keeps a scalar, the rest is carried on through the MDS
    carry = [0] * t
    scalars = []
    for r in range(half, half + rp):
        eff = [(c + k) % R_MOD for c, k in zip(rc[r], carry, strict=True)]
        scalars.append(eff[0])
        carry = _matvec(mds, [0, *eff[1:]])
    full = [rc[r][:] for r in range(half)] + [rc[r][:] for r in range(half + rp, p.rounds)]
    full[half] = [(c + k) % R_MOD for c, k in zip(full[half], carry, strict=True)]
    # matrices: factor from the last partial round back, passing each B to the round before
    rows: list[tuple[int, ...]] = []
    cols: list[tuple[int, ...]] = []
    n = mds
    for _ in range(rp):
        b_hat = [row[1:] for row in n[1:]]
        w = _matvec([list(col) for col in zip(*inverse_mod_r(b_hat), strict=True)], n[0][1:])
        rows.append((n[0][0], *w))
        cols.append((0, *(n[i][0] for i in range(1, t))))
        b = [[1] + [0] * (t - 1)] + [[0, *b_hat[i - 1]] for i in range(1, t)]
        n = matmul_mod_r(b, mds)
    rows.reverse()
    cols.reverse()
    return SparseConstants(
        arity=arity,
        t=t,
        full_rounds=rf,
        partial_rounds=rp,
        domain_tag=p.domain_tag,
        full_constants=tuple(tuple(v) for v in full),
        partial_constants=tuple(scalars),
        mds=tuple(tuple(row) for row in mds),
        pre_sparse=tuple(tuple(row) for row in n),
        sparse_rows=tuple(rows),
        sparse_cols=tuple(cols),
    )


def sparse_hash_reference(inputs: list[int]) -> int:
    """The optimised permutation's hash in Python ints (to test the derivation alone)."""
    c = sparse_constants(len(inputs))
    t, half = c.t, c.full_rounds // 2
    s = [c.domain_tag, *(x % R_MOD for x in inputs)]

    def full(s: list[int], k: int, m: tuple[tuple[int, ...], ...]) -> list[int]:
        s = [pow((x + y) % R_MOD, 5, R_MOD) for x, y in zip(s, c.full_constants[k], strict=True)]
        return _matvec([list(r) for r in m], s)

    for k in range(half):
        s = full(s, k, c.pre_sparse if k == half - 1 else c.mds)
    for r in range(c.partial_rounds):
        x0 = pow((s[0] + c.partial_constants[r]) % R_MOD, 5, R_MOD)
        row, col = c.sparse_rows[r], c.sparse_cols[r]
        s0 = (row[0] * x0 + sum(row[j] * s[j] for j in range(1, t))) % R_MOD
        s = [s0, *((col[j] * x0 + s[j]) % R_MOD for j in range(1, t))]
    for k in range(half, c.full_rounds):
        s = full(s, k, c.mds)
    return s[1]


@cache
def sparse_tables(arity: int) -> tuple[np.ndarray, ...]:
    """The constants of ``arity`` in Fr storage form (Montgomery) for the numba batch:
    (tag uint64[1, 4], full constants [rf * t, 4], partial scalars [rp, 4], MDS [t * t, 4],
    pre-sparse [t * t, 4], sparse rows [rp * t, 4], sparse columns [rp * t, 4])."""
    c = sparse_constants(arity)

    def flat(rows: tuple[tuple[int, ...], ...]) -> np.ndarray:
        return to_mont_fr([x for row in rows for x in row])

    return (
        to_mont_fr([c.domain_tag]),
        flat(c.full_constants),
        to_mont_fr(c.partial_constants),
        flat(c.mds),
        flat(c.pre_sparse),
        flat(c.sparse_rows),
        flat(c.sparse_cols),
    )


@njit(cache=True)
def _full_round(s, ns, t, fc, k, m):
    for i in range(t):
        x = fr_add(fr_load(s, i), fr_load(fc, k * t + i))
        x2 = fr_mul(x, x)
        fr_store(s, i, fr_mul(fr_mul(x2, x2), x))
    for i in range(t):
        acc = FR_ZERO
        for j in range(t):
            acc = fr_add(acc, fr_mul(fr_load(m, i * t + j), fr_load(s, j)))
        fr_store(ns, i, acc)
    s[:] = ns


@njit(cache=True, parallel=True)
def _sparse_batch(inp, out, tag, fc, pc, mds, pre, srow, scol):
    n, arity = inp.shape[0], inp.shape[1]
    t = arity + 1
    rp = pc.shape[0]
    rf = fc.shape[0] // t
    half = rf // 2
    for h in prange(n):
        s = np.empty((t, 4), np.uint64)
        ns = np.empty((t, 4), np.uint64)
        s[0] = tag[0]
        for i in range(arity):
            s[1 + i] = inp[h, i]
        for k in range(half):
            _full_round(s, ns, t, fc, k, pre if k == half - 1 else mds)
        for r in range(rp):
            x = fr_add(fr_load(s, 0), fr_load(pc, r))
            x2 = fr_mul(x, x)
            x0 = fr_mul(fr_mul(x2, x2), x)
            acc = fr_mul(fr_load(srow, r * t), x0)
            for j in range(1, t):
                acc = fr_add(acc, fr_mul(fr_load(srow, r * t + j), fr_load(s, j)))
                fr_store(s, j, fr_add(fr_load(s, j), fr_mul(fr_load(scol, r * t + j), x0)))
            fr_store(s, 0, acc)
        for k in range(half, rf):
            _full_round(s, ns, t, fc, k, mds)
        out[h] = s[1]


def poseidon_sparse_mont(inputs: np.ndarray) -> np.ndarray:
    """Neptune hashes of rows of Montgomery inputs uint64[n, arity, 4] → uint64[n, 4] (the same
    values as engine.circuit.native.poseidon_many_mont, in about a third of the time at arity 8)."""
    if inputs.ndim != 3 or inputs.shape[2] != 4 or inputs.shape[1] not in ARITIES:
        raise ValueError(f"Poseidon batch needs uint64[n, arity in {ARITIES}, 4], got {inputs.shape}")
    out = np.empty((inputs.shape[0], 4), np.uint64)
    _sparse_batch(np.ascontiguousarray(inputs, np.uint64), out, *sparse_tables(inputs.shape[1]))
    return out
