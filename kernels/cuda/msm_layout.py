"""The MSM's layout, worked out on the host before any launch: how wide its windows are and
where the sort into runs puts each bucket's entries (kernels/cuda/msm.py runs the MSM on it;
tests/test_cuda_msm_plan.py checks it against counting)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels.cuda.stream import cupy_module as _cp

MAX_WINDOW = 16
# From 2^26 scalars on, wider windows: at 2^26 (H200, 2026-12-01) c = 20 took 493.8 ms against
# c = 16 516.0, c = 18 523.5 and c = 19 515.0 (13 windows instead of 16: accumulation 366 ms
# against 447, partly paid back in the sort, 85 against 60 ms, and the window reduction).
LARGE_LOG = 26
LARGE_WINDOW = 20
# G1 from 2^MID_LOG scalars up to 2^LARGE_LOG: window 20, its work items summed by the window slices
# themselves (no bucket-sum pass) and the slices in two levels (msm.py, msm_tree.window_sums). On
# an H100 (2026-12-05, scripts/msm_plans.py, the same points and scalars in one process) 2^24 took
# 126.1-127.6 ms against 134.7-136.0 at window 16, and sppark 155.6 ms in the same call;
# without the fold and the two levels window 20 was slower than 16 (137.5 ms: 24 ms of bucket
# sums and reduction). G2 keeps default_window's choice (not timed at window 20).
# Their sort goes into runs (two passes, msm_sort2) allowed MID_RUNS_SLACK times the exact sort's
# memory (a run there is ~2.9 times its bucket's mean count, all runs ~2.8 times the exact sort's
# entries: 2.4 GB at 2^24): on an H100 (2026-12-05, msm_plans, one process) 2^24 took
# 122.8-123.1 ms against 128.1 with the exact sort, whose histogram and scatter took 17.3 ms
# where the runs take 12.2-12.8.
# From 2^23 scalars too (H100, 2026-12-05, msm_plans): window 20 with the fold 69.9-70.0 ms
# against window 16's 71.3 (the runs do not fit MID_RUNS_SLACK there: the exact sort, then the fold).
MID_LOG = 23
MID_WINDOW = 20
MID_RUNS_SLACK = 3.0
# From 2^23 to 2^26 G1 scalars (no GLV split) the buckets are accumulated by batch-affine rounds
# (msm_rounds) in work items of about a bucket's mean count, ROUNDS_LEN entries at least and at
# most. A round pays one grid-wide inversion's latency, so longer items (more rounds) lose where
# the slots are few; shorter ones cut more buckets into several items, which the prefold
# (msm_fold) then sums. With the binary GCD at the inversion's top (a cheaper round), on an H100
# (2026-12-05, scripts/msm_plans.py, one process a size, ms): 2^23 in items of 20 / 24 / 28 63.9 /
# 63.7 / 65.0 against XYZZ's 70.0; 2^24 in items of 24 / 32 / 40 / 48 110.1 / 104.8 / 103.5 /
# 105.5 (XYZZ 119.9); 2^25 in items of 32 / 48 / 64 / 96 196.1 / 188.7 / 184.2 / 189.5; 2^26 in
# items of 48 / 64 / 96 / 128 366.3 / 359.0 / 352.9 / 350.1. (With Fermat's chain at the top,
# items of half the mean had been best: docs/BENCHMARKS.md, eighteenth round.) H's GLV-split
# entries keep msm_rounds.item_length (2^27: 151 entries 607.9 ms, 96 626.5, 128 617.5, 200 620.4).
ROUNDS_LOGS = (23, 26)
ROUNDS_LEN = (24, 128)


def mid_plan(m: int, group: str) -> bool:
    """Whether a tail of m scalars gets the window-20 plan above."""
    return group == "g1" and MID_LOG <= max(1, m.bit_length() - 1) < LARGE_LOG


def rounds_length(m: int, half: int, group: str) -> int | None:
    """The rounds' work-item length for a tail of m G1 scalars (not GLV-split) in windows of
    ``half`` buckets where ROUNDS_LOGS gives them the rounds (above): a bucket's mean count within
    ROUNDS_LEN; None elsewhere."""
    lg = max(1, m.bit_length() - 1)
    if group != "g1" or not ROUNDS_LOGS[0] <= lg <= ROUNDS_LOGS[1]:
        return None
    lo, hi = ROUNDS_LEN
    return max(lo, min(hi, round(m / half)))


def top_window_bits(c: int) -> int:
    """Scalar bits (of 255) left for the last of ceil(256 / c) signed-digit windows."""
    nwin = (256 + c - 1) // c
    return 255 - (nwin - 1) * c


def default_window(m: int, group: str, mid: bool = True) -> int:
    """Window bits c for a tail of m scalars.

    LARGE_WINDOW from 2^LARGE_LOG scalars on, MID_WINDOW for G1 from 2^MID_LOG (unless not `mid`:
    GLV-split entries, whose plan was timed at LARGE only). Below, candidates around log2(m) - 4 (at most
    MAX_WINDOW); those whose top window keeps fewer than c / 2 scalar bits are dropped (its few
    buckets then take a large share of all points: c = 12 leaves 3 bits, c = 14 3, c = 15 only
    the carry); of the rest, the one with the fewest estimated additions wins: nwin * m in the
    buckets, plus about 4 per bucket for the bucket sums and the window reduction.
    Measured on the H200 (2026-12-01, G1): at 2^20, c = 12 19.9 ms, 13 19.0, 14 18.8, 16 16.8;
    at 2^22, c = 13 49.3 ms, 16 40.7; at 2^24, c = 16 152.5, 17 170.5, 18 189.1, 20 211.5 (the
    last four before the reduction trees and the item order of this version).
    """
    lg = max(1, m.bit_length() - 1)
    if lg >= LARGE_LOG:
        return LARGE_WINDOW
    if mid and mid_plan(m, group):
        return MID_WINDOW
    c0 = max(4, min(MAX_WINDOW, lg - 4))
    best, best_cost = c0, None
    for c in range(max(4, c0 - 3), min(MAX_WINDOW, c0 + 2) + 1):
        tiny = top_window_bits(c) < c // 2
        if tiny and c != c0:
            continue
        nwin = (256 + c - 1) // c
        cost = nwin * m + 4 * nwin * (1 << (c - 1))
        if tiny:
            cost *= 2  # c0 itself with a tiny top window: only when nothing else qualifies
        if best_cost is None or cost < best_cost:
            best, best_cost = c, cost
    return best


def bucket_runs(m: int, c: int, nwin: int, bound: int, slack: float = 2.0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """(first entry, run length and buckets with runs, per window; entries in all) for m scalars
    at most ``bound`` in c-bit signed windows, or None when the runs would not fit 32-bit
    positions or ``slack`` times the exact sort's memory (at 2^24 scalars in 20-bit windows a
    run is ~2.9 times its bucket's mean count, so the default 2 turns the runs down there). A
    full window's digit magnitudes spread evenly over its 2^(c-1) buckets; a top window whose raw
    value (bits plus carry) stays at most 2^(c-1) is never negated and reaches only its first
    (bound >> c w) + 1 buckets."""
    half = 1 << (c - 1)
    wnb = np.empty(nwin, np.uint32)
    wcap = np.empty(nwin, np.uint32)
    for w in range(nwin):
        top = (bound >> (c * w)) + 1  # the largest raw value when this window holds the top bits
        nb = top if top <= half else half
        mean = m / nb
        wnb[w], wcap[w] = nb, int(mean + 8 * mean ** 0.5 + 16)
    sizes = wnb.astype(np.int64) * wcap
    total = int(sizes.sum())
    if total >= 1 << 32 or total > slack * nwin * m + (1 << 20):
        return None
    wbase = (np.cumsum(sizes) - sizes).astype(np.uint32)
    return wbase, wcap, wnb, total


def run_offsets(wbase: np.ndarray, wcap: np.ndarray, wnb: np.ndarray, half: int) -> Any:
    """Device uint32[nwin * half]: where each bucket's run starts (the window's first entry for a
    bucket without a run: its count is 0, so it has no work items)."""
    cp = _cp()
    k = cp.arange(half, dtype=cp.uint32)
    rows = [cp.where(k < np.uint32(nb), np.uint32(base) + k * np.uint32(cap), np.uint32(base)).astype(cp.uint32)
            for base, cap, nb in zip(wbase.tolist(), wcap.tolist(), wnb.tolist())]
    return cp.concatenate(rows)
