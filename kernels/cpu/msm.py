"""Pippenger multi-scalar multiplication on the CPU, for G1 and G2, with signed windows.

sum_i s_i·P_i is computed window by window: each scalar is recoded into signed c-bit digits
d in [-2^(c-1), 2^(c-1)], so a window needs only 2^(c-1) buckets (a negative digit adds -P,
which costs one field negation). With few buckets they are XYZZ points fed by 8M + 2S mixed
additions from the affine inputs; with 1024 or more they stay affine, and additions into
distinct buckets are batched so that they share one field inversion (about 6M each; 5% faster
for G1, 20% for G2 at 2^14). Each window's buckets are summed with the running-sum trick, and
the windows are joined by c doublings each. Windows (and, with many threads, chunks of points)
run in parallel with numba's prange. Zero digits, zero scalars and points at infinity cost
nothing in the bucket phase.

Scalars arrive as Fr in Montgomery form, exactly as stored; they are converted here.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from kernels.constants import FR_LIMBS
from kernels.cpu import g1, g2
from kernels.cpu.fr import fr_from_mont, fr_load

_MAX_BATCH = 1024  # affine additions sharing one inversion
_MIN_AFFINE_BUCKETS = 1024  # below this, XYZZ buckets (batches would be too small to pay)
SCALAR_BITS = 256  # recoding covers 256 bits: Fr needs 255, plus room for the last carry


def num_windows(c: int) -> int:
    """Signed c-bit windows that cover any scalar below r (< 2^255).

    With c·nwin >= 256 the top window holds at most 255 - c·(nwin-1) <= c - 1 bits, so with the
    incoming carry its digit is at most 2^(c-1) and never carries out.
    """
    return -(-SCALAR_BITS // c)


@njit(cache=True, parallel=True)
def signed_digits(scalars, c):
    """int32[n, nwin] signed base-2^c digits of Montgomery-form Fr scalars (plain value).

    Digits lie in [-2^(c-1), 2^(c-1)] and sum_k digit[k]·2^(c·k) equals the scalar.
    """
    n = scalars.shape[0]
    nwin = (256 + c - 1) // c
    out = np.empty((n, nwin), np.int32)
    mask = np.uint64((1 << c) - 1)
    half = 1 << (c - 1)
    full = 1 << c
    for i in prange(n):
        raw = fr_from_mont(fr_load(scalars, i))
        carry = 0
        for k in range(nwin):
            pos = c * k
            limb = pos >> 6
            sh = pos & 63
            v = raw[limb] >> np.uint64(sh)
            if sh + c > 64 and limb + 1 < 4:
                v |= raw[limb + 1] << np.uint64(64 - sh)
            d = np.int64(v & mask) + carry
            if d > half:
                d -= full
                carry = 1
            else:
                carry = 0
            out[i, k] = d
    return out


def window_bits(n: int) -> int:
    """The window c minimising the modelled cost of an n-point MSM.

    Per window: n mixed additions for the buckets plus about 2·2^(c-1) full additions (each
    ~1.3 mixed ones) for the running sum.
    """
    best_c, best_cost = 2, float("inf")
    for c in range(2, 17):
        cost = num_windows(c) * (n + 2.6 * (1 << (c - 1)))
        if cost < best_cost:
            best_c, best_cost = c, cost
    return best_c


def _chunks(n: int, nwin: int) -> int:
    """Chunks of points per window, so that every thread has work when windows are few."""
    threads = numba.get_num_threads()
    want = -(-2 * threads // nwin)
    return max(1, min(want, n // 4096 if n >= 4096 else 1))


def _check(points: np.ndarray, scalars: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    points = np.ascontiguousarray(points, dtype=np.uint64)
    scalars = np.ascontiguousarray(scalars, dtype=np.uint64)
    if points.ndim != 2 or points.shape[1] != width:
        raise ValueError(f"points must be uint64[n, {width}], got shape {points.shape}")
    if scalars.ndim != 2 or scalars.shape[1] != FR_LIMBS:
        raise ValueError(f"scalars must be uint64[n, {FR_LIMBS}], got shape {scalars.shape}")
    if scalars.shape[0] != points.shape[0]:
        raise ValueError(f"{points.shape[0]} points but {scalars.shape[0]} scalars")
    return points, scalars


def _batch_size(c: int) -> int:
    """Affine additions per shared inversion, or 0 for XYZZ buckets.

    A batch must amortize the inversion (~570 field operations) yet stay well below the number
    of buckets, or most points would wait on a bucket that is already queued.
    """
    half = 1 << (c - 1)
    return min(_MAX_BATCH, half // 2) if half >= _MIN_AFFINE_BUCKETS else 0


def _msm(
    curve, points: np.ndarray, scalars: np.ndarray, c: int | None, chunks: int | None, batch: int | None
) -> np.ndarray:
    width = curve.AFFINE_WIDTH
    points, scalars = _check(points, scalars, width)
    out = np.zeros((1, width), np.uint64)
    n = points.shape[0]
    if n == 0:
        return out[0]
    c = window_bits(n) if c is None else c
    if not 2 <= c <= 20:
        raise ValueError(f"window width c must be in 2..20, got {c}")
    digits = signed_digits(scalars, c)
    nwin = digits.shape[1]
    nchunks = _chunks(n, nwin) if chunks is None else max(1, min(chunks, n))
    sums = np.empty((nwin * nchunks, curve.XYZZ_WIDTH), np.uint64)
    batch = _batch_size(c) if batch is None else batch
    if curve is g1:
        if batch:
            g1.g1_msm_windows_affine(points, digits, c, nchunks, batch, sums)
        else:
            g1.g1_msm_windows(points, digits, c, nchunks, sums)
        g1.g1_msm_combine(sums, nwin, nchunks, c, out)
    else:
        if batch:
            g2.g2_msm_windows_affine(points, digits, c, nchunks, batch, sums)
        else:
            g2.g2_msm_windows(points, digits, c, nchunks, sums)
        g2.g2_msm_combine(sums, nwin, nchunks, c, out)
    return out[0]


def msm_g1(
    points: np.ndarray,
    scalars: np.ndarray,
    c: int | None = None,
    chunks: int | None = None,
    batch: int | None = None,
) -> np.ndarray:
    """sum_i scalars[i]·points[i] as a G1 affine row uint64[12] (all zeros for infinity).

    points: uint64[n, 12] affine rows; scalars: uint64[n, 4] Fr in Montgomery form.
    c overrides the window width, chunks the number of point chunks per window and batch the
    affine batch size (0: XYZZ buckets); for tests and tuning, by default they follow n and the
    thread count.
    """
    return _msm(g1, points, scalars, c, chunks, batch)


def msm_g2(
    points: np.ndarray,
    scalars: np.ndarray,
    c: int | None = None,
    chunks: int | None = None,
    batch: int | None = None,
) -> np.ndarray:
    """sum_i scalars[i]·points[i] as a G2 affine row uint64[24] (all zeros for infinity).

    points: uint64[n, 24] affine rows (x.c0, x.c1, y.c0, y.c1); scalars: uint64[n, 4] Fr,
    Montgomery form. c, chunks and batch as for msm_g1.
    """
    return _msm(g2, points, scalars, c, chunks, batch)

