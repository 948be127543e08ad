"""Oracles and input generators shared by the cuda tests and scripts/gpu_check.py.

Points come from py_arkworks_bls12381 (an independent implementation) and are converted to
design.md's layout; MSM and fixed-base references are arkworks' own multiexp and scalar
multiplication. Edge cases (scalars 0, 1, r - 1, the point at infinity, repeated points) are
planted by ``plant_edges``.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from kernels.constants import FP_R, FR_R, P_MOD, R_MOD

_WORDS = {"g1": 12, "g2": 24}


def _ark() -> Any:
    import py_arkworks_bls12381 as ark

    return ark


def _group(group: str) -> Any:
    ark = _ark()
    return ark.G1Point if group == "g1" else ark.G2Point


def ark_to_words(group: str, pts: list[Any]) -> np.ndarray:
    """arkworks points -> uint64[n, 12|24] affine, Montgomery, infinity all zeros."""
    words = _WORDS[group]
    k = words // 6
    out = np.zeros((len(pts), words), dtype=np.uint64)
    for i, p in enumerate(pts):
        raw = p.to_xy_bytes_le()
        ints = [int.from_bytes(raw[48 * j : 48 * j + 48], "little") for j in range(k)]
        if any(ints):
            buf = b"".join((v * FP_R % P_MOD).to_bytes(48, "little") for v in ints)
            out[i] = np.frombuffer(buf, dtype="<u8")
    return out


def words_to_ark(group: str, arr: np.ndarray) -> list[Any]:
    """uint64[n, 12|24] (Montgomery affine) -> arkworks points (no subgroup check)."""
    G = _group(group)
    rinv = pow(FP_R, -1, P_MOD)
    out = []
    a = np.ascontiguousarray(arr, dtype="<u8").reshape(len(arr), -1)
    for row in a:
        b = row.tobytes()
        ints = [int.from_bytes(b[48 * j : 48 * j + 48], "little") * rinv % P_MOD for j in range(len(b) // 48)]
        out.append(G.from_xy_bytes_unchecked_le(b"".join(v.to_bytes(48, "little") for v in ints)))
    return out


def random_points(group: str, n: int, rng: random.Random) -> list[Any]:
    """n distinct points: a few random multiples of the generator, then steps by random points."""
    ark = _ark()
    G = _group(group)
    k = max(1, min(n, 16))
    base = [G() * ark.Scalar(rng.randrange(1, R_MOD)) for _ in range(k)]
    steps = [G() * ark.Scalar(rng.randrange(1, R_MOD)) for _ in range(k)]
    out = list(base)
    i = 0
    while len(out) < n:
        out.append(out[-k] + steps[i % k])
        i += 1
    rng.shuffle(out)
    return out[:n]


def random_scalars(n: int, rng: random.Random) -> list[int]:
    return [rng.randrange(R_MOD) for _ in range(n)]


def plant_edges(points: list[Any], scalars: list[int], group: str, rng: random.Random) -> None:
    """Scalars 0, 1, 2, r - 1, r - 2, the point at infinity, repeated points and p, -p pairs."""
    n = len(points)
    if n < 12:
        return
    G = _group(group)
    edge_scalars = [0, 1, 1, 2, R_MOD - 1, R_MOD - 2, 0, 1]
    for j, s in enumerate(edge_scalars):
        scalars[j] = s
    points[8] = G.identity()
    scalars[8] = rng.randrange(R_MOD)
    points[9] = points[10]  # repeated point, different scalars
    points[11] = points[10]
    scalars[11] = scalars[10]  # repeated point, same scalar (doubling inside a bucket)


def fr_words(scalars: list[int]) -> np.ndarray:
    """Integers -> Fr Montgomery uint64[n, 4]."""
    buf = b"".join((s % R_MOD * FR_R % R_MOD).to_bytes(32, "little") for s in scalars)
    return np.frombuffer(buf, dtype="<u8").reshape(len(scalars), 4).copy()


def ark_msm(group: str, points: list[Any], scalars: list[int]) -> np.ndarray:
    """Reference MSM through arkworks, as uint64[words]."""
    ark = _ark()
    G = _group(group)
    if not points:
        return np.zeros(_WORDS[group], dtype=np.uint64)
    r = G.multiexp_unchecked(points, [ark.Scalar(s % R_MOD) for s in scalars])
    return ark_to_words(group, [r])[0]


def ark_fixed_base(group: str, base: Any, scalars: list[int]) -> np.ndarray:
    ark = _ark()
    return ark_to_words(group, [base * ark.Scalar(s % R_MOD) for s in scalars])


def field_op(fn: str, op: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The field module's elementwise kernel ``fn`` (fr_binop, fp_binop, fp2_binop, fp_dmul) with
    op code ``op`` over rows a and b, read back; the output starts poisoned, so every row must be
    written."""
    import cupy as cp

    from kernels.cuda.module import kernel

    A, B = cp.asarray(a), cp.asarray(b)
    out = cp.full(A.shape, 0xDEADBEEF, dtype=cp.uint64)
    n = a.shape[0]
    kernel("field", fn)(((n + 127) // 128,), (128,), (np.int32(op), A, B, out, np.uint64(n)))
    return cp.asnumpy(out)


def exceptional_buckets(group: str, rng: random.Random) -> tuple[list[list[Any]], int]:
    """Point lists that, all under one scalar, fill every window's bucket with exactly the
    batch-affine additions' exceptional sequences: P and -P (infinity), P twice (a doubling),
    P three times (a doubling, then an addition), P, -P, P (infinity, then P taken again), the
    point at infinity among them; and that scalar."""
    ark = _ark()
    G = _group(group)
    P = G() * ark.Scalar(rng.randrange(2, R_MOD))
    Q = G() * ark.Scalar(rng.randrange(2, R_MOD))
    inf = G.identity()
    cases = [[P, -P], [P, P], [P, P, P], [P, -P, P], [inf, P], [P, inf, P], [P, Q, -Q, -P], [P, P, -P, Q], [inf, inf]]
    return cases, rng.randrange(2, R_MOD)


def known_logs_case(n: int) -> tuple[Any, Any, np.ndarray]:
    """(device points k_i G, device scalars s_i, the MSM's affine words): n random k_i and s_i
    (Montgomery on the device), the points by the fixed-base kernel and the answer
    (sum k_i s_i mod r) G from Python integers and one arkworks scalar multiplication, so that a
    large MSM is checked without an n-point reference multiexp."""
    import cupy as cp

    from kernels.cuda.bench import generator_words, random_fr_device
    from kernels.cuda.fixed_base import FixedBase

    k_dev, s_dev = random_fr_device(n), random_fr_device(n)
    pts = FixedBase("g1", generator_words("g1")).mul(k_dev)
    rinv = pow(FR_R, -1, R_MOD)

    def ints(a: Any) -> list[int]:
        raw = cp.asnumpy(a).astype("<u8").tobytes()
        return [int.from_bytes(raw[32 * i : 32 * i + 32], "little") * rinv % R_MOD for i in range(n)]

    total = sum(k * s for k, s in zip(ints(k_dev), ints(s_dev))) % R_MOD
    ark = _ark()
    return pts, s_dev, ark_to_words("g1", [ark.G1Point() * ark.Scalar(total)])[0]
