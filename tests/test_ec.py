"""G1 and G2 point arithmetic of the generated numba kernels against py_arkworks_bls12381.

Each example draws fresh random points (random multiples of the generator from the oracle) and
runs them through one small numba kernel per curve that exercises the XYZZ formulas exactly as
the MSM does: points are lifted from affine rows, given random non-trivial ZZ/ZZZ by rescaling
(so the general formulas, not just the Z = 1 shortcuts, are checked), operated on, and brought
back to affine both one by one and through the batch normalization.
"""

from __future__ import annotations

import random

import numpy as np
import py_arkworks_bls12381 as ark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit
from oracle import ark_g1, ark_g2

from kernels.constants import P_MOD, R_MOD
from kernels.cpu import ec_codegen, g1, g2
from kernels.cpu.convert import (
    g1_from_storage,
    g1_to_storage,
    g2_from_storage,
    g2_to_storage,
    ints_to_limbs,
    to_mont_fp,
)

OPS = ("add", "add_self", "add_neg", "madd", "madd_self", "madd_neg", "dbl", "neg")


CURVES = {
    "g1": (g1, ark.G1Point, ark_g1, g1_to_storage, g1_from_storage),
    "g2": (g2, ark.G2Point, ark_g2, g2_to_storage, g2_from_storage),
}


def _make_kernel(mod, name: str):
    """One numba kernel per curve: every point operation on rows a, b with rescalings lam, mu."""
    load = getattr(mod, f"{name}_load_affine")
    store = getattr(mod, f"{name}_store_affine")
    from_affine = getattr(mod, f"{name}_from_affine")
    add = getattr(mod, f"{name}_add")
    add_affine = getattr(mod, f"{name}_add_affine")
    dbl = getattr(mod, f"{name}_dbl")
    neg = getattr(mod, f"{name}_neg")
    to_affine = getattr(mod, f"{name}_to_affine")
    store_xyzz = getattr(mod, f"{name}_store_xyzz")
    on_curve = getattr(mod, f"{name}_on_curve_affine")
    eq = getattr(mod, f"{name}_eq")
    is_inf = getattr(mod, f"{name}_is_inf")
    if name == "g1":
        from kernels.cpu.fp import fp_load as fload
        from kernels.cpu.fp import fp_mul as fmul
        from kernels.cpu.fp import fp_sqr as fsqr
    else:
        from kernels.cpu.fp2 import fp2_load as fload
        from kernels.cpu.fp2 import fp2_mul as fmul
        from kernels.cpu.fp2 import fp2_sqr as fsqr

    @njit
    def rescale(p, lam):
        # (X·λ², Y·λ³, ZZ·λ², ZZZ·λ³) is the same point for any λ ≠ 0.
        l2 = fsqr(lam)
        l3 = fmul(l2, lam)
        return (fmul(p[0], l2), fmul(p[1], l3), fmul(p[2], l2), fmul(p[3], l3))

    @njit
    def kernel(a, b, lam, mu, out, xyzz, curve_ok, eq_ok):
        for i in range(a.shape[0]):
            ax, ay = load(a, i)
            bx, by = load(b, i)
            pa = rescale(from_affine(ax, ay), fload(lam, i, 0))
            pb = rescale(from_affine(bx, by), fload(mu, i, 0))
            res = (
                add(pa, pb),
                add(pa, rescale(pa, fload(mu, i, 0))),
                add(pa, neg(pb)),
                add_affine(pa, bx, by),
                add_affine(pa, ax, ay),
                add_affine(neg(pa), ax, ay),
                dbl(pa),
                neg(pa),
            )
            for k in range(len(res)):
                x, y = to_affine(res[k])
                store(out[k], i, x, y)
                store_xyzz(xyzz[k], i, res[k])
                curve_ok[k, i] = on_curve(x, y)
            # add and mixed add agree as projective points; a point equals its rescaling;
            # a point differs from its negation unless it is infinity
            eq_ok[0, i] = eq(res[0], res[3]) and eq(pa, from_affine(ax, ay))
            eq_ok[1, i] = (not eq(res[7], pa)) or is_inf(pa)

    return kernel


_KERNELS: dict[str, object] = {}


def _kernel(name: str):
    if name not in _KERNELS:
        _KERNELS[name] = _make_kernel(CURVES[name][0], name)
    return _KERNELS[name]


def _random_nonzero_field(n: int, coords: int) -> np.ndarray:
    vals = [random.randrange(1, P_MOD) for _ in range(n * coords)]
    return to_mont_fp(vals).reshape(n, 6 * coords)


def _run(name: str, pa: list, pb: list):
    mod, _, to_int, to_st, from_st = CURVES[name]
    n = len(pa)
    a = to_st([to_int(p) for p in pa])
    b = to_st([to_int(p) for p in pb])
    coords = mod.COORD // 6
    lam = _random_nonzero_field(n, coords)
    mu = _random_nonzero_field(n, coords)
    out = np.zeros((len(OPS), n, mod.AFFINE_WIDTH), np.uint64)
    xyzz = np.zeros((len(OPS), n, mod.XYZZ_WIDTH), np.uint64)
    curve_ok = np.zeros((len(OPS), n), np.bool_)
    eq_ok = np.zeros((2, n), np.bool_)
    _kernel(name)(a, b, lam, mu, out, xyzz, curve_ok, eq_ok)
    batch = np.zeros((len(OPS), n, mod.AFFINE_WIDTH), np.uint64)
    to_affine = getattr(mod, f"{name}_batch_to_affine")
    for k in range(len(OPS)):
        to_affine(xyzz[k], batch[k])
    return out, batch, curve_ok, eq_ok


def _expected(pa, pb):
    return {
        "add": [p + q for p, q in zip(pa, pb)],
        "add_self": [p + p for p in pa],
        "add_neg": [p - q for p, q in zip(pa, pb)],
        "madd": [p + q for p, q in zip(pa, pb)],
        "madd_self": [p + p for p in pa],
        "madd_neg": [p - p for p in pa],
        "dbl": [p + p for p in pa],
        "neg": [p - p - p for p in pa],
    }


def _check(name: str, pa: list, pb: list) -> None:
    _, _, to_int, _, from_st = CURVES[name]
    out, batch, curve_ok, eq_ok = _run(name, pa, pb)
    exp = _expected(pa, pb)
    for k, op in enumerate(OPS):
        want = [to_int(p) for p in exp[op]]
        assert from_st(out[k]) == want, f"{name} {op}"
        assert from_st(batch[k]) == want, f"{name} {op} (batch normalization)"
        assert curve_ok[k].all(), f"{name} {op} result off the curve"
    assert eq_ok.all()


def _points(gen, scalars):
    return [gen() * ark.Scalar(s) for s in scalars]


scalar = st.integers(min_value=0, max_value=R_MOD - 1)
settings_ec = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", ["g1", "g2"])
@settings_ec
@given(st.lists(st.tuples(scalar, scalar), min_size=1, max_size=6))
def test_point_ops_match_oracle(name, pairs):
    gen = CURVES[name][1]
    pa = _points(gen, [s for s, _ in pairs])
    pb = _points(gen, [t for _, t in pairs])
    _check(name, pa, pb)


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_infinity_and_equal_points(name):
    """P + O, O + P, O + O, P + P, P + (-P), doubling O, with P random (fresh every run)."""
    gen = CURVES[name][1]
    s = random.randrange(1, R_MOD)
    P = gen() * ark.Scalar(s)
    O = gen.identity()
    pa = [P, O, O, P, P, P, gen() * ark.Scalar(R_MOD - s)]
    pb = [O, P, O, P, gen() * ark.Scalar(R_MOD - s), P, P]
    _check(name, pa, pb)


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_on_curve_rejects_perturbed_point(name):
    """Negative case: a point with y + 1 is off the curve, and its arithmetic differs."""
    mod, gen, to_int, to_st, _ = CURVES[name]
    P = gen() * ark.Scalar(random.randrange(1, R_MOD))
    row = to_st([to_int(P)])
    on_curve = getattr(mod, f"{name}_on_curve_affine")
    load = getattr(mod, f"{name}_load_affine")

    @njit
    def check(rows):
        x, y = load(rows, 0)
        return on_curve(x, y)

    assert check(row)
    bad = row.copy()
    y_off = mod.COORD
    y0 = int(to_int(P)[1] if name == "g1" else to_int(P)[1][0])
    bad[0, y_off : y_off + 6] = to_mont_fp([(y0 + 1) % P_MOD])[0]
    assert not check(bad)
    # the zero row (infinity) counts as on the curve; a zero x with nonzero y does not
    zero = np.zeros_like(row)
    assert check(zero)
    zero[0, y_off] = 1
    assert not check(zero)


def test_generated_curve_modules_are_current():
    from pathlib import Path

    here = Path(ec_codegen.__file__).resolve().parent
    for fname, src in ec_codegen.generated().items():
        assert (here / fname).read_text() == src, f"{fname} is stale: run python -m kernels.cpu.ec_codegen"


def test_batch_to_affine_many_points_with_gaps():
    """Batch normalization over several chunks, with infinities scattered in."""
    n = 1300  # more than two normalization chunks
    base = ark.G1Point() * ark.Scalar(random.randrange(1, R_MOD))
    pts, acc = [], ark.G1Point.identity()
    for i in range(n):
        acc = acc + base
        pts.append(acc if i % 97 else ark.G1Point.identity())
    rows = g1_to_storage([ark_g1(p) for p in pts])
    lam = _random_nonzero_field(n, 1)

    @njit
    def lift(rows, lam, out):
        for i in range(rows.shape[0]):
            x, y = g1.g1_load_affine(rows, i)
            p = g1.g1_from_affine(x, y)
            s = g1.fp_load(lam, i, 0)
            l2 = g1.fp_sqr(s)
            l3 = g1.fp_mul(l2, s)
            q = (g1.fp_mul(p[0], l2), g1.fp_mul(p[1], l3), g1.fp_mul(p[2], l2), g1.fp_mul(p[3], l3))
            g1.g1_store_xyzz(out, i, q)

    xyzz = np.zeros((n, g1.XYZZ_WIDTH), np.uint64)
    lift(rows, lam, xyzz)
    back = np.zeros_like(rows)
    g1.g1_batch_to_affine(xyzz, back)
    assert np.array_equal(back, rows)
    assert g1_from_storage(back)[0] is None


def test_mul_raw_matches_oracle():
    for name in ("g1", "g2"):
        mod, gen, to_int, to_st, from_st = CURVES[name]
        k = random.randrange(R_MOD)
        row = to_st([to_int(gen())])
        load = getattr(mod, f"{name}_load_affine")
        mul = getattr(mod, f"{name}_mul_raw")
        to_affine = getattr(mod, f"{name}_to_affine")
        store = getattr(mod, f"{name}_store_affine")

        @njit
        def run(rows, limbs, out):
            x, y = load(rows, 0)
            ax, ay = to_affine(mul(x, y, limbs[0]))
            store(out, 0, ax, ay)

        out = np.zeros_like(row)
        run(row, ints_to_limbs([k], 4), out)
        assert from_st(out)[0] == to_int(gen() * ark.Scalar(k))
        run(row, ints_to_limbs([k ^ 1], 4), out)
        assert from_st(out)[0] != to_int(gen() * ark.Scalar(k))
