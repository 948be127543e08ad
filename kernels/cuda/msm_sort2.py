"""The MSM's sort into fixed runs in two passes (msm/sort2.cuh), beside the one-pass
msm_scatter_runs_w (msm_core.cuh) that kernels/cuda/msm.py uses by default.

Why: the one-pass scatter issues one returning global atomic on a random counter and one 4-byte
store to a random address per entry; on the H200 (H's MSM at porep-32g, 1.6 G entries) it took
104 ms with the memory 29% busy and the warps waiting on L1TEX 103 of 129 cycles, the same with
2, 4 or 8 entries a thread: bound by those random accesses' throughput. Here, per window:
  pass 1 ranks a tile's entries per coarse bin (256 bins at c = 22: the top 8 bits of the
         bucket) in shared memory, reserves each non-empty bin's room with one global atomic,
         and writes the tile grouped by bin: 8 bytes an entry, in contiguous stretches;
  pass 2 (PLACE "flat", the default) one thread a staged entry, the staging area walked in bin
         order in a few stripes side by side: the run position by an atomic on count[] itself,
         one store an entry into the run, the runs being written few enough to stay in L2;
         (PLACE "bins") one coarse bin a block: the run positions by shared atomics on its 8192
         fine counters, one store an entry into the run, and the bin's counts into count[].
The layout (msm_layout.bucket_runs, msm_layout.run_offsets), count[] and the overflow rule are
msm_scatter_runs_w's, so msm.py goes on the same way after either. SORT_TWO_PASS (on by default;
SEALTOP_SORT_TWO_PASS=0 turns it off) picks it; msm()'s sort_two_pass per call. Device memory
beyond the one-pass sort's: the staging areas, 8 bytes an entry of a window (plus the bins'
margins) for each of WINDOWS_PER_PASS windows, reused window group after group: at H's 2^28
entries 2.16 GB a window, 4.3 GB with the default 2.
Measured on the H200 (2026-12-04, scripts/gpu_check.py msm_g1_sort2, median of 5): G1 GLV 2^27
(window 22) one pass 105.4 ms, two passes 100.3 / 97.5 / 96.7 with 1 / 2 / 3 windows a pass 1
and pass 2 per bin; G1 2^26 (window 20) 48.3 against 42.6 / 40.3 / 39.8. Pass 2 per bin left
the runs being written spread over the window (ncu: 15 ms a window at 22% of DRAM bandwidth);
the flat pass 2 in stripes (PLACE, FLAT_RUNS_BYTES) took the sort to 66.1 ms at 2^27 and 36.3 at
2^26 (later that day, same bench).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels.cuda.module import kernel
from kernels.cuda.stream import cupy_module as _cp

SORT_TWO_PASS = os.environ.get("SEALTOP_SORT_TWO_PASS", "1") == "1"
# Windows whose pass 1 shares one launch (SEALTOP_SORT2_WINDOWS): the blocks of one tile for each
# of them run side by side, so each scalar comes from DRAM once for all of them (pass 1 reads a
# window's 32-byte scalars, 8.6 GB at H's 2^28 entries, and writes 2.1 GB), at one staging
# area (8 bytes an entry) each. 2: 97.5 ms at H's size against 100.3 with 1 and 96.7 with 3 (which
# costs another 2.2 GB of staging for 0.8 ms).
WINDOWS_PER_PASS = int(os.environ.get("SEALTOP_SORT2_WINDOWS", "2"))
# Pass 2's form (SEALTOP_SORT2_PLACE): "flat", one thread a staged entry in bin order, its run
# position by an atomic on count[] (sort2.cuh place_flat: the runs being written stay in L2), or
# "bins", one block a coarse bin with shared counters.
PLACE = os.environ.get("SEALTOP_SORT2_PLACE", "flat")
# The flat pass walks its staging area in stripes side by side (sort2.cuh place_flat): as many as
# keep the runs of the bins in flight within FLAT_RUNS_BYTES (SEALTOP_SORT2_FLAT_BYTES; L2 holds
# 50 MB on the H200), at least one. More stripes spread the atomics over more counters; fewer
# keep the runs being written in L2. Measured on the H200 (2026-12-04, gpu_check msm_g1_sort2,
# median of 5, sort phase, pass 1 for 2 windows): G1 GLV 2^27 (H's, window 22) 98.6 ms per bin,
# flat 82.7 / 82.7 / 70.1 / 66.1 with 0 / 12 / 24 / 48 MB; G1 2^26 (window 20) 40.1 per bin,
# flat 51.3 / 43.5 / 38.1 / 36.3.
FLAT_RUNS_BYTES = int(os.environ.get("SEALTOP_SORT2_FLAT_BYTES", str(48 << 20)))
FLAT_THREADS = 256  # the flat pass 2's block (sort2.cuh: SORT2_FLAT_THREADS)
PLACE_PER = 4  # staged entries a thread of pass 2 (sort2.cuh: SORT2_PLACE_PER)
THREADS = 256  # pass 1's block and the most coarse bins a window (sort2.cuh: SORT2_THREADS)
FINE_MAX = 8192  # fine buckets a coarse bin at most (pass 2's shared counters)


def _define(name: str, default: int) -> int:
    """A build define's value from SEALTOP_CUDA_DEFINES (module.OPTIONS), else the default (as
    msm.py reads its own; msm.py imports this module, so not from there)."""
    from kernels.cuda.module import OPTIONS

    for opt in OPTIONS:
        if opt.startswith(f"-D{name}="):
            return int(opt.split("=", 1)[1])
    return default


def _per_thread() -> int:
    """Pass 1's entries a thread (sort2.cuh's build define SORT2_PER)."""
    return _define("SORT2_PER", 8)


def _place_threads() -> int:
    """Pass 2's block (the build define SORT2_PLACE_THREADS, its launch bounds)."""
    return _define("SORT2_PLACE_THREADS", 1024)


@dataclass(frozen=True)
class WindowPlan:
    """One window's bins: bucket b is in coarse bin b >> fb; bins [0, nbins) hold the buckets
    with runs; each stages at most bincap entries."""

    fb: int
    nbins: int
    bincap: int


def plan(m: int, c: int, wcap: np.ndarray, wnb: np.ndarray) -> list[WindowPlan] | None:
    """Each window's bins for m entries in c-bit windows with msm_layout.bucket_runs' run lengths wcap
    and buckets with runs wnb; None where the fine buckets of a bin would not fit pass 2's shared
    counters (a window with runs for more than 2^21 buckets, as c > 22 makes).

    A window's buckets with runs split into at most THREADS = 256 bins of 2^fb buckets, fb as
    small as that allows: so a top window with few buckets still has about 256 bins, and pass 2
    as many blocks (at H's 2^28 entries its 176,407 buckets make 173 bins of 1024, where bins of
    8192 would leave 22 blocks of 12.5 M entries each).

    A bin's staging area holds its mean (entries spread evenly over the window's wnb buckets)
    plus 8 standard deviations and 16, as bucket_runs sizes a run, and never more than its runs
    hold together (a bin fuller than that has a run that overflows in the one-pass sort too). A
    fuller bin sets the overflow flag, and msm.py sorts the exact way."""
    half = 1 << (c - 1)
    out = []
    for cap, nb in zip(wcap.tolist(), wnb.tolist()):
        nb = min(int(nb), half)
        fb = max(0, (nb - 1).bit_length() - 8)  # at most THREADS = 2^8 coarse bins
        if 1 << fb > FINE_MAX:
            return None
        per = min(1 << fb, nb)  # buckets with runs in a full bin
        mean = m * per / max(nb, 1)
        bincap = min(int(mean + 8 * mean ** 0.5 + 16), per * int(cap))
        out.append(WindowPlan(fb, -(-nb // (1 << fb)), bincap))
    return out


def flat_stripes(p: WindowPlan, wcap: int) -> int:
    """The flat pass 2's stripes for a window: as many bins in flight as keep their runs (2^fb
    buckets of wcap 4-byte entries each) within FLAT_RUNS_BYTES, at least 1, at most its bins."""
    return max(1, min(p.nbins, FLAT_RUNS_BYTES // max(1, (4 * wcap) << p.fb)))


def staging_bytes(plans: list[WindowPlan], windows: int = 1) -> int:
    """Device bytes of the staging buffer for ``windows`` windows at a time (reused by the next
    ones): 8 an entry, each window's area as large as the largest."""
    return 8 * windows * max((p.nbins * p.bincap for p in plans), default=0)


def scatter_runs(canon: Any, idx_arg: Any, m: int, c: int, wbase: np.ndarray, wcap: np.ndarray, wnb: np.ndarray,
                 count: Any, sorted_: Any, overflow: Any, windows: int | None = None, place: str | None = None) -> bool:
    """msm_scatter_runs_w's work in two passes: sorted_ (the runs of msm_layout.bucket_runs' layout),
    count (zeros before: every entry counted after) and overflow (set when a run, a bin's
    staging area, or a bucket without a run would take an entry); pass 1 for ``windows``
    (WINDOWS_PER_PASS) windows at a time, then pass 2 for each of them, in the form ``place``
    (PLACE: "flat" or "bins"). False, with nothing
    launched, where plan() declines (more than 2^21 buckets with runs in a window, c > 22): the
    caller runs the one-pass kernel."""
    mode = place or PLACE
    if mode not in ("flat", "bins"):
        raise ValueError(f"the sort's pass 2 is 'flat' or 'bins' (SEALTOP_SORT2_PLACE), not {mode!r}")
    cp = _cp()
    plans = plan(m, c, wcap, wnb)
    if plans is None:
        return False
    nwin, half = len(plans), 1 << (c - 1)
    per = max(1, min(windows or WINDOWS_PER_PASS, nwin))
    tiles = -(-m // (THREADS * _per_thread()))
    stride = max(2, staging_bytes(plans) // 4)  # uint32 words of one window's staging area
    stage = cp.empty(per * stride, dtype=cp.uint32)
    fill = cp.empty(per * THREADS, dtype=cp.uint32)
    d_wnb = cp.asarray(np.asarray(wnb, np.uint32))
    d_plan = cp.asarray(np.array([(p.bincap, p.fb) for p in plans], np.uint32).reshape(-1))
    bin_k = kernel("msm_g1", "msm_sort2_bin")
    flat = mode == "flat" and max(p.nbins * p.bincap for p in plans) < 1 << 32
    place_k = kernel("msm_g1", "msm_sort2_place_flat" if flat else "msm_sort2_place")
    for w0 in range(0, nwin, per):
        nw = min(per, nwin - w0)
        fill.fill(0)
        bin_k((tiles * nw,), (THREADS,), (canon, idx_arg, np.uint32(m), np.int32(c), np.int32(w0), np.uint32(nw), d_wnb,
                                          d_plan, fill, stage, np.uint64(stride), count, overflow))
        for g in range(nw):
            w, p = w0 + g, plans[w0 + g]
            if not p.nbins:  # a window without runs had every entry counted and flagged in pass 1
                continue
            tail = (np.uint32(wnb[w]), np.uint32(wbase[w]), np.uint32(wcap[w]), count[w * half:(w + 1) * half], sorted_,
                    overflow)
            if flat:
                chunks = -(-p.nbins * p.bincap // (FLAT_THREADS * PLACE_PER))
                stripes = flat_stripes(p, int(wcap[w]))
                place_k((stripes * -(-chunks // stripes),), (FLAT_THREADS,), (
                    stage[g * stride:], fill[g * THREADS:], np.uint32(p.bincap), np.uint32(p.nbins), np.uint32(stripes), *tail))
            else:
                place_k((p.nbins,), (_place_threads(),), (stage[g * stride:], fill[g * THREADS:], np.uint32(p.bincap),
                                                          np.uint32(p.fb), *tail))
    del stage, fill, d_wnb, d_plan
    return True
