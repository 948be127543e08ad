"""The MSM's multi-item buckets summed before the window slices (msm.py's fold path), host side.

When no bucket is heavy (msm.py: sort into runs, no run over FOLD_ITEMS items) the window-slice
kernel (msm_core.cuh segments) sums each bucket's work items itself: thread (w, j) walks 32 buckets
of window w, and for each adds its ceil(count / L) item rows into a running sum. A warp takes as
many steps a bucket as its most-cut bucket has items, and a thread's chain is as long as its
buckets have items. Counted for H at porep-32g (2^28 GLV entries, c = 22: six windows of
2^21 buckets, the top one reaching 176,407 buckets of ~1,522 entries; five full ones of mean 128,
sd 11.3; runs of 234 and 1,849 entries, so the fold is taken in both modes below), with Poisson
counts (numpy):
  * xyzz (L = 256): 11.61 M item rows; every full-window bucket one item; the top window's
    buckets 6-7 items (1.12 M rows), all in the 5,513 slice threads (43 blocks of 128) that cover
    its first 176,407 buckets, each a chain of ~256 additions against ~80 for a full window's
    thread: the kernel's tail;
  * rounds (L = msm_rounds.item_length = 151): 12.58 M rows; 220,982 full-window buckets (2.1 %)
    cut in two, so half the warp steps in the full windows take a second addition (924,953
    warp additions against 762,880: +21 %); the top window's buckets 10-12 items (1.87 M rows),
    its threads' chains ~388 additions. The rounds cannot take longer items (the rounds run as
    long as the longest item), so the top window stays cut in 10-12.
That is rounds' window reduction at 47.0 ms against xyzz's 32.4 (H200, 2026-12-04): more rows,
warps diverging on the 2-item buckets, and a longer latency-bound tail. Folding first: one
fold_groups launch, one thread a multi-item bucket (397,389 threads and 2.31 M additions under
rounds, chains of at most 12; 176,407 threads and 1.12 M additions under xyzz, chains of at most
7), each bucket's sum written into its first item row and its count set to 1; then every bucket is
one row (10.66 M rows in both modes, 762,880 warp additions in the full windows, top-window
chains ~76). The result is the same group element (the sum of a bucket's items in another order
of XYZZ additions, which are exact). SEALTOP_MSM_PREFOLD=0 turns it off (for measuring).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from kernels.cuda.module import kernel
from kernels.cuda.points import BLOCK
from kernels.cuda.points import grid as _grid
from kernels.cuda.stream import cupy_module as _cp

PREFOLD = os.environ.get("SEALTOP_MSM_PREFOLD", "1") != "0"


def multi_item_plan(nitems: Any, item_off: Any) -> tuple[Any, Any, Any]:
    """(bucket, first item, items) of every bucket cut into more than one work item, as device
    uint32 arrays in bucket order (so a warp's threads hold buckets of one window and like counts).
    Reads back one size (the nonzero count): call it where the host already waits."""
    cp = _cp()
    b = cp.flatnonzero(nitems > 1)
    return b.astype(cp.uint32), item_off[b].astype(cp.uint32), nitems[b].astype(cp.uint32)


def fold_items(group: str, partials: Any, count: Any, plan: tuple[Any, Any, Any]) -> int:
    """Sum each planned bucket's item rows of ``partials`` into its first row and set its count to
    1, so the slice kernel reads one row for it (ceil(1 / L) = 1); returns the buckets folded.
    One kernel, in place: a scatter of the sums from a separate array cost a copy of every
    folded row (at 2^24 in rounds' short items, every bucket of the 6.8 M)."""
    buckets, first, k = plan
    n = int(buckets.shape[0])
    if n == 0:
        return 0
    kernel(f"msm_{group}", f"{group}_fold_groups")(_grid(n), (BLOCK,), (partials, buckets, first, k, np.uint32(n), count))
    return n
