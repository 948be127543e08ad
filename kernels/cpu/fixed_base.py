"""Fixed-base scalar multiplication on the CPU: out[i] = scalars[i]·base for many scalars.

Setup multiplies one base (a generator times a toxic-waste power) by tens of thousands of
scalars, so the base's multiples are precomputed once: for window width w and each window k,
the affine table holds j·2^(w·k)·base for j = 1..2^(w-1). A scalar recoded into signed w-bit
digits then costs one addition per nonzero digit (about 256/w), with no doublings. The table
is built in parallel over windows (XYZZ, then batch-normalized). The scalars go in parallel
blocks whose accumulators stay affine: window by window, a block's additions share one field
inversion (Montgomery's trick), about 6 field multiplications per addition, and the results
need no normalization.

Tables are kept per base (up to _CACHE_BYTES), since setup reuses the same generators.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numba
import numpy as np

from kernels.constants import FR_LIMBS
from kernels.cpu import g1, g2
from kernels.cpu.msm import num_windows, signed_digits

_PASS = 1 << 18  # scalars recoded per pass, to bound the digit memory
_MAX_BATCH = 1024  # scalars sharing one inversion per window (amortizes its ~570 field ops)
_TABLE_COST = 3.0  # one table entry (XYZZ addition + normalization) in batched affine additions
_CACHE_BYTES = 512 << 20  # tables kept for reuse, at most this much memory in all
_tables: OrderedDict[tuple[str, bytes, int], np.ndarray] = OrderedDict()
_tables_lock = threading.Lock()


def table_bits(n: int) -> int:
    """Window width minimising n·windows + table size·_TABLE_COST (in affine additions)."""
    best_w, best_cost = 2, float("inf")
    for w in range(2, 17):
        nwin = num_windows(w)
        cost = n * nwin + _TABLE_COST * nwin * (1 << (w - 1))
        if cost < best_cost:
            best_w, best_cost = w, cost
    return best_w


def _kernels(curve):
    if curve is g1:
        return g1.g1_window_bases, g1.g1_fixed_base_table, g1.g1_fixed_base_eval, g1.g1_batch_to_affine
    return g2.g2_window_bases, g2.g2_fixed_base_table, g2.g2_fixed_base_eval, g2.g2_batch_to_affine


def _cached(curve, base: np.ndarray, w: int, exact: bool) -> tuple[int, np.ndarray] | None:
    """A kept table for this base of width w, or (unless exact) wider: that only costs less."""
    name, raw = curve.__name__, base.tobytes()
    with _tables_lock:
        fits = [
            k for k in _tables if k[0] == name and k[1] == raw and (k[2] == w or (k[2] > w and not exact))
        ]
        if not fits:
            return None
        key = min(fits, key=lambda k: k[2])
        _tables.move_to_end(key)
        return key[2], _tables[key]


def _build_table(curve, base: np.ndarray, w: int) -> np.ndarray:
    window_bases, build, _, to_affine = _kernels(curve)
    nwin = num_windows(w)
    half = 1 << (w - 1)
    bases_xyzz = np.empty((nwin, curve.XYZZ_WIDTH), np.uint64)
    window_bases(base.reshape(1, -1), w, nwin, bases_xyzz)
    bases = np.empty((nwin, curve.AFFINE_WIDTH), np.uint64)
    to_affine(bases_xyzz, bases)
    table_xyzz = np.empty((nwin * half, curve.XYZZ_WIDTH), np.uint64)
    build(bases, w, table_xyzz)
    table = np.empty((nwin * half, curve.AFFINE_WIDTH), np.uint64)
    to_affine(table_xyzz, table)
    table.setflags(write=False)
    return table


def base_table(curve, base: np.ndarray, w: int, exact: bool = False) -> tuple[int, np.ndarray]:
    """(w', table) with w' >= w (w' = w if exact): affine rows k·2^(w'-1) + j - 1 = j·2^(w'·k)·base.

    Tables are kept (least recently used dropped first, _CACHE_BYTES in all), since setup
    multiplies the same generator by every query's scalars.
    """
    hit = _cached(curve, base, w, exact)
    if hit is not None:
        return hit
    table = _build_table(curve, base, w)
    with _tables_lock:
        _tables[(curve.__name__, base.tobytes(), w)] = table
        while len(_tables) > 1 and sum(t.nbytes for t in _tables.values()) > _CACHE_BYTES:
            _tables.popitem(last=False)
    return w, table


def clear_tables() -> None:
    """Drop every kept table (frees their memory)."""
    with _tables_lock:
        _tables.clear()


def _batch(n: int) -> int:
    """Scalars per block: large enough to amortize the inversion, small enough for all threads."""
    threads = numba.get_num_threads()
    return max(1, min(_MAX_BATCH, -(-n // threads)))


def _fixed_base(curve, base: np.ndarray, scalars: np.ndarray, w: int | None) -> np.ndarray:
    width = curve.AFFINE_WIDTH
    base = np.ascontiguousarray(base, dtype=np.uint64).reshape(-1)
    scalars = np.ascontiguousarray(scalars, dtype=np.uint64)
    if base.shape[0] != width:
        raise ValueError(f"base must be uint64[{width}], got shape {base.shape}")
    if scalars.ndim != 2 or scalars.shape[1] != FR_LIMBS:
        raise ValueError(f"scalars must be uint64[n, {FR_LIMBS}], got shape {scalars.shape}")
    n = scalars.shape[0]
    out = np.zeros((n, width), np.uint64)
    if n == 0 or not base.any():
        return out
    w, table = base_table(curve, base, table_bits(n) if w is None else w, exact=w is not None)
    _, _, evaluate, _ = _kernels(curve)
    for lo in range(0, n, _PASS):
        hi = min(n, lo + _PASS)
        evaluate(table, signed_digits(scalars[lo:hi], w), w, out[lo:hi], _batch(hi - lo))
    return out


def fixed_base_g1(base: np.ndarray, scalars: np.ndarray, w: int | None = None) -> np.ndarray:
    """out[i] = scalars[i]·base as G1 affine rows uint64[n, 12].

    base: one G1 affine row uint64[12]; scalars: uint64[n, 4] Fr in Montgomery form.
    w overrides the table's window width (for tests and tuning).
    """
    return _fixed_base(g1, base, scalars, w)


def fixed_base_g2(base: np.ndarray, scalars: np.ndarray, w: int | None = None) -> np.ndarray:
    """out[i] = scalars[i]·base as G2 affine rows uint64[n, 24].

    base: one G2 affine row uint64[24]; scalars: uint64[n, 4] Fr in Montgomery form.
    """
    return _fixed_base(g2, base, scalars, w)
