"""The windowed inversion the batch-affine MSM uses (Mont::inv_fast, Fp2::inv_fast), built for the
host from the CUDA headers (both the portable arithmetic and the PTX model) and checked against
Python integers; no GPU needed."""

from __future__ import annotations

import ctypes
import random

import numpy as np
import pytest
from host_build import BUILDS, host_library, needs_cxx, ptx_flag

from kernels.constants import P_MOD, R_MOD
from kernels.cpu.convert import from_mont_fp, from_mont_fr, to_mont_fp, to_mont_fr

pytestmark = needs_cxx
INV_FAST = 6  # host_selftest.cpp's op number


@pytest.fixture(scope="module", params=BUILDS)
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return host_library(tmp_path_factory, "ff/host_selftest.cpp", "-O1", ptx_flag(request.param))


def _call(lib: ctypes.CDLL, fn: str, a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.uint64)
    out = np.full_like(a, 0xDEADBEEFDEADBEEF)
    p = ctypes.c_void_p
    getattr(lib, fn)(ctypes.c_int(INV_FAST), p(a.ctypes.data), p(a.ctypes.data), p(out.ctypes.data), ctypes.c_int(len(a)))
    return out


@pytest.mark.parametrize("field", ["fr", "fp"])
def test_inv_fast_matches_python(lib: ctypes.CDLL, field: str) -> None:
    mod, to_m, from_m = (R_MOD, to_mont_fr, from_mont_fr) if field == "fr" else (P_MOD, to_mont_fp, from_mont_fp)
    vals = [0, 1, 2, mod - 1, mod - 2, (mod + 1) // 2] + [random.randrange(1, mod) for _ in range(120)]
    got = _call(lib, f"{field}_binop", to_m(vals))
    want = [pow(v, mod - 2, mod) for v in vals]  # 0 maps to 0, as inv() does
    assert from_m(got) == want
    assert all(v * w % mod == 1 for v, w in zip(vals, want) if v)
    assert np.array_equal(got, to_m(want))


def test_fp2_inv_fast_matches_python(lib: ctypes.CDLL) -> None:
    a = [(random.randrange(P_MOD), random.randrange(P_MOD)) for _ in range(60)] + [(1, 0), (0, 1), (P_MOD - 1, 5)]
    enc = np.hstack([to_mont_fp([x for x, _ in a]), to_mont_fp([y for _, y in a])])
    out = _call(lib, "fp2_binop", enc)
    got = list(zip(from_mont_fp(out[:, :6]), from_mont_fp(out[:, 6:])))
    for (x0, x1), (y0, y1) in zip(a, got):  # (x0 + x1 u)(y0 + y1 u) = 1 with u^2 = -1
        assert ((x0 * y0 - x1 * y1) % P_MOD, (x0 * y1 + x1 * y0) % P_MOD) == (1, 0)
