"""The QAP at a point: what setup needs to turn an R1CS into key scalars.

With the evaluation domain <omega> of size n (the next power of two ≥ the constraint count), the
R1CS column of variable j interpolates to polynomials u_j, v_j, w_j. Setup needs their values at
the secret tau, which are transposed sparse products with the Lagrange basis at tau:

    L_i(tau) = (tau^n − 1) / n · omega^i / (tau − omega^i),   u_j(tau) = Σ_i A[i, j] · L_i(tau).

Everything is Fr in the storage layout; the scalar loops are numba kernels, parallel over all of
numba's threads: at porep-32g (2^27, 778 M nonzeros) one thread would spend minutes in them. The
transposed product gives each thread a range of columns holding an equal share of the nonzeros
(every thread scans the row pointers and column indices, and works only on its own entries,
so no two threads add into one column; a coefficient of ±1, most of a porep circuit's, is an
addition or a subtraction, not a product); the geometric sequence and the Lagrange basis run
one chunk per thread from a chunk's own start (a power of the ratio), the basis with its own
batch inversion. Field arithmetic is exact, so the results are the serial ones bit for bit.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from engine.groth16.r1cs import CSR, R1CS
from kernels.constants import R_MOD, root_of_unity
from kernels.cpu.convert import to_mont_fr
from kernels.cpu.fr import (
    FR_ONE,
    fr_add,
    fr_inv,
    fr_load,
    fr_mul,
    fr_store,
    fr_sub,
)
from kernels.cpu.fr_vec import chunk_rows

_NEG_ONE = tuple(np.uint64(w) for w in to_mont_fr([R_MOD - 1])[0])  # -1, Montgomery


def domain_log(num_constraints: int) -> int:
    """log2 of the smallest power of two ≥ num_constraints (at least 2, so H has a point)."""
    return max(1, (max(num_constraints, 2) - 1).bit_length())


@njit(cache=True, parallel=True)
def _geometric(starts, ratio, step, out):
    """out[i] = start · ratio^i, chunk c (rows c·step ..) from its own start starts[c]."""
    r = fr_load(ratio, 0)
    n = out.shape[0]
    for c in prange(starts.shape[0]):
        acc = fr_load(starts, c)
        for i in range(c * step, min(n, (c + 1) * step)):
            fr_store(out, i, acc)
            acc = fr_mul(acc, r)


@njit(cache=True, parallel=True)
def _transposed(indptr, indices, data, x, bounds, out):
    """out[col] += data[k] · x[row] for every nonzero; thread t owns the columns in
    [bounds[t], bounds[t + 1]). A coefficient of +1 adds x[row] and one of -1 subtracts it
    (most of a porep circuit's coefficients): the same canonical sum as the product, since
    fr_mul(1, x) = x and fr_add(o, fr_mul(-1, x)) = fr_sub(o, x) for canonical values."""
    rows = indptr.shape[0] - 1
    o0, o1, o2, o3 = FR_ONE
    m0, m1, m2, m3 = _NEG_ONE
    for t in prange(bounds.shape[0] - 1):
        lo, hi = bounds[t], bounds[t + 1]
        for row in range(rows):
            for k in range(indptr[row], indptr[row + 1]):
                col = indices[k]
                if col >= lo and col < hi:
                    d0, d1, d2, d3 = data[k, 0], data[k, 1], data[k, 2], data[k, 3]
                    if d0 == o0 and d1 == o1 and d2 == o2 and d3 == o3:
                        fr_store(out, col, fr_add(fr_load(out, col), fr_load(x, row)))
                    elif d0 == m0 and d1 == m1 and d2 == m2 and d3 == m3:
                        fr_store(out, col, fr_sub(fr_load(out, col), fr_load(x, row)))
                    else:
                        fr_store(out, col, fr_add(fr_load(out, col), fr_mul((d0, d1, d2, d3), fr_load(x, row))))


@njit(cache=True, parallel=True)
def _lagrange(starts, ratio, scale, step, tmp, out):
    """out[i] = scale / (g_i − 1) with g_i = starts[c] · ratio^(i − c·step) in chunk c (rows
    c·step ..): one chunk per thread, Montgomery's batch inversion within it.
    Forward: the differences go to ``tmp`` and their prefix products to ``out``; backward: one
    inversion per chunk, already times the scale. Four products per row; no g_i may be 1."""
    r = fr_load(ratio, 0)
    n = out.shape[0]
    for c in prange(starts.shape[0]):
        lo, hi = c * step, min(n, (c + 1) * step)
        g = fr_load(starts, c)
        acc = FR_ONE
        for i in range(lo, hi):
            d = fr_sub(g, FR_ONE)
            fr_store(tmp, i, d)
            fr_store(out, i, acc)
            acc = fr_mul(acc, d)
            g = fr_mul(g, r)
        inv = fr_mul(fr_inv(acc), fr_load(scale, 0))
        for i in range(hi - 1, lo - 1, -1):
            fr_store(out, i, fr_mul(inv, fr_load(out, i)))
            inv = fr_mul(inv, fr_load(tmp, i))


@njit(cache=True, parallel=True)
def _combine(u, v, w, alpha, beta, scale, out):
    """out_j = (beta·u_j + alpha·v_j + w_j) · scale."""
    a = fr_load(alpha, 0)
    b = fr_load(beta, 0)
    s = fr_load(scale, 0)
    for j in prange(u.shape[0]):
        t = fr_add(fr_add(fr_mul(b, fr_load(u, j)), fr_mul(a, fr_load(v, j))), fr_load(w, j))
        fr_store(out, j, fr_mul(t, s))


def _m(x: int) -> np.ndarray:
    return to_mont_fr([x])


def _chunk_starts(start: int, ratio: int, n: int) -> tuple[np.ndarray, int]:
    """(start · ratio^(c · step) for each chunk c of n rows, Fr storage; step, the chunk's rows):
    where each thread's run of a geometric sequence begins."""
    step = chunk_rows(n)
    jump = pow(ratio, step, R_MOD)
    starts = [start % R_MOD]
    while len(starts) * step < n:
        starts.append(starts[-1] * jump % R_MOD)
    return to_mont_fr(starts), step


def geometric(start: int, ratio: int, n: int) -> np.ndarray:
    """[start · ratio^i for i < n] as Fr storage."""
    out = np.empty((n, 4), np.uint64)
    if n:
        starts, step = _chunk_starts(start, ratio, n)
        _geometric(starts, _m(ratio), step, out)
    return out


def transposed_product(m: CSR, x: np.ndarray, num_cols: int, threads: int | None = None) -> np.ndarray:
    """``Mᵀ · x`` (one Fr value per column), equal to engine.groth16.sparse.matvec_transposed,
    with the columns split among numba's threads by equal shares of the nonzeros."""
    if x.dtype != np.uint64 or x.ndim != 2 or x.shape[1] != 4 or x.shape[0] < m.rows:
        raise ValueError(f"row vector must be an Fr vector uint64[>= {m.rows}, 4], got {x.dtype}{list(x.shape)}")
    out = np.zeros((num_cols, 4), np.uint64)
    if m.nnz == 0 or num_cols == 0:
        return out
    indices = np.ascontiguousarray(m.indices, np.int32)
    if threads is None:  # column ranges; below 2^16 nonzeros one range is faster
        threads = numba.get_num_threads() if m.nnz >= 1 << 16 else 1
    per_col = np.cumsum(np.bincount(indices, minlength=num_cols))
    cuts = np.searchsorted(per_col, np.arange(1, threads) * (m.nnz / threads), side="left") + 1
    bounds = np.unique(np.concatenate(([0], np.minimum(cuts, num_cols), [num_cols]))).astype(np.int64)
    _transposed(np.ascontiguousarray(m.indptr, np.int64), indices,
                np.ascontiguousarray(m.data, np.uint64), np.ascontiguousarray(x), bounds, out)
    return out


def lagrange_at(tau: int, log_n: int) -> np.ndarray:
    """L_i(tau) for the n = 2^log_n Lagrange polynomials of <omega>; tau must not be in <omega>.

    L_i(tau) = (tau^n − 1)/n · omega^i / (tau − omega^i) = c / (tau·omega^(−i) − 1): one
    geometric sequence and one batch inversion with the constant c folded into each chunk's
    inversion (four products per point, against six for the quotient as written)."""
    n = 1 << log_n
    omega_inv = pow(root_of_unity(log_n), -1, R_MOD)
    z_tau = (pow(tau, n, R_MOD) - 1) % R_MOD
    if z_tau == 0:
        raise ValueError("tau lies in the evaluation domain")
    starts, step = _chunk_starts(tau, omega_inv, n)
    out = np.empty((n, 4), np.uint64)
    tmp = np.empty((n, 4), np.uint64)
    _lagrange(starts, _m(omega_inv), _m(z_tau * pow(n, -1, R_MOD) % R_MOD), step, tmp, out)
    return out


def uvw_at(r1cs: R1CS, tau: int, log_n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """u_j(tau), v_j(tau), w_j(tau) for every variable j."""
    lag = lagrange_at(tau, log_n)
    nv = r1cs.num_vars
    return (
        transposed_product(r1cs.A, lag, nv),
        transposed_product(r1cs.B, lag, nv),
        transposed_product(r1cs.C, lag, nv),
    )


def combine(u: np.ndarray, v: np.ndarray, w: np.ndarray, alpha: int, beta: int, scale: int) -> np.ndarray:
    """(beta·u_j + alpha·v_j + w_j) · scale for every j (IC with 1/gamma, L with 1/delta)."""
    out = np.empty_like(u)
    if len(u):
        _combine(
            np.ascontiguousarray(u), np.ascontiguousarray(v), np.ascontiguousarray(w),
            _m(alpha), _m(beta), _m(scale), out,
        )
    return out
