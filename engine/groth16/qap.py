"""The QAP at a point: what setup needs to turn an R1CS into key scalars.

With the evaluation domain <omega> of size n (the next power of two ≥ the constraint count), the
R1CS column of variable j interpolates to polynomials u_j, v_j, w_j. Setup needs their values at
the secret tau, which are transposed sparse products with the Lagrange basis at tau:

    L_i(tau) = (tau^n − 1) / n · omega^i / (tau − omega^i),   u_j(tau) = Σ_i A[i, j] · L_i(tau).

Everything is Fr in the storage layout; the scalar loops are numba kernels.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from engine.groth16.r1cs import R1CS
from engine.groth16.sparse import matvec_transposed
from kernels.constants import R_MOD, root_of_unity
from kernels.cpu import fr_vec
from kernels.cpu.convert import to_mont_fr
from kernels.cpu.fr import fr_add, fr_load, fr_mul, fr_store, fr_sub


def domain_log(num_constraints: int) -> int:
    """log2 of the smallest power of two ≥ num_constraints (at least 2, so H has a point)."""
    return max(1, (max(num_constraints, 2) - 1).bit_length())


@njit(cache=True)
def _geometric(start, ratio, out):
    acc = fr_load(start, 0)
    r = fr_load(ratio, 0)
    for i in range(out.shape[0]):
        fr_store(out, i, acc)
        acc = fr_mul(acc, r)


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
    _geometric(_m(start), _m(ratio), out)
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
    inv = fr_vec.batch_inv(diff)
    out = np.empty_like(powers)
    _scale_mul(powers, inv, _m(z_tau * pow(n, -1, R_MOD) % R_MOD), out)
    return out


def uvw_at(r1cs: R1CS, tau: int, log_n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """u_j(tau), v_j(tau), w_j(tau) for every variable j."""
    lag = lagrange_at(tau, log_n)
    nv = r1cs.num_vars
    return (
        matvec_transposed(r1cs.A, lag, nv),
        matvec_transposed(r1cs.B, lag, nv),
        matvec_transposed(r1cs.C, lag, nv),
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
