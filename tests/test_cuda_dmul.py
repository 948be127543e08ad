"""ff/dmul.cuh's FP64-pipe Fp product on the GPU (field module's fp_dmul) against Python integers
and bit for bit against Mont<Fp>'s product (fp_binop op 2) on the same inputs."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.constants import P_MOD
from kernels.cpu.convert import from_mont_fp, to_mont_fp

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _device(fn: str, *args: np.ndarray, op: int | None = None) -> np.ndarray:
    import cupy as cp

    from kernels.cuda.module import kernel

    ins = [cp.asarray(a) for a in args]
    out = cp.full(ins[0].shape, 0xDEADBEEF, dtype=cp.uint64)  # poisoned: every row must be written
    n = args[0].shape[0]
    head = () if op is None else (np.int32(op),)
    kernel("field", fn)(((n + 127) // 128,), (128,), (*head, *ins, out, np.uint64(n)))
    return cp.asnumpy(out)


def test_dmul_on_device() -> None:
    rng = random.Random()
    edges = [0, 1, 2, P_MOD - 1, P_MOD - 2, pow(2, 384, P_MOD), (1 << 380) - 1] + [(1 << (48 * k)) - 1 for k in range(1, 8)]
    a = edges + [rng.randrange(P_MOD) for _ in range(4000)]
    b = edges[::-1] + [rng.randrange(P_MOD) for _ in range(4000)]
    A, B = to_mont_fp(a), to_mont_fp(b)
    got = _device("fp_dmul", A, B)
    assert from_mont_fp(got) == [x * y % P_MOD for x, y in zip(a, b)]
    assert np.array_equal(got, _device("fp_binop", A, B, op=2))
    # a changed operand changes every product (the check can fail)
    assert not np.any(np.all(_device("fp_dmul", A, to_mont_fp([y + 1 for y in b])) == got, axis=1)[len(edges):])
