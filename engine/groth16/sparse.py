"""Sparse products of the R1CS matrices with Fr vectors, in numba.

Two directions are needed:
- row-wise ``M · z`` (one value per constraint): the prover's evaluation of a, b and c, and the
  witness pre-check;
- transposed ``Mᵀ · x`` (one value per variable): setup's evaluation of the per-variable QAP
  polynomials u_j, v_j, w_j at tau from the Lagrange basis values x_i = L_i(tau).
All vectors are Fr in the storage layout (uint64[n, 4], Montgomery).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from engine.groth16.r1cs import CSR
from kernels.cpu.fr import FR_ONE, FR_ZERO, fr_add, fr_eq, fr_load, fr_mul, fr_store


@njit(cache=True, parallel=True)
def _row_products(indptr, indices, data, z, out):
    for row in prange(indptr.shape[0] - 1):
        acc = FR_ZERO
        for k in range(indptr[row], indptr[row + 1]):
            coeff = fr_load(data, k)
            val = fr_load(z, indices[k])
            if fr_eq(coeff, FR_ONE):
                acc = fr_add(acc, val)
            else:
                acc = fr_add(acc, fr_mul(coeff, val))
        fr_store(out, row, acc)


@njit(cache=True)
def _transposed_products(indptr, indices, data, x, out):
    for row in range(indptr.shape[0] - 1):
        xr = fr_load(x, row)
        for k in range(indptr[row], indptr[row + 1]):
            col = indices[k]
            fr_store(out, col, fr_add(fr_load(out, col), fr_mul(fr_load(data, k), xr)))


def _kernel_arrays(m: CSR) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """M's row pointer, column indices and coefficients, contiguous in the kernels' dtypes."""
    return (np.ascontiguousarray(m.indptr, np.int64), np.ascontiguousarray(m.indices, np.int32),
            np.ascontiguousarray(m.data, np.uint64))


def _fr_vector(v: np.ndarray, n: int, what: str) -> np.ndarray:
    if v.dtype != np.uint64 or v.ndim != 2 or v.shape[1] != 4 or v.shape[0] < n:
        raise ValueError(f"{what} must be an Fr vector uint64[>= {n}, 4], got {v.dtype}{list(v.shape)}")
    return np.ascontiguousarray(v)


def matvec(m: CSR, z: np.ndarray) -> np.ndarray:
    """``M · z``: one Fr value per row of M."""
    if m.nnz and int(m.indices.max()) >= z.shape[0]:
        raise ValueError(f"witness has {z.shape[0]} values but the matrix refers to more")
    z = _fr_vector(z, 0, "witness")
    out = np.empty((m.rows, 4), np.uint64)
    _row_products(*_kernel_arrays(m), z, out)
    return out


def matvec_transposed(m: CSR, x: np.ndarray, num_cols: int) -> np.ndarray:
    """``Mᵀ · x``: one Fr value per column (variable); x holds at least one value per row."""
    x = _fr_vector(x, m.rows, "row vector")
    out = np.zeros((num_cols, 4), np.uint64)
    _transposed_products(*_kernel_arrays(m), x, out)
    return out
