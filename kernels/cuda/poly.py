"""Groth16's quotient polynomial on the device: H's coefficients from the a, b, c evaluations.

The same sequence of operations as engine/groth16/prove.py's prove_start, so the result is
bit-identical to the one through the Backend interface, but a, b and c are uploaded once and
transformed as one batch:
    coefficients = INTT(v)                for v in (a, b, c)   (one batched launch per pass)
    on the coset = coset NTT(coefficients)                     (batched)
    d            = a' * b' - c'           (on the coset)
    h            = inverse coset NTT(d)   (still to be scaled by 1 / (g^n - 1), as the engine does)

Each NTT returns a new array, so every input is dropped as soon as its transform is taken: at
most two of the padded 3 x n batches are alive at once (24 GiB at 2^27, not 36), besides the
caller's a, b, c.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kernels.cuda import ntt as _ntt
from kernels.cuda.module import kernel
from kernels.cuda.stream import cupy_module as _cp


def _check_domain(n: int) -> None:
    if n & (n - 1) or n < 1:
        raise ValueError(f"domain size must be a power of two, got {n}")


def h_coefficients(a: Any, b: Any, c: Any, n: int) -> Any:
    """Device uint64[n, 4]: inverse coset NTT of (A·B − C) on the coset, from evaluations on
    <omega> (each of a, b, c uint64[<= n, 4], zero-padded to n; host or device arrays)."""
    cp = _cp()
    _check_domain(n)
    for i, v in enumerate((a, b, c)):
        if v.shape[0] > n or v.shape[1:] != (4,):
            raise ValueError(f"evaluation vector {i} has shape {tuple(v.shape)}, domain is {n}")

    def fill(abc: Any) -> None:
        for i, v in enumerate((a, b, c)):
            abc[i, : v.shape[0]] = cp.asarray(v, dtype=cp.uint64)

    return h_from(fill, n)


def h_from(fill: Callable[[Any], None], n: int) -> Any:
    """As h_coefficients, with a, b and c written by ``fill(abc)`` straight into the zeroed
    uint64[3, n, 4] device array the transform takes (the compact evaluation of
    kernels/cuda/abc.py does so), which this function alone holds and frees."""
    cp = _cp()
    _check_domain(n)
    abc = cp.zeros((3, n, 4), dtype=cp.uint64)
    fill(abc)
    coeffs = _ntt.ntt(abc, inverse=True)
    del abc  # 3 x 32 x n bytes (12 GiB at 2^27) back to the pool before the coset NTT's output
    coset = _ntt.ntt(coeffs, coset=True)
    del coeffs
    binop = kernel("field", "fr_binop")
    grid, block = ((n + 255) // 256,), (256,)
    d = cp.empty((n, 4), dtype=cp.uint64)
    binop(grid, block, (np.int32(2), coset[0], coset[1], d, np.uint64(n)))  # a' * b'
    binop(grid, block, (np.int32(1), d, coset[2], d, np.uint64(n)))  # - c' (elementwise, in place)
    del coset
    return _ntt.ntt(d, inverse=True, coset=True)
