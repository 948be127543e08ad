"""The fixed-base multiplication of msm/fixed_base.cuh (signed-digit table, K points a thread
sharing one inversion), built for the host and run thread by thread, against py_arkworks_bls12381.
No GPU needed; small windows keep the host table quick, the code is the same for any c."""

from __future__ import annotations

import ctypes
import random
from typing import Any

import numpy as np
import pytest
from host_build import host_library, needs_cxx

from kernels.constants import R_MOD
from kernels.cuda import testing as T

pytestmark = needs_cxx
WORDS = {"g1": 12, "g2": 24}  # uint64 words of an affine point


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return host_library(tmp_path_factory, "msm/host_fixed.cpp", "-O2", "-DSEALTOP_PTX_FF=1")


def _p(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


def fixed_mul(lib: ctypes.CDLL, group: str, base: np.ndarray, scalars: list[int], c: int, threads: int, k: int) -> np.ndarray:
    """scalars[i] * base through the header's table and threads (threads x k must cover them)."""
    aw = WORDS[group]
    nwin = -(-256 // c)
    table = np.zeros((nwin << (c - 1), aw), np.uint64)
    getattr(lib, f"{group}_table")(_p(np.ascontiguousarray(base, np.uint64)), ctypes.c_int(c), ctypes.c_int(nwin), _p(table))
    s = T.fr_words(scalars)
    n = len(scalars)
    out = np.full((n, aw), 0xDEADBEEF, np.uint64)
    scratch = np.zeros(max(1, 3 * n * aw // 2), np.uint64)
    getattr(lib, f"{group}_mul")(_p(table), ctypes.c_int(c), ctypes.c_int(nwin), _p(s), ctypes.c_uint64(n),
                                 ctypes.c_uint64(threads), ctypes.c_uint32(k), _p(out), _p(scratch))
    return out


def _base(group: str, rng: random.Random) -> Any:
    import py_arkworks_bls12381 as ark

    G = ark.G1Point if group == "g1" else ark.G2Point
    return G() * ark.Scalar(rng.randrange(1, R_MOD))


@pytest.mark.parametrize("group,n,c,threads,k", [
    ("g1", 67, 6, 5, 14),    # 5 threads x 14 points: the last thread's run ends early
    ("g1", 40, 5, 40, 1),    # one point a thread: the inversion of a single ZZZ
    ("g1", 33, 8, 4, 9),
    ("g2", 21, 7, 3, 8),
])
def test_fixed_base_matches_arkworks(lib: ctypes.CDLL, group: str, n: int, c: int, threads: int, k: int) -> None:
    rng = random.Random()
    base = _base(group, rng)
    sc = [rng.randrange(R_MOD) for _ in range(n)]
    # 0 (infinity among the batch), 1, r - 1 (every digit negative-carrying), 2^(c-1) and
    # 2^(c-1) + 1 (the signed digit's turning point), a repeated scalar
    sc[:7] = [0, 1, R_MOD - 1, 1 << (c - 1), (1 << (c - 1)) + 1, sc[9], 0]
    rng.shuffle(sc)
    got = fixed_mul(lib, group, T.ark_to_words(group, [base])[0], sc, c, threads, k)
    assert np.array_equal(got, T.ark_fixed_base(group, base, sc))


def test_infinite_base_gives_infinity(lib: ctypes.CDLL) -> None:
    got = fixed_mul(lib, "g1", np.zeros(12, np.uint64), [5, 0, R_MOD - 1], 6, 2, 2)
    assert not got.any()


def test_a_wrong_scalar_is_caught(lib: ctypes.CDLL) -> None:
    rng = random.Random()
    base = _base("g1", rng)
    sc = [rng.randrange(1, R_MOD) for _ in range(12)]
    got = fixed_mul(lib, "g1", T.ark_to_words("g1", [base])[0], sc, 6, 3, 4)
    other = list(sc)
    other[4] = (other[4] + 1) % R_MOD
    want = T.ark_fixed_base("g1", base, other)
    assert not np.array_equal(got[4], want[4])
    assert np.array_equal(np.delete(got, 4, axis=0), np.delete(want, 4, axis=0))


def pair_sums(lib: ctypes.CDLL, group: str, pts: np.ndarray, threads: int, k: int) -> np.ndarray:
    """P_2j + P_(2j+1) of an affine table through the header's pair threads."""
    aw = WORDS[group]
    npairs = len(pts) // 2
    out = np.full((npairs, aw), 0xDEADBEEF, np.uint64)
    scratch = np.zeros(max(1, 3 * npairs * aw // 2), np.uint64)
    getattr(lib, f"{group}_pairs")(_p(np.ascontiguousarray(pts, np.uint64)), ctypes.c_uint64(npairs),
                                  ctypes.c_uint64(threads), ctypes.c_uint32(k), _p(out), _p(scratch))
    return out


@pytest.mark.parametrize("group,n,threads,k", [("g1", 61, 4, 8), ("g1", 20, 10, 1), ("g2", 27, 3, 5)])
def test_pair_table_matches_arkworks(lib: ctypes.CDLL, group: str, n: int, threads: int, k: int) -> None:
    """The ones' pair table: random pairs, and pairs with infinity on either side or both, a
    point twice (a doubling) and a point with its negation (infinity), at random places."""
    rng = random.Random()
    pts = T.random_points(group, n, rng)
    inf = pts[0] * _ark_scalar(0)
    j = rng.sample(range(n // 2), 5)
    pts[2 * j[0]] = inf
    pts[2 * j[1] + 1] = inf
    pts[2 * j[2]] = pts[2 * j[2] + 1] = inf
    pts[2 * j[3] + 1] = pts[2 * j[3]]
    pts[2 * j[4] + 1] = -pts[2 * j[4]]
    got = pair_sums(lib, group, T.ark_to_words(group, pts), threads, k)
    want = T.ark_to_words(group, [pts[2 * i] + pts[2 * i + 1] for i in range(n // 2)])
    assert np.array_equal(got, want)
    assert not got[j[2]].any() and not got[j[4]].any()


def _ark_scalar(v: int) -> Any:
    import py_arkworks_bls12381 as ark

    return ark.Scalar(v)
