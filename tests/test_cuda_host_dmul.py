"""ff/dmul.cuh's FP64-pipe Fp products (schoolbook, Karatsuba, the FP64/IMAD hybrid, the
squaring), built for the host (std::fma for the GPU's FMA) from the same header the GPU
compiles, against Python integers and bit for bit against Mont<Fp>'s product and square
(mont.cuh, portable and PTX-model builds) in the same library; no GPU needed."""

from __future__ import annotations

import ctypes
import random
import re

import numpy as np
import pytest
from host_build import BUILDS, host_library, needs_cxx, ptx_flag
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.constants import P_MOD
from kernels.cpu.convert import from_mont_fp, to_mont_fp
from kernels.cuda.source import CUDA_DIR

pytestmark = needs_cxx
R = 1 << 384
R_INV = pow(R, -1, P_MOD)
MASK48 = (1 << 48) - 1
# ff/dmul_host.cpp's fp_mul_pair codes
MONT, SCHOOL, KARATSUBA, DSQR, MSQR, HYBRID, DSQR_HYBRID = 0, 1, 2, 3, 4, 5, 6
SQUARES = {"sqr": DSQR, "sqr_hybrid": DSQR_HYBRID}
PRODUCTS = {"school": SCHOOL, "karatsuba": KARATSUBA, "hybrid": HYBRID}


@pytest.fixture(scope="module", params=BUILDS)
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return host_library(tmp_path_factory, "ff/dmul_host.cpp", "-O1", ptx_flag(request.param))


def _words(vals: list[int]) -> np.ndarray:
    """Values below 2^384 as rows of 6 uint64 (12 uint32) limbs, as stored (no conversion)."""
    return np.array([[(v >> (64 * i)) & (2**64 - 1) for i in range(6)] for v in vals], dtype=np.uint64)


def _ints(a: np.ndarray) -> list[int]:
    return [sum(int(w) << (64 * i) for i, w in enumerate(row)) for row in a]


def _mul(lib: ctypes.CDLL, which: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One of fp_mul_pair's products (``which``, a code above) over rows of a and b."""
    a, b = np.ascontiguousarray(a, dtype=np.uint64), np.ascontiguousarray(b, dtype=np.uint64)
    out = np.full_like(a, 0xDEADBEEFDEADBEEF)
    p = ctypes.c_void_p
    lib.fp_mul_pair(ctypes.c_int(which), p(a.ctypes.data), p(b.ctypes.data), p(out.ctypes.data), ctypes.c_int(len(a)))
    return out


def _edges() -> list[int]:
    """Field elements at the limb and split boundaries: 0, 1, p - 1, R mod p, values with 48-bit
    limbs all ones, powers of two, the largest below 2^380, p's own limbs' neighbours, and limb
    patterns whose products tie in the split's rounding."""
    vals = [0, 1, 2, P_MOD - 1, P_MOD - 2, (P_MOD - 1) // 2, R % P_MOD, R * R % P_MOD, (1 << 380) - 1, 1 << 380]
    vals += [(1 << (48 * k)) - 1 for k in range(1, 8)] + [1 << (48 * k) for k in range(8)]
    vals += [P_MOD - (1 << (48 * k)) for k in range(7)] + [P_MOD & ~MASK48, (P_MOD | MASK48) - (1 << 48)]
    # limbs 2^47 and 1, 2^47 and 2^48 - 1: limb products halfway between two multiples of 2^48,
    # where the split's round-to-nearest ties (to even)
    vals += [sum(1 << (48 * i + 47) for i in range(7)), sum(1 << (48 * i) for i in range(8)), 3 << 377]
    assert all(0 <= v < P_MOD for v in vals)
    return vals


def test_p_limbs_in_header_match_constants() -> None:
    """The header's 48-bit limbs of p, 2^48 - p_0 and -p^-1 mod 2^48 are those of P_MOD."""
    text = (CUDA_DIR / "ff" / "dmul.cuh").read_text()
    table = re.search(r"DMUL_P48\[8\] = \{([^}]*)\}", text).group(1)  # type: ignore[union-attr]
    limbs = [int(v, 16) for v in re.findall(r"\(double\)0x([0-9a-f]+)ull", table)]
    assert limbs == [(P_MOD >> (48 * i)) & MASK48 for i in range(8)]
    assert int(re.search(r"P0_C = 0x([0-9a-f]+)ull", text).group(1), 16) == (1 << 48) - (P_MOD & MASK48)  # type: ignore[union-attr]
    ninv = int(re.search(r"NINV48 = 0x([0-9a-f]+)ull", text).group(1), 16)  # type: ignore[union-attr]
    assert ninv == (-pow(P_MOD, -1, 1 << 48)) % (1 << 48)


@pytest.mark.parametrize("variant", list(PRODUCTS))
def test_dmul_matches_python_and_mont(lib: ctypes.CDLL, variant: str) -> None:
    rng = random.Random()
    edges = _edges()
    a = [x for x in edges for _ in edges] + [rng.randrange(P_MOD) for _ in range(3000)]
    b = [y for _ in edges for y in edges] + [rng.randrange(P_MOD) for _ in range(3000)]
    A, B = _words(a), _words(b)
    got = _mul(lib, PRODUCTS[variant], A, B)
    # as raw words: a b R^-1 mod p, canonical
    assert _ints(got) == [x * y * R_INV % P_MOD for x, y in zip(a, b)]
    # bit for bit the existing product
    assert np.array_equal(got, _mul(lib, MONT, A, B))
    # in Montgomery form: the field product
    ma, mb = to_mont_fp(a[-500:]), to_mont_fp(b[-500:])
    assert from_mont_fp(_mul(lib, PRODUCTS[variant], ma, mb)) == [x * y % P_MOD for x, y in zip(a[-500:], b[-500:])]


@pytest.mark.parametrize("variant", list(SQUARES))
def test_dsqr_matches_python_and_mont(lib: ctypes.CDLL, variant: str) -> None:
    a = _edges() + [random.randrange(P_MOD) for _ in range(3000)]
    A = _words(a)
    got = _mul(lib, SQUARES[variant], A, A)
    assert _ints(got) == [x * x * R_INV % P_MOD for x in a]
    assert np.array_equal(got, _mul(lib, MSQR, A, A))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, P_MOD - 1), st.integers(0, P_MOD - 1))
def test_dmul_property(x: int, y: int) -> None:
    lib = _LIBS[0]
    for which in PRODUCTS.values():
        assert _ints(_mul(lib, which, _words([x]), _words([y]))) == [x * y * R_INV % P_MOD]
    for which in SQUARES.values():
        assert _ints(_mul(lib, which, _words([x]), _words([x]))) == [x * x * R_INV % P_MOD]


_LIBS: list[ctypes.CDLL] = []


@pytest.fixture(scope="module", autouse=True)
def _first_lib(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The portable build for the hypothesis test (a fixture cannot parametrize @given)."""
    if not _LIBS:
        _LIBS.append(host_library(tmp_path_factory, "ff/dmul_host.cpp", "-O1", ptx_flag("portable")))


def test_wrong_operand_or_broken_split_is_caught(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The comparison can fail: a changed operand changes the product, and a build whose split
    constant C1 has the wrong binade (2^101: ulp 2^49, so the low part no longer fits its bias)
    gives wrong products."""
    rng = random.Random()
    a = [rng.randrange(1, P_MOD - 1) for _ in range(200)]
    b = [rng.randrange(1, P_MOD) for _ in range(200)]
    want = [x * y * R_INV % P_MOD for x, y in zip(a, b)]
    lib = _LIBS[0]
    for which in PRODUCTS.values():
        assert all(g != w for g, w in zip(_ints(_mul(lib, which, _words([x + 1 for x in a]), _words(b))), want))
    broken = host_library(tmp_path_factory, "ff/dmul_host.cpp", "-O1", "-DSEALTOP_DMUL_C1_LOG2=101")
    for which in PRODUCTS.values():
        got = _ints(_mul(broken, which, _words(a), _words(b)))
        assert sum(g != w for g, w in zip(got, want)) > 150
