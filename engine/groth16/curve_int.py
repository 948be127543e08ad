"""BLS12-381 points as Python integers: just enough to decode and validate compressed points.

Decoding a compressed point needs a square root in Fp or Fp2, the curve equation and a subgroup
check. These run once per proof point, so plain affine formulas over Python ints are fast enough
(a few milliseconds) and easy to audit. Points are affine int tuples as in kernels.cpu.convert:
G1 (x, y), G2 ((x.c0, x.c1), (y.c0, y.c1)), None for infinity.
"""

from __future__ import annotations

from kernels.constants import P_MOD, R_MOD

P = P_MOD
Fp2 = tuple[int, int]


# ---- Fp2 = Fp[u] / (u^2 + 1) ----
def fp2_add(a: Fp2, b: Fp2) -> Fp2:
    return ((a[0] + b[0]) % P, (a[1] + b[1]) % P)


def fp2_sub(a: Fp2, b: Fp2) -> Fp2:
    return ((a[0] - b[0]) % P, (a[1] - b[1]) % P)


def fp2_mul(a: Fp2, b: Fp2) -> Fp2:
    return ((a[0] * b[0] - a[1] * b[1]) % P, (a[0] * b[1] + a[1] * b[0]) % P)


def fp2_inv(a: Fp2) -> Fp2:
    t = pow((a[0] * a[0] + a[1] * a[1]) % P, -1, P)
    return (a[0] * t % P, -a[1] * t % P)


def fp2_pow(a: Fp2, e: int) -> Fp2:
    result = (1, 0)
    for bit in bin(e)[2:]:
        result = fp2_mul(result, result)
        if bit == "1":
            result = fp2_mul(result, a)
    return result


def fp_sqrt(a: int) -> int | None:
    """A square root of a in Fp (p ≡ 3 mod 4), or None when a is not a square."""
    root = pow(a, (P + 1) // 4, P)
    return root if root * root % P == a % P else None


def fp2_sqrt(a: Fp2) -> Fp2 | None:
    """A square root in Fp2 (the p ≡ 3 mod 4 method of Adj and Rodríguez-Henríquez), or None."""
    a1 = fp2_pow(a, (P - 3) // 4)
    alpha = fp2_mul(fp2_mul(a1, a1), a)
    x0 = fp2_mul(a1, a)
    if alpha == (P - 1, 0):
        x = (-x0[1] % P, x0[0])  # u · x0
    else:
        b = fp2_pow(((1 + alpha[0]) % P, alpha[1]), (P - 1) // 2)
        x = fp2_mul(b, x0)
    return x if fp2_mul(x, x) == (a[0] % P, a[1] % P) else None


# ---- generic affine arithmetic over a field given by its operations ----
class _Field:
    def __init__(self, add, sub, mul, inv, zero, three, two):
        self.add, self.sub, self.mul, self.inv = add, sub, mul, inv
        self.zero, self.three, self.two = zero, three, two


_FP = _Field(
    lambda a, b: (a + b) % P,
    lambda a, b: (a - b) % P,
    lambda a, b: a * b % P,
    lambda a: pow(a, -1, P),
    0,
    3,
    2,
)
_FP2 = _Field(fp2_add, fp2_sub, fp2_mul, fp2_inv, (0, 0), (3, 0), (2, 0))


def _add(f: _Field, p, q):
    if p is None:
        return q
    if q is None:
        return p
    (x1, y1), (x2, y2) = p, q
    if x1 == x2:
        if y1 != y2 or y1 == f.zero:
            return None
        lam = f.mul(f.mul(f.three, f.mul(x1, x1)), f.inv(f.mul(f.two, y1)))
    else:
        lam = f.mul(f.sub(y2, y1), f.inv(f.sub(x2, x1)))
    x3 = f.sub(f.sub(f.mul(lam, lam), x1), x2)
    return (x3, f.sub(f.mul(lam, f.sub(x1, x3)), y1))


def _mul(f: _Field, p, k: int):
    acc = None
    for bit in bin(k)[2:]:
        acc = _add(f, acc, acc)
        if bit == "1":
            acc = _add(f, acc, p)
    return acc


G2_B: Fp2 = (4, 4)


def g1_in_subgroup(p) -> bool:
    return _mul(_FP, p, R_MOD) is None


def g2_in_subgroup(p) -> bool:
    return _mul(_FP2, p, R_MOD) is None


def fp_is_largest(y: int) -> bool:
    """y is the lexicographically larger of {y, -y} (zcash's sign bit)."""
    return y > (P - 1) // 2


def fp2_is_largest(y: Fp2) -> bool:
    """zcash's sign bit for Fp2: decided by c1, or by c0 when c1 is zero."""
    return fp_is_largest(y[1]) if y[1] != 0 else fp_is_largest(y[0])
