"""Fp2 = Fp[u]/(u^2 + 1) for G2, on top of the generated Fp tuple arithmetic.

An element is a pair (c0, c1) of Fp tuples meaning c0 + c1·u; in storage it is c0's 6 limbs
followed by c1's, so a G2 affine row (24 limbs) is x.c0, x.c1, y.c0, y.c1.
"""

from numba import njit

from kernels.cpu.fp import (
    FP_ONE,
    FP_ZERO,
    fp_add,
    fp_eq,
    fp_inv,
    fp_is_zero,
    fp_load,
    fp_mul,
    fp_neg,
    fp_store,
    fp_sub,
)

FP2_ZERO = (FP_ZERO, FP_ZERO)
FP2_ONE = (FP_ONE, FP_ZERO)


@njit(cache=True)
def fp2_load(arr, i, off=0):
    return (fp_load(arr, i, off), fp_load(arr, i, off + 6))


@njit(cache=True)
def fp2_store(arr, i, v, off=0):
    fp_store(arr, i, v[0], off)
    fp_store(arr, i, v[1], off + 6)


@njit(cache=True)
def fp2_add(a, b):
    return (fp_add(a[0], b[0]), fp_add(a[1], b[1]))


@njit(cache=True)
def fp2_sub(a, b):
    return (fp_sub(a[0], b[0]), fp_sub(a[1], b[1]))


@njit(cache=True)
def fp2_neg(a):
    return (fp_neg(a[0]), fp_neg(a[1]))


@njit(cache=True)
def fp2_mul(a, b):
    """Karatsuba: three Fp multiplications."""
    t0 = fp_mul(a[0], b[0])
    t1 = fp_mul(a[1], b[1])
    t2 = fp_mul(fp_add(a[0], a[1]), fp_add(b[0], b[1]))
    return (fp_sub(t0, t1), fp_sub(fp_sub(t2, t0), t1))


@njit(cache=True)
def fp2_sqr(a):
    """(a0 + a1)(a0 - a1) + 2·a0·a1·u: two Fp multiplications."""
    t = fp_mul(a[0], a[1])
    return (fp_mul(fp_add(a[0], a[1]), fp_sub(a[0], a[1])), fp_add(t, t))


@njit(cache=True)
def fp2_inv(a):
    """1 / (a0 + a1·u) = (a0 - a1·u) / (a0^2 + a1^2); the inverse of zero is zero."""
    n = fp_inv(fp_add(fp_mul(a[0], a[0]), fp_mul(a[1], a[1])))
    return (fp_mul(a[0], n), fp_neg(fp_mul(a[1], n)))


@njit(cache=True)
def fp2_is_zero(a):
    return fp_is_zero(a[0]) and fp_is_zero(a[1])


@njit(cache=True)
def fp2_eq(a, b):
    return fp_eq(a[0], b[0]) and fp_eq(a[1], b[1])
