"""Host side of the G1/G2 multi-scalar multiplication and fixed-base multiplication (CuPy).

``msm(group, points, scalars)`` computes sum_i scalars[i] * points[i] on the device:
  1. scalars (Fr, Montgomery) become canonical integers and are classed 0, 1 or other;
  2. points with scalar 1 are summed with plain additions, scalars 0 are skipped;
  3. the rest (the tail) go through Pippenger with signed c-bit digits, a counting sort of the
     (point, digit) pairs by bucket, XYZZ bucket accumulation in bounded work items, and a
     sliced running-sum reduction of each window;
  4. the windows are combined (Horner), the ones sum added and the result written affine: on
     the host by default (HOST_FINISH; Python integers beat one GPU thread here), or in one
     GPU thread.
Every array keeps design.md's layout: points uint64[n, 12] (G1) or [n, 24] (G2), scalars
uint64[n, 4], the result uint64[1, words] affine with infinity all zeros.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernels.cuda.finish import combine_windows
from kernels.cuda.module import kernel
from kernels.cuda.stream import cupy_module as _cp
from kernels.cuda.stream import settle, to_host

# uint64 words per affine point and per XYZZ point
AFFINE_U64 = {"g1": 12, "g2": 24}
XYZZ_U64 = {"g1": 24, "g2": 48}
BLOCK = 128
SLICE = 16  # buckets per thread in the window reduction
# A bucket cut into more work items than this has its item sums added by a tree of reductions
# instead of serially by one thread: with signed digits the top window often holds only a few
# bits (or only the carry), so a handful of its buckets receive a large share of all points.
# Measured (H200, G1, threshold 32): at 2^20 points, c = 12 (about 9 top-window buckets of about
# 128 items each) the tree's extra launches made the bucket phase 23 ms against 7 ms serially;
# at 2^24, c = 15 (one carry-only bucket of about 8192 items) the tree made it 7 ms against 184 ms.
# 256 keeps the first case serial and the second on the tree (not re-measured at 256).
HEAVY_ITEMS = 256
HEAVY_MAX_BUCKETS = 1024
# Combine the windows on the host (kernels/cuda/finish.py) rather than in one GPU thread.
HOST_FINISH = True
# Work items the accumulation aims for: about four waves of its resident threads on an H200
# (132 SMs x 4 blocks of 128). Fewer, longer items leave small MSMs latency-bound: at 2^20 points
# with one item per bucket each thread adds ~512 points in sequence on a card a third full.
TARGET_ITEMS = 132 * 512 * 4



def _grid(n: int, block: int = BLOCK) -> tuple[int]:
    return (max(1, (n + block - 1) // block),)


def default_window(m: int, group: str) -> int:
    """Window bits c for a tail of m scalars: log2(m) - 8, between 4 and 16.

    Measured on the H200 (2026-11-30, G1, 2^24 points, docs/BENCHMARKS.md): c = 16 took
    317 ms, c = 15 393 ms, c = 14 541 ms; before the bucket phases were reworked, c = 18 took
    1096 ms and c = 20 1289 ms. c = 16 also leaves the top window a full 15 bits, so no bucket is
    heavy (see HEAVY_ITEMS).
    """
    lg = max(1, m.bit_length() - 1)
    return max(4, min(16, lg - 8))


@dataclass
class MsmStats:
    """What one MSM did, for benchmarks and tests (counts come back from the device)."""

    n: int = 0
    ones: int = 0
    tail: int = 0
    window: int = 0
    items: int = 0
    item_len: int = 0
    extra: dict[str, float] = field(default_factory=dict)


def _reduce_all(group: str, arr: Any, count: int, per: int = 64) -> Any:
    """Sum count XYZZ points in arr down to one (uint64[1, words])."""
    cp = _cp()
    fn = kernel(f"msm_{group}", f"{group}_reduce")
    xw = XYZZ_U64[group]
    while count > 1:
        nout = (count + per - 1) // per
        out = cp.empty((nout, xw), dtype=cp.uint64)
        fn(_grid(nout), (BLOCK,), (arr, np.uint64(count), np.uint32(per), out))
        arr, count = out, nout
    if count == 0:
        return cp.zeros((1, xw), dtype=cp.uint64)
    return arr


def item_length(m: int, nwin: int, half: int) -> int:
    """Points per accumulation work item: enough items to fill the card (TARGET_ITEMS), never
    more than about one item per bucket on average (2 m / half), at least 8."""
    per_bucket = 2 * ((m + half - 1) // half)
    fill = -(-(m * nwin) // TARGET_ITEMS)
    return max(8, min(per_bucket, fill))


def msm(group: str, points: Any, scalars: Any, window: int | None = None, stats: MsmStats | None = None,
        item_len: int | None = None) -> Any:
    """sum_i scalars[i] * points[i] for device arrays; returns a device uint64[1, words] affine point.

    window (bits per digit) and item_len (points per accumulation work item) override the
    defaults, for benchmarks and tests."""
    cp = _cp()
    if group not in AFFINE_U64:
        raise ValueError(f"unknown group {group!r}")
    aw, xw = AFFINE_U64[group], XYZZ_U64[group]
    n = int(scalars.shape[0])
    marks: list[tuple[str, Any]] = []

    def mark(name: str) -> None:
        if stats is not None:
            ev = cp.cuda.Event()
            ev.record()
            marks.append((name, ev))

    mark("start")
    if points.shape[0] < n or points.shape[1] != aw:
        raise ValueError(f"{group} MSM: points {points.shape} do not match {n} scalars")
    points = cp.ascontiguousarray(points, dtype=cp.uint64)
    scalars = cp.ascontiguousarray(scalars, dtype=cp.uint64)
    out = cp.zeros((1, aw), dtype=cp.uint64)
    if n == 0:
        return out

    canon = cp.empty((n, 4), dtype=cp.uint64)
    cls = cp.empty(n, dtype=cp.uint8)
    kernel("msm_g1", "msm_scalars")(_grid(n, 256), (256,), (scalars, canon, cls, np.uint64(n)))

    # scalars equal to one: plain additions, in chunks, then a reduction
    chunk = 256
    nparts = (n + chunk - 1) // chunk
    partial = cp.empty((nparts, xw), dtype=cp.uint64)
    kernel(f"msm_{group}", f"{group}_sum_ones")(_grid(nparts), (BLOCK,), (points, cls, np.uint64(n), np.uint32(chunk), partial))
    ones = _reduce_all(group, partial, nparts)
    mark("scalars_and_ones")

    tail_mask = cls == 2
    settle()  # flatnonzero reads a count back to the host
    tail_idx = cp.flatnonzero(tail_mask)
    del tail_mask
    m = int(tail_idx.size)
    if stats is not None:
        stats.n, stats.tail = n, m
        ones_mask = cls == 1
        settle()
        stats.ones = int(cp.count_nonzero(ones_mask))
    finish = kernel(f"msm_{group}", f"{group}_finish")
    if m == 0:
        if HOST_FINISH:
            row = combine_windows(group, np.zeros((0, xw), dtype=np.uint64), 1, to_host(ones))
            out[...] = cp.asarray(row.reshape(1, aw))
        else:
            finish((1,), (1,), (ones, np.int32(0), np.int32(1), ones, out))
        mark("finish")
        _phase_times(stats, marks)
        return out
    idx = tail_idx.astype(cp.uint32) if m < n else None
    idx_arg = idx if idx is not None else np.uint64(0)
    del tail_idx

    c = window or default_window(m, group)
    nwin = (256 + c - 1) // c
    half = 1 << (c - 1)
    nb = nwin * half

    count = cp.zeros(nb, dtype=cp.uint32)
    kernel("msm_g1", "msm_histogram")(_grid(m, 256), (256,), (canon, idx_arg, np.uint32(m), np.int32(c), np.int32(nwin), count))
    bucket_off = cp.cumsum(count, dtype=cp.uint32) - count
    cursor = bucket_off.copy()
    sorted_ = cp.empty(nwin * m, dtype=cp.uint32)
    kernel("msm_g1", "msm_scatter")(_grid(m, 256), (256,), (canon, idx_arg, np.uint32(m), np.int32(c), np.int32(nwin), cursor, sorted_))
    del cursor, canon
    mark("sort")

    L = item_len or item_length(m, nwin, half)
    nitems = (count + np.uint32(L - 1)) // np.uint32(L)
    item_off = cp.cumsum(nitems, dtype=cp.uint32) - nitems
    settle()
    total_items = int(item_off[-1]) + int(nitems[-1])
    item_start = cp.empty(max(total_items, 1), dtype=cp.uint32)
    item_end = cp.empty(max(total_items, 1), dtype=cp.uint32)
    kernel("msm_g1", "msm_items")(_grid(nb, 256), (256,), (count, bucket_off, item_off, np.uint32(nb), np.uint32(L), item_start, item_end))
    del bucket_off
    mark("items")

    partials = cp.empty((max(total_items, 1), xw), dtype=cp.uint64)
    kernel(f"msm_{group}", f"{group}_accumulate")(_grid(total_items), (BLOCK,), (points, sorted_, item_start, item_end, np.uint32(total_items), partials))
    del sorted_, item_start, item_end
    mark("accumulate")
    _reduce_heavy(group, partials, nitems, item_off, count)
    del nitems
    buckets = cp.empty((nb, xw), dtype=cp.uint64)
    kernel(f"msm_{group}", f"{group}_bucket_sum")(_grid(nb), (BLOCK,), (partials, count, item_off, np.uint32(nb), np.uint32(L), buckets))
    del partials, count, item_off
    mark("bucket_sum")

    nseg = half // SLICE if half >= SLICE else 1
    segs = cp.empty((nwin * nseg, xw), dtype=cp.uint64)
    kernel(f"msm_{group}", f"{group}_segments")(_grid(nwin * nseg), (BLOCK,), (buckets, np.uint32(half), np.uint32(nseg), np.uint32(nwin), segs))
    del buckets
    wins = cp.empty((nwin, xw), dtype=cp.uint64)
    # two levels, so no thread adds more than 32 slice sums serially
    per1 = min(32, nseg)
    mid = cp.empty((nwin * nseg // per1, xw), dtype=cp.uint64)
    red = kernel(f"msm_{group}", f"{group}_reduce")
    red(_grid(mid.shape[0]), (BLOCK,), (segs, np.uint64(nwin * nseg), np.uint32(per1), mid))
    red(_grid(nwin), (BLOCK,), (mid, np.uint64(mid.shape[0]), np.uint32(nseg // per1), wins))
    del mid
    mark("window_reduce")
    if HOST_FINISH:
        row = combine_windows(group, to_host(wins), c, to_host(ones))
        out[...] = cp.asarray(row.reshape(1, aw))
    else:
        finish((1,), (1,), (wins, np.int32(nwin), np.int32(c), ones, out))
    mark("finish")
    if stats is not None:
        stats.window, stats.items, stats.item_len = c, total_items, L
        _phase_times(stats, marks)
    return out


def _reduce_heavy(group: str, partials: Any, nitems: Any, item_off: Any, count: Any) -> None:
    """Sum the items of buckets with more than HEAVY_ITEMS items by a tree of reductions, leaving
    the sum in the bucket's first item and its count at 1 (so the bucket-sum kernel reads one)."""
    cp = _cp()
    heavy_mask = nitems > np.uint32(HEAVY_ITEMS)
    settle()
    heavy = cp.flatnonzero(heavy_mask)
    if int(heavy.size) == 0:
        return
    ks = to_host(nitems[heavy])
    order = np.argsort(-ks.astype(np.int64), kind="stable")[:HEAVY_MAX_BUCKETS]
    hb = to_host(heavy)[order]
    offs = to_host(item_off[heavy])[order]
    for b, off, k in zip(hb.tolist(), offs.tolist(), ks[order].tolist()):
        total = _reduce_all(group, partials[off : off + k], k)
        partials[off] = total[0]
        count[b] = 1


def _phase_times(stats: MsmStats | None, marks: list[tuple[str, Any]]) -> None:
    """Milliseconds between consecutive CUDA events, into stats.extra (only when stats asked)."""
    if stats is None or not marks:
        return
    cp = _cp()
    marks[-1][1].synchronize()
    for (_, a), (name, b) in zip(marks, marks[1:]):
        stats.extra[name] = stats.extra.get(name, 0.0) + cp.cuda.get_elapsed_time(a, b)


FIXED_C = 8
FIXED_NWIN = 32


class FixedBase:
    """A precomputed table for out[i] = scalars[i] * base: table[w][d-1] = (d << 8w) * base."""

    def __init__(self, group: str, base: Any) -> None:
        cp = _cp()
        self.group = group
        aw = AFFINE_U64[group]
        b = cp.ascontiguousarray(cp.asarray(base, dtype=cp.uint64).reshape(1, aw))
        per = (1 << FIXED_C) - 1
        self.table = cp.empty((FIXED_NWIN * per, aw), dtype=cp.uint64)
        kernel(f"msm_{group}", f"{group}_fixed_table")(_grid(FIXED_NWIN * per), (BLOCK,), (b, np.int32(FIXED_C), np.int32(FIXED_NWIN), self.table))

    def mul(self, scalars: Any, out: Any | None = None) -> Any:
        """Device uint64[n, words] affine points scalars[i] * base (written into out if given)."""
        cp = _cp()
        scalars = cp.ascontiguousarray(scalars, dtype=cp.uint64)
        n = int(scalars.shape[0])
        aw = AFFINE_U64[self.group]
        if out is None:
            out = cp.empty((n, aw), dtype=cp.uint64)
        if n:
            kernel(f"msm_{self.group}", f"{self.group}_fixed_mul")(_grid(n), (BLOCK,), (self.table, np.int32(FIXED_C), np.int32(FIXED_NWIN), scalars, np.uint64(n), out))
        return out
