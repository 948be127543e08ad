"""The fused H step on the GPU (kernels/cuda/hstep.py through poly.h_from(path="fused")): bit for
bit the plain seven-NTT path and the cpu backend, at every small size and a few large ones, with
the padding rows zeroed by h_from itself (``rows``), and the fused passes' kernels against the
Python-integer DFT, in radix 2, 4 and 8. A changed input changes H."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.constants import R_MOD, root_of_unity
from kernels.cpu.convert import from_mont_fr, to_mont_fr

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]
HEAVY = os.environ.get("SEALTOP_HEAVY") == "1"


def _random_abc(n: int, rows: int | None = None):
    import cupy as cp

    from kernels.cuda.bench import random_fr_device

    x = random_fr_device(n, (3,))
    if rows is not None:
        x[:, rows:] = 0
    x[0, 0] = cp.asarray(to_mont_fr([R_MOD - 1])[0])
    return x


def _h(abc, n: int, path: str, rows: int | None = None):
    from kernels.cuda import poly

    def fill(dst) -> None:
        dst[:, : rows or n] = abc[:, : rows or n]  # with rows, h_from zeroes the rest

    return poly.h_from(fill, n, rows=rows, path=path)


@pytest.mark.parametrize("log_n", list(range(1, 15)) + [16, 18, 20] + ([24] if HEAVY else []))
def test_fused_equals_plain(log_n: int) -> None:
    import cupy as cp

    n = 1 << log_n
    abc = _random_abc(n)
    plain = _h(abc, n, "plain")
    fused = _h(abc, n, "fused")
    assert cp.array_equal(fused, plain)
    abc[1, random.randrange(n)] = 5  # another input, another H
    assert not cp.array_equal(_h(abc, n, "fused"), plain)


@pytest.mark.parametrize("radix", [2, 4, 8])
@pytest.mark.parametrize("log_n", [1, 2, 3, 5, 9, 10, 11, 13, 16, 20] + ([24] if HEAVY else []))
def test_fused_in_each_radix_equals_plain(log_n: int, radix: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """hstep.RADIX = 2, 4 or 8 (ntt_dit / ntt_dif, ntt_dit4 / ntt_dif4, ntt_dit8 / ntt_dif8;
    passes of every stage count mod K, short passes in a smaller radix): the same H as the plain
    path, and another H for another input."""
    import cupy as cp

    from kernels.cuda import hstep

    n = 1 << log_n
    abc = _random_abc(n)
    plain = _h(abc, n, "plain")
    monkeypatch.setattr(hstep, "RADIX", radix)
    assert {launch.radix for launch in hstep.h_plan(3, [(0, 3)])} == {radix}
    assert cp.array_equal(_h(abc, n, "fused"), plain)
    abc[2, random.randrange(n)] = 7
    assert not cp.array_equal(_h(abc, n, "fused"), plain)


@pytest.mark.parametrize("path", ["plain", "fused"])
def test_rows_zeroes_the_padding(path: str) -> None:
    """h_from(rows=...) leaves rows..n-1 to itself: stale memory there (the pool hands back
    earlier arrays) must not reach H."""
    import cupy as cp

    from kernels.cuda import poly

    n, rows = 1 << 12, 3000
    abc = _random_abc(n, rows)
    want = _h(abc, n, "plain")
    cp.get_default_memory_pool().free_all_blocks()
    junk = cp.full((3, n, 4), 0x1234, dtype=cp.uint64)  # leave non-zero words in the pool
    del junk

    def fill(dst) -> None:
        dst[:, :rows] = abc[:, :rows]

    assert cp.array_equal(poly.h_from(fill, n, rows=rows, path=path), want)
    with pytest.raises(ValueError, match="rows"):
        poly.h_from(fill, n, rows=n + 1, path=path)


def test_fused_equals_the_cpu_backend() -> None:
    from kernels.cpu.backend import CpuBackend
    from kernels.cuda import poly

    n = 1 << 10
    a, b, c = ([random.randrange(R_MOD) for _ in range(n - 7)] for _ in range(3))
    A, B, C = to_mont_fr(a), to_mont_fr(b), to_mont_fr(c)
    want = CpuBackend().h_coefficients(A, B, C, n)
    poly_path = poly.H_PATH
    try:
        poly.H_PATH = "fused"
        got = poly.h_coefficients(A, B, C, n)
    finally:
        poly.H_PATH = poly_path
    import cupy as cp

    assert np.array_equal(cp.asnumpy(got), want)
    with pytest.raises(ValueError, match="unknown H path"):
        poly.h_from(lambda _: None, n, path="sideways")


def test_twiddle_table_ends_with_minus_one() -> None:
    """The inverse DIF reads W[n/2] = w^(n/2) = -1."""
    import cupy as cp

    from kernels.cuda.ntt import PLANS

    for log_n in (1, 5, 13):
        W = cp.asnumpy(PLANS.twiddles(log_n))
        assert len(W) == (1 << log_n) // 2 + 1
        w = root_of_unity(log_n)
        k = random.randrange(len(W))
        assert from_mont_fr(W[[0, k, -1]]) == [1, pow(w, k, R_MOD), R_MOD - 1]


def test_fused_holds_the_input_and_h_only() -> None:
    """The fused path transforms a, b, c in place: the device pool's live bytes inside the call
    (a memory hook) stay under 4.5 x 32n beyond the inputs (the plain path needs 6 x 32n), and
    reach 4 x 32n (the padded input and h: the hook saw them)."""
    import cupy as cp
    from cupy.cuda import memory_hook

    from kernels.cuda import poly

    class Live(memory_hook.MemoryHook):
        name = "live"

        def __init__(self) -> None:
            self.live = self.peak = 0
            self.sizes: dict[int, int] = {}

        def malloc_postprocess(self, **kw):  # device_id, size, mem_size, mem_ptr, pmem_id
            self.sizes[kw["mem_ptr"]] = kw["mem_size"]
            self.live += kw["mem_size"]
            self.peak = max(self.peak, self.live)

        def free_postprocess(self, **kw):  # device_id, mem_size, mem_ptr, pmem_id
            self.live -= self.sizes.pop(kw["mem_ptr"], 0)

    n = 1 << 16
    abc = _random_abc(n, n - 5)

    def fill(dst) -> None:
        dst[:, : n - 5] = abc[:, : n - 5]

    want = poly.h_from(fill, n, rows=n - 5, path="plain")
    poly.h_from(fill, n, rows=n - 5, path="fused")  # warm: twiddle and scale tables are made once and kept
    cp.cuda.Device().synchronize()
    hook = Live()
    with hook:
        got = poly.h_from(fill, n, rows=n - 5, path="fused")
        cp.cuda.Device().synchronize()
    assert cp.array_equal(got, want)
    unit = 32 * n
    assert 4 * unit <= hook.peak <= 4.5 * unit, hook.peak / unit
