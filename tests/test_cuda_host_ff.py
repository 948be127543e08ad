"""The CUDA field and curve headers, compiled for the host with a C++ compiler and checked against
Python integers and py_arkworks_bls12381. Runs without a GPU (skipped where no C++ compiler
is found), so the formulas the kernels use are checked in CI too."""

from __future__ import annotations

import ctypes
import random

import numpy as np
import pytest
from host_build import BUILDS, host_library, needs_cxx, ptx_flag
from oracle import binop_expected

from kernels.constants import P_MOD, R_MOD
from kernels.cpu.convert import from_mont_fp, from_mont_fr, to_mont_fp, to_mont_fr

pytestmark = needs_cxx


# Besides BUILDS, the PTX build with every Fp product and squaring on dmul.cuh's FP64 paths (the
# SEALTOP_FP_DMUL build variants: 1 the hybrid, 2 the pure FP64 Karatsuba).
DMUL_BUILDS = ["dmul_hybrid", "dmul_fp64"]
# And both builds with Fp2's products as whole Montgomery products (SEALTOP_FP2_MUL=0; the default
# is 1, mont.cuh's mul_wide, add_raw, sub_wide_mod and redc_wide on sums of products).
FP2_BUILDS = ["fp2_calls_portable", "fp2_calls_ptx_model"]
# And the PTX build with G1's XYZZ addition and doubling as members of a point in memory
# (SEALTOP_XYZZ_BYVAL=0, ec/xyzz.cuh; the default is 1, functions of values).
XYZZ_BUILDS = ["xyzz_members_ptx_model"]


@pytest.fixture(scope="module", params=BUILDS + DMUL_BUILDS + FP2_BUILDS + XYZZ_BUILDS)
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """The headers built twice: the portable C++ arithmetic, and the PTX instruction sequences the
    GPU runs, over ptx.cuh's host model of the carry flag (SEALTOP_PTX_FF=1); the PTX build
    again with Fp's products on the FP64 pipe (SEALTOP_FP_DMUL); both with Fp2's products as
    whole Montgomery products (SEALTOP_FP2_MUL=0); and G1's XYZZ formulas as members (SEALTOP_XYZZ_BYVAL=0)."""
    if request.param in DMUL_BUILDS:
        dmul = 1 + DMUL_BUILDS.index(request.param)
        return host_library(tmp_path_factory, "ff/host_selftest.cpp", "-O1", ptx_flag("ptx_model"), f"-DSEALTOP_FP_DMUL={dmul}")
    if request.param in XYZZ_BUILDS:
        return host_library(tmp_path_factory, "ff/host_selftest.cpp", "-O1", ptx_flag("ptx_model"), "-DSEALTOP_XYZZ_BYVAL=0")
    if request.param in FP2_BUILDS:
        build = request.param.removeprefix("fp2_calls_")
        return host_library(tmp_path_factory, "ff/host_selftest.cpp", "-O1", ptx_flag(build), "-DSEALTOP_FP2_MUL=0")
    return host_library(tmp_path_factory, "ff/host_selftest.cpp", "-O1", ptx_flag(request.param))


def _call(lib: ctypes.CDLL, fn: str, op: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.uint64)
    b = np.ascontiguousarray(b, dtype=np.uint64)
    out = np.full_like(a, 0xDEADBEEFDEADBEEF)
    p = ctypes.c_void_p
    getattr(lib, fn)(ctypes.c_int(op), p(a.ctypes.data), p(b.ctypes.data), p(out.ctypes.data), ctypes.c_int(len(a)))
    return out


def _edge_values(mod: int, n: int) -> list[int]:
    vals = [0, 1, 2, mod - 1, mod - 2, (mod - 1) // 2, (mod + 1) // 2]
    vals += [random.randrange(mod) for _ in range(n - len(vals))]
    return vals


@pytest.mark.parametrize("field", ["fr", "fp"])
def test_field_ops_match_python_ints(lib: ctypes.CDLL, field: str) -> None:
    mod, to_m, from_m = (R_MOD, to_mont_fr, from_mont_fr) if field == "fr" else (P_MOD, to_mont_fp, from_mont_fp)
    a = _edge_values(mod, 200)
    b = _edge_values(mod, 200)
    random.shuffle(b)
    A, B = to_m(a), to_m(b)
    fn = f"{field}_binop"
    expect = binop_expected(a, b, mod)
    for op, want in expect.items():
        out = _call(lib, fn, op, A, B)
        assert from_m(out) == want, f"{field} op {op}"
        # canonical storage: exactly the Montgomery form of the reference
        assert np.array_equal(out, to_m(want))


def test_fp2_ops_match_python_ints(lib: ctypes.CDLL) -> None:
    n = 100
    # the edges of the Karatsuba sums and of a0 b0 - a1 b1's sign: every pair of edge elements
    edges = [(0, 0), (1, 0), (0, 1), (P_MOD - 1, P_MOD - 1), (P_MOD - 1, 0), (0, P_MOD - 1), (P_MOD - 1, 1), (1, P_MOD - 1)]
    a = [(random.randrange(P_MOD), random.randrange(P_MOD)) for _ in range(n)] + [x for x in edges for _ in edges]
    b = [(random.randrange(P_MOD), random.randrange(P_MOD)) for _ in range(n)] + [y for _ in edges for y in edges]

    def enc(v: list[tuple[int, int]]) -> np.ndarray:
        return np.hstack([to_mont_fp([x for x, _ in v]), to_mont_fp([y for _, y in v])])

    def dec(arr: np.ndarray) -> list[tuple[int, int]]:
        return list(zip(from_mont_fp(arr[:, :6]), from_mont_fp(arr[:, 6:])))

    def mul(x: tuple[int, int], y: tuple[int, int]) -> tuple[int, int]:
        return ((x[0] * y[0] - x[1] * y[1]) % P_MOD, (x[0] * y[1] + x[1] * y[0]) % P_MOD)

    def inv(x: tuple[int, int]) -> tuple[int, int]:
        nrm = (x[0] ** 2 + x[1] ** 2) % P_MOD
        t = pow(nrm, P_MOD - 2, P_MOD)
        return (x[0] * t % P_MOD, -x[1] * t % P_MOD)

    A, B = enc(a), enc(b)
    assert dec(_call(lib, "fp2_binop", 2, A, B)) == [mul(x, y) for x, y in zip(a, b)]
    assert dec(_call(lib, "fp2_binop", 3, A, B)) == [mul(x, x) for x in a]
    assert dec(_call(lib, "fp2_binop", 4, A, B)) == [inv(x) for x in a]
    assert dec(_call(lib, "fp2_binop", 1, A, B)) == [((x[0] - y[0]) % P_MOD, (x[1] - y[1]) % P_MOD) for x, y in zip(a, b)]


def _ark_points(group: str, scalars: list[int]) -> np.ndarray:
    import py_arkworks_bls12381 as ark

    G = ark.G1Point if group == "g1" else ark.G2Point
    words = 12 if group == "g1" else 24
    out = np.zeros((len(scalars), words), dtype=np.uint64)
    for i, s in enumerate(scalars):
        raw = (G() * ark.Scalar(s % R_MOD)).to_xy_bytes_le()
        ints = [int.from_bytes(raw[48 * k : 48 * k + 48], "little") for k in range(words // 6)]
        if any(ints):
            out[i] = to_mont_fp(ints).reshape(-1)
    return out


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_curve_ops_match_arkworks(lib: ctypes.CDLL, group: str) -> None:
    n = 24
    s = [random.randrange(1, R_MOD) for _ in range(n)]
    t = [random.randrange(1, R_MOD) for _ in range(n)]
    # edge cases: p + p (doubling inside the mixed add), p + (-p), infinity on either side
    t[0] = s[0]
    t[1] = R_MOD - s[1]
    s[2] = 0
    t[3] = 0
    s[4] = t[4] = 0
    A, B = _ark_points(group, s), _ark_points(group, t)
    fn = f"{group}_op"
    assert np.array_equal(_call(lib, fn, 0, A, B), _ark_points(group, [x + y for x, y in zip(s, t)]))
    assert np.array_equal(_call(lib, fn, 1, A, B), _ark_points(group, [2 * x for x in s]))
    assert np.array_equal(_call(lib, fn, 2, A, B), _ark_points(group, [x + y for x, y in zip(s, t)]))
    assert np.array_equal(_call(lib, fn, 3, A, B), _ark_points(group, [2 * x + y for x, y in zip(s, t)]))
