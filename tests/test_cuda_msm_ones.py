"""The MSM's "list" split (msm/classify.cuh, msm.sum_list) on the GPU: the same point as the "sum"
split and as arkworks on witness-like scalars (about half 0, half 1, a few general values, a
non-canonical 1), G1 and G2, with points at infinity among the ones; a changed scalar changes the
result. (The whole of tests/test_cuda_msm.py also runs under SEALTOP_MSM_ONES=list in the device
session.)"""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.constants import FR_R, R_MOD
from kernels.cuda import testing as T

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _witness_like(n: int, rng: random.Random, general: float = 0.01) -> list[int]:
    return [rng.randrange(2, R_MOD) if rng.random() < general else rng.choice([0, 1]) for _ in range(n)]


@pytest.mark.parametrize("group,n", [("g1", 5000), ("g2", 700)])
def test_list_equals_sum_and_arkworks(group: str, n: int) -> None:
    import cupy as cp

    from kernels.cuda import msm

    rng = random.Random()
    pts = T.random_points(group, n, rng)
    sc = _witness_like(n, rng)
    T.plant_edges(pts, sc, group, rng)
    pts[20] = T._group(group).identity()  # noqa: SLF001 (a point at infinity with scalar 1)
    sc[20] = 1
    P, S = cp.asarray(T.ark_to_words(group, pts)), cp.asarray(T.fr_words(sc))
    S[30] = cp.asarray(np.frombuffer((FR_R % R_MOD + R_MOD).to_bytes(32, "little"), "<u8"))  # 1, non-canonical
    sc[30] = 1
    want = T.ark_msm(group, pts, sc)
    st = msm.MsmStats()
    got = cp.asnumpy(msm.msm(group, P, S, ones="list", stats=st))[0]
    assert np.array_equal(got, want)
    assert np.array_equal(cp.asnumpy(msm.msm(group, P, S, ones="sum"))[0], want)
    assert st.ones == sum(1 for i, s in enumerate(sc) if s == 1 and i != 30)  # the non-canonical 1 is a tail scalar
    S[0] = cp.asarray(T.fr_words([12345])[0])
    assert not np.array_equal(cp.asnumpy(msm.msm(group, P, S, ones="list"))[0], want)


@pytest.mark.parametrize("log_n", [16, 20])
def test_list_equals_sum_large(log_n: int) -> None:
    import cupy as cp

    from kernels.cuda import msm
    from kernels.cuda.bench import distinct_points_device

    n = 1 << log_n
    rng = np.random.default_rng()
    P = distinct_points_device("g1", n)
    kinds = rng.choice(3, size=n, p=[0.515, 0.472, 0.013])
    S = np.where((kinds == 1)[:, None], T.fr_words([1]), np.zeros((1, 4), np.uint64)).astype(np.uint64)
    gen = np.flatnonzero(kinds == 2)
    S[gen] = T.fr_words([int(x) for x in rng.integers(2, 2**62, len(gen))])
    S = cp.asarray(S)
    a = cp.asnumpy(msm.msm("g1", P, S, ones="list"))
    b = cp.asnumpy(msm.msm("g1", P, S, ones="sum"))
    assert np.array_equal(a, b) and a.any()


@pytest.mark.parametrize("kind", ["zeros", "ones", "general"])
def test_list_edge_vectors(kind: str) -> None:
    import cupy as cp

    from kernels.cuda import msm

    rng = random.Random()
    n = 4096 + 5  # a tile and a bit
    pts = T.random_points("g1", n, rng)
    sc = {"zeros": [0] * n, "ones": [1] * n, "general": [rng.randrange(2, R_MOD) for _ in range(n)]}[kind]
    got = msm.msm("g1", cp.asarray(T.ark_to_words("g1", pts)), cp.asarray(T.fr_words(sc)), ones="list")
    assert np.array_equal(cp.asnumpy(got)[0], T.ark_msm("g1", pts, sc))
