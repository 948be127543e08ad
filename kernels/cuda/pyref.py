"""Python-integer references for checking the CUDA kernels: conversions between integers and
design.md's Montgomery limb layout, and the plain field and curve operations.

Slow and simple on purpose: these are the oracle for the GPU code (points also go through
py_arkworks_bls12381 where a test needs many of them).
"""

from __future__ import annotations

import numpy as np

from kernels.constants import FP_R, FR_R, P_MOD, R_MOD

FR_RINV = pow(FR_R, -1, R_MOD)
FP_RINV = pow(FP_R, -1, P_MOD)


def to_limbs(values: list[int], nlimbs: int) -> np.ndarray:
    """Integers -> uint64[n, nlimbs], little-endian limbs (no Montgomery conversion)."""
    out = np.zeros((len(values), nlimbs), dtype=np.uint64)
    for i, v in enumerate(values):
        b = int(v).to_bytes(8 * nlimbs, "little")
        out[i] = np.frombuffer(b, dtype="<u8")
    return out


def from_limbs(arr: np.ndarray) -> list[int]:
    """uint64[n, k] little-endian limbs -> integers."""
    a = np.ascontiguousarray(arr, dtype="<u8")
    return [int.from_bytes(row.tobytes(), "little") for row in a]


def fr_to_mont(values: list[int]) -> np.ndarray:
    return to_limbs([v % R_MOD * FR_R % R_MOD for v in values], 4)


def fr_from_mont(arr: np.ndarray) -> list[int]:
    return [v * FR_RINV % R_MOD for v in from_limbs(arr)]


def fp_to_mont(values: list[int]) -> np.ndarray:
    return to_limbs([v % P_MOD * FP_R % P_MOD for v in values], 6)


def fp_from_mont(arr: np.ndarray) -> list[int]:
    return [v * FP_RINV % P_MOD for v in from_limbs(arr)]


# --- G1 affine over Python ints (None = infinity) -------------------------------------------

G1 = tuple[int, int] | None


def g1_add(p: G1, q: G1) -> G1:
    if p is None:
        return q
    if q is None:
        return p
    (x1, y1), (x2, y2) = p, q
    if x1 == x2:
        if (y1 + y2) % P_MOD == 0:
            return None
        lam = 3 * x1 * x1 * pow(2 * y1, -1, P_MOD) % P_MOD
    else:
        lam = (y2 - y1) * pow(x2 - x1, -1, P_MOD) % P_MOD
    x3 = (lam * lam - x1 - x2) % P_MOD
    return x3, (lam * (x1 - x3) - y1) % P_MOD


def g1_to_words(points: list[G1]) -> np.ndarray:
    """Affine G1 points -> uint64[n, 12] (Montgomery x then y; zeros for infinity)."""
    out = np.zeros((len(points), 12), dtype=np.uint64)
    for i, p in enumerate(points):
        if p is not None:
            out[i, :6] = fp_to_mont([p[0]])[0]
            out[i, 6:] = fp_to_mont([p[1]])[0]
    return out


def g1_from_words(arr: np.ndarray) -> list[G1]:
    xs, ys = fp_from_mont(arr[:, :6]), fp_from_mont(arr[:, 6:])
    return [None if not arr[i].any() else (xs[i], ys[i]) for i in range(len(arr))]
