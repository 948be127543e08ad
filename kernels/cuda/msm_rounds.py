"""The "rounds" bucket accumulation of the MSM (kernels/cuda/msm/rounds.cuh), host side.

``accumulate(group, points, sorted_, item_start, item_end, nitems, partials)`` writes each work
item's sum of its sorted entries into its XYZZ row of ``partials``, as g*_accumulate does, with
batch-affine additions (about 6M each against XYZZ's 8M + 2S) whose inversions are shared by the
whole grid:
  * the items are sorted by length, longest first, and dealt round-robin into GROUPS groups
    (slots); the lengths' histogram (one read-back) gives every round's count of live slots,
    a prefix of each group's slots, so no round reads anything back;
  * per group and round: the fused pass (g*_rounds_fused: complete round r - 1's additions, write
    out the slots that end, take round r's entries and multiply each thread's denominators), then
    the levelled batch inversion of the threads' products (kernels/cuda/batch_inverse.py). With
    FUSED off the pass is two kernels (g*_rounds_step, few registers; g*_rounds_finish).
    Launches a round and group: 1 + 3 fused, 2 + 3 not (up to 2^20 products: one up level);
  * each group runs on its own pair of streams: its passes on one, its inversions on another of
    higher priority, ordered by events. The inversion's top level is a chain of ~490 dependent
    multiplications (~0.3-0.5 ms on one thread) that would leave the card idle every round; with
    two groups one group's pass (about 1.2 ms at 2^27: 5-6 M live slots x ~6M at the card's
    ~27 G multiplications a second) covers the other's inversion, and the higher priority lets
    the inversion's few blocks start as soon as a block of the running pass retires rather than
    after the whole pass.
What sets the time where the slots are few: each group runs its rounds one after another, each
round its pass and then its inversion (about 540 dependent multiplications on the top level's
threads), so an accumulation takes at least rounds x (pass + inversion latency) however many
groups share the card. On the H200 (2026-12-04, 2^24, 558 rounds) that was ~0.63 ms a round,
the same with 2 or 3 groups (353.8 and 353.3 ms: 3 groups make 1.5 times the host calls) and
0.15 ms more with 32 slots a thread (435.5 ms: the same host calls), so the host's launches
(~20 CuPy calls a round, issued ahead of the card) were not what it waited on. Shorter work
items (fewer rounds over more slots: "-lN", see mode()) are the lever there. Where the slots are
many it pays: at 2^27 with the GLV split (151 rounds of up to 12.6 M slots) the accumulation took
504.4 ms against XYZZ's 648.9 (H200, 2026-12-04; 580.9 with items of 256, 256 rounds).
State (per slot, about 157 bytes for G1: 12.6 M slots at 2^27 take ~2 GB): the accumulator, the
prefix product, the pending entry, a state byte, the slot's first entry and its item.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels.cuda.batch_inverse import BatchInverse
from kernels.cuda.module import define, kernel
from kernels.cuda.points import XYZZ_U64, grid
from kernels.cuda.stream import cupy_module as _cp
from kernels.cuda.stream import to_host

# Slots a thread (12.6 M slots in 2 groups: 394 k threads a group, about 6 waves of the fused
# kernel) and groups; SEALTOP_ROUNDS_SLOTS and SEALTOP_ROUNDS_GROUPS set them per process, and a
# mode "rounds-g3-s32" (see mode()) per call, for benchmarks.
SLOTS = int(os.environ.get("SEALTOP_ROUNDS_SLOTS", "16"))
GROUPS = int(os.environ.get("SEALTOP_ROUNDS_GROUPS", "2"))
FUSED = True
# the kernels' block: their launch bounds (msm_g1.cu's build define MSM_G1_ROUNDS_THREADS, msm_g2.cu)
BLOCK = {"g1": define("MSM_G1_ROUNDS_THREADS", 256), "g2": 128}
FIELD = {"g1": "fp", "g2": "fp2"}
WORDS = {"g1": 12, "g2": 24}
FIRST, REVERSE = 1, 2  # rounds.cuh's pass flags
INV_PRIORITY = -1  # CUDA stream priority of the inversions (lower is higher; 0 the default)


def item_length(m: int, half: int) -> int:
    """Entries per work item: a full window's mean bucket count plus two standard deviations
    (evenly spread digits), at least 8. The rounds run as long as the longest item, and the last
    rounds have few live slots but pay a whole inversion's latency each, so the few buckets
    above this are cut into a second item rather than lengthening every group's tail
    (and the top window's crowded buckets into several)."""
    mean = m / half
    return max(8, math.ceil(mean + 2 * math.sqrt(mean)))


_MODE = re.compile(r"^rounds(3?)((?:-[gsl][1-9][0-9]*)*)$")
_KEYS = {"g": "groups", "s": "slots", "l": "length"}


def mode(how: str) -> dict[str, Any] | None:
    """accumulate()'s keywords for an accumulation name: "rounds" (the fused pass), "rounds3" (step
    and finish kernels), either with "-gN" (groups), "-sN" (slots a thread) and "-lN" (entries a
    work item: msm.py takes "length" out, as its item_len) appended; None for a name that is not
    of this family, ValueError for a malformed one."""
    if not how.startswith("rounds"):
        return None
    m = _MODE.match(how)
    if m is None:
        raise ValueError(f"unknown accumulation {how!r} (rounds or rounds3, then -gN, -sN, -lN)")
    kw: dict[str, Any] = {"fused": m.group(1) == ""}
    for part in m.group(2).split("-")[1:]:
        kw[_KEYS[part[0]]] = int(part[1:])
    return kw


def check_sizes(nitems: int, entries: int) -> None:
    """ValueError unless the kernels' 32-bit arguments hold these sizes: entry positions
    (start[j] + r) are uint32 (2.78 G entries in the runs' layout at 2^27 GLV), slots and items
    uint32 (12.6 M there); the 64-bit offsets (points, partial rows, slot state) need nothing."""
    if entries > 1 << 32 or nitems >= 1 << 31:
        raise ValueError(f"rounds: {nitems} items over {entries} entries exceed the kernels' 32-bit positions")


@dataclass
class RoundsRun:
    """What one accumulation did: rounds (the longest item), threads (all groups), launches."""

    rounds: int = 0
    threads: int = 0
    launches: int = 0


def _stream(priority: int) -> Any:
    cp = _cp()
    try:
        return cp.cuda.Stream(non_blocking=True, priority=priority)
    except TypeError:  # a CuPy without stream priorities
        return cp.cuda.Stream(non_blocking=True)


class _Group:
    """One group's slots, state, streams and events."""

    def __init__(self, group: str, order: Any, item_start: Any, q: int, ngroups: int, live: np.ndarray,
                 slots: int) -> None:
        """Gathers the slots' items and first entries on the current (caller's) stream: follow()
        must order this group's streams after them."""
        cp = _cp()
        w = WORDS[group]
        self.q, self.ngroups, self.glive = q, ngroups, live
        item = cp.ascontiguousarray(order[q::ngroups], dtype=cp.uint32)
        self.n = int(item.shape[0])
        self.item = item
        self.start = cp.take(item_start, item).astype(cp.uint32, copy=False)
        self.nt = max(1, -(-self.n // slots))
        self.acc = cp.empty(max(1, 2 * w * self.n), dtype=cp.uint32)
        self.pref = cp.empty(max(1, w * self.n), dtype=cp.uint32)
        self.ent = cp.empty(max(1, self.n), dtype=cp.uint32)
        self.state = cp.empty(max(1, self.n), dtype=cp.uint8)
        self.prod = cp.empty(w * self.nt, dtype=cp.uint32)
        self.inverse = BatchInverse(FIELD[group], self.nt)
        self.passes = _cp().cuda.Stream(non_blocking=True)
        self.inversions = _stream(INV_PRIORITY)
        self.ev_pass = cp.cuda.Event(disable_timing=True)
        self.ev_inv = cp.cuda.Event(disable_timing=True)
        self.inv_pending = False

    def follow(self, ready: Any) -> None:
        """This group's passes (and so its inversions, which wait on them) start after ready."""
        self.passes.wait_event(ready)

    def live(self, r: int) -> int:
        """This group's slots with more than r entries (positions q, q + G, ... of the order)."""
        total = int(self.glive[r]) if r < len(self.glive) else 0
        return max(0, -(-(total - self.q) // self.ngroups))

    def run_pass(self, fn: Any, block: int, common: tuple[Any, Any, Any], r: int, nvisit: int, ncont: int, flags: int) -> None:
        """One pass kernel over this group's slots j < nvisit (after the pending inversion)."""
        points, sorted_, partials = common
        if self.inv_pending:
            self.passes.wait_event(self.ev_inv)
            self.inv_pending = False
        u = np.uint32
        with self.passes:
            fn(grid(min(self.nt, nvisit), block), (block,), (
                points, sorted_, self.start, self.item, self.acc, self.pref, self.ent, self.state, self.prod, partials,
                u(self.n), u(self.nt), u(r), u(nvisit), u(ncont), u(flags)))

    def invert(self, m: int) -> int:
        """Invert the first m threads' products, on the inversion stream; returns the launches."""
        self.ev_pass.record(self.passes)
        self.inversions.wait_event(self.ev_pass)
        with self.inversions:
            k = self.inverse(self.prod, m)
        self.ev_inv.record(self.inversions)
        self.inv_pending = True
        return k


def accumulate(group: str, points: Any, sorted_: Any, item_start: Any, item_end: Any, nitems: int, partials: Any,
               fused: bool | None = None, groups: int | None = None, slots: int | None = None,
               hist: np.ndarray | None = None) -> RoundsRun:
    """partials[i] = the XYZZ sum of points[sorted_[item_start[i] : item_end[i]]] (y negated for
    entries with bit 31) for i < nitems, on the current stream (see the module docstring).
    hist: the histogram of the items' lengths (hist[k] items of k entries, no trailing zero),
    from a caller whose items already run longest first (equal_items): no read-back, no sort."""
    cp = _cp()
    fused = FUSED if fused is None else fused
    ngroups = max(1, min(GROUPS if groups is None else groups, nitems))
    slots = SLOTS if slots is None else slots
    run = RoundsRun()
    if nitems == 0:
        return run
    check_sizes(nitems, int(sorted_.size))
    if hist is None:
        lens = (item_end[:nitems] - item_start[:nitems]).astype(cp.int32)
        hist = to_host(cp.bincount(lens)).astype(np.int64)  # the one read-back
        order = cp.argsort(-lens)  # longest first
        del lens
    else:
        hist = np.asarray(hist, dtype=np.int64)
        if int(hist.sum()) != nitems or hist.size == 0 or hist[-1] == 0:
            raise ValueError(f"rounds: a lengths' histogram of {int(hist.sum())} items for {nitems}")
        order = cp.arange(nitems, dtype=cp.uint32)
    rounds = len(hist) - 1
    live = nitems - np.cumsum(hist)  # live[r]: items with more than r entries
    main = cp.cuda.get_current_stream()
    gs = [_Group(group, order, item_start, q, ngroups, live, slots) for q in range(ngroups)]
    del order
    # ready follows everything queued on the caller's stream, the groups' gathers of their items
    # and first entries included: recorded before them, the passes raced those gathers and read
    # start and item from unwritten pool memory (the 2^27 fault: wild sorted and point reads, and
    # partial rows written far out of bounds)
    ready = cp.cuda.Event(disable_timing=True)
    ready.record(main)
    for g in gs:
        g.follow(ready)
    common = (points, sorted_, partials)
    block = BLOCK[group]
    name = f"{group}_rounds_"
    run.rounds, run.threads = rounds, sum(g.nt for g in gs)
    if fused:
        fn = kernel(f"msm_{group}", name + "fused")
        for r in range(rounds + 1):
            for g in gs:
                nvisit = g.n if r == 0 else g.live(r - 1)
                if nvisit == 0:
                    continue
                ncont = g.live(r)
                g.run_pass(fn, block, common, r, nvisit, ncont, (FIRST if r == 0 else 0) | (REVERSE if r % 2 else 0))
                run.launches += 1
                if ncont:
                    run.launches += g.invert(min(g.nt, ncont))
    else:
        step, finish = kernel(f"msm_{group}", name + "step"), kernel(f"msm_{group}", name + "finish")
        for r in range(max(rounds, 1)):
            for g in gs:
                nvisit = g.n if r == 0 else g.live(r)
                if nvisit == 0:
                    continue
                g.run_pass(step, block, common, r, nvisit, g.live(r), FIRST if r == 0 else 0)
                run.launches += 1
                if g.live(r):
                    run.launches += g.invert(min(g.nt, g.live(r))) + 1
                    g.run_pass(finish, block, common, r, g.live(r), g.live(r + 1), REVERSE)
    for g in gs:  # the caller's stream goes on when every group is done
        main.wait_event(g.passes.record())
    return run


# The ones' sum (msm.sum_list with msm.ONES_ACC a rounds mode): the list of m indices cut into
# items of equal length L, one slot each, so the sum takes L rounds over m / L slots and the
# partials (one XYZZ row an item) are added by msm's FAN-way tree. The choice of L, from the
# figures above (a round is one group's pass and then its inversion, ~0.5 ms of latency; the
# fused pass adds ~3.2 G G1 points a second at 2^27, 2 groups) and the H200 ones' sums with XYZZ
# (2026-12, porep-32g partitions: G1 30.7 M ones 14.5 ms, 20.3 M 10.0, 61.4 M 27.7; G2 20.3 M 39.0):
#   * each round's slots should keep the card busy while the other group inverts: one group's
#     pass (m / 2L additions) about as long as the inversion's latency, so L ~ m / ONES_ROUND_SLOTS
#     (3.2 M G1 slots a round: 1.6 M additions a group at ~3.2 G/s ~ 0.5 ms; G2's additions are
#     about 4 times dearer (its XYZZ sum runs at 0.52 G/s against G1's 2.1), 0.9 M slots);
#     fewer slots (longer items) and the rounds wait on latency, L x ~0.6 ms;
#   * more slots (shorter items) buy nothing once the pass covers the latency, and cost memory
#     and the tree: about 157 bytes of slot state (G1; ~300 G2) and a 192-byte (384) XYZZ
#     partial an item, and every partial is one general XYZZ addition in the tree (~1.5 times a
#     mixed one), m / L of them. G1 61.4 M at L = 19: 3.2 M slots, ~1.1 GB; at L = 8 the tree
#     alone would add ~4 ms;
#   * L at least ONES_LENGTH[0] = 8 (the tree's share stays under a fifth of the additions),
#     at most ONES_LENGTH[1] (past it the slots grow instead: very large lists).
# Modelled G1: 61.4 M ~21 ms (L 20) against 27.7, 30.7 M ~12 (L 10) against 14.5, 20.3 M ~9 (L 8)
# against 10.0; G2 20.3 M ~28 (L 23) against 39. Measured (H200, 2026-12-04): 35.9, 21.3, 16.8 and
# 48.5 ms against XYZZ's 26.5, 14.1, 9.6 and 38.6: the model missed, so msm.ONES_ACC stays "xyzz". Below ONES_MIN the fixed
# latency (L rounds of at least ~0.6 ms, ~5 ms at L = 8) loses to XYZZ (the 2^24 MSM: 558 rounds,
# 3.3 times slower): G1 ~16 M (break-even of 4 ms + 0.23 ns a point against 0.48 ns), G2 ~4 M
# (4.4 ms + 1 ns against 1.9 ns); msm.sum_list keeps XYZZ there.
ONES_ROUND_SLOTS = {"g1": 3_200_000, "g2": 900_000}
ONES_LENGTH = (8, 64)
ONES_MIN = {"g1": 16_000_000, "g2": 4_000_000}


def ones_length(group: str, m: int) -> int:
    """Entries a work item when the ones' list of m indices is summed by rounds (see above)."""
    lo, hi = ONES_LENGTH
    return max(lo, min(hi, -(-m // ONES_ROUND_SLOTS[group])))


def equal_items(m: int, length: int) -> tuple[Any, Any, int, np.ndarray]:
    """(start, end, items, the lengths' histogram) of m entries cut into items of ``length``, the
    last one shorter where length does not divide m: longest first already, as accumulate's hist
    asks."""
    cp = _cp()
    if m <= 0 or length <= 0:
        raise ValueError(f"equal_items: {m} entries in items of {length}")
    nitems = -(-m // length)
    last = m - (nitems - 1) * length  # 1 .. length
    hist = np.zeros(length + 1, dtype=np.int64)
    hist[length] += nitems - 1
    hist[last] += 1
    hist = hist[: int(np.flatnonzero(hist)[-1]) + 1]
    start = cp.arange(0, nitems * length, length, dtype=cp.uint32)
    end = cp.minimum(start + np.uint32(length), np.uint32(m)).astype(cp.uint32)
    return start, end, nitems, hist


def sum_equal(group: str, points: Any, idx: Any, m: int, length: int | None = None, **kw: Any) -> tuple[Any, int]:
    """(partials, items): the XYZZ sums (uint64[items, words]) of points[idx[k]] for k < m in
    items of ``length`` (default ones_length) by the rounds accumulation; kw as accumulate's
    (fused, groups, slots). The caller adds the rows (msm_tree.reduce_all)."""
    cp = _cp()
    start, end, nitems, hist = equal_items(m, length or ones_length(group, m))
    partials = cp.empty((nitems, XYZZ_U64[group]), dtype=cp.uint64)
    accumulate(group, points, idx, start, end, nitems, partials, hist=hist, **kw)
    return partials, nitems
