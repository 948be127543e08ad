"""The GLV split of msm/glv.cuh, built for the host: s = s1 + lambda s2 with both halves below
2^128 (s1 = s mod lambda) against Python integers, and the endomorphism (x, y) -> (beta x, y)
equal to lambda times the point by py_arkworks_bls12381. No GPU needed."""

from __future__ import annotations

import ctypes
import random

import numpy as np
import pytest
from host_build import host_library, needs_cxx

from kernels.constants import FP_BETA, GLV_LAMBDA, P_MOD, R_MOD
from kernels.cuda import testing as T

pytestmark = needs_cxx


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return host_library(tmp_path_factory, "msm/host_glv.cpp", "-O1", "-DSEALTOP_PTX_FF=1")


def _words(values: list[int]) -> np.ndarray:
    return np.frombuffer(b"".join(v.to_bytes(32, "little") for v in values), dtype="<u4").copy()


def _ints(words: np.ndarray) -> list[int]:
    raw = words.tobytes()
    return [int.from_bytes(raw[i : i + 32], "little") for i in range(0, len(raw), 32)]


def split(lib: ctypes.CDLL, scalars: list[int]) -> tuple[list[int], list[int]]:
    s = _words(scalars)
    s1, s2 = np.full_like(s, 0xFFFFFFFF), np.full_like(s, 0xFFFFFFFF)
    p = ctypes.c_void_p
    lib.host_glv_split(p(s.ctypes.data), ctypes.c_uint64(len(scalars)), p(s1.ctypes.data), p(s2.ctypes.data))
    return _ints(s1), _ints(s2)


def test_constants() -> None:
    assert GLV_LAMBDA * GLV_LAMBDA + GLV_LAMBDA + 1 == R_MOD
    assert pow(FP_BETA, 3, P_MOD) == 1 and FP_BETA != 1


def test_split_matches_python_ints(lib: ctypes.CDLL) -> None:
    rng = random.Random()
    lam = GLV_LAMBDA
    edges = [0, 1, lam - 1, lam, lam + 1, 2 * lam - 1, 2 * lam, lam * lam, lam * lam + lam, R_MOD - 1, R_MOD - 2,
             (1 << 128) - 1, 1 << 128, (1 << 254) + 12345]
    # near every multiple boundary the quotient estimate may be one short: k * lam - 1, k * lam
    edges += [k * lam + d for k in (rng.randrange(1, lam) for _ in range(40)) for d in (-1, 0, 1)]
    scalars = [v for v in edges if 0 <= v < R_MOD] + [rng.randrange(R_MOD) for _ in range(2000)]
    s1, s2 = split(lib, scalars)
    for s, a, b in zip(scalars, s1, s2):
        assert (a, b) == (s % lam, s // lam), hex(s)
        assert a < 1 << 128 and b < 1 << 128


def test_a_wrong_split_is_caught(lib: ctypes.CDLL) -> None:
    s = GLV_LAMBDA * 7 + 3
    (a,), (b,) = split(lib, [s])
    assert (a, b) == (3, 7)
    assert a + GLV_LAMBDA * (b + 1) != s  # the identity the MSM relies on would notice a wrong quotient


def test_endomorphism_is_lambda_times_the_point(lib: ctypes.CDLL) -> None:
    import py_arkworks_bls12381 as ark

    rng = random.Random()
    pts = [ark.G1Point() * ark.Scalar(rng.randrange(1, R_MOD)) for _ in range(20)]
    pts.append(ark.G1Point() * ark.Scalar(0))  # infinity stays infinity
    words = np.ascontiguousarray(T.ark_to_words("g1", pts))
    out = np.zeros_like(words)
    lib.host_endo(ctypes.c_void_p(words.ctypes.data), ctypes.c_uint64(len(pts)), ctypes.c_void_p(out.ctypes.data))
    want = T.ark_to_words("g1", [p * ark.Scalar(GLV_LAMBDA) for p in pts])
    assert np.array_equal(out, want)
    other = T.ark_to_words("g1", [p * ark.Scalar(R_MOD - 1 - GLV_LAMBDA) for p in pts[:3]])  # the other root
    assert not np.array_equal(out[:3], other)
