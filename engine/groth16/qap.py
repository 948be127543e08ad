"""The QAP at a point: what setup needs to turn an R1CS into key scalars.

With the evaluation domain <omega> of size n (the next power of two ≥ the constraint count), the
R1CS column of variable j interpolates to polynomials u_j, v_j, w_j. Setup needs their values at
the secret tau, which are transposed sparse products with the Lagrange basis at tau:

    L_i(tau) = (tau^n − 1) / n · omega^i / (tau − omega^i),   u_j(tau) = Σ_i A[i, j] · L_i(tau).

Everything is Fr in the storage layout; the scalar loops are numba kernels, parallel over all of
numba's threads: at porep-32g (2^27, 778 M nonzeros) one thread would spend minutes in them. The
transposed product gives each thread a range of columns holding an equal share of the nonzeros
(every thread scans the row pointers and column indices, and multiplies only its own entries,
so no two threads add into one column); the geometric sequence and the batch inversion run one
chunk per thread from a chunk's own start (a power of the ratio) or its own inversion. Field
arithmetic is exact, so the results are the serial ones bit for bit.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from engine.groth16.r1cs import CSR, R1CS
from kernels.constants import R_MOD, root_of_unity
from kernels.cpu.convert import to_mont_fr
from kernels.cpu.fr import (
    fr_add,
    fr_load,
    fr_mul,
    fr_store,
    fr_sub,
)
from kernels.cpu.fr_vec import batch_inv, chunk_rows


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
    [bounds[t], bounds[t + 1])."""
    rows = indptr.shape[0] - 1
    for t in prange(bounds.shape[0] - 1):
        lo, hi = bounds[t], bounds[t + 1]
        for row in range(rows):
            for k in range(indptr[row], indptr[row + 1]):
                col = indices[k]
                if col >= lo and col < hi:
                    fr_store(out, col, fr_add(fr_load(out, col), fr_mul(fr_load(data, k), fr_load(x, row))))


@njit(cache=True, parallel=True)
def _sub_from_const(c, x, out):
    cv = fr_load(c, 0)
    for i in prange(x.shape[0]):
        fr_store(out, i, fr_sub(cv, fr_load(x, i)))


@njit(cache=True, parallel=True)
def _scale_mul(x, y, c, out):
    cv = fr_load(c, 0)
    for i in prange(x.shape[0]):
        fr_store(out, i, fr_mul(fr_mul(fr_load(x, i), fr_load(y, i)), cv))


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


def geometric(start: int, ratio: int, n: int) -> np.ndarray:
    """[start · ratio^i for i < n] as Fr storage."""
    out = np.empty((n, 4), np.uint64)
    if n:
        step = chunk_rows(n)
        jump = pow(ratio, step, R_MOD)
        starts = [start % R_MOD]
        while len(starts) * step < n:
            starts.append(starts[-1] * jump % R_MOD)
        _geometric(to_mont_fr(starts), _m(ratio), step, out)
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
    """L_i(tau) for the n = 2^log_n Lagrange polynomials of <omega>; tau must not be in <omega>."""
    n = 1 << log_n
    omega = root_of_unity(log_n)
    z_tau = (pow(tau, n, R_MOD) - 1) % R_MOD
    if z_tau == 0:
        raise ValueError("tau lies in the evaluation domain")
    powers = geometric(1, omega, n)
    diff = np.empty_like(powers)
    _sub_from_const(_m(tau), powers, diff)
    inv = batch_inv(diff)
    out = np.empty_like(powers)
    _scale_mul(powers, inv, _m(z_tau * pow(n, -1, R_MOD) % R_MOD), out)
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
