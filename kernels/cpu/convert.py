"""Conversions between Python integers and the storage layout (Montgomery, uint64 limbs).

These run at the edges (tests, setup of small circuits, serialization), so they favour clarity:
Python's big integers do the Montgomery scaling, numpy does the limb split.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from kernels.constants import FP_LIMBS, FP_R, FR_LIMBS, FR_R, P_MOD, R_MOD

_MASK = (1 << 64) - 1


def ints_to_limbs(values: Iterable[int], limbs: int) -> np.ndarray:
    """Non-negative ints below 2^(64*limbs) to uint64[n, limbs], little-endian."""
    vals = list(values)
    nbytes = 8 * limbs
    buf = b"".join(int(v).to_bytes(nbytes, "little") for v in vals)
    return np.frombuffer(buf, dtype="<u8").reshape(len(vals), limbs).astype(np.uint64)


def limbs_to_ints(arr: np.ndarray) -> list[int]:
    """uint64[n, limbs] little-endian rows to Python ints."""
    a = np.ascontiguousarray(arr, dtype="<u8")
    if a.ndim == 1:
        a = a.reshape(1, -1)
    row = a.shape[1] * 8
    raw = a.tobytes()
    return [int.from_bytes(raw[i : i + row], "little") for i in range(0, len(raw), row)]


def to_mont_fr(values: Iterable[int]) -> np.ndarray:
    """Ints (any size, reduced mod r) to Fr storage uint64[n, 4]."""
    return ints_to_limbs((int(v) % R_MOD * FR_R % R_MOD for v in values), FR_LIMBS)


def from_mont_fr(arr: np.ndarray) -> list[int]:
    inv = pow(FR_R, -1, R_MOD)
    return [v * inv % R_MOD for v in limbs_to_ints(arr)]


def to_mont_fp(values: Iterable[int]) -> np.ndarray:
    """Ints (reduced mod p) to Fp storage uint64[n, 6]."""
    return ints_to_limbs((int(v) % P_MOD * FP_R % P_MOD for v in values), FP_LIMBS)


def from_mont_fp(arr: np.ndarray) -> list[int]:
    inv = pow(FP_R, -1, P_MOD)
    return [v * inv % P_MOD for v in limbs_to_ints(arr)]


G1Int = tuple[int, int] | None  # affine (x, y); None is the point at infinity
G2Int = tuple[tuple[int, int], tuple[int, int]] | None  # ((x.c0, x.c1), (y.c0, y.c1))


def g1_to_storage(points: Sequence[G1Int]) -> np.ndarray:
    """Affine G1 points as ints to uint64[n, 12] (infinity is all zeros)."""
    out = np.zeros((len(points), 2 * FP_LIMBS), np.uint64)
    for i, p in enumerate(points):
        if p is not None:
            out[i] = to_mont_fp([p[0], p[1]]).reshape(-1)
    return out


def g1_from_storage(arr: np.ndarray) -> list[G1Int]:
    a = np.asarray(arr).reshape(-1, 2 * FP_LIMBS)
    res: list[G1Int] = []
    for row in a:
        if not row.any():
            res.append(None)
        else:
            x, y = from_mont_fp(row.reshape(2, FP_LIMBS))
            res.append((x, y))
    return res


def g2_to_storage(points: Sequence[G2Int]) -> np.ndarray:
    """Affine G2 points as ints to uint64[n, 24]: x.c0, x.c1, y.c0, y.c1."""
    out = np.zeros((len(points), 4 * FP_LIMBS), np.uint64)
    for i, p in enumerate(points):
        if p is not None:
            (x0, x1), (y0, y1) = p
            out[i] = to_mont_fp([x0, x1, y0, y1]).reshape(-1)
    return out


def g2_from_storage(arr: np.ndarray) -> list[G2Int]:
    a = np.asarray(arr).reshape(-1, 4 * FP_LIMBS)
    res: list[G2Int] = []
    for row in a:
        if not row.any():
            res.append(None)
        else:
            x0, x1, y0, y1 = from_mont_fp(row.reshape(4, FP_LIMBS))
            res.append(((x0, x1), (y0, y1)))
    return res
