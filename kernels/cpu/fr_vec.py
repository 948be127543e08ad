"""Elementwise Fr vector kernels over uint64[n, 4] (Montgomery), parallel across cores."""

import numba
import numpy as np
from numba import njit, prange

from kernels.cpu.fr import (
    FR_ONE,
    FR_ZERO,
    fr_add,
    fr_inv,
    fr_is_zero,
    fr_load,
    fr_mul,
    fr_store,
    fr_sub,
)


@njit(cache=True, parallel=True)
def _add(a, b, out):
    for i in prange(a.shape[0]):
        fr_store(out, i, fr_add(fr_load(a, i), fr_load(b, i)))


@njit(cache=True, parallel=True)
def _sub(a, b, out):
    for i in prange(a.shape[0]):
        fr_store(out, i, fr_sub(fr_load(a, i), fr_load(b, i)))


@njit(cache=True, parallel=True)
def _mul(a, b, out):
    for i in prange(a.shape[0]):
        fr_store(out, i, fr_mul(fr_load(a, i), fr_load(b, i)))


@njit(cache=True, parallel=True)
def _batch_inv(a, step, out):
    """Montgomery's trick per chunk of ``step`` rows (one inversion and 3(step-1)
    multiplications each, the chunks on numba's threads); zeros map to zero."""
    n = a.shape[0]
    for c in prange((n + step - 1) // step):
        lo, hi = c * step, min(n, (c + 1) * step)
        acc = FR_ONE
        for i in range(lo, hi):
            fr_store(out, i, acc)
            x = fr_load(a, i)
            if not fr_is_zero(x):
                acc = fr_mul(acc, x)
        inv = fr_inv(acc)
        for i in range(hi - 1, lo - 1, -1):
            x = fr_load(a, i)
            if fr_is_zero(x):
                fr_store(out, i, FR_ZERO)
                continue
            fr_store(out, i, fr_mul(inv, fr_load(out, i)))
            inv = fr_mul(inv, x)


def chunk_rows(n: int) -> int:
    """Rows per chunk for a vector of n rows: one chunk per numba thread, at least 4096 rows
    (so small vectors stay in one or a few chunks and pay one inversion each)."""
    return max(4096, -(-n // numba.get_num_threads()))


def _check(*arrays: np.ndarray) -> None:
    for x in arrays:
        if x.dtype != np.uint64 or x.ndim != 2 or x.shape[1] != 4:
            raise ValueError(f"expected an Fr vector uint64[n, 4], got {x.dtype}{list(x.shape)}")
    if any(x.shape != arrays[0].shape for x in arrays):
        raise ValueError("Fr vectors differ in length")


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _check(a, b)
    out = np.empty_like(a)
    _add(a, b, out)
    return out


def sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _check(a, b)
    out = np.empty_like(a)
    _sub(a, b, out)
    return out


def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _check(a, b)
    out = np.empty_like(a)
    _mul(a, b, out)
    return out


def sqr(a: np.ndarray) -> np.ndarray:
    return mul(a, a)


def batch_inv(a: np.ndarray) -> np.ndarray:
    _check(a)
    out = np.empty_like(a)
    if len(a):
        _batch_inv(np.ascontiguousarray(a), chunk_rows(len(a)), out)
    return out
