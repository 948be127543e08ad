"""Fr, Fp and Fp2 arithmetic of the numba kernels against Python integers (and, for Fr, arkworks).

Each hypothesis example is a batch of operand pairs drawn from the whole field, with 0, 1 and
modulus - 1 mixed in; one small numba kernel per operation runs the batch through the tuple
arithmetic exactly as the other kernels use it (load, operate, store).
"""

from __future__ import annotations

import numpy as np
import py_arkworks_bls12381 as ark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit

from kernels.constants import P_MOD, R_MOD
from kernels.cpu import fr_vec
from kernels.cpu.convert import (
    from_mont_fp,
    from_mont_fr,
    g1_from_storage,
    g1_to_storage,
    g2_from_storage,
    g2_to_storage,
    ints_to_limbs,
    limbs_to_ints,
    to_mont_fp,
    to_mont_fr,
)
from kernels.cpu.fp import (
    fp_add,
    fp_eq,
    fp_from_mont,
    fp_inv,
    fp_is_zero,
    fp_load,
    fp_mul,
    fp_neg,
    fp_sqr,
    fp_store,
    fp_sub,
    fp_to_mont,
)
from kernels.cpu.fp2 import (
    fp2_add,
    fp2_inv,
    fp2_load,
    fp2_mul,
    fp2_neg,
    fp2_sqr,
    fp2_store,
    fp2_sub,
)
from kernels.cpu.fr import (
    fr_add,
    fr_eq,
    fr_from_mont,
    fr_inv,
    fr_is_zero,
    fr_load,
    fr_mul,
    fr_neg,
    fr_sqr,
    fr_store,
    fr_sub,
    fr_to_mont,
)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def elements(modulus: int) -> st.SearchStrategy[int]:
    """Uniform field elements, with the edge values 0, 1, 2 and modulus - 1 drawn often."""
    return st.one_of(st.sampled_from([0, 1, 2, modulus - 1]), st.integers(0, modulus - 1))


def batches(modulus: int) -> st.SearchStrategy[list[tuple[int, int]]]:
    e = elements(modulus)
    return st.lists(st.tuples(e, e), min_size=1, max_size=24)


# --- numba drivers: one row of a and b in, one row per result column out -------------------


@njit(cache=True)
def _fr_all(a, b, out):
    """Columns: add, sub, mul, sqr(a), neg(a), inv(a), eq(a, b), is_zero(a)."""
    for i in range(a.shape[0]):
        x = fr_load(a, i)
        y = fr_load(b, i)
        fr_store(out, i, fr_add(x, y), 0)
        fr_store(out, i, fr_sub(x, y), 4)
        fr_store(out, i, fr_mul(x, y), 8)
        fr_store(out, i, fr_sqr(x), 12)
        fr_store(out, i, fr_neg(x), 16)
        fr_store(out, i, fr_inv(x), 20)
        out[i, 24] = np.uint64(1) if fr_eq(x, y) else np.uint64(0)
        out[i, 25] = np.uint64(1) if fr_is_zero(x) else np.uint64(0)


@njit(cache=True)
def _fp_all(a, b, out):
    """Columns: add, sub, mul, sqr(a), neg(a), inv(a), eq(a, b), is_zero(a)."""
    for i in range(a.shape[0]):
        x = fp_load(a, i)
        y = fp_load(b, i)
        fp_store(out, i, fp_add(x, y), 0)
        fp_store(out, i, fp_sub(x, y), 6)
        fp_store(out, i, fp_mul(x, y), 12)
        fp_store(out, i, fp_sqr(x), 18)
        fp_store(out, i, fp_neg(x), 24)
        fp_store(out, i, fp_inv(x), 30)
        out[i, 36] = np.uint64(1) if fp_eq(x, y) else np.uint64(0)
        out[i, 37] = np.uint64(1) if fp_is_zero(x) else np.uint64(0)


@njit(cache=True)
def _fp2_all(a, b, out):
    """Rows hold c0 then c1 (12 limbs). Columns: add, sub, mul, sqr(a), neg(a), inv(a)."""
    for i in range(a.shape[0]):
        x = fp2_load(a, i)
        y = fp2_load(b, i)
        fp2_store(out, i, fp2_add(x, y), 0)
        fp2_store(out, i, fp2_sub(x, y), 12)
        fp2_store(out, i, fp2_mul(x, y), 24)
        fp2_store(out, i, fp2_sqr(x), 36)
        fp2_store(out, i, fp2_neg(x), 48)
        fp2_store(out, i, fp2_inv(x), 60)


@njit(cache=True)
def _raw_to_from_mont(raw_fr, raw_fp, out_fr, out_fp, back_fr, back_fp):
    """fr/fp_to_mont on raw limbs, and fr/fp_from_mont of that back to raw limbs."""
    for i in range(raw_fr.shape[0]):
        m = fr_to_mont(fr_load(raw_fr, i))
        fr_store(out_fr, i, m)
        fr_store(back_fr, i, fr_from_mont(m))
        q = fp_to_mont(fp_load(raw_fp, i))
        fp_store(out_fp, i, q)
        fp_store(back_fp, i, fp_from_mont(q))


def _column(out: np.ndarray, k: int, limbs: int, from_mont) -> list[int]:
    return from_mont(np.ascontiguousarray(out[:, k * limbs : (k + 1) * limbs]))


# --- Fr ----------------------------------------------------------------------------------


@SETTINGS
@given(batches(R_MOD))
def test_fr_ops_match_python_ints(pairs: list[tuple[int, int]]) -> None:
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    out = np.zeros((len(xs), 26), np.uint64)
    _fr_all(to_mont_fr(xs), to_mont_fr(ys), out)
    r = R_MOD
    assert _column(out, 0, 4, from_mont_fr) == [(x + y) % r for x, y in pairs]
    assert _column(out, 1, 4, from_mont_fr) == [(x - y) % r for x, y in pairs]
    assert _column(out, 2, 4, from_mont_fr) == [x * y % r for x, y in pairs]
    assert _column(out, 3, 4, from_mont_fr) == [x * x % r for x in xs]
    assert _column(out, 4, 4, from_mont_fr) == [-x % r for x in xs]
    assert _column(out, 5, 4, from_mont_fr) == [pow(x, -1, r) if x else 0 for x in xs]
    assert list(out[:, 24]) == [int(x == y) for x, y in pairs]
    assert list(out[:, 25]) == [int(x == 0) for x in xs]
    # stored values are canonical (fully reduced) Montgomery residues
    for k in range(6):
        assert all(v < r for v in limbs_to_ints(np.ascontiguousarray(out[:, 4 * k : 4 * k + 4])))


def _ark_int(s: ark.Scalar) -> int:
    return int.from_bytes(bytes(s.to_le_bytes()), "little")


@SETTINGS
@given(batches(R_MOD))
def test_fr_ops_match_arkworks(pairs: list[tuple[int, int]]) -> None:
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    out = np.zeros((len(xs), 26), np.uint64)
    _fr_all(to_mont_fr(xs), to_mont_fr(ys), out)
    ax = [ark.Scalar(x) for x in xs]
    ay = [ark.Scalar(y) for y in ys]
    assert _column(out, 0, 4, from_mont_fr) == [_ark_int(x + y) for x, y in zip(ax, ay)]
    assert _column(out, 1, 4, from_mont_fr) == [_ark_int(x - y) for x, y in zip(ax, ay)]
    assert _column(out, 2, 4, from_mont_fr) == [_ark_int(x * y) for x, y in zip(ax, ay)]
    assert _column(out, 3, 4, from_mont_fr) == [_ark_int(x.square()) for x in ax]
    assert _column(out, 4, 4, from_mont_fr) == [_ark_int(-x) for x in ax]
    assert _column(out, 5, 4, from_mont_fr) == [0 if x.is_zero() else _ark_int(x.inverse()) for x in ax]


@SETTINGS
@given(st.lists(elements(R_MOD), min_size=1, max_size=40))
def test_fr_vec_ops_and_batch_inverse(xs: list[int]) -> None:
    ys = list(reversed(xs))
    a, b = to_mont_fr(xs), to_mont_fr(ys)
    r = R_MOD
    assert from_mont_fr(fr_vec.add(a, b)) == [(x + y) % r for x, y in zip(xs, ys)]
    assert from_mont_fr(fr_vec.sub(a, b)) == [(x - y) % r for x, y in zip(xs, ys)]
    assert from_mont_fr(fr_vec.mul(a, b)) == [x * y % r for x, y in zip(xs, ys)]
    assert from_mont_fr(fr_vec.sqr(a)) == [x * x % r for x in xs]
    # zeros invert to zero, and do not disturb the inverses around them
    assert from_mont_fr(fr_vec.batch_inv(a)) == [pow(x, -1, r) if x else 0 for x in xs]


def test_fr_vec_parallel_sizes_match_python_ints() -> None:
    """A size large enough for the prange loops to split across threads."""
    rng = np.random.default_rng()
    xs = [int.from_bytes(rng.bytes(32), "little") % R_MOD for _ in range(5000)]
    xs[17] = 0
    ys = [int.from_bytes(rng.bytes(32), "little") % R_MOD for _ in range(5000)]
    a, b = to_mont_fr(xs), to_mont_fr(ys)
    assert from_mont_fr(fr_vec.mul(a, b)) == [x * y % R_MOD for x, y in zip(xs, ys)]
    assert from_mont_fr(fr_vec.batch_inv(a)) == [pow(x, -1, R_MOD) if x else 0 for x in xs]


# --- Fp and Fp2 --------------------------------------------------------------------------


@SETTINGS
@given(batches(P_MOD))
def test_fp_ops_match_python_ints(pairs: list[tuple[int, int]]) -> None:
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    out = np.zeros((len(xs), 38), np.uint64)
    _fp_all(to_mont_fp(xs), to_mont_fp(ys), out)
    p = P_MOD
    assert _column(out, 0, 6, from_mont_fp) == [(x + y) % p for x, y in pairs]
    assert _column(out, 1, 6, from_mont_fp) == [(x - y) % p for x, y in pairs]
    assert _column(out, 2, 6, from_mont_fp) == [x * y % p for x, y in pairs]
    assert _column(out, 3, 6, from_mont_fp) == [x * x % p for x in xs]
    assert _column(out, 4, 6, from_mont_fp) == [-x % p for x in xs]
    assert _column(out, 5, 6, from_mont_fp) == [pow(x, -1, p) if x else 0 for x in xs]
    assert list(out[:, 36]) == [int(x == y) for x, y in pairs]
    assert list(out[:, 37]) == [int(x == 0) for x in xs]
    for k in range(6):
        assert all(v < p for v in limbs_to_ints(np.ascontiguousarray(out[:, 6 * k : 6 * k + 6])))


def _fp2_int_mul(x: tuple[int, int], y: tuple[int, int]) -> tuple[int, int]:
    """(x0 + x1 u)(y0 + y1 u) with u^2 = -1, schoolbook, over Python ints."""
    p = P_MOD
    return ((x[0] * y[0] - x[1] * y[1]) % p, (x[0] * y[1] + x[1] * y[0]) % p)


def _fp2_int_inv(x: tuple[int, int]) -> tuple[int, int]:
    p = P_MOD
    norm = (x[0] * x[0] + x[1] * x[1]) % p
    if norm == 0:
        return (0, 0)
    n = pow(norm, -1, p)
    return (x[0] * n % p, -x[1] * n % p)


@SETTINGS
@given(st.lists(st.tuples(elements(P_MOD), elements(P_MOD), elements(P_MOD), elements(P_MOD)), min_size=1, max_size=16))
def test_fp2_ops_match_python_ints(quads: list[tuple[int, int, int, int]]) -> None:
    xs = [(q[0], q[1]) for q in quads]
    ys = [(q[2], q[3]) for q in quads]
    a = to_mont_fp([c for x in xs for c in x]).reshape(len(xs), 12)
    b = to_mont_fp([c for y in ys for c in y]).reshape(len(ys), 12)
    out = np.zeros((len(xs), 72), np.uint64)
    _fp2_all(a, b, out)
    p = P_MOD

    def col(k: int) -> list[tuple[int, int]]:
        flat = from_mont_fp(np.ascontiguousarray(out[:, 12 * k : 12 * k + 12]).reshape(-1, 6))
        return list(zip(flat[0::2], flat[1::2]))

    assert col(0) == [((x[0] + y[0]) % p, (x[1] + y[1]) % p) for x, y in zip(xs, ys)]
    assert col(1) == [((x[0] - y[0]) % p, (x[1] - y[1]) % p) for x, y in zip(xs, ys)]
    assert col(2) == [_fp2_int_mul(x, y) for x, y in zip(xs, ys)]
    assert col(3) == [_fp2_int_mul(x, x) for x in xs]
    assert col(4) == [(-x[0] % p, -x[1] % p) for x in xs]
    assert col(5) == [_fp2_int_inv(x) for x in xs]
    for x, inv in zip(xs, col(5)):
        if x != (0, 0):
            assert _fp2_int_mul(x, inv) == (1, 0)


# --- conversions -------------------------------------------------------------------------


@SETTINGS
@given(st.lists(st.tuples(elements(R_MOD), elements(P_MOD)), min_size=1, max_size=24))
def test_conversions_round_trip_and_agree_with_numba(pairs: list[tuple[int, int]]) -> None:
    frs = [p[0] for p in pairs]
    fps = [p[1] for p in pairs]
    assert from_mont_fr(to_mont_fr(frs)) == frs
    assert from_mont_fp(to_mont_fp(fps)) == fps
    assert limbs_to_ints(ints_to_limbs(fps, 6)) == fps
    # the numba conversions agree with the Python ones, both ways
    raw_fr, raw_fp = ints_to_limbs(frs, 4), ints_to_limbs(fps, 6)
    out_fr, back_fr = np.zeros_like(raw_fr), np.zeros_like(raw_fr)
    out_fp, back_fp = np.zeros_like(raw_fp), np.zeros_like(raw_fp)
    _raw_to_from_mont(raw_fr, raw_fp, out_fr, out_fp, back_fr, back_fp)
    assert np.array_equal(out_fr, to_mont_fr(frs))
    assert np.array_equal(out_fp, to_mont_fp(fps))
    assert limbs_to_ints(back_fr) == frs
    assert limbs_to_ints(back_fp) == fps


@SETTINGS
@given(st.lists(st.one_of(st.none(), st.tuples(elements(P_MOD), elements(P_MOD))), min_size=1, max_size=8))
def test_point_storage_round_trips(pts: list[tuple[int, int] | None]) -> None:
    pts = [None if p == (0, 0) else p for p in pts]  # (0, 0) is how storage spells infinity
    arr = g1_to_storage(pts)
    assert arr.shape == (len(pts), 12) and arr.dtype == np.uint64
    assert g1_from_storage(arr) == pts
    g2 = [None if p is None else ((p[0], p[1]), (p[1], p[0])) for p in pts]
    arr2 = g2_to_storage(g2)
    assert arr2.shape == (len(pts), 24)
    assert g2_from_storage(arr2) == g2
    # infinity is all zero bytes
    for p, row in zip(pts, arr):
        assert (not row.any()) == (p is None)


def test_conversions_reduce_out_of_range_ints() -> None:
    assert from_mont_fr(to_mont_fr([R_MOD, R_MOD + 5, -1])) == [0, 5, R_MOD - 1]
    assert from_mont_fp(to_mont_fp([P_MOD + 3])) == [3]


# --- negative cases ----------------------------------------------------------------------


def test_fr_vec_rejects_wrong_shapes_and_types() -> None:
    a = to_mont_fr([1, 2, 3])
    with pytest.raises(ValueError):
        fr_vec.add(a, to_mont_fr([1, 2]))  # lengths differ
    with pytest.raises(ValueError):
        fr_vec.mul(a, a.astype(np.int64))  # wrong dtype
    with pytest.raises(ValueError):
        fr_vec.batch_inv(to_mont_fp([1, 2, 3]))  # an Fp vector is not an Fr vector


def test_corrupted_limb_changes_the_product() -> None:
    """A single flipped bit in an operand must show in the result (the oracle comparison bites)."""
    rng = np.random.default_rng()
    xs = [int.from_bytes(rng.bytes(32), "little") % R_MOD for _ in range(8)]
    ys = [int.from_bytes(rng.bytes(32), "little") % R_MOD or 1 for _ in range(8)]
    a, b = to_mont_fr(xs), to_mont_fr(ys)
    a[3, 0] ^= np.uint64(1 << int(rng.integers(0, 64)))
    got = from_mont_fr(fr_vec.mul(a, b))
    want = [x * y % R_MOD for x, y in zip(xs, ys)]
    assert got[3] != want[3]
    assert got[:3] + got[4:] == want[:3] + want[4:]


@SETTINGS
@given(st.lists(st.tuples(elements(R_MOD), elements(R_MOD)), min_size=1, max_size=24))
def test_cpu_backend_field_methods(pairs: list[tuple[int, int]]) -> None:
    """The Backend interface's Fr methods on the cpu backend, against Python ints."""
    from kernels.backend import get_backend

    be = get_backend("cpu")
    assert be.name == "cpu"
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    a, b = to_mont_fr(xs), to_mont_fr(ys)
    r = R_MOD
    assert from_mont_fr(be.fr_add(a, b)) == [(x + y) % r for x, y in pairs]
    assert from_mont_fr(be.fr_sub(a, b)) == [(x - y) % r for x, y in pairs]
    assert from_mont_fr(be.fr_mul(a, b)) == [x * y % r for x, y in pairs]
    assert from_mont_fr(be.fr_sqr(a)) == [x * x % r for x in xs]
    assert from_mont_fr(be.fr_batch_inv(a)) == [pow(x, -1, r) if x else 0 for x in xs]
    assert be.resident(a) is a
