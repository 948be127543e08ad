"""Host side of G1's GLV split (msm/glv.cuh), for the MSM (kernels/cuda/msm.py).

G1's endomorphism (x, y) -> (beta x, y) is multiplication by lambda = z^2 - 1 (128 bits), with
r = lambda^2 + lambda + 1, so every scalar is s mod lambda plus lambda times s div lambda, both
below 2^128. An MSM over a table that keeps its points' images beside it (endo_table) becomes
one of twice as many half-length scalars: 6 windows of 22 bits (12 bucket additions a point)
instead of 13 of 20.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels.constants import GLV_LAMBDA
from kernels.cuda.module import kernel
from kernels.cuda.points import AFFINE_U64, BLOCK
from kernels.cuda.points import grid as _grid
from kernels.cuda.stream import cupy_module as _cp

# The GLV split (msm/glv.cuh) for G1 MSMs of at least GLV_MIN_TAIL scalars when the caller has the
# points' endomorphism table (endo_table): 2n scalars below 2^128, digits over GLV_BITS bits (the
# top window's carry included), windows of GLV_WINDOW bits from 2^LARGE_LOG split scalars on
# (6 windows: 12 bucket additions a point, against 13 without the split at c = 20). Measured on
# the H200 (2026-12-04, random scalars, the same points): 2^27 with the sort into runs 827.5 ms
# split against 844.8 unsplit; 2^26 456.6 split (runs do not fit there) against 440.9 unsplit.
# So from 1.5 x 2^26 on: H's 2^27 - 1 scalars at porep-32g.
GLV_MIN_TAIL = 3 << 25
GLV_BITS = 129
GLV_WINDOW = 22
GLV_BOUND = GLV_LAMBDA + 1  # the largest half: s div lambda <= (r - 1) / lambda = lambda + 1


def endo_table(points: Any) -> Any:
    """Device uint64[2N, 12]: the N G1 points, then lambda times each (the endomorphism
    (x, y) -> (beta x, y)); its first N rows are a contiguous view usable as the table itself."""
    cp = _cp()
    n = int(points.shape[0])
    ext = cp.empty((2 * n, AFFINE_U64["g1"]), dtype=cp.uint64)
    ext[:n] = points
    if n:
        kernel("msm_g1", "g1_endo")(_grid(n), (BLOCK,), (ext, np.uint64(n), ext[n:]))
    return ext


def glv_dense(endo: Any, scalars: Any, n: int) -> tuple[Any, Any, int]:
    """(points, canonical scalars, entries) of the split MSM: scalar s at point p becomes s mod
    lambda at p and s div lambda at N + p, the image's row in endo; rows n..N-1 of both halves are
    zero (no digits). One pass over the Montgomery scalars: tables with images are H's, whose
    scalars are full-length, so the 0/1 split is skipped (measured on the H200, 2026-12-04, at
    2^27: classing and listing them took 18.9 ms and the split of the list 3.4)."""
    cp = _cp()
    N = int(endo.shape[0]) // 2
    if n > N:
        raise ValueError(f"the endomorphism table holds {N} points, the MSM has {n} scalars")
    canon2 = cp.empty((2 * N, 4), dtype=cp.uint64)
    kernel("msm_g1", "g1_glv_dense")(_grid(N, 256), (256,), (scalars, np.uint64(n), np.uint64(N), canon2))
    return endo, canon2, 2 * N
