"""The signed-digit recoding (msm/digits.cuh: signed_digit, the one rule that the MSM's
histogram, scatter and per-window passes and the fixed-base table share), built for the host
and checked against Python integers: the digits sum back to the scalar, every magnitude fits a window's
2^(c-1) buckets, and the per-window path (window_digit) gives the same digits as the loop.
No GPU needed."""

from __future__ import annotations

import ctypes
import random

import numpy as np
import pytest
from host_build import host_library, needs_cxx

from kernels.constants import R_MOD
from kernels.cuda.source import assemble

pytestmark = needs_cxx
HARNESS = """
{header}
extern "C" void recode(const uint32_t* s, int c, int nwin, uint32_t* mag, uint32_t* neg,
                       uint32_t* magw, uint32_t* negw) {{
    uint32_t carry = 0;
    for (int w = 0; w < nwin; w++) {{
        mag[w] = signed_digit(scalar_bits(s, w * c, c), c, &carry, &neg[w]);
        magw[w] = window_digit(s, c, w, &negw[w]);
    }}
}}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return host_library(tmp_path_factory, "msm/digits.cuh", "-O1", text=HARNESS.format(header=assemble("msm/digits.cuh")))


def _recode(lib: ctypes.CDLL, scalar: int, c: int) -> tuple[list[int], list[int]]:
    nwin = -(-256 // c)
    s = np.frombuffer(scalar.to_bytes(32, "little"), dtype="<u4").copy()
    out = [np.zeros(nwin, np.uint32) for _ in range(4)]
    p = ctypes.c_void_p
    lib.recode(p(s.ctypes.data), ctypes.c_int(c), ctypes.c_int(nwin), *(p(a.ctypes.data) for a in out))
    mag, neg, magw, negw = out
    assert np.array_equal(mag, magw) and np.array_equal(neg, negw), "window_digit disagrees with the loop"
    return [int(x) for x in mag], [int(x) for x in neg]


@pytest.mark.parametrize("c", [1, 2, 5, 8, 13, 16, 20, 23])
def test_signed_digits_sum_back_to_the_scalar(lib: ctypes.CDLL, c: int) -> None:
    scalars = [0, 1, R_MOD - 1, (1 << 255) - 1, (1 << (c - 1)), (1 << c) - 1]
    scalars += [random.randrange(R_MOD) for _ in range(200)]
    for s in scalars:
        mag, neg = _recode(lib, s, c)
        assert all(m <= 1 << (c - 1) for m in mag)
        assert all(n in (0, 1) for n in neg)  # a raw digit of 2^c is 0 with a carry out
        assert sum((-m if n else m) << (c * w) for w, (m, n) in enumerate(zip(mag, neg))) == s


def test_a_wrong_rule_is_caught(lib: ctypes.CDLL) -> None:
    # the check above can fail: a digit stream with one carry dropped does not sum back
    s = (1 << 7) | (1 << 6)  # c = 4: window 1 holds 12 > 8, so it carries into window 2
    mag, neg = _recode(lib, s, 4)
    assert neg[1] == 1 and mag[2] == 1
    broken = sum((-m if n else m) << (4 * w) for w, (m, n) in enumerate(zip(mag, neg)) if w != 2)
    assert broken != s


@pytest.mark.parametrize("c", [2, 5, 13, 20, 22, 23])
def test_window_digit_at_the_carry_boundary(lib: ctypes.CDLL, c: int) -> None:
    # the lower windows' bits at M_w = sum_{i<w} 2^(ic + c - 1) (every lower digit exactly
    # 2^(c-1): no carry) and one above it (a carry that ripples through all of them), under
    # random upper bits: window_digit's comparison against the loop exactly where it flips
    nwin = -(-256 // c)
    for w in range(1, nwin):
        m_w = sum(1 << (i * c + c - 1) for i in range(w))
        for low in (m_w - 1, m_w, m_w + 1):
            upper = random.randrange(1 << 255) >> (w * c) << (w * c)
            _recode(lib, (upper | low) % (1 << 255), c)  # asserts window_digit == the loop
