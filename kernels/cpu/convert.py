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


def _coords_to_storage(coords: Sequence[Sequence[int] | None], n_coords: int) -> np.ndarray:
    """Each point's ``n_coords`` Fp coordinates to one storage row (None: all zeros)."""
    out = np.zeros((len(coords), n_coords * FP_LIMBS), np.uint64)
    for i, c in enumerate(coords):
        if c is not None:
            out[i] = to_mont_fp(c).reshape(-1)
    return out


def g1_to_storage(points: Sequence[G1Int]) -> np.ndarray:
    """Affine G1 points as ints to uint64[n, 12] (infinity is all zeros)."""
    return _coords_to_storage(list(points), 2)


def _coords_from_storage(arr: np.ndarray, n_coords: int) -> list[list[int] | None]:
    """Storage rows of ``n_coords`` Fp coordinates each to their ints (None for an all-zero
    row, the point at infinity)."""
    a = np.asarray(arr).reshape(-1, n_coords * FP_LIMBS)
    return [from_mont_fp(row.reshape(n_coords, FP_LIMBS)) if row.any() else None for row in a]


def g1_from_storage(arr: np.ndarray) -> list[G1Int]:
    return [None if c is None else (c[0], c[1]) for c in _coords_from_storage(arr, 2)]


def g2_to_storage(points: Sequence[G2Int]) -> np.ndarray:
    """Affine G2 points as ints to uint64[n, 24]: x.c0, x.c1, y.c0, y.c1."""
    return _coords_to_storage([None if p is None else (*p[0], *p[1]) for p in points], 4)


def g2_from_storage(arr: np.ndarray) -> list[G2Int]:
    """uint64[n, 24] rows (x.c0, x.c1, y.c0, y.c1) to affine G2 points as ints."""
    return [None if c is None else ((c[0], c[1]), (c[2], c[3])) for c in _coords_from_storage(arr, 4)]
