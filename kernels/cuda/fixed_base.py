"""Fixed-base scalar multiplication on the device (msm/fixed_base.cuh): out[i] = scalars[i] * base
for one base, what makes a proving key's large sections (engine/groth16/setup.py device_setup).
Points in design.md's layout (uint64[n, 12] G1, [n, 24] G2, affine), scalars Fr Montgomery."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels.cuda.module import kernel
from kernels.cuda.points import AFFINE_U64, BLOCK
from kernels.cuda.points import grid as _grid
from kernels.cuda.stream import cupy_module as _cp

# Fixed base (msm/fixed_base.cuh): signed FIXED_C-bit windows, so a table of 16 windows of 2^15
# affine entries (50 MB in G1, 100 MB in G2) and 15 mixed additions a point; FIXED_PER_THREAD
# points share one inversion; FIXED_CHUNK points a launch bound the scratch (three field rows a
# point: 2.4 GB in G2).
FIXED_C = 16
FIXED_PER_THREAD = 32
FIXED_CHUNK = 1 << 23


class FixedBase:
    """A precomputed table for out[i] = scalars[i] * base: table[w][d-1] = d * 2^(c w) * base for
    d in [1, 2^(c-1)] (signed digits)."""

    def __init__(self, group: str, base: Any, c: int = FIXED_C) -> None:
        cp = _cp()
        self.group = group
        self.c = c
        self.nwin = -(-256 // c)
        aw = AFFINE_U64[group]
        b = cp.ascontiguousarray(cp.asarray(base, dtype=cp.uint64).reshape(1, aw))
        entries = self.nwin << (c - 1)
        self.table = cp.empty((entries, aw), dtype=cp.uint64)
        kernel(f"msm_{group}", f"{group}_fixed_table")(_grid(entries), (BLOCK,), (b, np.int32(c), np.int32(self.nwin), self.table))

    def mul(self, scalars: Any, out: Any | None = None, per_thread: int = FIXED_PER_THREAD, chunk: int = FIXED_CHUNK) -> Any:
        """Device uint64[n, words] affine points scalars[i] * base (written into out if given);
        per_thread and chunk (points a thread, points a launch) for tests and benchmarks."""
        cp = _cp()
        scalars = cp.ascontiguousarray(scalars, dtype=cp.uint64)
        n = int(scalars.shape[0])
        aw = AFFINE_U64[self.group]
        if out is None:
            out = cp.empty((n, aw), dtype=cp.uint64)
        fn = kernel(f"msm_{self.group}", f"{self.group}_fixed_mul")
        step = max(1, min(chunk, n))
        scratch = cp.empty(3 * step * aw // 2, dtype=cp.uint64) if n else None  # ZZ, ZZZ, product rows
        for lo in range(0, n, step):
            m = min(step, n - lo)
            threads = -(-m // per_thread)
            fn(_grid(threads), (BLOCK,), (self.table, np.int32(self.c), np.int32(self.nwin), scalars[lo:lo + m], np.uint64(m),
                                         np.uint32(per_thread), out[lo:lo + m], scratch))
        return out
