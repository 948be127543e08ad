"""Fixed-base multiplication (kernels/cpu/fixed_base.py) against py_arkworks_bls12381.

Fresh random bases and scalars every run, with 0, 1, r - 1 and window-boundary scalars mixed
in, several table widths (including ones whose top window takes the final carry), the point at
infinity as a base, and a negative case.
"""

from __future__ import annotations

import random

import numpy as np
import py_arkworks_bls12381 as ark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import ark_g1, curve_table

from kernels.constants import R_MOD
from kernels.cpu import fixed_base
from kernels.cpu.convert import (
    g1_to_storage,
    to_mont_fr,
)
from kernels.cpu.fixed_base import fixed_base_g1, fixed_base_g2, table_bits
from kernels.cpu.msm import num_windows

CURVES = curve_table(fixed_base_g1, fixed_base_g2)


def _scalars(n: int, w: int) -> list[int]:
    half_every = sum((1 << (w - 1)) << (w * k) for k in range(num_windows(w))) % R_MOD
    special = [0, 1, 2, R_MOD - 1, (R_MOD + 1) // 2, 1 << (w - 1), half_every]
    out = [random.randrange(R_MOD) for _ in range(n)]
    for i in range(n):
        if random.random() < 0.3:
            out[i] = random.choice(special)
    return out


def _check(name: str, base_scalar: int, scalars: list[int], w: int | None) -> None:
    fb, gen, to_int, to_st, from_st = CURVES[name]
    B = gen() * ark.Scalar(base_scalar)
    out = fb(to_st([to_int(B)])[0], to_mont_fr(scalars), w=w)
    assert out.shape == (len(scalars), to_st([None]).shape[1])
    assert from_st(out) == [to_int(B * ark.Scalar(s)) for s in scalars]


@pytest.mark.parametrize("name", ["g1", "g2"])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.integers(min_value=1, max_value=R_MOD - 1),
    n=st.integers(min_value=1, max_value=30),
    w=st.sampled_from([None, 2, 3, 5, 8, 9]),
)
def test_fixed_base_matches_oracle(name, base, n, w):
    _check(name, base, _scalars(n, w or table_bits(n)), w)


def test_fixed_base_g1_many_and_wide_table():
    n = 3000
    base = random.randrange(1, R_MOD)
    _check("g1", base, _scalars(n, table_bits(n)), None)
    # a later, smaller call on the same base reuses the kept (wider) table
    assert table_bits(7) < table_bits(n)
    _check("g1", base, _scalars(7, table_bits(7)), None)
    row = g1_to_storage([ark_g1(ark.G1Point() * ark.Scalar(base))])[0].tobytes()
    assert {k[2] for k in fixed_base._tables if k[1] == row} == {table_bits(n)}
    _check("g1", random.randrange(1, R_MOD), _scalars(40, 16), 16)


def test_fixed_base_g2_wider_table():
    _check("g2", random.randrange(1, R_MOD), _scalars(200, 11), 11)


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_fixed_base_infinity_base_and_empty(name):
    fb, _, _, to_st, _ = CURVES[name]
    zero = to_st([None])[0]
    out = fb(zero, to_mont_fr([random.randrange(R_MOD) for _ in range(5)]))
    assert out.shape == (5, zero.shape[0]) and not out.any()
    assert fb(zero, np.zeros((0, 4), np.uint64)).shape == (0, zero.shape[0])


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_fixed_base_perturbed_scalar_differs(name):
    """Negative case: bumping a scalar by one moves its output by exactly the base."""
    fb, gen, to_int, to_st, from_st = CURVES[name]
    B = gen() * ark.Scalar(random.randrange(1, R_MOD))
    base = to_st([to_int(B)])[0]
    scalars = [random.randrange(R_MOD - 1) for _ in range(6)]
    a = fb(base, to_mont_fr(scalars))
    b = fb(base, to_mont_fr([s + 1 for s in scalars]))
    assert all(not np.array_equal(x, y) for x, y in zip(a, b))
    assert from_st(b) == [to_int(B * ark.Scalar(s) + B) for s in scalars]


def test_fixed_base_rejects_bad_shapes():
    with pytest.raises(ValueError):
        fixed_base_g1(np.zeros(24, np.uint64), np.zeros((2, 4), np.uint64))
    with pytest.raises(ValueError):
        fixed_base_g2(np.zeros(24, np.uint64), np.zeros((2, 3), np.uint64))
