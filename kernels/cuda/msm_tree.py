"""Trees of XYZZ additions on the device: a whole array summed to one row, many segments summed
at once, the MSM's heavy buckets (those cut into many work items) folded by such a tree, and each
window's weighted bucket sum (the window slices, kernels/cuda/msm/slices.cuh, then a tree).

One thread's chain of XYZZ additions runs at latency, not throughput: the 2026-12-01 phase times
on the H200 put it near 18 us an addition (the window reduction at c = 20 ended in 13 threads of
1024 additions each, 46 ms; nine heavy buckets reduced one after another by 64-way levels, 11 ms
at 2^20). So every tree here adds at most FAN terms per thread per level, and all segments go
through each level together. With signed digits the top window often holds only a few bits (or
only the carry), so a handful of its buckets receive a large share of all points, and repeated
scalars do the same in every window: those are the heavy buckets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels.cuda.module import kernel
from kernels.cuda.points import BLOCK, XYZZ_U64
from kernels.cuda.points import grid as _grid
from kernels.cuda.stream import cupy_module as _cp
from kernels.cuda.stream import settle, to_host

FAN = 8
HEAVY_MAX_BUCKETS = 1 << 20
# The window slices in one level or two (slices.cuh: at c = 22 the slices' offsets are a third
# of the one-level kernel's additions, which the second level makes a few thousand products).
# SEALTOP_MSM_SLICE_LEVELS per process; 1 until the two are timed on the H200.
SLICE_LEVELS = int(os.environ.get("SEALTOP_MSM_SLICE_LEVELS", "1"))
SLICE_SPLIT, SLICE_FROM0 = 1, 2  # slices.cuh's flags
LEVEL2_LEN = 32  # S rows a second-level slice
# Buckets a slice whatever the window (a power of two; 0: slice_len's choice). SEALTOP_MSM_SLICE_LEN
# per process, for timing: with two levels no thread pays an offset, so shorter slices only add
# threads, and the reduction is a chain of dependent additions a thread (latency-bound).
SLICE_LEN = int(os.environ.get("SEALTOP_MSM_SLICE_LEN", "0"))


def slice_len(c: int) -> int:
    """Buckets a window slice: each thread also multiplies its slice's sum by the slice's offset
    (about log2(offset) doublings, one level), so wide windows take longer slices."""
    if SLICE_LEN:
        if SLICE_LEN & (SLICE_LEN - 1):
            raise ValueError(f"a window slice's length must be a power of two, got {SLICE_LEN}")
        return SLICE_LEN
    return 16 if c <= 16 else 32


def window_sums(group: str, rows: Any, count: Any | None, item_off: Any | None, L: int, half: int, nwin: int,
                c: int, levels: int | None = None) -> Any:
    """Device uint64[nwin, words]: window w's sum_b (b + 1) bucket[b] over its half buckets, bucket
    g being rows[g] (count None) or the sum of its ceil(count[g] / L) work items' rows from
    rows[item_off[g]]: the window slices (one level, or two with SLICE_LEVELS = 2 where a window
    has at least 2 x LEVEL2_LEN slices; `levels` overrides SLICE_LEVELS), then a FAN-way tree a
    window."""
    cp = _cp()
    xw = XYZZ_U64[group]
    sl = slice_len(c)
    nseg = half // sl if half >= sl else 1
    cnt = count if count is not None else np.uint64(0)
    off = item_off if item_off is not None else np.uint64(0)
    if (levels or SLICE_LEVELS) == 2 and nseg >= 2 * LEVEL2_LEN:
        nseg2 = nseg // LEVEL2_LEN
        stride = nseg + nseg2  # window w: its slices' T rows, then its second level's rows
        both = cp.empty((nwin * stride, xw), dtype=cp.uint64)
        sums = cp.empty((nwin * nseg, xw), dtype=cp.uint64)
        slices = kernel(f"msm_{group}", f"{group}_slices")
        slices(_grid(nwin * nseg), (BLOCK,), (rows, cnt, off, np.uint32(L), np.uint32(half), np.uint32(nseg), np.uint32(nwin),
                                              np.uint32(SLICE_SPLIT), np.uint32(0), np.uint32(stride), both, sums))
        scale = (half // nseg).bit_length() - 1  # times the first level's slice length
        slices(_grid(nwin * nseg2), (BLOCK,), (sums, np.uint64(0), np.uint64(0), np.uint32(1), np.uint32(nseg), np.uint32(nseg2),
                                               np.uint32(nwin), np.uint32(SLICE_FROM0), np.uint32(scale), np.uint32(stride),
                                               both[nseg:], np.uint64(0)))
        del sums
        starts = np.arange(nwin, dtype=np.int64) * stride
        return reduce_segments(group, both, starts, np.full(nwin, stride, dtype=np.int64))
    segs = cp.empty((nwin * nseg, xw), dtype=cp.uint64)
    kernel(f"msm_{group}", f"{group}_segments")(_grid(nwin * nseg), (BLOCK,), (
        rows, cnt, off, np.uint32(L), np.uint32(half), np.uint32(nseg), np.uint32(nwin), segs))
    # a tree of FAN-way levels per window (nseg is a power of two, so every level divides it)
    red = kernel(f"msm_{group}", f"{group}_reduce")
    wins, cur = segs, nseg
    while cur > 1:
        per = min(FAN, cur)
        nxt = cp.empty((nwin * (cur // per), xw), dtype=cp.uint64)
        red(_grid(nxt.shape[0]), (BLOCK,), (wins, np.uint64(nwin * cur), np.uint32(per), nxt))
        wins, cur = nxt, cur // per
    return wins


def reduce_all(group: str, arr: Any, count: int, per: int = FAN) -> Any:
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


def reduce_segments(group: str, arr: Any, starts: np.ndarray, lens: np.ndarray) -> Any:
    """Device uint64[len(starts), words]: row s is the XYZZ sum of arr[starts[s] : starts[s] + lens[s]]
    (infinity where lens[s] is 0), by a tree whose threads add at most FAN rows per level; all
    segments go through each level together, in one launch."""
    cp = _cp()
    fn = kernel(f"msm_{group}", f"{group}_reduce_groups")
    xw = XYZZ_U64[group]
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.asarray(lens, dtype=np.int64)
    while True:
        ng = np.maximum(1, -(-lens // FAN))  # groups of each segment at this level
        first = np.cumsum(ng) - ng
        seg_of = np.repeat(np.arange(lens.size), ng)
        k = np.arange(int(ng.sum())) - first[seg_of]
        gstart = starts[seg_of] + FAN * k
        glen = np.clip(lens[seg_of] - FAN * k, 0, FAN)
        out = cp.empty((max(1, gstart.size), xw), dtype=cp.uint64)
        fn(_grid(gstart.size), (BLOCK,), (arr, cp.asarray(gstart.astype(np.uint32)), cp.asarray(glen.astype(np.uint32)),
                                          np.uint32(gstart.size), out))
        if (ng == 1).all():
            return out[: lens.size]
        arr, starts, lens = out, first, ng


@dataclass(frozen=True)
class HeavyBuckets:
    """The buckets cut into more than a limit of work items, the most-cut first (host arrays):
    each bucket's index, its first item and its item count."""

    buckets: np.ndarray
    first: np.ndarray
    items: np.ndarray


def heavy_buckets(nitems: Any, item_off: Any, limit: int) -> HeavyBuckets | None:
    """The buckets of more than ``limit`` items (at most HEAVY_MAX_BUCKETS of them), or None.
    Reads counts back: call it where the host waits already (before the accumulation), so that
    the fold after it queues without waiting."""
    cp = _cp()
    heavy_mask = nitems > np.uint32(limit)
    settle()
    heavy = cp.flatnonzero(heavy_mask)
    if int(heavy.size) == 0:
        return None
    ks = to_host(nitems[heavy])
    order = np.argsort(-ks.astype(np.int64), kind="stable")[:HEAVY_MAX_BUCKETS]
    return HeavyBuckets(to_host(heavy)[order], to_host(item_off[heavy])[order], ks[order])


def fold_heavy(group: str, partials: Any, count: Any, heavy: HeavyBuckets) -> None:
    """Sum each heavy bucket's item rows by a tree into its first row and set its count to 1 (so
    the bucket-sum kernel reads that one row)."""
    cp = _cp()
    sums = reduce_segments(group, partials, heavy.first, heavy.items)
    partials[cp.asarray(heavy.first.astype(np.int64))] = sums
    count[cp.asarray(heavy.buckets.astype(np.int64))] = 1
