"""ff/dmul.cuh's FP64-pipe Fp products on the GPU (the field module's fp_dmul: Karatsuba,
schoolbook, hybrid, the squarings) against Python integers and bit for bit against Mont<Fp>'s
product (fp_binop op 2) on the same inputs."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.constants import P_MOD
from kernels.cpu.convert import from_mont_fp, to_mont_fp
from kernels.cuda import testing as T

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]
OPS = {"karatsuba": 0, "school": 1, "hybrid": 2, "sqr": 3, "sqr_hybrid": 4}  # field_kernels.cu's fp_dmul op codes


@pytest.mark.parametrize("variant", list(OPS))
def test_dmul_on_device(variant: str) -> None:
    rng = random.Random()
    edges = [0, 1, 2, P_MOD - 1, P_MOD - 2, pow(2, 384, P_MOD), (1 << 380) - 1] + [(1 << (48 * k)) - 1 for k in range(1, 8)]
    a = edges + [rng.randrange(P_MOD) for _ in range(4000)]
    b = edges[::-1] + [rng.randrange(P_MOD) for _ in range(4000)]
    if variant.startswith("sqr"):
        b = a
    A, B = to_mont_fp(a), to_mont_fp(b)
    got = T.field_op("fp_dmul", OPS[variant], A, B)
    assert from_mont_fp(got) == [x * y % P_MOD for x, y in zip(a, b)]
    assert np.array_equal(got, T.field_op("fp_binop", 2, A, B))
    # a changed operand changes every product (the check can fail)
    other = to_mont_fp([(x + 1) % P_MOD for x in a])
    changed = T.field_op("fp_dmul", OPS[variant], other, other if variant.startswith("sqr") else B)
    assert not np.any(np.all(changed == got, axis=1)[len(edges):])
