"""The last step of an MSM on the host: sum_w 2^(c w) window[w] + ones, written affine.

Horner over the windows is about 256 dependent point doublings, the one part of Pippenger that
cannot be spread over threads; a single GPU thread took about 10 ms for it (H200, 2026-11-30:
9.9 ms of a 317 ms G1 MSM at 2^24, 10.8 of 37.9 ms at 2^16). Python integers do the same
arithmetic in a few milliseconds, so the window sums (a few kilobytes) come back to the host.
Inputs are XYZZ rows in design.md's Montgomery limbs (X, Y, ZZ, ZZZ; ZZ = 0 for infinity), as the
device kernels write them; the result is an affine row (infinity all zeros), bit-identical to the
device's own to_affine since both are canonical Montgomery forms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kernels.constants import FP_R, P_MOD

_P = P_MOD
_RINV = pow(FP_R, -1, P_MOD)


class _Field:
    """Fp (ints) or Fp2 (pairs of ints, u^2 = -1) with the few operations XYZZ needs."""

    def __init__(self, degree: int) -> None:
        self.degree = degree
        if degree == 1:
            self.add: Callable[[Any, Any], Any] = lambda a, b: (a + b) % _P
            self.sub: Callable[[Any, Any], Any] = lambda a, b: (a - b) % _P
            self.mul: Callable[[Any, Any], Any] = lambda a, b: a * b % _P
            self.zero: Any = 0
            self.one: Any = 1
        else:
            self.add = lambda a, b: ((a[0] + b[0]) % _P, (a[1] + b[1]) % _P)
            self.sub = lambda a, b: ((a[0] - b[0]) % _P, (a[1] - b[1]) % _P)
            self.mul = lambda a, b: ((a[0] * b[0] - a[1] * b[1]) % _P, (a[0] * b[1] + a[1] * b[0]) % _P)
            self.zero = (0, 0)
            self.one = (1, 0)

    def inv(self, a: Any) -> Any:
        if self.degree == 1:
            return pow(a, -1, _P)
        t = pow((a[0] * a[0] + a[1] * a[1]) % _P, -1, _P)
        return (a[0] * t % _P, -a[1] * t % _P)

    def decode(self, words: np.ndarray) -> list[Any]:
        """A row of uint64 Montgomery limbs -> field elements (one per 6 or 12 words)."""
        b = np.ascontiguousarray(words, dtype="<u8").tobytes()
        ints = [int.from_bytes(b[i : i + 48], "little") * _RINV % _P for i in range(0, len(b), 48)]
        if self.degree == 1:
            return ints
        return [(ints[i], ints[i + 1]) for i in range(0, len(ints), 2)]

    def encode(self, values: list[Any]) -> np.ndarray:
        flat: list[int] = []
        for v in values:
            flat.extend([v] if self.degree == 1 else list(v))
        buf = b"".join((x * FP_R % _P).to_bytes(48, "little") for x in flat)
        return np.frombuffer(buf, dtype="<u8").copy()


Xyzz = tuple[Any, Any, Any, Any]


def _is_inf(F: _Field, p: Xyzz) -> bool:
    return p[2] == F.zero


def _dbl(F: _Field, p: Xyzz) -> Xyzz:
    if _is_inf(F, p):
        return p
    X, Y, ZZ, ZZZ = p
    U = F.add(Y, Y)
    V = F.mul(U, U)
    W = F.mul(U, V)
    S = F.mul(X, V)
    x2 = F.mul(X, X)
    M = F.add(F.add(x2, x2), x2)
    X3 = F.sub(F.mul(M, M), F.add(S, S))
    Y3 = F.sub(F.mul(M, F.sub(S, X3)), F.mul(W, Y))
    return (X3, Y3, F.mul(V, ZZ), F.mul(W, ZZZ))


def _add(F: _Field, p: Xyzz, q: Xyzz) -> Xyzz:
    if _is_inf(F, q):
        return p
    if _is_inf(F, p):
        return q
    U1 = F.mul(p[0], q[2])
    U2 = F.mul(q[0], p[2])
    S1 = F.mul(p[1], q[3])
    S2 = F.mul(q[1], p[3])
    P = F.sub(U2, U1)
    R = F.sub(S2, S1)
    if P == F.zero:
        return _dbl(F, p) if R == F.zero else (F.zero, F.zero, F.zero, F.zero)
    PP = F.mul(P, P)
    PPP = F.mul(P, PP)
    Q = F.mul(U1, PP)
    X3 = F.sub(F.sub(F.mul(R, R), PPP), F.add(Q, Q))
    Y3 = F.sub(F.mul(R, F.sub(Q, X3)), F.mul(S1, PPP))
    return (X3, Y3, F.mul(F.mul(p[2], q[2]), PP), F.mul(F.mul(p[3], q[3]), PPP))


def _dbl_run_g1(p: Xyzz, n: int) -> Xyzz:
    """2^n p over Fp: the doublings of Horner, the bulk of this module's time, written out over
    plain ints (about twice as fast as n calls of _dbl through _Field's lambdas)."""
    X, Y, ZZ, ZZZ = p
    if ZZ == 0:
        return p
    q = _P
    for _ in range(n):
        U = 2 * Y
        V = U * U % q
        W = U * V % q
        S = X * V % q
        M = 3 * X * X % q
        X = (M * M - 2 * S) % q
        Y = (M * (S - X) - W * Y) % q
        ZZ = V * ZZ % q
        ZZZ = W * ZZZ % q
    return (X, Y, ZZ, ZZZ)


def _dbl_run_g2(p: Xyzz, n: int) -> Xyzz:
    """2^n p over Fp2 (pairs, u^2 = -1), as _dbl_run_g1."""
    X, Y, ZZ, ZZZ = p
    if ZZ == (0, 0):
        return p
    q = _P

    def mul(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return ((a[0] * b[0] - a[1] * b[1]) % q, (a[0] * b[1] + a[1] * b[0]) % q)

    for _ in range(n):
        U = (2 * Y[0], 2 * Y[1])
        V = ((U[0] + U[1]) * (U[0] - U[1]) % q, 2 * U[0] * U[1] % q)
        W = mul(U, V)
        S = mul(X, V)
        x0, x1 = X
        M = (3 * (x0 + x1) * (x0 - x1) % q, 6 * x0 * x1 % q)
        M2 = ((M[0] + M[1]) * (M[0] - M[1]), 2 * M[0] * M[1])
        X = ((M2[0] - 2 * S[0]) % q, (M2[1] - 2 * S[1]) % q)
        T = mul(M, (S[0] - X[0], S[1] - X[1]))
        WY = mul(W, Y)
        Y = ((T[0] - WY[0]) % q, (T[1] - WY[1]) % q)
        ZZ = mul(V, ZZ)
        ZZZ = mul(W, ZZZ)
    return (X, Y, ZZ, ZZZ)


def combine_windows(group: str, wins: np.ndarray, c: int, ones: np.ndarray | None) -> np.ndarray:
    """Affine row of sum_w 2^(c w) wins[w] (+ ones): wins uint64[nwin, 24|48] XYZZ rows."""
    F = _Field(1 if group == "g1" else 2)
    inf: Xyzz = (F.zero, F.zero, F.zero, F.zero)

    def load(row: np.ndarray) -> Xyzz:
        X, Y, ZZ, ZZZ = F.decode(row)
        return (X, Y, ZZ, ZZZ)

    dbl_run = _dbl_run_g1 if F.degree == 1 else _dbl_run_g2
    acc = inf
    nwin = len(wins)
    for w in range(nwin - 1, -1, -1):
        if w != nwin - 1:
            acc = dbl_run(acc, c)
        acc = _add(F, acc, load(wins[w]))
    if ones is not None:
        acc = _add(F, acc, load(ones.reshape(-1)))
    words = 12 if group == "g1" else 24
    if _is_inf(F, acc):
        return np.zeros(words, dtype=np.uint64)
    t = F.inv(F.mul(acc[2], acc[3]))
    x = F.mul(acc[0], F.mul(t, acc[3]))
    y = F.mul(acc[1], F.mul(t, acc[2]))
    return F.encode([x, y])
