"""Writes the numba curve modules kernels/cpu/g1.py and kernels/cpu/g2.py from one template.

G1 (over Fp, b = 4) and G2 (over Fp2, b = 4(1 + u)) share every formula; only the coordinate
field differs. numba has no generics over modules of functions that still cache, so the code is
written once below with placeholder names and instantiated per curve, then committed:
``python -m kernels.cpu.ec_codegen`` regenerates it and a test checks it is current.

Placeholders in the template (replaced as whole-word prefixes):
  ``fld_``  -> ``fp_`` / ``fp2_``   coordinate-field functions
  ``FLD_``  -> ``FP_`` / ``FP2_``   coordinate-field constants
  ``pt_``   -> ``g1_`` / ``g2_``    the curve's own functions
  ``PT_``   -> ``G1_`` / ``G2_``    the curve's own constants
  ``COORD`` -> 6 / 12               uint64 limbs per coordinate in storage

Inside numba, points are XYZZ tuples (X, Y, ZZ, ZZZ) meaning x = X/ZZ, y = Y/ZZZ with
ZZ^3 = ZZZ^2; ZZ = 0 is the point at infinity. Mixed addition costs 8M + 2S, and no formula
needs the curve constant. At the edges points are affine rows (x then y; all zeros = infinity).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from kernels.constants import FP_LIMBS, FP_R, G1_B, P_MOD

HERE = Path(__file__).resolve().parent

_TEMPLATE = '''
import numpy as np
from numba import njit, prange

from kernels.cpu.FIELDMOD import (
    FLD_ONE,
    FLD_ZERO,
    fld_add,
    fld_eq,
    fld_inv,
    fld_is_zero,
    fld_load,
    fld_mul,
    fld_neg,
    fld_sqr,
    fld_store,
    fld_sub,
)

COORD = COORDVAL  # uint64 limbs per coordinate
AFFINE_WIDTH = 2 * COORD  # limbs per affine storage row
XYZZ_WIDTH = 4 * COORD  # limbs per XYZZ scratch row (X, Y, ZZ, ZZZ)
PT_B = BCONST  # curve constant b, Montgomery form
PT_INF = (FLD_ONE, FLD_ONE, FLD_ZERO, FLD_ZERO)  # XYZZ point at infinity (ZZ = 0)
_NORM_CHUNK = 512  # points per batch inversion in pt_batch_to_affine


@njit(cache=True)
def pt_load_affine(arr, i):
    """(x, y) of affine row i; the all-zero row (infinity) loads as (0, 0)."""
    return fld_load(arr, i, 0), fld_load(arr, i, COORD)


@njit(cache=True)
def pt_store_affine(arr, i, x, y):
    fld_store(arr, i, x, 0)
    fld_store(arr, i, y, COORD)


@njit(cache=True)
def pt_affine_is_inf(x, y):
    """The all-zero affine encoding; (0, 0) is never on the curve, so it is unambiguous."""
    return fld_is_zero(x) and fld_is_zero(y)


@njit(cache=True)
def pt_load_xyzz(arr, i):
    return (
        fld_load(arr, i, 0),
        fld_load(arr, i, COORD),
        fld_load(arr, i, 2 * COORD),
        fld_load(arr, i, 3 * COORD),
    )


@njit(cache=True)
def pt_store_xyzz(arr, i, p):
    fld_store(arr, i, p[0], 0)
    fld_store(arr, i, p[1], COORD)
    fld_store(arr, i, p[2], 2 * COORD)
    fld_store(arr, i, p[3], 3 * COORD)


@njit(cache=True)
def pt_is_inf(p):
    return fld_is_zero(p[2])


@njit(cache=True)
def pt_from_affine(x, y):
    """XYZZ form of an affine point; the zero encoding becomes infinity."""
    if pt_affine_is_inf(x, y):
        return PT_INF
    return (x, y, FLD_ONE, FLD_ONE)


@njit(cache=True)
def pt_on_curve_affine(x, y):
    """y^2 == x^3 + b; the zero encoding (infinity) counts as on the curve."""
    if pt_affine_is_inf(x, y):
        return True
    return fld_eq(fld_sqr(y), fld_add(fld_mul(fld_sqr(x), x), PT_B))


@njit(cache=True)
def pt_neg(p):
    return (p[0], fld_neg(p[1]), p[2], p[3])


@njit(cache=True)
def pt_dbl_affine(x, y):
    """2·(x, y) for an affine point (not infinity): 1M + 3S fewer than the general doubling."""
    u = fld_add(y, y)
    v = fld_sqr(u)
    w = fld_mul(u, v)
    s = fld_mul(x, v)
    xx = fld_sqr(x)
    m = fld_add(fld_add(xx, xx), xx)
    x3 = fld_sub(fld_sqr(m), fld_add(s, s))
    y3 = fld_sub(fld_mul(m, fld_sub(s, x3)), fld_mul(w, y))
    return (x3, y3, v, w)


@njit(cache=True)
def pt_dbl(p):
    """2·p (a = 0 doubling in XYZZ: 6M + 3S); infinity doubles to infinity."""
    X1, Y1, ZZ1, ZZZ1 = p
    if fld_is_zero(ZZ1):
        return PT_INF
    u = fld_add(Y1, Y1)
    v = fld_sqr(u)
    w = fld_mul(u, v)
    s = fld_mul(X1, v)
    xx = fld_sqr(X1)
    m = fld_add(fld_add(xx, xx), xx)
    x3 = fld_sub(fld_sqr(m), fld_add(s, s))
    y3 = fld_sub(fld_mul(m, fld_sub(s, x3)), fld_mul(w, Y1))
    return (x3, y3, fld_mul(v, ZZ1), fld_mul(w, ZZZ1))


@njit(cache=True)
def pt_add_affine(p, x, y):
    """p + (x, y) with (x, y) affine (8M + 2S); handles infinity on either side, p = ±(x, y)."""
    if pt_affine_is_inf(x, y):
        return p
    X1, Y1, ZZ1, ZZZ1 = p
    if fld_is_zero(ZZ1):
        return (x, y, FLD_ONE, FLD_ONE)
    P = fld_sub(fld_mul(x, ZZ1), X1)
    R = fld_sub(fld_mul(y, ZZZ1), Y1)
    if fld_is_zero(P):
        if fld_is_zero(R):
            return pt_dbl_affine(x, y)
        return PT_INF
    PP = fld_sqr(P)
    PPP = fld_mul(P, PP)
    Q = fld_mul(X1, PP)
    x3 = fld_sub(fld_sub(fld_sqr(R), PPP), fld_add(Q, Q))
    y3 = fld_sub(fld_mul(R, fld_sub(Q, x3)), fld_mul(Y1, PPP))
    return (x3, y3, fld_mul(ZZ1, PP), fld_mul(ZZZ1, PPP))


@njit(cache=True)
def pt_add(p, q):
    """p + q, both XYZZ (12M + 2S); handles infinity on either side and p = ±q."""
    X1, Y1, ZZ1, ZZZ1 = p
    X2, Y2, ZZ2, ZZZ2 = q
    if fld_is_zero(ZZ1):
        return q
    if fld_is_zero(ZZ2):
        return p
    U1 = fld_mul(X1, ZZ2)
    S1 = fld_mul(Y1, ZZZ2)
    P = fld_sub(fld_mul(X2, ZZ1), U1)
    R = fld_sub(fld_mul(Y2, ZZZ1), S1)
    if fld_is_zero(P):
        if fld_is_zero(R):
            return pt_dbl(p)
        return PT_INF
    PP = fld_sqr(P)
    PPP = fld_mul(P, PP)
    Q = fld_mul(U1, PP)
    x3 = fld_sub(fld_sub(fld_sqr(R), PPP), fld_add(Q, Q))
    y3 = fld_sub(fld_mul(R, fld_sub(Q, x3)), fld_mul(S1, PPP))
    return (x3, y3, fld_mul(fld_mul(ZZ1, ZZ2), PP), fld_mul(fld_mul(ZZZ1, ZZZ2), PPP))


@njit(cache=True)
def pt_eq(p, q):
    """Equality of the points that two XYZZ tuples represent."""
    if pt_is_inf(p) or pt_is_inf(q):
        return pt_is_inf(p) and pt_is_inf(q)
    return fld_eq(fld_mul(p[0], q[2]), fld_mul(q[0], p[2])) and fld_eq(
        fld_mul(p[1], q[3]), fld_mul(q[1], p[3])
    )


@njit(cache=True)
def _affine_from_inv(p, zzz_inv):
    """Affine (x, y) of p given 1/ZZZ: 1/ZZ = (ZZ/ZZZ)^2 because ZZ^3 = ZZZ^2."""
    zz_inv = fld_sqr(fld_mul(p[2], zzz_inv))
    return fld_mul(p[0], zz_inv), fld_mul(p[1], zzz_inv)


@njit(cache=True)
def pt_to_affine(p):
    """Affine (x, y) of an XYZZ point, (0, 0) for infinity (one field inversion)."""
    if pt_is_inf(p):
        return FLD_ZERO, FLD_ZERO
    return _affine_from_inv(p, fld_inv(p[3]))


@njit(cache=True)
def pt_mul_raw(x, y, k):
    """k·(x, y) by double-and-add, k a uint64[4] array of plain (not Montgomery) limbs.

    For tests and for the few powers of two a fixed-base table needs; MSMs never use it.
    """
    acc = PT_INF
    for bit in range(255, -1, -1):
        acc = pt_dbl(acc)
        if (k[bit >> 6] >> np.uint64(bit & 63)) & np.uint64(1):
            acc = pt_add_affine(acc, x, y)
    return acc


@njit(cache=True)
def _normalize_range(src, dst, lo, hi):
    """dst[lo:hi] = affine of XYZZ rows src[lo:hi], one inversion for the whole range."""
    prefix = np.empty((hi - lo, COORD), np.uint64)
    acc = FLD_ONE
    for i in range(lo, hi):
        fld_store(prefix, i - lo, acc, 0)
        zzz = fld_load(src, i, 3 * COORD)
        if not fld_is_zero(zzz):
            acc = fld_mul(acc, zzz)
    inv = fld_inv(acc)
    for i in range(hi - 1, lo - 1, -1):
        p = pt_load_xyzz(src, i)
        if pt_is_inf(p):
            pt_store_affine(dst, i, FLD_ZERO, FLD_ZERO)
            continue
        zzz_inv = fld_mul(inv, fld_load(prefix, i - lo, 0))
        inv = fld_mul(inv, p[3])
        x, y = _affine_from_inv(p, zzz_inv)
        pt_store_affine(dst, i, x, y)


@njit(cache=True, parallel=True)
def pt_batch_to_affine(src, dst):
    """dst[i] = affine row of XYZZ row src[i]; Montgomery batch inversion per chunk of points."""
    m = src.shape[0]
    nchunks = (m + _NORM_CHUNK - 1) // _NORM_CHUNK
    for c in prange(nchunks):
        lo = c * _NORM_CHUNK
        hi = min(m, lo + _NORM_CHUNK)
        _normalize_range(src, dst, lo, hi)


@njit(cache=True, parallel=True)
def pt_msm_windows(points, digits, c, nchunks, out):
    """Pippenger bucket phase: one task per (window, chunk of points), run in parallel.

    digits is int32[n, nwin] with signed window digits in [-2^(c-1), 2^(c-1)]. Task
    t = w * nchunks + k puts each point of chunk k into bucket |digit| (negated for a negative
    digit), then sums the buckets with the running-sum trick, writing
    out[t] = sum_j j·bucket_j (XYZZ).
    """
    n = points.shape[0]
    nwin = digits.shape[1]
    half = 1 << (c - 1)
    for t in prange(nwin * nchunks):
        w = t // nchunks
        k = t % nchunks
        lo = k * n // nchunks
        hi = (k + 1) * n // nchunks
        buckets = np.zeros((half, XYZZ_WIDTH), np.uint64)
        for i in range(lo, hi):
            d = digits[i, w]
            if d == 0:
                continue
            x, y = pt_load_affine(points, i)
            if d < 0:
                y = fld_neg(y)
                d = -d
            b = pt_load_xyzz(buckets, d - 1)
            pt_store_xyzz(buckets, d - 1, pt_add_affine(b, x, y))
        run = PT_INF
        acc = PT_INF
        for j in range(half - 1, -1, -1):
            run = pt_add(run, pt_load_xyzz(buckets, j))
            acc = pt_add(acc, run)
        pt_store_xyzz(out, t, acc)


# Inlined into the bucket loop: called per point as a function, it increfed and decrefed each of
# its seven array arguments per call (see engine/circuit/witness.py's comment on its op loop);
# inlined, the loop's IR holds none of them.
@njit(cache=True, inline="always")
def _bucket_place(points, i, d, buckets, spill, stamp, batch, di, si, neg, m, retry):
    """Queue point i (window digit d != 0) for an affine addition into bucket |d|; returns
    (m, deferred).

    An empty bucket takes the point as it is. A bucket already queued in this batch defers the
    point (deferred = True) on the first try and, on the retry, spills it into the bucket's
    XYZZ twin, as does a point with the bucket's x (doubling or cancellation), so batches
    never hold a pair that the chord formula cannot add.
    """
    x, y = pt_load_affine(points, i)
    if pt_affine_is_inf(x, y):
        return m, False
    b = abs(d) - 1
    if d < 0:
        y = fld_neg(y)
    bx, by = pt_load_affine(buckets, b)
    if pt_affine_is_inf(bx, by):
        pt_store_affine(buckets, b, x, y)
        return m, False
    if stamp[b] == batch and not retry:
        return m, True
    if stamp[b] == batch or fld_eq(bx, x):
        pt_store_xyzz(spill, b, pt_add_affine(pt_load_xyzz(spill, b), x, y))
        return m, False
    stamp[b] = batch
    di[m] = b
    si[m] = i
    neg[m] = d < 0
    return m + 1, False


@njit(cache=True, parallel=True)
def pt_msm_windows_affine(points, digits, c, nchunks, batch_size, out):
    """Pippenger bucket phase with affine buckets, otherwise as pt_msm_windows.

    Additions into buckets are queued, up to batch_size of them on distinct buckets, and done
    together by pt_affine_add_pairs (one shared inversion, about 6M each instead of 10M). A
    point whose bucket is already queued waits for the next batch; the few that would still
    collide, and equal-x pairs, go to a per-bucket XYZZ spill that the reduction adds in.
    """
    n = points.shape[0]
    nwin = digits.shape[1]
    half = 1 << (c - 1)
    for t in prange(nwin * nchunks):
        w = t // nchunks
        k = t % nchunks
        lo = k * n // nchunks
        hi = (k + 1) * n // nchunks
        buckets = np.zeros((half, AFFINE_WIDTH), np.uint64)
        spill = np.zeros((half, XYZZ_WIDTH), np.uint64)
        stamp = np.full(half, -1, np.int64)
        di = np.empty(batch_size, np.int64)
        si = np.empty(batch_size, np.int64)
        neg = np.empty(batch_size, np.bool_)
        prefix = np.empty((batch_size, COORD), np.uint64)
        waiting = np.empty(batch_size, np.int64)
        nwait = 0
        batch = 0
        m = 0
        i = lo
        while True:
            if i < hi:
                d = digits[i, w]
                if d != 0:
                    m, deferred = _bucket_place(
                        points, i, d, buckets, spill, stamp, batch, di, si, neg, m, False
                    )
                    if deferred:
                        waiting[nwait] = i
                        nwait += 1
                i += 1
                if m < batch_size and nwait < batch_size and i < hi:
                    continue
            # flush the batch, then give the waiting points their second (and last) try
            pt_affine_add_pairs(buckets, di, points, si, neg, m, prefix)
            m = 0
            batch += 1
            for q in range(nwait):
                j = waiting[q]
                m, _ = _bucket_place(
                    points, j, digits[j, w], buckets, spill, stamp, batch, di, si, neg, m, True
                )
            nwait = 0
            if i >= hi:
                pt_affine_add_pairs(buckets, di, points, si, neg, m, prefix)
                m = 0
                break
            if m == batch_size:
                pt_affine_add_pairs(buckets, di, points, si, neg, m, prefix)
                m = 0
                batch += 1
        run = PT_INF
        acc = PT_INF
        for j in range(half - 1, -1, -1):
            bx, by = pt_load_affine(buckets, j)
            run = pt_add(pt_add_affine(run, bx, by), pt_load_xyzz(spill, j))
            acc = pt_add(acc, run)
        pt_store_xyzz(out, t, acc)


@njit(cache=True)
def pt_msm_combine(sums, nwin, nchunks, c, out):
    """out (affine row) = sum over windows w of 2^(c·w) · (sum of that window's chunk sums)."""
    acc = PT_INF
    for w in range(nwin - 1, -1, -1):
        for _ in range(c):
            acc = pt_dbl(acc)
        for k in range(nchunks):
            acc = pt_add(acc, pt_load_xyzz(sums, w * nchunks + k))
    x, y = pt_to_affine(acc)
    fld_store(out, 0, x, 0)
    fld_store(out, 0, y, COORD)


@njit(cache=True)
def pt_window_bases(base, w, nwin, out):
    """out[k] (XYZZ) = 2^(w·k) · base[0] for k < nwin, by repeated doubling (base affine rows)."""
    x, y = pt_load_affine(base, 0)
    acc = pt_from_affine(x, y)
    for k in range(nwin):
        pt_store_xyzz(out, k, acc)
        for _ in range(w):
            acc = pt_dbl(acc)


@njit(cache=True, parallel=True)
def pt_fixed_base_table(bases, w, out):
    """out[k·half + j - 1] (XYZZ) = j · bases[k] for j = 1..half = 2^(w-1); bases affine rows."""
    nwin = bases.shape[0]
    half = 1 << (w - 1)
    for k in prange(nwin):
        x, y = pt_load_affine(bases, k)
        acc = PT_INF
        for j in range(half):
            acc = pt_add_affine(acc, x, y)
            pt_store_xyzz(out, k * half + j, acc)


@njit(cache=True)
def pt_affine_add_pairs(dst, di, src, si, neg, m, prefix):
    """dst[di[t]] += ±src[si[t]] (minus where neg[t]) for t < m, affine, one inversion in all.

    Montgomery's trick shares one field inversion among the m chord slopes, so an addition
    costs about 6M instead of the 8M + 2S of a mixed XYZZ addition, and stays affine. The
    caller guarantees distinct di, no infinities, and x coordinates that differ in every pair.
    prefix is scratch with at least m rows of COORD limbs.
    """
    if m == 0:
        return
    acc = FLD_ONE
    for t in range(m):
        fld_store(prefix, t, acc, 0)
        acc = fld_mul(acc, fld_sub(fld_load(src, si[t], 0), fld_load(dst, di[t], 0)))
    inv = fld_inv(acc)
    for t in range(m - 1, -1, -1):
        x1, y1 = pt_load_affine(dst, di[t])
        x2, y2 = pt_load_affine(src, si[t])
        if neg[t]:
            y2 = fld_neg(y2)
        d = fld_sub(x2, x1)
        d_inv = fld_mul(inv, fld_load(prefix, t, 0))
        inv = fld_mul(inv, d)
        lam = fld_mul(fld_sub(y2, y1), d_inv)
        x3 = fld_sub(fld_sub(fld_sqr(lam), x1), x2)
        y3 = fld_sub(fld_mul(lam, fld_sub(x1, x3)), y1)
        pt_store_affine(dst, di[t], x3, y3)


@njit(cache=True, parallel=True)
def pt_fixed_base_eval(table, digits, w, out, block):
    """out[i] (affine) = sum over windows k of digits[i, k] · 2^(w·k) · base, from the table.

    table holds affine rows as pt_fixed_base_table lays them out. Scalars go in blocks (in
    parallel); within a block, window by window, every accumulator takes its table entry in one
    batch of affine additions (pt_affine_add_pairs). The rare pair with equal x (a doubling or
    a cancellation) is done on its own through XYZZ.
    """
    n = digits.shape[0]
    nwin = digits.shape[1]
    half = 1 << (w - 1)
    nblocks = (n + block - 1) // block
    for blk in prange(nblocks):
        lo = blk * block
        hi = min(n, lo + block)
        di = np.empty(hi - lo, np.int64)
        si = np.empty(hi - lo, np.int64)
        neg = np.empty(hi - lo, np.bool_)
        prefix = np.empty((hi - lo, COORD), np.uint64)
        for i in range(lo, hi):
            pt_store_affine(out, i, FLD_ZERO, FLD_ZERO)
        for k in range(nwin):
            m = 0
            for i in range(lo, hi):
                d = digits[i, k]
                if d == 0:
                    continue
                row = k * half + abs(d) - 1
                ax, ay = pt_load_affine(out, i)
                tx, ty = pt_load_affine(table, row)
                if pt_affine_is_inf(tx, ty):
                    continue
                if d < 0:
                    ty = fld_neg(ty)
                if pt_affine_is_inf(ax, ay):
                    pt_store_affine(out, i, tx, ty)
                elif fld_eq(ax, tx):
                    x, y = pt_to_affine(pt_add_affine(pt_from_affine(ax, ay), tx, ty))
                    pt_store_affine(out, i, x, y)
                else:
                    di[m] = i
                    si[m] = row
                    neg[m] = d < 0
                    m += 1
            pt_affine_add_pairs(out, di, table, si, neg, m, prefix)
'''


def _u64(v: int) -> str:
    return f"np.uint64({v:#x})"


def _fp_tuple(v: int) -> str:
    m = v * FP_R % P_MOD
    return "(" + ", ".join(_u64((m >> (64 * i)) & (2**64 - 1)) for i in range(FP_LIMBS)) + ")"


def curve_module(curve: str) -> str:
    """Source of kernels/cpu/g1.py (curve='g1') or g2.py (curve='g2')."""
    if curve == "g1":
        fld, coord, fieldmod = "fp", FP_LIMBS, "fp"
        bconst = _fp_tuple(G1_B)
        title = "G1: y^2 = x^3 + 4 over Fp"
    elif curve == "g2":
        fld, coord, fieldmod = "fp2", 2 * FP_LIMBS, "fp2"
        bconst = f"({_fp_tuple(G1_B)}, {_fp_tuple(G1_B)})"
        title = "G2: y^2 = x^3 + 4(1 + u) over Fp2"
    else:
        raise ValueError(curve)
    src = _TEMPLATE
    src = re.sub(r"\bfld_", f"{fld}_", src)
    src = re.sub(r"\bFLD_", f"{fld.upper()}_", src)
    src = re.sub(r"\bpt_", f"{curve}_", src)
    src = re.sub(r"\bPT_", f"{curve.upper()}_", src)
    src = re.sub(r"\b_affine_from_inv\b", f"_{curve}_affine_from_inv", src)
    src = src.replace("FIELDMOD", fieldmod).replace("COORDVAL", str(coord))
    src = src.replace("BCONST", bconst)
    header = (
        f'"""GENERATED by kernels/cpu/ec_codegen.py; do not edit. BLS12-381 {title}.\n\n'
        "Points are XYZZ tuples (X, Y, ZZ, ZZZ) inside numba, affine storage rows at the edges\n"
        "(x then y, Montgomery; all zeros = infinity). Also the curve's Pippenger bucket phase and\n"
        "fixed-base table kernels, driven by kernels/cpu/msm.py and kernels/cpu/fixed_base.py.\n"
        '"""\n'
    )
    return header + src


def generated() -> dict[str, str]:
    return {"g1.py": curve_module("g1"), "g2.py": curve_module("g2")}


def main() -> int:
    from kernels.cpu.codegen import write_modules

    return write_modules(generated())


if __name__ == "__main__":
    sys.exit(main())
