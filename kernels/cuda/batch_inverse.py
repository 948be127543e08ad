"""Levelled batch inversion of device field elements (kernels/cuda/ff/batch_inverse.cuh).

``BatchInverse(field, capacity)(vals, m)`` replaces the first m values of ``vals`` (rows of Fp or
Fp2 words, Montgomery form) by their inverses (zeros stay zero) on the current stream. Up levels
of BINV_GROUP values a thread bring the count to at most TOP_MAX; there each thread inverts the
product of its TOP_CHAIN values by Fermat and unwinds it, and the down levels unwind the rest. So
an inversion of m values costs about 3 m multiplications plus one Fermat chain's latency (~490
dependent multiplications), in 2 L + 1 launches for L up levels (one up level up to 2^20 values).
The buffers for ``capacity`` values are allocated once, so repeated calls (one per accumulation
round, kernels/cuda/msm_rounds.py) allocate nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels.cuda.module import kernel
from kernels.cuda.points import grid
from kernels.cuda.stream import cupy_module

BINV_GROUP = 32
TOP_CHAIN = 16
TOP_MAX = 1 << 15
BLOCK = 256
# The top level's threads each run a Fermat chain (~490 multiplications): 256 of them on one SM
# would take that SM ~0.6 ms at its multiplication rate, twice one chain's latency, so the top
# level goes in blocks of one warp, spread over as many SMs.
TOP_BLOCK = 32
# field -> (the module whose BATCH_INVERSE_KERNELS it is, 32-bit words a value)
FIELDS = {"fp": ("msm_g1", 12), "fp2": ("msm_g2", 24)}


def levels(m: int) -> list[tuple[int, int]]:
    """(values, threads) of each up level, then of the top level, for m values."""
    out = []
    while m > TOP_MAX:
        t = -(-m // BINV_GROUP)
        out.append((m, t))
        m = t
    out.append((m, max(1, -(-m // TOP_CHAIN))))
    return out


class BatchInverse:
    """In-place inversion of up to ``capacity`` values of ``field`` ("fp" or "fp2")."""

    def __init__(self, field: str, capacity: int) -> None:
        if field not in FIELDS:
            raise ValueError(f"unknown field {field!r}")
        cp = cupy_module()
        self.field, self.capacity = field, capacity
        self.module, self.words = FIELDS[field]
        lv = levels(max(1, capacity))
        # level i's values (level 0: the caller's) and exclusive prefix products; every level's
        # size only shrinks with m, so these fit every m <= capacity
        self.vals: list[Any] = [None] + [cp.empty(m * self.words, dtype=cp.uint32) for m, _ in lv[1:]]
        self.pre = [cp.empty(m * self.words, dtype=cp.uint32) for m, _ in lv]
        # looked up once: a call a round and group, and each lookup is a driver call
        self.up, self.top, self.down = (kernel(self.module, f"{field}_binv_{k}") for k in ("up", "top", "down"))

    def __call__(self, vals: Any, m: int) -> int:
        """Invert vals[:m] in place; returns the number of kernel launches."""
        if m > self.capacity:
            raise ValueError(f"{m} values, capacity {self.capacity}")
        if m == 0:
            return 0
        lv = levels(m)
        arrays = [vals] + self.vals[1:]
        for i, (mi, ti) in enumerate(lv[:-1]):
            self.up(grid(ti, BLOCK), (BLOCK,), (arrays[i], self.pre[i], np.uint32(mi), np.uint32(ti), arrays[i + 1]))
        top = len(lv) - 1
        mt, tt = lv[top]
        self.top(grid(tt, TOP_BLOCK), (TOP_BLOCK,), (arrays[top], self.pre[top], np.uint32(mt), np.uint32(tt)))
        for i in range(top - 1, -1, -1):
            mi, ti = lv[i]
            self.down(grid(ti, BLOCK), (BLOCK,), (arrays[i], self.pre[i], np.uint32(mi), np.uint32(ti), arrays[i + 1]))
        return 2 * top + 1
