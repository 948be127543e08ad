"""The GPU NTT (forward, inverse, coset, batched) against Python integers and the cpu backend."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.constants import FR_COSET_SHIFT, R_MOD, root_of_unity
from kernels.cpu.convert import from_mont_fr, to_mont_fr

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _dft_at(x: list[int], j: int, w: int, shift: int = 1) -> int:
    """sum_i x_i (shift w^j)^i, by Horner."""
    z = shift * pow(w, j, R_MOD) % R_MOD
    acc = 0
    for v in reversed(x):
        acc = (acc * z + v) % R_MOD
    return acc


def _ntt(a: np.ndarray, **kw: bool) -> np.ndarray:
    from kernels.cuda.backend import CudaBackend

    return CudaBackend().ntt(a, **kw)


@pytest.mark.parametrize("log_n", [1, 2, 3, 5, 8, 10, 11, 13])
def test_ntt_small_against_full_python_dft(log_n: int) -> None:
    rng = random.Random()
    n = 1 << log_n
    x = [rng.randrange(R_MOD) for _ in range(n)]
    x[0] = R_MOD - 1
    w = root_of_unity(log_n)
    winv = pow(w, -1, R_MOD)
    ninv = pow(n, -1, R_MOD)
    g = FR_COSET_SHIFT
    ginv = pow(g, -1, R_MOD)
    A = to_mont_fr(x)
    js = range(n) if n <= 256 else rng.sample(range(n), 64)
    fwd = from_mont_fr(_ntt(A))
    inv = from_mont_fr(_ntt(A, inverse=True))
    cos = from_mont_fr(_ntt(A, coset=True))
    icos = from_mont_fr(_ntt(A, inverse=True, coset=True))
    for j in js:
        assert fwd[j] == _dft_at(x, j, w)
        assert inv[j] == _dft_at(x, j, winv) * ninv % R_MOD
        assert cos[j] == _dft_at(x, j, w, g)
        # inverse coset: interpolate from the coset, result_i = n^-1 g^-i sum_j y_j w^-ij
        assert icos[j] == _dft_at(x, j, winv) * ninv * pow(ginv, j, R_MOD) % R_MOD


@pytest.mark.parametrize("log_n", [16, 20])
def test_ntt_roundtrip_and_batch(log_n: int) -> None:
    import cupy as cp

    from kernels.cuda import ntt as gntt

    rng = np.random.default_rng()
    n = 1 << log_n
    # any 256-bit value below r is a valid Montgomery representation; top limb < 2^62 keeps it below r
    x = rng.integers(0, 2**63, size=(n, 4), dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, size=(n, 4), dtype=np.uint64)
    x[:, 3] >>= np.uint64(2)
    X = cp.asarray(x)
    for coset in (False, True):
        y = gntt.ntt(X, coset=coset)
        assert cp.array_equal(gntt.ntt(y, inverse=True, coset=coset), X)
    batch = cp.stack([X, X[::-1].copy(), X])
    yb = gntt.ntt(batch, coset=True)
    assert cp.array_equal(yb[0], gntt.ntt(X, coset=True))
    assert cp.array_equal(yb[1], gntt.ntt(X[::-1].copy(), coset=True))
    xs = from_mont_fr(x)
    j = int(rng.integers(n))
    assert from_mont_fr(cp.asnumpy(yb[2][j : j + 1]))[0] == _dft_at(xs, j, root_of_unity(log_n), FR_COSET_SHIFT)


@pytest.mark.parametrize("log_n", [10, 14])
def test_ntt_matches_cpu_backend(log_n: int) -> None:
    from kernels.cpu.backend import CpuBackend
    rng = random.Random()
    A = to_mont_fr([rng.randrange(R_MOD) for _ in range(1 << log_n)])
    cpu = CpuBackend()
    for inverse in (False, True):
        for coset in (False, True):
            assert np.array_equal(_ntt(A, inverse=inverse, coset=coset), cpu.ntt(A, inverse=inverse, coset=coset)), (inverse, coset)


def test_h_coefficients_batched_equals_step_by_step() -> None:
    """The device H path (a, b, c batched) equals the engine's sequence through the Backend."""
    from kernels.cuda.backend import CudaBackend

    rng = random.Random()
    gpu = CudaBackend()
    n = 1 << 12
    m = n - 37  # fewer evaluations than the domain: zero padding
    a, b, c = (to_mont_fr([rng.randrange(R_MOD) for _ in range(m)]) for _ in range(3))
    a[:5] = to_mont_fr([0, 1, R_MOD - 1, 0, 1])

    def pad(v: np.ndarray) -> np.ndarray:
        out = np.zeros((n, 4), np.uint64)
        out[: len(v)] = v
        return out

    coset = [gpu.ntt(gpu.ntt(pad(v), inverse=True), coset=True) for v in (a, b, c)]
    want = gpu.ntt(gpu.fr_sub(gpu.fr_mul(coset[0], coset[1]), coset[2]), inverse=True, coset=True)
    assert np.array_equal(gpu.h_coefficients(a, b, c, n), want)
    from kernels.cpu.backend import CpuBackend
    cpu = CpuBackend()
    cc = [cpu.ntt(cpu.ntt(pad(v), inverse=True), coset=True) for v in (a, b, c)]
    assert np.array_equal(want, cpu.ntt(cpu.fr_sub(cpu.fr_mul(cc[0], cc[1]), cc[2]), inverse=True, coset=True))


@pytest.mark.parametrize("path, low, high", [("plain", 6, 6.5), ("fused", 3, 4.5)])
def test_h_coefficients_frees_each_batch_once_transformed(monkeypatch, path, low, high) -> None:
    """The plain H step holds at most two padded 3 x n batches at once (the inverse NTT's input
    is freed before the coset NTT allocates its output): the device pool's live bytes inside the
    call, counted by a memory hook, stay under 6.5 x 32n beyond the inputs, where keeping `abc`
    alive until the end needed 9 x 32n; the fused step, in place, holds its 3 x n input and h
    (4 x 32n). The result is the same as the step-by-step sequence either way."""
    import cupy as cp
    from cupy.cuda import memory_hook

    from kernels.cuda import poly

    monkeypatch.setattr(poly, "H_PATH", path)

    from kernels.cuda.backend import CudaBackend

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

    rng = random.Random()
    gpu = CudaBackend()
    n = 1 << 16
    a, b, c = (cp.asarray(to_mont_fr([rng.randrange(R_MOD) for _ in range(n - 5)])) for _ in range(3))
    coset = [gpu.ntt(_intt_padded(v, n), coset=True) for v in (a, b, c)]
    want = gpu.ntt(gpu.fr_sub(gpu.fr_mul(coset[0], coset[1]), coset[2]), inverse=True, coset=True)
    del coset
    gpu.h_coefficients(a, b, c, n)  # warm: twiddle and coset tables are made once and kept
    cp.cuda.Device().synchronize()
    hook = Live()
    with hook:
        got = gpu.h_coefficients(a, b, c, n)
        cp.cuda.Device().synchronize()
    assert cp.array_equal(got, want)
    unit = 32 * n
    assert hook.peak <= high * unit, hook.peak / unit
    assert hook.peak >= low * unit, hook.peak / unit  # the hook saw the batches (not vacuous)


def _intt_padded(v, n: int):
    """The inverse NTT of v zero-padded to n, on the device (the first step of H)."""
    import cupy as cp

    from kernels.cuda import ntt as _ntt

    out = cp.zeros((n, 4), dtype=cp.uint64)
    out[: v.shape[0]] = v
    return _ntt.ntt(out, inverse=True)
