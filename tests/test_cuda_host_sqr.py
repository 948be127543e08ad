"""Mont::sqr(), the dedicated Montgomery squaring of kernels/cuda/ff/mont.cuh, built for the host
(the portable arithmetic and ptx.cuh's model of the PTX path) and checked against Python integers:
stored limbs x must give x * x * R^-1 mod p, fully reduced, and bit for bit what the product x * x
gives. The inputs are limb patterns that stress the carries of the cross sum, its doubling and the
reduction (all-ones limbs, limbs with only the top bit, p - 1, ...), random values, and values
drawn by hypothesis; no GPU needed."""

from __future__ import annotations

import ctypes
import math
import random

import numpy as np
import pytest
from host_build import BUILDS, host_library, needs_cxx, ptx_flag
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.constants import P_MOD, R_MOD

pytestmark = needs_cxx
MUL, SQR = 2, 3  # host_selftest.cpp's op numbers
FIELDS = {"fr": (R_MOD, 8), "fp": (P_MOD, 12)}  # modulus, 32-bit limbs
ONES = (1 << 32) - 1


@pytest.fixture(scope="module", params=BUILDS)
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return host_library(tmp_path_factory, "ff/host_selftest.cpp", "-O1", ptx_flag(request.param))


def _rows(vals: list[int], limbs: int) -> np.ndarray:
    """Stored elements: little-endian uint64 words, the layout the kernels read."""
    return np.array([[(v >> (64 * k)) & (2**64 - 1) for k in range(limbs // 2)] for v in vals], dtype=np.uint64)


def _ints(arr: np.ndarray) -> list[int]:
    return [sum(int(w) << (64 * k) for k, w in enumerate(row)) for row in arr]


def _run(lib: ctypes.CDLL, field: str, op: int, a: list[int], b: list[int]) -> np.ndarray:
    limbs = FIELDS[field][1]
    x, y = _rows(a, limbs), _rows(b, limbs)
    out = np.full_like(x, 0xDEADBEEFDEADBEEF)
    p = ctypes.c_void_p
    getattr(lib, f"{field}_binop")(ctypes.c_int(op), p(x.ctypes.data), p(y.ctypes.data), p(out.ctypes.data), ctypes.c_int(len(a)))
    return out


def _wrong(field: str, vals: list[int], out: np.ndarray) -> list[int]:
    """Indices where `out` is not the stored Montgomery square x * x * R^-1 mod p of `vals`."""
    mod, limbs = FIELDS[field]
    r_inv = pow(2, -32 * limbs, mod)
    return [i for i, (x, got) in enumerate(zip(vals, _ints(out))) if got != x * x * r_inv % mod]


def _edge_values(mod: int, limbs: int) -> list[int]:
    """Stored limb patterns at the edges of the carries, all below p."""
    top = mod >> (32 * (limbs - 1))
    r = pow(2, 32 * limbs, mod)
    vals = {0, 1, 2, 3, mod - 1, mod - 2, (mod - 1) // 2, (mod + 1) // 2, r, mod - r, math.isqrt(mod), math.isqrt(mod) + 1}
    vals.add(((top - 1) << (32 * (limbs - 1))) | ((1 << (32 * (limbs - 1))) - 1))  # all-ones limbs below p's top
    vals.add(sum(0x80000000 << (32 * k) for k in range(limbs - 1)))  # top bit of every limb but the last
    vals.add(sum(ONES << (64 * k) for k in range(limbs // 2)) % mod)  # alternate all-ones limbs, both phases
    vals.add(sum(ONES << (64 * k + 32) for k in range(limbs // 2)) % mod)
    for k in range(limbs):
        vals.add(ONES << (32 * k))  # one all-ones limb
        vals.add((1 << (32 * k)) - 1)  # the low k limbs all ones
        vals.add(1 << (32 * k + 31))  # one limb's top bit
        vals.add(mod - (ONES << (32 * k)))
    return sorted(v for v in vals if 0 <= v < mod)


@pytest.mark.parametrize("field", ["fr", "fp"])
def test_sqr_matches_python_and_product(lib: ctypes.CDLL, field: str) -> None:
    mod, limbs = FIELDS[field]
    vals = _edge_values(mod, limbs) + [random.randrange(mod) for _ in range(400)]
    out = _run(lib, field, SQR, vals, vals)
    assert _wrong(field, vals, out) == []
    # canonical: the very limbs the product x * x stores
    assert np.array_equal(out, _run(lib, field, MUL, vals, vals))


limb_words = st.one_of(st.sampled_from([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, ONES]), st.integers(0, ONES))


@pytest.mark.parametrize("field", ["fr", "fp"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_sqr_hypothesis(lib: ctypes.CDLL, field: str, data: st.DataObject) -> None:
    mod, limbs = FIELDS[field]
    patterns = st.lists(limb_words, min_size=limbs, max_size=limbs).map(lambda w: sum(x << (32 * k) for k, x in enumerate(w)) % mod)
    vals = data.draw(st.lists(st.one_of(patterns, st.integers(0, mod - 1)), min_size=1, max_size=32))
    assert _wrong(field, vals, _run(lib, field, SQR, vals, vals)) == []


@pytest.mark.parametrize("field", ["fr", "fp"])
def test_sqr_check_is_not_vacuous(lib: ctypes.CDLL, field: str) -> None:
    """The check above flags wrong squares: a corrupted limb, the square of a neighbour, and a
    product of two different operands."""
    mod, limbs = FIELDS[field]
    vals = [random.randrange(1, mod - 1) for _ in range(50)]
    out = _run(lib, field, SQR, vals, vals)
    assert _wrong(field, vals, out) == []
    bad = out.copy()
    bad[7, limbs // 2 - 1] ^= np.uint64(1 << 40)
    assert _wrong(field, vals, bad) == [7]
    assert len(_wrong(field, vals, _run(lib, field, SQR, [v + 1 for v in vals], vals))) == len(vals)
    others = [(v * 5 + 3) % mod for v in vals]
    assert len(_wrong(field, vals, _run(lib, field, MUL, vals, others))) == len(vals)
