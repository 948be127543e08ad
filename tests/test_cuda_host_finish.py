"""The host-side end of the MSM (kernels/cuda/finish.py): Horner over XYZZ window sums, plus the
ones sum, to affine, against py_arkworks_bls12381. Needs no GPU."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernels.constants import FP_R, P_MOD, R_MOD
from kernels.cuda import testing as T
from kernels.cuda.finish import combine_windows


def _fp2_mul(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return ((a[0] * b[0] - a[1] * b[1]) % P_MOD, (a[0] * b[1] + a[1] * b[0]) % P_MOD)


def _xyzz_row(group: str, point, rng: random.Random) -> np.ndarray:  # type: ignore[no-untyped-def]
    """An affine arkworks point as an XYZZ row with a random Z (X = x Z^2, Y = y Z^3)."""
    words = 12 if group == "g1" else 24
    aff = T.ark_to_words(group, [point])[0]
    if not aff.any():
        return np.zeros(2 * words, dtype=np.uint64)
    raw = aff.tobytes()
    rinv = pow(FP_R, -1, P_MOD)
    ints = [int.from_bytes(raw[i : i + 48], "little") * rinv % P_MOD for i in range(0, len(raw), 48)]
    if group == "g1":
        x, y = ints
        z = rng.randrange(1, P_MOD)
        zz, zzz = z * z % P_MOD, z * z * z % P_MOD
        vals = [x * zz % P_MOD, y * zzz % P_MOD, zz, zzz]
    else:
        x, y = (ints[0], ints[1]), (ints[2], ints[3])
        z = (rng.randrange(P_MOD), rng.randrange(1, P_MOD))
        zz = _fp2_mul(z, z)
        zzz = _fp2_mul(zz, z)
        pairs = [_fp2_mul(x, zz), _fp2_mul(y, zzz), zz, zzz]
        vals = [v for p in pairs for v in p]
    buf = b"".join((v * FP_R % P_MOD).to_bytes(48, "little") for v in vals)
    return np.frombuffer(buf, dtype="<u8").copy()


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("c", [4, 13, 16])
def test_combine_windows_matches_arkworks(group: str, c: int) -> None:
    import py_arkworks_bls12381 as ark

    rng = random.Random()
    G = ark.G1Point if group == "g1" else ark.G2Point
    nwin = -(-256 // c)
    ks = [rng.randrange(R_MOD) for _ in range(nwin)]
    ks[1] = 0  # an empty window (infinity)
    pts = [G() * ark.Scalar(k) for k in ks]
    ones_k = rng.randrange(R_MOD)
    wins = np.stack([_xyzz_row(group, p, rng) for p in pts])
    ones = _xyzz_row(group, G() * ark.Scalar(ones_k), rng)
    total = sum(k * pow(2, c * w, R_MOD) for w, k in enumerate(ks)) + ones_k
    want = T.ark_to_words(group, [G() * ark.Scalar(total % R_MOD)])[0]
    assert np.array_equal(combine_windows(group, wins, c, ones), want)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_combine_windows_edge_cases(group: str) -> None:
    import py_arkworks_bls12381 as ark

    rng = random.Random()
    G = ark.G1Point if group == "g1" else ark.G2Point
    k = rng.randrange(1, R_MOD)
    p = G() * ark.Scalar(k)
    one_win = np.stack([_xyzz_row(group, p, rng)])
    # window + the same point (doubling inside the addition), window + its negation (infinity)
    assert np.array_equal(combine_windows(group, one_win, 16, _xyzz_row(group, p, rng)), T.ark_to_words(group, [p + p])[0])
    neg = G() * ark.Scalar(R_MOD - k)
    assert not combine_windows(group, one_win, 16, _xyzz_row(group, neg, rng)).any()
    # no windows at all (every scalar was 0 or 1): the ones sum alone; and nothing at all
    assert np.array_equal(combine_windows(group, one_win[:0], 16, _xyzz_row(group, p, rng)), T.ark_to_words(group, [p])[0])
    assert not combine_windows(group, one_win[:0], 16, None).any()
