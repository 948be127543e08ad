"""Uncompressed zcash/bellman point bytes <-> affine storage rows, in parallel numba kernels.

The encoding is the one blst serializes for blstrs (``blst_p1_affine_serialize`` and its G2
twin, which bellperson's ``to_uncompressed`` calls): each coordinate is 48 big-endian bytes of
its canonical value (not Montgomery); a G1 point is x then y (96 bytes); a G2 point is
x.c1, x.c0, y.c1, y.c0 (192 bytes: c1 before c0). The top three bits of the first byte are
flags: 0x80 compressed, 0x40 infinity, 0x20 the sign of y (compressed form only). An
uncompressed point therefore has 0x80 and 0x20 clear; blst writes and reads the point at infinity
as 0x40 followed by zeros, and blstrs also reads an all-zero buffer as infinity.

Storage rows are the project's layout: Montgomery form, little-endian uint64 limbs, G1 x then y
(12 limbs), G2 x.c0, x.c1, y.c0, y.c1 (24 limbs), all zeros for infinity.

Decoding checks, per point and in this order: the flags, infinity, each coordinate below p, and
the curve equation. It does not check the prime-order subgroup (a scalar multiplication per
point); the caller samples that. Each point gets a status code (:data:`STATUS`): OK when its row
was written, INFINITY when it is the point at infinity (its row written as zeros; whether that is
allowed is the caller's rule), anything else when it is invalid (its row left as it was).
Encoding writes infinity as 0x40 and zeros and reports it with INFINITY in the same way.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from kernels.cpu.fp import MODULUS, fp_from_mont, fp_is_zero, fp_load, fp_store, fp_to_mont
from kernels.cpu.fp2 import fp2_load
from kernels.cpu.g1 import g1_on_curve_affine
from kernels.cpu.g2 import g2_on_curve_affine

G1_UNCOMPRESSED = 96
G2_UNCOMPRESSED = 192
FLAG_COMPRESSED, FLAG_INFINITY, FLAG_SIGN = 0x80, 0x40, 0x20

OK, COMPRESSED, INFINITY, SIGN, RANGE, OFF_CURVE, BAD_INFINITY = 0, 1, 2, 3, 4, 5, 6
STATUS = {
    COMPRESSED: "has the compressed-form flag (0x80) set",
    INFINITY: "is the point at infinity",
    BAD_INFINITY: "has the infinity flag (0x40) set but other bits too",
    SIGN: "has the y-sign flag (0x20) set, which only the compressed form uses",
    RANGE: "has a coordinate that is not below the field modulus",
    OFF_CURVE: "is not on the curve",
}

_P = tuple(np.uint64((MODULUS >> (64 * k)) & ((1 << 64) - 1)) for k in range(6))
_P0, _P1, _P2, _P3, _P4, _P5 = _P
_FLAGS_MASK = np.uint64(0x1FFFFFFFFFFFFFFF)  # clears the three flag bits of the top limb


@njit(cache=True)
def _word(src, i, at):
    """8 big-endian bytes of row i starting at column ``at`` as one uint64."""
    v = np.uint64(0)
    for b in range(8):
        v = (v << np.uint64(8)) | np.uint64(src[i, at + b])
    return v


@njit(cache=True)
def _coord(src, i, at):
    """The 48 big-endian bytes at ``at`` as six little-endian limbs (raw, not Montgomery)."""
    return (_word(src, i, at + 40), _word(src, i, at + 32), _word(src, i, at + 24),
            _word(src, i, at + 16), _word(src, i, at + 8), _word(src, i, at))


@njit(cache=True)
def _below_p(a):
    """a < p, comparing limbs from the most significant."""
    if a[5] != _P5:
        return a[5] < _P5
    if a[4] != _P4:
        return a[4] < _P4
    if a[3] != _P3:
        return a[3] < _P3
    if a[2] != _P2:
        return a[2] < _P2
    if a[1] != _P1:
        return a[1] < _P1
    return a[0] < _P0


@njit(cache=True)
def _put_word(dst, i, at, v):
    for b in range(8):
        dst[i, at + 7 - b] = np.uint8((v >> np.uint64(8 * b)) & np.uint64(0xFF))


# Inlined: called per point as a function, it increfed and decrefed dst per call (see
# engine/circuit/witness.py's comment on its op loop).
@njit(cache=True, inline="always")
def _put_coord(dst, i, at, a):
    """Montgomery limbs ``a`` as 48 big-endian bytes of the canonical value at ``at``."""
    r = fp_from_mont(a)
    for k in range(6):
        _put_word(dst, i, at + 8 * (5 - k), r[k])


@njit(cache=True)
def _flags(src, i):
    """Status from the flag bits of row i's first byte (OK when none is set); the infinity
    flag must come with every other bit zero."""
    f = src[i, 0]
    if f & FLAG_COMPRESSED:
        return COMPRESSED
    if f & FLAG_SIGN:
        return SIGN
    if f & FLAG_INFINITY:
        if f != FLAG_INFINITY:
            return BAD_INFINITY
        for j in range(1, src.shape[1]):
            if src[i, j] != 0:
                return BAD_INFINITY
        return INFINITY
    return OK


@njit(cache=True)
def _zero_row(dst, r):
    for j in range(dst.shape[1]):
        dst[r, j] = np.uint64(0)


@njit(cache=True)
def _infinity_bytes(dst, k):
    dst[k, 0] = np.uint8(FLAG_INFINITY)
    for j in range(1, dst.shape[1]):
        dst[k, j] = np.uint8(0)


@njit(cache=True)
def _mask_top(a):
    return (a[0], a[1], a[2], a[3], a[4], a[5] & _FLAGS_MASK)


@njit(cache=True, parallel=True)
def g1_from_be(src, rows, dst, status):
    """Decode uncompressed G1 points src[k] (uint8[n, 96]) into dst[rows[k]] (uint64[m, 12]),
    status[k] (uint8[n]) the outcome (see the module doc)."""
    for k in prange(src.shape[0]):
        s = _flags(src, k)
        if s == INFINITY:
            _zero_row(dst, rows[k])
        elif s == OK:
            x = _mask_top(_coord(src, k, 0))
            y = _coord(src, k, 48)
            if fp_is_zero(x) and fp_is_zero(y):
                s = INFINITY
                _zero_row(dst, rows[k])
            elif not (_below_p(x) and _below_p(y)):
                s = RANGE
            else:
                xm, ym = fp_to_mont(x), fp_to_mont(y)
                if not g1_on_curve_affine(xm, ym):
                    s = OFF_CURVE
                else:
                    fp_store(dst, rows[k], xm, 0)
                    fp_store(dst, rows[k], ym, 6)
        status[k] = s


@njit(cache=True, parallel=True)
def g2_from_be(src, rows, dst, status):
    """Decode uncompressed G2 points src[k] (uint8[n, 192]: x.c1, x.c0, y.c1, y.c0) into
    dst[rows[k]] (uint64[m, 24]: x.c0, x.c1, y.c0, y.c1); status as in :func:`g1_from_be`."""
    for k in prange(src.shape[0]):
        s = _flags(src, k)
        if s == INFINITY:
            _zero_row(dst, rows[k])
        elif s == OK:
            x1 = _mask_top(_coord(src, k, 0))
            x0 = _coord(src, k, 48)
            y1 = _coord(src, k, 96)
            y0 = _coord(src, k, 144)
            if fp_is_zero(x0) and fp_is_zero(x1) and fp_is_zero(y0) and fp_is_zero(y1):
                s = INFINITY
                _zero_row(dst, rows[k])
            elif not (_below_p(x0) and _below_p(x1) and _below_p(y0) and _below_p(y1)):
                s = RANGE
            else:
                x = (fp_to_mont(x0), fp_to_mont(x1))
                y = (fp_to_mont(y0), fp_to_mont(y1))
                if not g2_on_curve_affine(x, y):
                    s = OFF_CURVE
                else:
                    r = rows[k]
                    fp_store(dst, r, x[0], 0)
                    fp_store(dst, r, x[1], 6)
                    fp_store(dst, r, y[0], 12)
                    fp_store(dst, r, y[1], 18)
        status[k] = s


@njit(cache=True, parallel=True)
def g1_to_be(src, rows, dst, status):
    """Encode storage rows src[rows[k]] (uint64[m, 12]) as uncompressed dst[k] (uint8[n, 96]),
    status[k] INFINITY for the point at infinity (0x40 and zeros), else OK."""
    for k in prange(rows.shape[0]):
        x = fp_load(src, rows[k], 0)
        y = fp_load(src, rows[k], 6)
        if fp_is_zero(x) and fp_is_zero(y):
            status[k] = INFINITY
            _infinity_bytes(dst, k)
        else:
            _put_coord(dst, k, 0, x)
            _put_coord(dst, k, 48, y)
            status[k] = OK


@njit(cache=True, parallel=True)
def g2_to_be(src, rows, dst, status):
    """Encode G2 storage rows (x.c0, x.c1, y.c0, y.c1) as uncompressed dst[k] (uint8[n, 192]:
    x.c1, x.c0, y.c1, y.c0); status as in :func:`g1_to_be`."""
    for k in prange(rows.shape[0]):
        x = fp2_load(src, rows[k], 0)
        y = fp2_load(src, rows[k], 12)
        if fp_is_zero(x[0]) and fp_is_zero(x[1]) and fp_is_zero(y[0]) and fp_is_zero(y[1]):
            status[k] = INFINITY
            _infinity_bytes(dst, k)
        else:
            _put_coord(dst, k, 0, x[1])
            _put_coord(dst, k, 48, x[0])
            _put_coord(dst, k, 96, y[1])
            _put_coord(dst, k, 144, y[0])
            status[k] = OK
