"""Host side of the Fr NTT (CuPy): plans, twiddle tables and the pass schedule.

Natural order in and out. Forward: y_j = sum_i x_i w^(ij) with w = root_of_unity(log n).
Inverse: x_i = n^-1 sum_j y_j w^(-ij). coset=True evaluates on FR_COSET_SHIFT * <w> (forward:
x_i is first multiplied by shift^i) or interpolates from it (inverse: the result is multiplied by
shift^-i). Batched input uint64[b, n, 4] transforms each row (the a, b, c path of a prover).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from kernels.constants import FR_COSET_SHIFT, FR_R, R_MOD, root_of_unity
from kernels.cuda.module import kernel
from kernels.cuda.stream import cupy_module as _cp

# Stages per shared-memory pass, at most (SEALTOP_NTT_MAX_STAGES overrides it, for measuring).
# Measured on the H200 (2026-12-01, forward, natural order): at most 8 against at most 10 gave
# 2^20 0.268 against 0.331 ms (3 passes of 64- and 32-thread blocks instead of 2 of 512),
# 2^26 18.07 against 18.21, 2^27 37.26 against 38.55; 2^22 and 2^24 keep their schedules.
MAX_STAGES_PER_PASS = int(os.environ.get("SEALTOP_NTT_MAX_STAGES", "8"))
TABLE_BITS = 12  # power tables are lo[i & 4095] * hi[i >> 12]


def _mont_rows(values: list[int]) -> np.ndarray:
    out = np.empty((len(values), 4), dtype=np.uint64)
    for i, v in enumerate(values):
        out[i] = np.frombuffer((v * FR_R % R_MOD).to_bytes(32, "little"), dtype="<u8")
    return out


def _powers(base: int, count: int, scale: int = 1) -> list[int]:
    out, x = [], scale % R_MOD
    for _ in range(count):
        out.append(x)
        x = x * base % R_MOD
    return out


def pass_schedule(log_n: int, max_stages: int | None = None) -> list[tuple[int, int]]:
    """(first stage, stage count) of each shared-memory pass: as few and as even as possible."""
    npass = max(1, -(-log_n // (max_stages or MAX_STAGES_PER_PASS)))
    sizes = [log_n // npass + (1 if i < log_n % npass else 0) for i in range(npass)]
    out, s0 = [], 0
    for s in sizes:
        out.append((s0, s))
        s0 += s
    return out


def power_table_rows(base: int, count: int, scale: int = 1, bits: int = TABLE_BITS) -> tuple[np.ndarray, np.ndarray]:
    """Host rows (Montgomery) of the tables lo, hi with scale * base^i = lo[i & mask] * hi[i >> bits]
    for i < count."""
    nlo = min(count, 1 << bits)
    nhi = max(1, -(-count // (1 << bits)))
    return _mont_rows(_powers(base, nlo)), _mont_rows(_powers(pow(base, 1 << bits, R_MOD), nhi, scale))


class PowerTable:
    """Device tables lo, hi with value(i) = scale * base^i = lo[i & mask] * hi[i >> bits]."""

    def __init__(self, base: int, count: int, scale: int = 1) -> None:
        cp = _cp()
        lo, hi = power_table_rows(base, count, scale)
        self.lo = cp.asarray(lo)
        self.hi = cp.asarray(hi)


class RowTables:
    """One lo table and a stack of hi tables, row r's value(i) = scales[r] * base^i (the fused H
    step scales each batch row by its own constant); ``hi_stride`` is in 32-bit words."""

    def __init__(self, base: int, count: int, scales: tuple[int, ...]) -> None:
        cp = _cp()
        lo, _ = power_table_rows(base, count)
        his = [power_table_rows(base, count, s)[1] for s in scales]
        self.lo = cp.asarray(lo)
        self.hi = cp.asarray(np.stack(his))
        self.hi_stride = int(his[0].shape[0]) * 8


class NttPlans:
    """Cached twiddle tables and coset/scale tables per size, on the current device."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._twiddles: dict[int, Any] = {}
        self._tables: dict[tuple[str, int], PowerTable] = {}
        self._row_tables: dict[tuple[Any, ...], RowTables] = {}

    def twiddles(self, log_n: int) -> Any:
        """w^k for k <= n/2, w = root_of_unity(log_n), Montgomery, on the device (the last,
        w^(n/2) = -1, serves the inverse DIF of ntt_pass.cuh; ntt_pass reads k < n/2)."""
        with self._lock:
            t = self._twiddles.get(log_n)
            if t is None:
                cp = _cp()
                count = (1 << log_n) // 2 + 1
                pt = PowerTable(root_of_unity(log_n), count)
                t = cp.empty((count, 4), dtype=cp.uint64)
                kernel("ntt", "fr_power_table")(((count + 255) // 256,), (256,), (t, np.uint64(count), pt.lo, pt.hi, np.int32(TABLE_BITS)))
                # cached tables are shared by every thread's stream: finish them before sharing
                cp.cuda.get_current_stream().synchronize()
                self._twiddles[log_n] = t
            return t

    def row_tables(self, key: tuple[Any, ...], base: int, count: int, scales: tuple[int, ...]) -> RowTables:
        """RowTables(base, count, scales), made once per key."""
        with self._lock:
            t = self._row_tables.get(key)
            if t is None:
                t = self._row_tables[key] = RowTables(base, count, scales)
                _cp().cuda.get_current_stream().synchronize()
            return t

    def table(self, kind: str, log_n: int) -> PowerTable:
        """'coset': shift^i; 'inv': n^-1; 'inv_coset': n^-1 shift^-i (i < n)."""
        with self._lock:
            key = (kind, log_n)
            t = self._tables.get(key)
            if t is None:
                n = 1 << log_n
                ninv = pow(n, -1, R_MOD)
                if kind == "coset":
                    t = PowerTable(FR_COSET_SHIFT, n)
                elif kind == "inv":
                    t = PowerTable(1, n, ninv)
                else:
                    t = PowerTable(pow(FR_COSET_SHIFT, -1, R_MOD), n, ninv)
                _cp().cuda.get_current_stream().synchronize()
                self._tables[key] = t
            return t


PLANS = NttPlans()


def ntt(data: Any, *, inverse: bool = False, coset: bool = False, out: Any | None = None) -> Any:
    """NTT of a device array uint64[n, 4] or uint64[b, n, 4]; returns a new device array (or out)."""
    cp = _cp()
    data = cp.ascontiguousarray(data, dtype=cp.uint64)
    batched = data.ndim == 3
    rows = data if batched else data[None]
    b, n = int(rows.shape[0]), int(rows.shape[1])
    if n & (n - 1) or n == 0 or rows.shape[2] != 4:
        raise ValueError(f"NTT needs uint64[n, 4] with n a power of two, got {data.shape}")
    log_n = n.bit_length() - 1
    if out is None:
        out = cp.empty_like(data)
    res = out if batched else out[None]
    if log_n == 0:
        res[...] = rows
        return out
    W = PLANS.twiddles(log_n)
    null = np.uint64(0)
    pre = PLANS.table("coset", log_n) if (coset and not inverse) else None
    post = PLANS.table("inv_coset" if coset else "inv", log_n) if inverse else None
    fn = kernel("ntt", "ntt_pass")
    sched = pass_schedule(log_n)
    for p, (s0, S) in enumerate(sched):
        first, last = p == 0, p == len(sched) - 1
        src = rows if first else res
        args = (
            src, res, np.uint64(n * 4 * 2), W, np.int32(log_n), np.int32(s0), np.int32(S),
            np.int32(1 if first else 0), np.int32(1 if inverse else 0),
            pre.lo if (first and pre) else null, pre.hi if (first and pre) else null,
            post.lo if (last and post) else null, post.hi if (last and post) else null,
            np.int32(TABLE_BITS),
        )
        fn((n >> S, b), (1 << (S - 1),), args, shared_mem=(1 << S) * 32)
    return out
