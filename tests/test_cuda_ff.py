"""Fr, Fp and Fp2 Montgomery arithmetic on the GPU against Python integers (and the cpu backend)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from oracle import binop_expected

from kernels.backend import cuda_unavailable_reason
from kernels.constants import P_MOD, R_MOD
from kernels.cpu.convert import from_mont_fp, from_mont_fr, to_mont_fp, to_mont_fr
from kernels.cuda import testing as T

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _values(mod: int, n: int, rng: random.Random) -> list[int]:
    vals = [0, 1, 2, mod - 1, mod - 2, (mod - 1) // 2]
    return vals + [rng.randrange(mod) for _ in range(n - len(vals))]


@pytest.mark.parametrize("field", ["fr", "fp"])
def test_field_ops_on_device(field: str) -> None:
    rng = random.Random()
    mod, to_m, from_m = (R_MOD, to_mont_fr, from_mont_fr) if field == "fr" else (P_MOD, to_mont_fp, from_mont_fp)
    a, b = _values(mod, 3000, rng), _values(mod, 3000, rng)
    rng.shuffle(b)
    A, B = to_m(a), to_m(b)
    want = binop_expected(a, b, mod)
    for op, w in want.items():
        out = T.field_op(f"{field}_binop", op, A, B)
        assert np.array_equal(out, to_m(w)), f"{field} op {op}: {from_m(out)[:3]} vs {w[:3]}"


def test_fp2_mul_inv_on_device() -> None:
    rng = random.Random()
    n = 1000
    a = [(rng.randrange(P_MOD), rng.randrange(P_MOD)) for _ in range(n)] + [(0, 0), (1, 0), (0, 1)]
    b = [(rng.randrange(P_MOD), rng.randrange(P_MOD)) for _ in range(len(a))]

    def enc(v: list[tuple[int, int]]) -> np.ndarray:
        return np.hstack([to_mont_fp([x for x, _ in v]), to_mont_fp([y for _, y in v])])

    def mul(x: tuple[int, int], y: tuple[int, int]) -> tuple[int, int]:
        return ((x[0] * y[0] - x[1] * y[1]) % P_MOD, (x[0] * y[1] + x[1] * y[0]) % P_MOD)

    def inv(x: tuple[int, int]) -> tuple[int, int]:
        t = pow((x[0] ** 2 + x[1] ** 2) % P_MOD, P_MOD - 2, P_MOD)
        return (x[0] * t % P_MOD, -x[1] * t % P_MOD)

    A, B = enc(a), enc(b)
    assert np.array_equal(T.field_op("fp2_binop", 2, A, B), enc([mul(x, y) for x, y in zip(a, b)]))
    assert np.array_equal(T.field_op("fp2_binop", 3, A, B), enc([mul(x, x) for x in a]))
    assert np.array_equal(T.field_op("fp2_binop", 4, A, B), enc([inv(x) for x in a]))


def test_backend_fr_vectors_match_python_and_cpu() -> None:
    from kernels.cuda.backend import CudaBackend

    rng = random.Random()
    gpu = CudaBackend()
    a, b = _values(R_MOD, 5000, rng), _values(R_MOD, 5000, rng)
    rng.shuffle(a)
    A, B = to_mont_fr(a), to_mont_fr(b)
    assert np.array_equal(gpu.fr_add(A, B), to_mont_fr([(x + y) for x, y in zip(a, b)]))
    assert np.array_equal(gpu.fr_sub(A, B), to_mont_fr([(x - y) for x, y in zip(a, b)]))
    assert np.array_equal(gpu.fr_mul(A, B), to_mont_fr([x * y for x, y in zip(a, b)]))
    assert np.array_equal(gpu.fr_sqr(A), to_mont_fr([x * x for x in a]))
    assert np.array_equal(gpu.fr_batch_inv(A), to_mont_fr([pow(x, R_MOD - 2, R_MOD) for x in a]))
    from kernels.cpu.backend import CpuBackend
    cpu = CpuBackend()
    for name in ("fr_add", "fr_sub", "fr_mul"):
        assert np.array_equal(getattr(gpu, name)(A, B), getattr(cpu, name)(A, B)), name
    assert np.array_equal(gpu.fr_batch_inv(A), cpu.fr_batch_inv(A))
