"""R1CS.check: a malformed matrix is one clear line, whichever row or column is wrong (the check
is one parallel pass, so the fault is put at a random place each run)."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from engine.groth16.r1cs import CSR, R1CS


def _csr(rows: int, nv: int, rng: np.random.Generator) -> CSR:
    counts = rng.integers(0, 4, rows)
    indptr = np.zeros(rows + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    return CSR(indptr, rng.integers(0, nv, nnz).astype(np.int32), np.zeros((nnz, 4), np.uint64))


def _r1cs(a: CSR, b: CSR, c: CSR, nv: int) -> R1CS:
    return R1CS(1, nv - 1, a, b, c)


def test_a_column_outside_the_variables_or_a_falling_row_pointer_is_refused():
    rng = np.random.default_rng(secrets.randbits(64))
    rows, nv = int(rng.integers(300, 3000)), int(rng.integers(2, 500))
    good = [_csr(rows, nv, rng) for _ in range(3)]
    _r1cs(*good, nv).check()  # passes

    m = int(rng.integers(0, 3))
    bad = list(good)
    idx = good[m].indices.copy()
    idx[int(rng.integers(0, len(idx)))] = rng.choice([-1, nv, nv + 1000])
    bad[m] = CSR(good[m].indptr, idx, good[m].data)
    with pytest.raises(ValueError, match=f"matrix {'ABC'[m]}: a column index is out of range"):
        _r1cs(*bad, nv).check()

    bad = list(good)
    ptr = good[m].indptr.copy()
    i = int(rng.integers(1, rows))
    ptr[i] = ptr[i + 1] + 1  # falls at i + 1; indptr[-1] (the count of nonzeros) kept
    bad[m] = CSR(ptr, good[m].indices, good[m].data)
    with pytest.raises(ValueError, match=f"matrix {'ABC'[m]}: indptr is not a valid CSR row pointer"):
        _r1cs(*bad, nv).check()
