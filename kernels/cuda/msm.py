"""Host side of the G1/G2 multi-scalar multiplication (CuPy; fixed base: kernels/cuda/fixed_base.py).

``msm(group, points, scalars)`` computes sum_i scalars[i] * points[i] on the device:
  1. scalars (Fr, Montgomery) are classed 0, 1 or other, and the others' canonical integers
     found (two ways, ONES: "sum" converts every scalar, "list" reads the classes off the
     Montgomery words and lists the ones and the others);
  2. points with scalar 1 are summed with plain additions, scalars 0 are skipped;
  3. the rest (the tail) go through Pippenger with signed c-bit digits, a counting sort of the
     (point, digit) pairs by bucket (for large evenly spread tails one pass into fixed runs,
     SORT_RUNS), XYZZ bucket accumulation in bounded work items, and a sliced running-sum
     reduction of each window; a large G1 MSM over a table with its endomorphism images (H's,
     whose scalars are full-length) skips steps 1 and 2 and splits every scalar GLV-wise into
     two half-length ones (GLV_MIN_TAIL);
  4. the windows are combined (Horner), the ones sum added and the result written affine: on
     the host by default (HOST_FINISH; Python integers beat one GPU thread here), or in one
     GPU thread.
Every array keeps design.md's layout: points uint64[n, 12] (G1) or [n, 24] (G2), scalars
uint64[n, 4], the result uint64[1, words] affine with infinity all zeros.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernels.constants import R_MOD
from kernels.cuda import msm_fold, msm_rounds, msm_sort2
from kernels.cuda.finish import combine_windows
from kernels.cuda.glv import (
    GLV_BITS,
    GLV_BOUND,
    GLV_MIN_TAIL,
    GLV_WINDOW,
    endo_table,  # noqa: F401  (the backend, benchmarks and tests take it from here)
    glv_dense,
)
from kernels.cuda.module import kernel
from kernels.cuda.msm_ends import Ends
from kernels.cuda.msm_layout import (
    LARGE_LOG,
    MID_RUNS_SLACK,
    MID_WINDOW,
    bucket_runs,
    default_window,
    mid_plan,
    rounds_length,
    run_offsets,
)
from kernels.cuda.msm_tree import fold_heavy, heavy_buckets, reduce_all, window_sums
from kernels.cuda.points import AFFINE_U64, BLOCK, XYZZ_U64
from kernels.cuda.points import grid as _grid
from kernels.cuda.stream import cupy_module as _cp
from kernels.cuda.stream import settle, side_stream, to_host

# A bucket cut into more work items than HEAVY_ITEMS has its item sums added by a tree instead of
# serially by one thread (kernels/cuda/msm_tree.py: why).
HEAVY_ITEMS = 32
# A sort into runs with no run over FOLD_ITEMS work items takes the fold path (no heavy buckets:
# the prefold's one thread a multi-item bucket sums them). The rounds' short items cut the top
# window's runs into many (~50 at 2^26 in the items of 48 the plan once took); with the bound at 32
# those MSMs took the bucket-sum pass instead (H100, 2026-12-05: 2^25 in items of 32, 211.1 ms
# against 206.9 folded).
FOLD_ITEMS = 64
# Combine the windows on the host (kernels/cuda/finish.py) rather than in one GPU thread.
HOST_FINISH = True
# After the exact sort with no heavy bucket, let the window slices sum each bucket's work items
# themselves (the fold path the sort into runs takes) instead of a bucket-sum pass writing one row
# a bucket. Why: at 2^24 with window 20 (H100, 2026-12-05) that pass over 6.8 M buckets took 7.3
# ms. SEALTOP_MSM_FOLD_EXACT=1 per process; off until timed (scripts/msm_plans.py, "fx") and
# run through the GPU suite, since it moves every small MSM onto the fold path.
FOLD_EXACT = os.environ.get("SEALTOP_MSM_FOLD_EXACT", "0") == "1"
# Work items the accumulation aims for: about four waves of its resident threads on an H200
# (132 SMs x 3 blocks of 128). Fewer, longer items leave small MSMs latency-bound: at 2^20 points
# with one item per bucket each thread adds ~512 points in sequence on a card a third full.
TARGET_ITEMS = 132 * 384 * 4
# Run the accumulation's work items longest first (see msm()).
SORT_ITEMS = True
# Counting sort one window per grid row (msm_histogram_w, msm_scatter_w) when there are at least
# SORT_BY_WINDOW_BUCKETS buckets in all. Measured (H200, 2026-12-01, c = 20): sort 85 -> 60 ms at
# 2^26 (MSM 482.7 -> 458.9 ms), 170 -> 121 ms at 2^27 (928.7 -> 879.5 ms); at c = 16 (2^19
# buckets, counters L2-resident either way) 14.5 ms both ways at 2^24.
SORT_BY_WINDOW = True
SORT_BY_WINDOW_BUCKETS = 1 << 21
# The bucket accumulation: "xyzz" (one thread per work item, XYZZ mixed additions, 8M + 2S each),
# "batch" (batch-affine additions with one inversion per block step, about 6M each:
# msm/batch_affine.cuh), "rounds" (batch-affine, one inversion per round shared by the whole grid:
# kernels/cuda/msm_rounds.py; "rounds3" the same with the round's pass split in two kernels) or
# "auto" (rounds from ROUNDS_MIN entries on, and for G1 tails of 2^23 to 2^26 scalars in items of
# msm_layout.rounds_length; XYZZ elsewhere). SEALTOP_MSM_ACC sets it per process;
# the msm() argument `accumulate` per call.
# Measured on the H200 (2026-12-04, G1 over an endomorphism table, GLV split, window 22, 2^28
# entries): accumulation XYZZ 648.9 ms, rounds 504.4 (item length 151), rounds with items of 256
# 580.9; the whole MSM 793.0 against 663.6 ms. At 2^24 (window 16, 558 rounds of 549 K slots)
# rounds took 353.8 ms against XYZZ's 108.2: each round is a chain of one pass and one inversion,
# so few slots a round cannot pay for it (short items, fewer rounds, and the top inversion by a
# binary GCD since made them pay there: msm_layout.ROUNDS_LOGS). The batch kernel was slower at
# every size (sixth round).
# "auto" is the default: in the porep-32g pipeline (H200, 2026-12-04, 5 jobs) H's MSM took 671.8 ms
# a partition with it against 799.7 with XYZZ (the GPU call 1,083.6 against 1,219.1 ms).
ACCUMULATE = os.environ.get("SEALTOP_MSM_ACC", "auto")
ROUNDS_MIN = 1 << 27
BATCH_MIN_LOG = 23
# How the scalars are split by value and the ones summed: "sum" (msm_scalars converts and classes
# every scalar, g*_sum_ones has each thread add the points of class 1 in its chunk of 256: a warp
# steps through every index and the addition is an out-of-line call) or "list" (msm/classify.cuh:
# classes off the Montgomery words, lists of the ones and the others, the ones summed by the
# accumulation kernel in equal items: see sum_list). SEALTOP_MSM_ONES per process, msm()'s `ones`
# per call. "list" is the default: on the H200 (2026-12-04) a witness-like G1 MSM of 2^27 took
# 36.3 ms against 90.7 with "sum", 2^24 10.1 against 18.7, G2 2^22 16.9 against 22.5.
ONES = os.environ.get("SEALTOP_MSM_ONES", "list")
# How sum_list adds the ones' list: "xyzz" (the accumulation kernel over items of equal length,
# TARGET_ITEMS of them) or a rounds mode ("rounds", or with msm_rounds.mode's -gN -sN -lN: items
# of msm_rounds.ones_length unless -lN), which keeps XYZZ below msm_rounds.ONES_MIN ones (see
# there for the item length and the floor). SEALTOP_MSM_ONES_ACC per process, msm()'s `ones_acc`
# per call. "xyzz" is the default: at the porep-32g sizes (H200, 2026-12-04, scripts/gpu_check.py
# msm_g1_ones / msm_g2_ones, median of 5) rounds was slower everywhere: G1 20.3 M ones 16.8 ms
# against 9.6, 30.7 M 21.3 against 14.1, 61.4 M 35.9 against 26.5; G2 20.3 M 48.5 against 38.6.
# The ones' list has no buckets to share: XYZZ's items are long (100-300 entries, one thread
# each, ~2.2 G additions a second), rounds' short ones pay a round's pass and inversion latency
# for every 8-20 entries, and the tree over millions of partials.
ONES_ACC = os.environ.get("SEALTOP_MSM_ONES_ACC", "xyzz")
# Batch mode's window from 2^BATCH_MIN_LOG scalars on: many buckets, so that every thread has many
# slots (K) to share the block's inversion.
BATCH_WINDOW = 20


def _define(name: str, default: int) -> int:
    """A build define's value from SEALTOP_CUDA_DEFINES (module.OPTIONS), else the default."""
    from kernels.cuda.module import OPTIONS

    for opt in OPTIONS:
        if opt.startswith(f"-D{name}="):
            return int(opt.split("=", 1)[1])
    return default


# Entries a thread in the per-window sort kernels (msm_core.cuh's define of that name).
SORT_PER_THREAD = _define("SORT_PER_THREAD", 4)
# The batch kernel's block size and blocks per SM: its launch bounds, MSM_BATCH_THREADS and
# MSM_BATCH_MINB (G1; G2 takes one block), build defines that variants may set.
BATCH_THREADS = _define("MSM_BATCH_THREADS", 256)
BATCH_BLOCKS_PER_SM = {"g1": _define("MSM_BATCH_MINB", 2), "g2": 1}
# With MSM_BATCH_PIPE=1 each block's last warp only inverts and owns no slots.
BATCH_WORKERS = BATCH_THREADS - 32 if _define("MSM_BATCH_PIPE", 0) else BATCH_THREADS

# Large tails sort in one pass into a fixed run per bucket (msm_scatter_runs_w) instead of a
# histogram pass and a scatter: for evenly spread digits (H's random scalars) each run holds the
# bucket's mean count plus 8 standard deviations, the top window's runs sized for the few buckets
# its bits reach. A bucket that outgrows its run sends the MSM to the exact sort (the counts are
# complete by then, so it costs one more scatter).
SORT_RUNS = True
SORT_RUNS_MIN = 1 << 26
# The runs' memory at most RUNS_SLACK times the exact sort's (msm_layout.bucket_runs;
# SEALTOP_MSM_RUNS_SLACK per process, for timing the runs where they are longer than twice the mean).
RUNS_SLACK = float(os.environ.get("SEALTOP_MSM_RUNS_SLACK", "2"))


@dataclass
class MsmStats:
    """What one MSM did, for benchmarks and tests (counts come back from the device)."""

    n: int = 0
    ones: int = 0
    tail: int = 0
    window: int = 0
    items: int = 0
    item_len: int = 0
    accumulate: str = ""
    slots: int = 0  # batch mode: slots (work items) per thread; rounds: the rounds run
    sort: str = "exact"  # "runs" (one pass into fixed runs), "runs2" (two passes), or the exact counting sort
    folded: int = 0  # buckets whose work items were summed before the window slices (msm_fold)
    extra: dict[str, float] = field(default_factory=dict)


def item_length(m: int, nwin: int, half: int) -> int:
    """Points per accumulation work item: enough items to fill the card (TARGET_ITEMS), never
    more than about one item per bucket on average (2 m / half), at least 8."""
    per_bucket = 2 * ((m + half - 1) // half)
    fill = -(-(m * nwin) // TARGET_ITEMS)
    return max(8, min(per_bucket, fill))


def batch_item_length(m: int, half: int) -> int:
    """Points per work item in batch mode: about 1.25 times a bucket's mean count, so that the
    heavy buckets are cut into items that end with the rest (a block steps until its longest slot
    is done, and each step pays for one inversion however few slots are left)."""
    return max(8, -(-5 * m // (4 * half)))


def accumulation(m: int, accumulate: str | None = None) -> str:
    """The accumulation a tail of m scalars gets: "xyzz", "batch" or a rounds mode (msm_rounds.mode)."""
    how = accumulate or ACCUMULATE
    if how not in ("xyzz", "batch", "auto") and msm_rounds.mode(how) is None:
        raise ValueError(f"unknown accumulation {how!r}")
    if how == "auto":
        return "rounds" if m >= ROUNDS_MIN else "xyzz"
    return how


def use_batch(group: str, m: int, accumulate: str | None = None) -> bool:
    """Whether a tail of m scalars is accumulated batch-affine per block step (see ACCUMULATE)."""
    return accumulation(m, accumulate) == "batch"


def _sm_count() -> int:
    cp = _cp()
    return int(cp.cuda.Device().attributes["MultiProcessorCount"])


def _split_sum(group: str, points: Any, scalars: Any, n: int, count_ones: bool) -> tuple[Any, Any, Any, int, int]:
    """(the others' canonical scalars, row k for the k-th, the ones' sum as an XYZZ row, their indices, their count, the
    ones' count or -1 unless count_ones), the "sum" way: every scalar converted and classed by
    msm_scalars; each thread of g*_sum_ones adds the points of class 1 in its chunk of 256."""
    cp = _cp()
    xw = XYZZ_U64[group]
    canon = cp.empty((n, 4), dtype=cp.uint64)
    cls = cp.empty(n, dtype=cp.uint8)
    kernel("msm_g1", "msm_scalars")(_grid(n, 256), (256,), (scalars, canon, cls, np.uint64(n)))
    chunk = 256
    nparts = (n + chunk - 1) // chunk
    partial = cp.empty((nparts, xw), dtype=cp.uint64)
    kernel(f"msm_{group}", f"{group}_sum_ones")(_grid(nparts), (BLOCK,), (points, cls, np.uint64(n), np.uint32(chunk), partial))
    ones = reduce_all(group, partial, nparts)
    tail_mask = cls == 2
    settle()  # flatnonzero reads a count back to the host
    tail_idx = cp.flatnonzero(tail_mask)
    del tail_mask
    canon = canon[tail_idx]  # the sort reads entry t's scalar at row t
    m1 = -1
    if count_ones:
        ones_mask = cls == 1
        settle()
        m1 = int(cp.count_nonzero(ones_mask))
    return canon, ones, tail_idx, int(tail_idx.size), m1


CLASSIFY_TILE = 4096  # msm/classify.cuh: 256 threads x 16 scalars a block


def _split_list(group: str, points: Any, scalars: Any, n: int, count_ones: bool = True,
                ones_acc: str | None = None, pairs: Any | None = None) -> tuple[Any, Any, Any, int, int]:
    """As _split_sum, the "list" way (msm/classify.cuh): classes off the Montgomery words, lists
    of the ones and the others (one count read back for both), the others' canonical values at
    their indices; the ones summed by the bucket accumulation kernel as one bucket cut into items
    of equal length (no idle lanes, the G1 addition inline, the kernel's launch bounds). With
    ``pairs`` (kernels/cuda/pairs.py: the points, then their pairs' sums) the ones are listed by
    pairs of scalars and summed from that table; the count returned is then the list's."""
    cp = _cp()
    if n >= 1 << 31:
        raise ValueError(f"the list split indexes scalars in 31 bits, got {n}")
    ntiles = -(-n // CLASSIFY_TILE)
    cls = cp.empty(n, dtype=cp.uint8)
    counts = cp.empty((ntiles, 2), dtype=cp.uint32)
    by_pairs = pairs is not None
    if pairs is not None and pairs.shape[0] != points.shape[0] + points.shape[0] // 2:
        raise ValueError(f"a pair table of {points.shape[0]} points has {points.shape[0] + points.shape[0] // 2} "
                         f"rows, not {pairs.shape[0]}")
    suffix = "_pairs" if by_pairs else ""
    kernel("msm_scalars", "msm_classify" + suffix)((ntiles,), (256,), (scalars, np.uint64(n), cls, counts))
    off = cp.cumsum(counts, axis=0, dtype=cp.uint32)
    m1, m = (int(v) for v in to_host(off[-1]))
    off -= counts  # exclusive offsets of each tile
    del counts
    ones_idx = cp.empty(max(m1, 1), dtype=cp.uint32)
    tail_idx = cp.empty(max(m, 1), dtype=cp.uint32)
    canon = cp.empty((max(m, 1), 4), dtype=cp.uint64)  # row k: others[k]'s canonical value
    base = (np.uint32(points.shape[0]),) if by_pairs else ()  # the pairs' first row
    kernel("msm_scalars", "msm_compact" + suffix)((ntiles,), (256,), (scalars, cls, np.uint64(n), off, *base,
                                                                     ones_idx, tail_idx, canon))
    del cls, off
    return canon, sum_list(group, pairs if by_pairs else points, ones_idx, m1, ones_acc), tail_idx[:m], m, m1


def ones_accumulation(group: str, m: int, how: str | None = None) -> str:
    """How a list of m ones is summed: "xyzz" or a rounds mode (see ONES_ACC); ValueError for an
    unknown name."""
    how = how or ONES_ACC
    if how != "xyzz" and msm_rounds.mode(how) is None:
        raise ValueError(f"unknown ones accumulation {how!r} (xyzz or a rounds mode)")
    return how if how == "xyzz" or m >= msm_rounds.ONES_MIN[group] else "xyzz"


def sum_list(group: str, points: Any, idx: Any, m: int, how: str | None = None) -> Any:
    """The XYZZ sum (uint64[1, words]) of points[idx[k]] for k < m: the accumulation kernel over
    items of equal length (XYZZ: enough to fill the card; rounds: see msm_rounds.ones_length),
    then a FAN-way tree. how overrides ONES_ACC."""
    cp = _cp()
    xw = XYZZ_U64[group]
    acc = ones_accumulation(group, m, how)
    if m == 0:
        return cp.zeros((1, xw), dtype=cp.uint64)
    if acc != "xyzz":
        kw = msm_rounds.mode(acc) or {}
        partials, nitems = msm_rounds.sum_equal(group, points, idx, m, kw.pop("length", None), **kw)
        return reduce_all(group, partials, nitems)
    L = max(8, -(-m // TARGET_ITEMS))
    nitems = -(-m // L)
    start = cp.arange(0, nitems * L, L, dtype=cp.uint32)
    end = cp.minimum(start + np.uint32(L), np.uint32(m)).astype(cp.uint32)
    partials = cp.empty((nitems, xw), dtype=cp.uint64)
    kernel(f"msm_{group}", f"{group}_accumulate")(_grid(nitems), (BLOCK,), (
        points, idx, start, end, np.uint64(0), np.uint32(nitems), partials))
    return reduce_all(group, partials, nitems)


# SEALTOP_MSM_TRACE=1: every MSM without a caller's stats writes one line to stderr, "msm-trace
# {json}" (its counts, phases in ms between CUDA events, and the host's wall time around it):
# how the witness MSMs of a pipeline's real partitions spend their time, against msm_profile's
# synthetic scalars. It adds one stream synchronize per MSM.
TRACE = os.environ.get("SEALTOP_MSM_TRACE", "0") == "1"


def msm(group: str, points: Any, scalars: Any, window: int | None = None, stats: MsmStats | None = None,
        **kw: Any) -> Any:
    """sum_i scalars[i] * points[i] (see :func:`_msm`), traced with SEALTOP_MSM_TRACE=1."""
    if not TRACE or stats is not None:
        return _msm(group, points, scalars, window, stats, **kw)
    import json
    import sys
    import time

    st = MsmStats()
    t0 = time.perf_counter()
    out = _msm(group, points, scalars, window, st, **kw)
    wall = (time.perf_counter() - t0) * 1e3
    line = {"group": group, "n": st.n, "ones": st.ones, "tail": st.tail, "window": st.window, "items": st.items,
            "sort": st.sort, "accumulate": st.accumulate, "pairs": kw.get("pairs") is not None,
            "gpu_ms": round(sum(st.extra.values()), 3), "wall_ms": round(wall, 3),
            "phases": {k: round(v, 3) for k, v in st.extra.items()}}
    print("msm-trace " + json.dumps(line), file=sys.stderr, flush=True)
    return out


def _msm(group: str, points: Any, scalars: Any, window: int | None = None, stats: MsmStats | None = None,
        item_len: int | None = None, accumulate: str | None = None, ones: str | None = None,
        endo: Any | None = None, glv: bool | None = None, sort_runs: bool | None = None,
        sort_two_pass: bool | None = None, ones_acc: str | None = None, pairs: Any | None = None,
        ends: Ends | None = None) -> Any:
    """sum_i scalars[i] * points[i] for device arrays; returns a device uint64[1, words] affine point.

    window (bits per digit), item_len (points per accumulation work item), accumulate ("xyzz",
    "batch", "rounds", "rounds3", "auto"; see ACCUMULATE) and ones ("sum", "list"; see ONES) override the defaults, for
    benchmarks and tests. endo (G1): a table of 2N rows whose first N are the points and the rest
    their images under the endomorphism (glv.endo_table); with it at least GLV_MIN_TAIL scalars are
    split GLV-wise, with no 0/1 split first (glv forces the split on or off). sort_runs forces the one-pass sort into
    fixed runs (SORT_RUNS) on or off; sort_two_pass sorts into those runs in two passes instead
    (msm_sort2.SORT_TWO_PASS); ones_acc how the "list" split sums the ones (ONES_ACC). pairs: the
    points' pair table (kernels/cuda/pairs.py), with which the "list" split lists the ones by pairs.
    ends: run the MSM's latency-bound ends on the thread's side stream (see :class:`Ends`); the
    result is then ready on a stream only after ``ends.join()`` there."""
    cp = _cp()
    if group not in AFFINE_U64:
        raise ValueError(f"unknown group {group!r}")
    how = ones or ONES
    if how not in ("sum", "list"):
        raise ValueError(f"unknown ones summation {how!r} (sum or list)")
    ones_accumulation(group, 0, ones_acc)  # a bad name fails here, ones or none
    aw, xw = AFFINE_U64[group], XYZZ_U64[group]
    n = int(scalars.shape[0])
    marks: list[tuple[str, Any]] = []

    def mark(name: str) -> None:
        if stats is not None:
            ev = cp.cuda.Event()
            ev.record()
            marks.append((name, ev))

    mark("start")
    if ends is not None:
        ends.release_done()
    if points.shape[0] < n or points.shape[1] != aw:
        raise ValueError(f"{group} MSM: points {points.shape} do not match {n} scalars")
    points = cp.ascontiguousarray(points, dtype=cp.uint64)
    scalars = cp.ascontiguousarray(scalars, dtype=cp.uint64)
    out = cp.zeros((1, aw), dtype=cp.uint64)
    if n == 0:
        return out

    bits = 256  # digits cover this many scalar bits (signed: the top window's carry included)
    if endo is not None and group == "g1" and (glv if glv is not None else n >= GLV_MIN_TAIL):
        # a table with its images is H's: full-length scalars, no 0/1 split (see glv.glv_dense)
        points, canon, m = glv_dense(endo, scalars, n)
        ones_sum, tail_idx, m1, bits = cp.zeros((1, xw), dtype=cp.uint64), None, 0, GLV_BITS
        mark("glv_split")
    else:
        if how == "list":
            canon, ones_sum, tail_idx, m, m1 = _split_list(group, points, scalars, n, stats is not None, ones_acc,
                                                           pairs)
        else:
            canon, ones_sum, tail_idx, m, m1 = _split_sum(group, points, scalars, n, stats is not None)
        mark("scalars_and_ones")
    if stats is not None:
        stats.n, stats.tail, stats.ones = n, (n if bits == GLV_BITS else m), m1
    finish = kernel(f"msm_{group}", f"{group}_finish")
    if m == 0:
        if HOST_FINISH:
            row = combine_windows(group, np.zeros((0, xw), dtype=np.uint64), 1, to_host(ones_sum))
            out[...] = cp.asarray(row.reshape(1, aw))
        else:
            finish((1,), (1,), (ones_sum, np.int32(0), np.int32(1), ones_sum, out))
        mark("finish")
        _phase_times(stats, marks)
        return out
    idx = tail_idx.astype(cp.uint32, copy=False) if tail_idx is not None and m < n else None
    idx_arg = idx if idx is not None else np.uint64(0)
    del tail_idx

    how_acc = accumulation(m, accumulate)
    batch = how_acc == "batch"
    if bits == GLV_BITS:
        c = window or (GLV_WINDOW if m >= 1 << LARGE_LOG else default_window(m, group, mid=False))
    else:
        c = window or (BATCH_WINDOW if batch and m >= 1 << BATCH_MIN_LOG else default_window(m, group))
    nwin = (bits + c - 1) // c
    half = 1 << (c - 1)
    nb = nwin * half
    # msm_layout's plan (runs, fold, two-level slices) where it chose the window; a window asked for runs as asked
    mid = window is None and c == MID_WINDOW and mid_plan(m, group)  # GLV entries: default_window(mid=False)
    layout_len = rounds_length(m, half, group) if window is None and accumulate is None and ACCUMULATE == "auto" \
        and bits != GLV_BITS else None
    if layout_len is not None:  # msm_layout's rounds from 2^23 to 2^26 G1 scalars
        how_acc = f"rounds-l{layout_len}"

    count = cp.zeros(nb, dtype=cp.uint32)
    by_window = SORT_BY_WINDOW and nb >= SORT_BY_WINDOW_BUCKETS
    grid = (_grid(m, 256 * SORT_PER_THREAD)[0], nwin)  # the per-window sort kernels take SORT_PER_THREAD entries a thread
    want_runs = sort_runs if sort_runs is not None else (SORT_RUNS and (m >= SORT_RUNS_MIN or mid))
    slack = max(RUNS_SLACK, MID_RUNS_SLACK) if mid else RUNS_SLACK
    runs = bucket_runs(m, c, nwin, GLV_BOUND if bits == GLV_BITS else R_MOD - 1, slack) if by_window and want_runs else None
    sorted_ = None
    sorted_runs = False  # whether sorted_ holds the runs (no bucket overflowed its run)
    if runs is not None:
        try:
            sorted_ = cp.empty(runs[3], dtype=cp.uint32)
        except cp.cuda.memory.OutOfMemoryError:  # no room for the runs' slack: the exact sort below
            runs = None  # (an 80 GB card at porep-32g: H's unsplit MSM asked for 10.6 GB of runs)
            if stats is not None:
                stats.sort = "exact (no room for the runs)"
    if runs is not None:  # one pass into fixed runs; on any overflow the exact sort below
        wbase, wcap, wnb, total = runs
        overflow = cp.zeros(1, dtype=cp.uint32)
        two = sort_two_pass if sort_two_pass is not None else msm_sort2.SORT_TWO_PASS
        if two and msm_sort2.scatter_runs(canon, idx_arg, m, c, wbase, wcap, wnb, count, sorted_, overflow):
            how_runs = "runs2"
        else:
            how_runs = "runs"
            kernel("msm_g1", "msm_scatter_runs_w")(grid, (256,), (canon, idx_arg, np.uint32(m), np.int32(c), cp.asarray(wbase),
                                                                 cp.asarray(wcap), cp.asarray(wnb), count, sorted_, overflow))
        if int(to_host(overflow)[0]):
            sorted_ = None  # count is the whole histogram now
            if stats is not None:
                stats.sort = f"{how_runs} overflowed, exact"
        else:
            bucket_off = run_offsets(wbase, wcap, wnb, half)
            sorted_runs = True
            if stats is not None:
                stats.sort = how_runs
    if sorted_ is None:
        if runs is None:
            if by_window:
                kernel("msm_g1", "msm_histogram_w")(grid, (256,), (canon, idx_arg, np.uint32(m), np.int32(c), count))
            else:
                kernel("msm_g1", "msm_histogram")(_grid(m, 256), (256,), (canon, idx_arg, np.uint32(m), np.int32(c), np.int32(nwin),
                                                                          count))
        bucket_off = cp.cumsum(count, dtype=cp.uint32) - count
        cursor = bucket_off.copy()
        sorted_ = cp.empty(nwin * m, dtype=cp.uint32)
        if by_window:
            kernel("msm_g1", "msm_scatter_w")(grid, (256,), (canon, idx_arg, np.uint32(m), np.int32(c), cursor, sorted_))
        else:
            kernel("msm_g1", "msm_scatter")(_grid(m, 256), (256,), (canon, idx_arg, np.uint32(m), np.int32(c), np.int32(nwin), cursor,
                                                                    sorted_))
        del cursor
    del canon
    mark("sort")

    rounds_kw = msm_rounds.mode(how_acc) or {}
    mode_len = rounds_kw.pop("length", 0)  # a rounds mode's "-lN": its work items' length
    L = item_len or mode_len or (
        batch_item_length(m, half) if batch else msm_rounds.item_length(m, half) if rounds_kw else item_length(m, nwin, half))
    nitems = (count + np.uint32(L - 1)) // np.uint32(L)
    item_off = cp.cumsum(nitems, dtype=cp.uint32) - nitems
    settle()
    total_items = int(item_off[-1]) + int(nitems[-1])
    # no bucket outgrew its run, and no run holds more than FOLD_ITEMS items: no heavy buckets,
    # so the window slices sum each bucket's items themselves (no bucket-sum pass), the buckets of
    # several items summed into one row first (msm_fold: why, with the counts at porep-32g's H)
    fold = runs is not None and sorted_runs and -(-int(runs[1].max()) // L) <= FOLD_ITEMS
    # read here, where the host waits already, so the ends queue after the accumulation unwaited
    heavy = None if fold else heavy_buckets(nitems, item_off, HEAVY_ITEMS)
    fold = fold or ((FOLD_EXACT or mid) and heavy is None)
    fold_plan = msm_fold.multi_item_plan(nitems, item_off) if fold and msm_fold.PREFOLD else None
    item_start = cp.empty(max(total_items, 1), dtype=cp.uint32)
    item_end = cp.empty(max(total_items, 1), dtype=cp.uint32)
    kernel("msm_g1", "msm_items")(_grid(nb, 256), (256,), (count, bucket_off, item_off, np.uint32(nb), np.uint32(L), item_start, item_end))
    del bucket_off
    mark("items")

    partials = cp.empty((max(total_items, 1), xw), dtype=cp.uint64)
    slots = 0
    if batch:
        # item j is slot j: thread g of NT holds items g, g + NT, ...; item_start is the cursor
        blocks = max(1, min(_sm_count() * BATCH_BLOCKS_PER_SM[group], -(-total_items // BATCH_WORKERS)))
        nt = blocks * BATCH_WORKERS
        slots = -(-total_items // nt)
        acc = cp.empty(2 * aw * total_items, dtype=cp.uint32)  # word-major x, y of each slot
        pref = cp.empty(aw * total_items, dtype=cp.uint32)
        ent = cp.empty(total_items, dtype=cp.uint32)
        state = cp.empty(total_items, dtype=cp.uint8)
        kernel(f"msm_{group}", f"{group}_accumulate_batch")((blocks,), (BATCH_THREADS,), (
            points, sorted_, item_start, item_end, np.uint32(total_items), np.uint32(slots), acc, pref, ent, state, partials))
        del acc, pref, ent, state
    elif how_acc.startswith("rounds"):
        slots = msm_rounds.accumulate(group, points, sorted_, item_start, item_end, total_items, partials, **rounds_kw).rounds
    else:
        # longest items first: the threads of a warp then add chains of nearly equal length (with
        # one item per bucket, the lengths vary as the buckets' counts do, about +-5% at 2^24)
        order = cp.argsort(item_end - item_start)[::-1].astype(cp.uint32) if SORT_ITEMS and total_items > 1 else None
        kernel(f"msm_{group}", f"{group}_accumulate")(_grid(total_items), (BLOCK,), (
            points, sorted_, item_start, item_end, order if order is not None else np.uint64(0), np.uint32(total_items), partials))
        del order
    del sorted_, item_start, item_end
    mark("accumulate")
    side = side_stream() if ends is not None else None
    if side is not None:  # the ends below wait for the accumulation, then run beside what follows
        ready = cp.cuda.Event()
        ready.record()
        side.wait_event(ready)
        keep = [partials, count, item_off, nitems, ones_sum, fold_plan]  # the caller's stream's blocks they read
    with side if side is not None else nullcontext():
        folded = 0
        if fold:
            if fold_plan is not None:
                folded = msm_fold.fold_items(group, partials, count, fold_plan)
                del fold_plan
            wins = window_sums(group, partials, count, item_off, L, half, nwin, c, 2 if mid else None)
            del partials, count, item_off, nitems
        else:
            if heavy is not None:
                fold_heavy(group, partials, count, heavy)
            del nitems
            buckets = cp.empty((nb, xw), dtype=cp.uint64)
            kernel(f"msm_{group}", f"{group}_bucket_sum")(_grid(nb), (BLOCK,), (partials, count, item_off, np.uint32(nb), np.uint32(L), buckets))
            del partials, count, item_off
            mark("bucket_sum")
            wins = window_sums(group, buckets, None, None, L, half, nwin, c)
            del buckets
        mark("window_reduce")
        if HOST_FINISH and side is None:  # beside, the host must not wait: one GPU thread finishes
            row = combine_windows(group, to_host(wins), c, to_host(ones_sum))
            out[...] = cp.asarray(row.reshape(1, aw))
        else:
            finish((1,), (1,), (wins, np.int32(nwin), np.int32(c), ones_sum, out))
        mark("finish")
        if side is not None and ends is not None:
            done = cp.cuda.Event()
            done.record(side)
            ends.pending.append((done, keep))
    if stats is not None:
        stats.window, stats.items, stats.item_len = c, total_items, L
        stats.accumulate, stats.slots, stats.folded = how_acc, slots, folded
        _phase_times(stats, marks)
    return out


def _phase_times(stats: MsmStats | None, marks: list[tuple[str, Any]]) -> None:
    """Milliseconds between consecutive CUDA events, into stats.extra (only when stats asked)."""
    if stats is None or not marks:
        return
    cp = _cp()
    marks[-1][1].synchronize()
    for (_, a), (name, b) in zip(marks, marks[1:]):
        stats.extra[name] = stats.extra.get(name, 0.0) + cp.cuda.get_elapsed_time(a, b)


def __getattr__(name: str) -> Any:
    """FixedBase moved to kernels.cuda.fixed_base; the sppark harness (../shared/peers) still
    imports it from here."""
    if name == "FixedBase":
        from kernels.cuda.fixed_base import FixedBase

        return FixedBase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
