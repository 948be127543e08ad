"""The windowed inversion the batch-affine MSM uses (Mont::inv_fast, Fp2::inv_fast) and the binary-GCD
inversion (ff/inverse_gcd.cuh's inv_gcd, which batch_inverse.cuh's top level takes by default,
SEALTOP_BINV_GCD=1), built for the host from the CUDA headers (both the portable arithmetic and the
PTX model) and checked against Python integers and against each other; no GPU needed."""

from __future__ import annotations

import ctypes
import random
from collections.abc import Callable

import numpy as np
import pytest
from host_build import BUILDS, host_library, needs_cxx, ptx_flag

from kernels.constants import P_MOD, R_MOD
from kernels.cpu.convert import from_mont_fp, from_mont_fr, to_mont_fp, to_mont_fr
from kernels.cuda.source import assemble

pytestmark = needs_cxx
INV_FAST = 6  # host_selftest.cpp's op numbers
INV_GCD = 7  # inv_gcd: SEALTOP_INV_GCD_BITS's limbs
INV_GCD_WIDTHS = (INV_GCD, 8, 9)  # and inv_gcd_w with 62-bit, 30-bit limbs


@pytest.fixture(scope="module", params=BUILDS)
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return host_library(tmp_path_factory, "ff/host_selftest.cpp", "-O1", ptx_flag(request.param))


def _call(lib: ctypes.CDLL, fn: str, a: np.ndarray, op: int = INV_FAST) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.uint64)
    out = np.full_like(a, 0xDEADBEEFDEADBEEF)
    p = ctypes.c_void_p
    getattr(lib, fn)(ctypes.c_int(op), p(a.ctypes.data), p(a.ctypes.data), p(out.ctypes.data), ctypes.c_int(len(a)))
    return out


def _field(field: str) -> tuple[int, Callable[[list[int]], np.ndarray], Callable[[np.ndarray], list[int]]]:
    return (R_MOD, to_mont_fr, from_mont_fr) if field == "fr" else (P_MOD, to_mont_fp, from_mont_fp)


def _gcd_inputs(mod: int) -> list[int]:
    """Edge cases of a binary GCD below mod (powers of two, long runs of trailing zeros, values at
    the 30- and 62-bit limb boundaries, p - 2^k, all ones), then fresh random values."""
    bits = mod.bit_length()
    vals = [0, 1, 2, 3, mod - 1, mod - 2, mod - 3, (mod + 1) // 2, (mod - 1) // 2, (mod + 1) // 4]
    vals += [1 << k for k in range(bits)]
    vals += [mod - (1 << k) for k in range(bits)]
    vals += [random.randrange(1, mod >> k) << k for k in (3, 8, 31, 32, 61, 62, 63, 64, 65, 100, 124, 200, bits - 3)]
    vals += [(1 << k) + d for k in (30, 32, 60, 62, 64, 90, 120, 124, 128, 186, 240, 248, 360) if 1 << k < mod for d in (-1, 1)]
    vals += [(1 << k) - 1 for k in range(1, bits)]  # all ones
    vals += [random.randrange(1, mod) for _ in range(400)]
    return [v % mod for v in vals]


@pytest.mark.parametrize("field", ["fr", "fp"])
def test_inv_fast_matches_python(lib: ctypes.CDLL, field: str) -> None:
    mod, to_m, from_m = _field(field)
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


@pytest.mark.parametrize("field", ["fr", "fp"])
def test_inv_gcd_matches_python_and_inv_fast(lib: ctypes.CDLL, field: str) -> None:
    mod, to_m, from_m = _field(field)
    vals = _gcd_inputs(mod)
    enc = to_m(vals)
    fast = _call(lib, f"{field}_binop", enc, INV_FAST)
    want = [pow(v, -1, mod) if v else 0 for v in vals]  # 0 maps to 0
    for op in INV_GCD_WIDTHS:
        got = _call(lib, f"{field}_binop", enc, op)
        assert from_m(got) == want, op
        assert np.array_equal(got, fast), op  # bit for bit


def test_fp2_inv_gcd_matches_inv_fast(lib: ctypes.CDLL) -> None:
    a = [(random.randrange(P_MOD), random.randrange(P_MOD)) for _ in range(60)] + [(1, 0), (0, 1), (P_MOD - 1, 5), (0, 0)]
    enc = np.hstack([to_mont_fp([x for x, _ in a]), to_mont_fp([y for _, y in a])])
    got = _call(lib, "fp2_binop", enc, INV_GCD)
    for op in INV_GCD_WIDTHS:
        assert np.array_equal(_call(lib, "fp2_binop", enc, op), _call(lib, "fp2_binop", enc, INV_FAST)), op
    for (x0, x1), y0, y1 in zip(a[:-1], from_mont_fp(got[:, :6]), from_mont_fp(got[:, 6:])):
        assert ((x0 * y0 - x1 * y1) % P_MOD, (x0 * y1 + x1 * y0) % P_MOD) == (1, 0)
    assert not got[-1].any()  # 0 maps to 0


# batch_inverse.cuh's host build (msm/host_rounds.cpp): the GCD (the default: both field builds with
# the default limbs, and the 62-bit limbs) and Fermat (SEALTOP_BINV_GCD=0), plus an entry point that
# reports the defines, so the test knows they reached the headers
_GCD_FLAG = 'extern "C" int binv_gcd_build() { return 1000 * SEALTOP_BINV_GCD + SEALTOP_INV_GCD_BITS; }\n'
GCD_LIBS = [(b, 0, 1) for b in BUILDS] + [("portable", 62, 1), ("portable", 0, 0)]


@pytest.fixture(scope="module", params=GCD_LIBS,
                ids=[f"{b}-bits{w or 'default'}-{'gcd' if g else 'fermat'}" for b, w, g in GCD_LIBS])
def binv_gcd_lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    build, bits, gcd = request.param
    flags = ("-O1", ptx_flag(build)) + (() if gcd else ("-DSEALTOP_BINV_GCD=0",)) + \
        ((f"-DSEALTOP_INV_GCD_BITS={bits}",) if bits else ())
    out = host_library(tmp_path_factory, "msm/host_rounds.cpp", *flags, text=assemble("msm/host_rounds.cpp") + _GCD_FLAG)
    assert out.binv_gcd_build() == 1000 * gcd + (bits or 30)
    return out


@pytest.mark.parametrize("order", [0, 2])
def test_binv_top_with_gcd(binv_gcd_lib: ctypes.CDLL, order: int) -> None:
    """The top level alone (chains up, one inversion each, chains down) over T threads."""
    p = ctypes.c_void_p
    for m, T in ((1, 1), (7, 3), (50, 8), (97, 32)):
        vals = [random.randrange(1, P_MOD) for _ in range(m)]
        for _ in range(m // 8):
            vals[random.randrange(m)] = 0  # zeros stay zero and do not spoil the others
        arr = np.ascontiguousarray(to_mont_fp(vals))
        pre = np.zeros_like(arr)
        binv_gcd_lib.host_fp_binv_top(ctypes.c_uint32(T), ctypes.c_int(order), p(arr.ctypes.data), p(pre.ctypes.data),
                                      ctypes.c_uint32(m), ctypes.c_uint32(T))
        assert from_mont_fp(arr) == [pow(v, -1, P_MOD) if v else 0 for v in vals]

    m, T = 20, 6
    a = [(random.randrange(P_MOD), random.randrange(P_MOD)) for _ in range(m)]
    arr = np.ascontiguousarray(np.hstack([to_mont_fp([x for x, _ in a]), to_mont_fp([y for _, y in a])]))
    pre = np.zeros_like(arr)
    binv_gcd_lib.host_fp2_binv_top(ctypes.c_uint32(T), ctypes.c_int(order), p(arr.ctypes.data), p(pre.ctypes.data),
                                   ctypes.c_uint32(m), ctypes.c_uint32(T))
    for (x0, x1), y0, y1 in zip(a, from_mont_fp(arr[:, :6]), from_mont_fp(arr[:, 6:])):
        assert ((x0 * y0 - x1 * y1) % P_MOD, (x0 * y1 + x1 * y0) % P_MOD) == (1, 0)
