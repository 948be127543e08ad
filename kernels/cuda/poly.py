"""Groth16's quotient polynomial on the device: H's coefficients from the a, b, c evaluations.

Two paths with one result, bit for bit (field arithmetic on canonical values), selected by
``H_PATH`` (SEALTOP_H_PATH per process, ``path`` per call):

"plain", the sequence of engine/groth16/prove.py's prove_start, a, b and c uploaded once and
transformed as one batch:
    coefficients = INTT(v)                for v in (a, b, c)   (one batched launch per pass)
    on the coset = coset NTT(coefficients)                     (batched)
    d            = a' * b' - c'           (on the coset)
    h            = inverse coset NTT(d)   (still to be scaled by 1 / (g^n - 1), as the engine does)
Each NTT returns a new array, so every input is dropped as soon as its transform is taken: at
most two of the padded 3 x n batches are alive at once (24 GiB at 2^27, not 36), besides the
caller's a, b, c.

"fused" (kernels/cuda/hstep.py): six transforms instead of seven (c's coset NTT is not needed,
iCoset(c') = INTT(c)), a, b, c transformed in place, every scale and the pointwise a' * b' - c'
folded into passes that run anyway; 3 x n + n elements alive (16 GiB at 2^27).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from kernels.cuda import hstep
from kernels.cuda import ntt as _ntt
from kernels.cuda.module import kernel
from kernels.cuda.stream import cupy_module as _cp

# "plain" or "fused" (see the module docstring). "fused" is the default: on the H200
# (2026-12-04) H at 2^27 took 256.4 ms against 299.4, with 12 GiB of pool growth against 26.
H_PATH = os.environ.get("SEALTOP_H_PATH", "fused")


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


def h_from(fill: Callable[[Any], None], n: int, rows: int | None = None, path: str | None = None) -> Any:
    """As h_coefficients, with a, b and c written by ``fill(abc)`` straight into the zeroed
    uint64[3, n, 4] device array the transform takes (the compact evaluation of
    kernels/cuda/abc.py does so), which this function alone holds and frees. With ``rows``,
    only rows rows..n-1 are zeroed first: ``fill`` writes rows 0..rows-1 of a, b and c whole."""
    how = path or H_PATH
    if how not in ("plain", "fused"):
        raise ValueError(f"unknown H path {how!r} (plain or fused)")
    _check_domain(n)
    abc = _padded(n, rows)
    fill(abc)
    if how == "fused" and n >= 2:
        return _h_fused(abc, n)
    cp = _cp()
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


def _padded(n: int, rows: int | None) -> Any:
    cp = _cp()
    if rows is None:
        return cp.zeros((3, n, 4), dtype=cp.uint64)
    if not 0 <= rows <= n:
        raise ValueError(f"{rows} rows do not fit a domain of {n}")
    abc = cp.empty((3, n, 4), dtype=cp.uint64)
    abc[:, rows:] = 0
    return abc


def _h_fused(abc: Any, n: int) -> Any:
    """The launches of hstep.h_plan: abc transformed in place, h written into a new array."""
    cp = _cp()
    log_n = n.bit_length() - 1
    h = cp.empty((n, 4), dtype=cp.uint64)
    W = _ntt.PLANS.twiddles(log_n)
    tabs = {name: _ntt.PLANS.row_tables(("h", name, log_n), base, n, scales)
            for name, (base, scales) in hstep.tables(log_n).items()}
    bufs = {"abc": abc, "h": h}

    def buf(ref: hstep.Ref) -> Any:
        a = bufs[ref[0]]
        return a[ref[1]] if a.ndim == 3 else a

    def table(name: str) -> tuple[Any, Any, int]:
        t = tabs[name]
        return t.lo, t.hi, t.hi_stride

    for launch in hstep.h_plan(log_n, _ntt.pass_schedule(log_n, hstep.stages_per_pass(_ntt.MAX_STAGES_PER_PASS))):
        fn = kernel("ntt", launch.kernel)
        fn(launch.grid, (launch.threads,), hstep.launch_args(launch, buf, table, W, np.uint64(0), _ntt.TABLE_BITS),
           shared_mem=launch.shared_bytes)
    return h
