"""Pippenger MSM (kernels/cpu/msm.py) against the sum of py_arkworks_bls12381 scalar products.

Inputs are fresh random points and scalars every run, with the awkward cases mixed in: zero
scalars, the scalar 1, r - 1, scalars whose signed digits sit on the window boundary
(±2^(c-1), long carry chains), repeated points, a point and its negation, and the point at
infinity. Sizes run from 1 to 2^12, with explicit window widths as well as the automatic one.
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
from kernels.cpu.convert import (
    g1_to_storage,
    to_mont_fr,
)
from kernels.cpu.msm import msm_g1, msm_g2, num_windows, signed_digits, window_bits

CURVES = curve_table(msm_g1, msm_g2)


def _special_scalars(c: int) -> list[int]:
    """Scalars whose signed c-bit recoding hits the edge cases."""
    nwin = num_windows(c)
    half_every = sum((1 << (c - 1)) << (c * k) for k in range(nwin)) % R_MOD
    return [0, 1, 2, R_MOD - 1, R_MOD - 2, (R_MOD - 1) // 2, 1 << (c - 1), (1 << c) - 1, half_every, 2**254]


def _inputs(gen, n: int, c: int, n_distinct: int | None = None):
    """n points (some repeated, some negated, some infinity) and n scalars (some special)."""
    n_distinct = n_distinct or max(1, n)
    step = gen() * ark.Scalar(random.randrange(1, R_MOD))
    acc = gen() * ark.Scalar(random.randrange(1, R_MOD))
    distinct = []
    for _ in range(n_distinct):
        distinct.append(acc)
        acc = acc + step
    pts = [random.choice(distinct) for _ in range(n)]
    special = _special_scalars(c)
    scalars = [random.randrange(R_MOD) for _ in range(n)]
    for i in range(n):
        roll = random.random()
        if roll < 0.15:
            scalars[i] = random.choice(special)
        elif roll < 0.2:
            pts[i] = gen.identity()
        elif roll < 0.25 and i > 0:
            pts[i] = gen.identity() - pts[i - 1]
    return pts, scalars


def _check(
    name: str, pts, scalars, c: int | None = None, chunks: int | None = None, batch: int | None = None
) -> None:
    msm, gen, to_int, to_st, from_st = CURVES[name]
    want = gen.identity()
    for p, s in zip(pts, scalars):
        want = want + p * ark.Scalar(s)
    got = msm(to_st([to_int(p) for p in pts]), to_mont_fr(scalars), c=c, chunks=chunks, batch=batch)
    assert got.shape == (to_st([None]).shape[1],)
    assert from_st(got)[0] == to_int(want)


@pytest.mark.parametrize("c", [2, 3, 5, 8, 11, 16])
def test_signed_digits_reconstruct_scalar(c):
    scalars = _special_scalars(c) + [random.randrange(R_MOD) for _ in range(50)]
    digits = signed_digits(to_mont_fr(scalars), c)
    assert digits.shape == (len(scalars), num_windows(c))
    assert np.abs(digits).max() <= 1 << (c - 1)
    for s, row in zip(scalars, digits):
        assert sum(int(d) << (c * k) for k, d in enumerate(row)) == s


@pytest.mark.parametrize("name", ["g1", "g2"])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(min_value=1, max_value=40),
    c=st.sampled_from([None, 2, 3, 4, 7, 10]),
    batch=st.sampled_from([None, 0, 1, 2, 5]),
)
def test_msm_small_random(name, n, c, batch):
    """Both bucket kinds: XYZZ (batch 0) and batched affine, with batches small enough that
    points wait for a queued bucket and spill on the second collision."""
    pts, scalars = _inputs(CURVES[name][1], n, c or window_bits(n), n_distinct=max(1, n // 3))
    _check(name, pts, scalars, c, batch=batch)


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_msm_edge_inputs(name):
    gen = CURVES[name][1]
    P = gen() * ark.Scalar(random.randrange(1, R_MOD))
    Q = gen() * ark.Scalar(random.randrange(1, R_MOD))
    O = gen.identity()
    cases = [
        ([P], [0]),
        ([P], [1]),
        ([P], [R_MOD - 1]),
        ([O], [random.randrange(R_MOD)]),
        ([O, O], [5, 7]),
        ([P, P], [3, R_MOD - 3]),  # cancels to infinity
        ([P, gen.identity() - P], [9, 9]),  # cancels to infinity
        ([P, P, P, Q], [1, 1, 1, 0]),
        ([P] * 8, [random.randrange(R_MOD) for _ in range(8)]),
    ]
    for pts, scalars in cases:
        _check(name, pts, scalars)
        _check(name, pts, scalars, c=4, chunks=2, batch=0)
        _check(name, pts, scalars, c=3, batch=2)


def test_msm_g1_large():
    for n in (1000, 1 << 12):
        pts, scalars = _inputs(ark.G1Point, n, window_bits(n), n_distinct=n - 7)
        _check("g1", pts, scalars)
    _check("g1", pts, scalars, c=11, batch=512)
    # many repeats of few points: affine batches full of collisions and equal-x pairs
    pts, scalars = _inputs(ark.G1Point, 2000, 9, n_distinct=5)
    _check("g1", pts, scalars, c=9, batch=64)
    # the bucket phase with several chunks per window (as on many-core hosts) gives the same sum
    pts, scalars = _inputs(ark.G1Point, 600, 8)
    _check("g1", pts, scalars, c=8, chunks=5)
    _check("g1", pts, scalars, c=16, chunks=2)


def test_msm_g2_medium():
    pts, scalars = _inputs(ark.G2Point, 600, window_bits(600), n_distinct=590)
    _check("g2", pts, scalars)
    _check("g2", pts, scalars, c=9, batch=16)
    _check("g2", pts, scalars, c=11, batch=512)


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_msm_perturbed_scalar_differs(name):
    """Negative case: changing one scalar by one changes the result by exactly that point."""
    msm, gen, to_int, to_st, from_st = CURVES[name]
    pts, scalars = _inputs(gen, 20, 5)
    pts = [gen() * ark.Scalar(random.randrange(1, R_MOD)) for _ in pts]
    rows = to_st([to_int(p) for p in pts])
    base = msm(rows, to_mont_fr(scalars))
    bumped = list(scalars)
    k = random.randrange(len(bumped))
    bumped[k] = (bumped[k] + 1) % R_MOD
    other = msm(rows, to_mont_fr(bumped))
    assert not np.array_equal(base, other)
    want = gen.identity()
    for p, s in zip(pts, scalars):
        want = want + p * ark.Scalar(s)
    assert from_st(other)[0] == to_int(want + pts[k])


def test_msm_rejects_bad_shapes():
    rows = np.zeros((3, 12), np.uint64)
    with pytest.raises(ValueError):
        msm_g1(rows, np.zeros((2, 4), np.uint64))
    with pytest.raises(ValueError):
        msm_g1(np.zeros((3, 24), np.uint64), np.zeros((3, 4), np.uint64))
    with pytest.raises(ValueError):
        msm_g2(rows, np.zeros((3, 4), np.uint64))
    assert not msm_g1(np.zeros((0, 12), np.uint64), np.zeros((0, 4), np.uint64)).any()


def test_msm_reads_memory_mapped_points(tmp_path):
    """Proving keys are memory-mapped read-only; the MSM takes such sections as they are."""
    pts, scalars = _inputs(ark.G1Point, 50, 6)
    rows = g1_to_storage([ark_g1(p) for p in pts])
    path = tmp_path / "points.bin"
    rows.tofile(path)
    mapped = np.memmap(path, dtype=np.uint64, mode="r", shape=rows.shape)
    assert not mapped.flags.writeable
    assert np.array_equal(msm_g1(mapped, to_mont_fr(scalars)), msm_g1(rows, to_mont_fr(scalars)))
