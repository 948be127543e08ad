"""Number-theoretic transforms over Fr on the CPU: forward, inverse and coset, natural order in and out.

The transform is an iterative radix-2 decimation-in-time NTT: a bit-reversal gather (in small
square tiles, for locality), then log2(n) butterfly stages. Stages whose butterflies span less
than a cache-sized block run block by block (each block stays in L2 while it goes through all of
them); the wider stages run as flat parallel loops over the whole vector, two stages fused per
pass (radix-4 shape) to halve the memory traffic. Butterflies with twiddle 1 skip their
multiplication. Everything is parallel with numba ``prange``. The cost is dominated by the Fr
multiplication: about 43 ns of one core per butterfly here.

Twiddles live in one table shared by every size: ``table[m + j] = w_{2m}^j`` for each half-width
m = 1, 2, 4, ... (w_{2m} = root_of_unity(log2(2m)), which does not depend on n), so the table for
the largest size seen serves every smaller size, each stage reading a contiguous slice.

The inverse transform reuses the forward one: the DFT with w^-1 is the DFT with w read at index
(n - k) mod n, so the inverse is the forward transform, then that index reversal fused with the
scaling by 1/n (and, for a coset, by shift^-k). The coset forward transform fuses the scaling of
a_i by shift^i into the bit-reversal pass. All arrays are Fr storage: uint64[n, 4], Montgomery.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numba
import numpy as np
from numba import njit, prange

from kernels.constants import FR_COSET_SHIFT, FR_R, R_MOD, root_of_unity
from kernels.cpu.fr import FR_ONE, fr_add, fr_load, fr_mul, fr_store, fr_sub

MAX_LOG_N = 26
# Butterfly stages of half-width below this many elements run inside cache-sized blocks.
_BLOCK_LOG = 12
# Elements per chunk where a running product (powers of a constant) is carried sequentially.
_CHUNK_LOG = 12
# Side (log2) of the square tiles of the bit-reversal permutation.
_TILE_LOG = 4
# Sizes below 2^this run on the calling thread alone: their work (under a millisecond) is less
# than what waking the thread pool can cost on a busy machine (OpenMP spin-waits measured at
# ~10 ms per parallel region with other processes on the cores).
_SERIAL_BELOW_LOG = 12
_MIN_TABLE_LOG = 12


def _mont_limbs(x: int) -> tuple[np.uint64, ...]:
    """One Fr int as a Montgomery 4-tuple of np.uint64, the form numba kernels take."""
    m = x % R_MOD * FR_R % R_MOD
    return tuple(np.uint64((m >> (64 * k)) & (2**64 - 1)) for k in range(4))


@njit(cache=True)
def _fr_pow(x, e):
    """x ** e for a non-negative int64 exponent e (square and multiply)."""
    acc = FR_ONE
    base = x
    while e > 0:
        if e & 1:
            acc = fr_mul(acc, base)
        base = fr_mul(base, base)
        e >>= 1
    return acc


@njit(cache=True)
def _bit_reverse(i, log_n):
    r = 0
    for _ in range(log_n):
        r = (r << 1) | (i & 1)
        i >>= 1
    return r


@njit(cache=True, parallel=True)
def _fill_top_stage(table, half, w):
    """table[half + j] = w^j for j < half: chunked running products, each chunk from w^start."""
    chunk = 1 << _CHUNK_LOG
    n_chunks = (half + chunk - 1) // chunk
    for c in prange(n_chunks):
        start = c * chunk
        stop = min(start + chunk, half)
        p = _fr_pow(w, start)
        for j in range(start, stop):
            fr_store(table, half + j, p)
            p = fr_mul(p, w)


@njit(cache=True, parallel=True)
def _fill_lower_stages(table, half):
    """Every stage below the top one: table[m + j] = table[2m + 2j], since w_{2m} = w_{4m}^2."""
    m = half // 2
    while m >= 1:
        for j in prange(m):
            for k in range(4):
                table[m + j, k] = table[2 * m + 2 * j, k]
        m //= 2


def _build_table(log_n: int) -> np.ndarray:
    """The shared twiddle table for sizes up to 2^log_n (2^log_n rows; row 0 is unused)."""
    n = 1 << log_n
    table = np.zeros((max(n, 2), 4), np.uint64)
    if log_n >= 1:
        half = n // 2
        _fill_top_stage(table, half, _mont_limbs(root_of_unity(log_n)))
        _fill_lower_stages(table, half)
    return table


_table_lock = threading.Lock()
_table: np.ndarray | None = None  # built on first use, so importing compiles nothing
_table_log = 0


def twiddles(log_n: int) -> np.ndarray:
    """The twiddle table covering 2^log_n (grown, then cached, when a larger size first appears)."""
    global _table, _table_log
    with _table_lock:
        if _table is None or log_n > _table_log:
            _table_log = max(log_n, _MIN_TABLE_LOG)  # small sizes share one 128 KiB table
            _table = _build_table(_table_log)
        return _table


@njit(cache=True, parallel=True)
def _gather_bit_reversed(a, out, log_n, tile_log):
    """out[i] = a[rev(i)], in tiles so that reads and writes both stay within a few cache lines.

    Write i = T·2^(log_n-b) + M·2^b + L (T and L of b bits); then rev(i) = rev(L)·2^(log_n-b) +
    rev(M)·2^b + rev(T). For one M the 2^b × 2^b tile of (T, L) reads 2^b runs of 2^b adjacent
    elements and writes 2^b such runs, instead of touching a new cache line per element.
    """
    b = tile_log
    if log_n < 2 * b:
        for i in prange(a.shape[0]):
            r = _bit_reverse(i, log_n)
            for k in range(4):
                out[i, k] = a[r, k]
        return
    mid = log_n - 2 * b
    side = 1 << b
    for m in prange(1 << mid):
        rm = _bit_reverse(m, mid) << b
        wm = m << b
        for t in range(side):
            rt = _bit_reverse(t, b)
            wt = t << (log_n - b)
            for lo in range(side):
                src = (_bit_reverse(lo, b) << (log_n - b)) | rm | rt
                dst = wt | wm | lo
                for k in range(4):
                    out[dst, k] = a[src, k]


@njit(cache=True, parallel=True)
def _scatter_bit_reversed_scaled(a, out, log_n, g):
    """out[rev(i)] = a[i] * g^i: the coset scaling fused into the permutation."""
    n = a.shape[0]
    chunk = min(n, 1 << _CHUNK_LOG)
    for c in prange(n // chunk):
        start = c * chunk
        p = _fr_pow(g, start)
        for i in range(start, start + chunk):
            fr_store(out, _bit_reverse(i, log_n), fr_mul(fr_load(a, i), p))
            p = fr_mul(p, g)


# The butterflies take and return values; the stage loops load and store them. A helper that
# took the array and was called per butterfly kept numba's reference counting of that array
# (an atomic increment and decrement per call, on a counter every thread shares) in the loop:
# see engine/circuit/witness.py's comment on its op loop. Twiddle 1 (j = 0 of every stage)
# skips its multiplication; the fused pair pass keeps its four values in registers between its
# two stages.
@njit(cache=True)
def _butterfly(x, y):
    """(x + y, x - y): one butterfly, its twiddle already applied to y."""
    return fr_add(x, y), fr_sub(x, y)


@njit(cache=True, parallel=True)
def _stages_in_blocks(a, table, log_block):
    """All butterfly stages with span 2m <= 2^log_block, one cache-sized block at a time."""
    n = a.shape[0]
    block = 1 << log_block
    for b in prange(n // block):
        base = b * block
        m = 1
        while m < block:
            for s in range(base, base + block, 2 * m):
                for j in range(m):
                    y = fr_load(a, s + j + m)
                    if j:
                        y = fr_mul(y, fr_load(table, m + j))
                    x, y = _butterfly(fr_load(a, s + j), y)
                    fr_store(a, s + j, x)
                    fr_store(a, s + j + m, y)
            m *= 2


@njit(cache=True, parallel=True)
def _stage_flat(a, table, log_m):
    """One butterfly stage of half-width m = 2^log_m, as a flat parallel loop over n/2 butterflies."""
    m = 1 << log_m
    mask = m - 1
    for t in prange(a.shape[0] // 2):
        j = t & mask
        i0 = ((t >> log_m) << (log_m + 1)) | j
        y = fr_load(a, i0 + m)
        if j:
            y = fr_mul(y, fr_load(table, m + j))
        x, y = _butterfly(fr_load(a, i0), y)
        fr_store(a, i0, x)
        fr_store(a, i0 + m, y)


@njit(cache=True, parallel=True)
def _stage_pair_flat(a, table, log_m):
    """Stages of half-width m and 2m in one pass (radix-4 shape): half the memory traffic.

    For j < m in each block of 4m at s: stage m pairs (s+j, s+j+m) and (s+j+2m, s+j+3m) with
    w_{2m}^j; stage 2m then pairs (s+j, s+j+2m) with w_{4m}^j and (s+j+m, s+j+3m) with w_{4m}^(j+m).
    """
    m = 1 << log_m
    mask = m - 1
    for t in prange(a.shape[0] // 4):
        j = t & mask
        e0 = ((t >> log_m) << (log_m + 2)) | j
        e1 = e0 + m
        e2 = e1 + m
        e3 = e2 + m
        x1 = fr_load(a, e1)
        x3 = fr_load(a, e3)
        if j:
            w = fr_load(table, m + j)
            x1 = fr_mul(x1, w)
            x3 = fr_mul(x3, w)
        x0, x1 = _butterfly(fr_load(a, e0), x1)
        x2, x3 = _butterfly(fr_load(a, e2), x3)
        if j:
            x2 = fr_mul(x2, fr_load(table, 2 * m + j))
        x0, x2 = _butterfly(x0, x2)
        x1, x3 = _butterfly(x1, fr_mul(x3, fr_load(table, 3 * m + j)))
        fr_store(a, e0, x0)
        fr_store(a, e1, x1)
        fr_store(a, e2, x2)
        fr_store(a, e3, x3)


@njit(cache=True, parallel=True)
def _reverse_and_scale(a, c, g, g_inv, c_hi0, with_powers):
    """a[k] <- a[(n-k) mod n] * c * g_inv^k for every k (g = g_inv = 1 and with_powers False
    for a plain inverse, which then scales by the constant c alone).

    Indices k and n-k swap. Walking k up from each chunk's start, the low side's factor
    c * g_inv^k advances by g_inv and the high side's c * g_inv^(n-k) = c_hi0 * g^k advances
    by g (c_hi0 = c * g_inv^n), so no table of powers is needed.
    """
    n = a.shape[0]
    fr_store(a, 0, fr_mul(fr_load(a, 0), c))
    if n == 1:
        return
    half = n // 2
    chunk = min(half, 1 << _CHUNK_LOG)
    for q in prange((half + chunk - 1) // chunk):
        start = max(q * chunk, 1)
        stop = min(q * chunk + chunk, half)
        lo = fr_mul(c, _fr_pow(g_inv, start))
        hi = fr_mul(c_hi0, _fr_pow(g, start))
        for k in range(start, stop):
            x = fr_load(a, k)
            y = fr_load(a, n - k)
            fr_store(a, k, fr_mul(y, lo))
            fr_store(a, n - k, fr_mul(x, hi))
            if with_powers:
                lo = fr_mul(lo, g_inv)
                hi = fr_mul(hi, g)
    # the middle element maps to itself
    fr_store(a, half, fr_mul(fr_load(a, half), fr_mul(c, _fr_pow(g_inv, half))))


def _log2_size(a: np.ndarray) -> int:
    if a.dtype != np.uint64 or a.ndim != 2 or a.shape[1] != 4:
        raise ValueError(f"expected an Fr vector uint64[n, 4], got {a.dtype}{list(a.shape)}")
    n = a.shape[0]
    if n < 1 or n & (n - 1):
        raise ValueError(f"NTT size must be a power of two, got {n}")
    log_n = n.bit_length() - 1
    if log_n > MAX_LOG_N:
        raise ValueError(f"NTT size 2^{log_n} exceeds the supported 2^{MAX_LOG_N}")
    return log_n


def _butterflies(out: np.ndarray, log_n: int) -> None:
    """Run every stage in place on bit-reversed input, leaving the natural-order transform."""
    if log_n == 0:
        return
    table = twiddles(log_n)
    # cache-sized blocks, but enough of them to keep every thread busy on mid-sized inputs
    log_block = min(log_n, _BLOCK_LOG)
    while log_block > 8 and (1 << (log_n - log_block)) < numba.get_num_threads():
        log_block -= 1
    _stages_in_blocks(out, table, log_block)
    log_m = log_block
    while log_m + 1 < log_n:
        _stage_pair_flat(out, table, log_m)
        log_m += 2
    if log_m < log_n:
        _stage_flat(out, table, log_m)


@contextmanager
def _threads_for(log_n: int) -> Iterator[None]:
    """Limit numba to the calling thread for small sizes (the setting is thread-local)."""
    if log_n >= _SERIAL_BELOW_LOG:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def ntt(a: np.ndarray, inverse: bool = False, coset: bool = False) -> np.ndarray:
    """The NTT of Fr vector ``a`` (length a power of two up to 2^26), natural order in and out.

    forward:        A_k = sum_i a_i w^(ik)                  (evaluations on <w>)
    forward coset:  A_k = sum_i a_i (g w^k)^i               (evaluations on g<w>, g = 7)
    inverse:        a_i = (1/n) sum_k A_k w^(-ik)
    inverse coset:  the coefficients whose evaluations on g<w> are A.
    ``a`` is not modified; a new array is returned.
    """
    log_n = _log2_size(a)
    with _threads_for(log_n):
        return _transform(np.ascontiguousarray(a), log_n, inverse, coset)


def _transform(src: np.ndarray, log_n: int, inverse: bool, coset: bool) -> np.ndarray:
    n = 1 << log_n
    out = np.empty_like(src)
    if coset and not inverse:
        _scatter_bit_reversed_scaled(src, out, log_n, _mont_limbs(FR_COSET_SHIFT))
    else:
        _gather_bit_reversed(src, out, log_n, _TILE_LOG)
    _butterflies(out, log_n)
    if inverse:
        g = FR_COSET_SHIFT if coset else 1
        g_inv = pow(g, -1, R_MOD)
        c = pow(n, -1, R_MOD)
        _reverse_and_scale(
            out,
            _mont_limbs(c),
            _mont_limbs(g),
            _mont_limbs(g_inv),
            _mont_limbs(c * pow(g_inv, n, R_MOD)),
            coset,
        )
    return out


def ntt_many(arrays: list[np.ndarray], inverse: bool = False, coset: bool = False) -> list[np.ndarray]:
    """The same transform applied to several vectors (e.g. a, b and c of one partition)."""
    return [ntt(x, inverse=inverse, coset=coset) for x in arrays]
