"""The ones' sums by pairs (kernels/cuda/pairs.py) on the GPU: the pair table against arkworks
(pairs with infinity, a doubling, a point and its negation), then MSMs with the table equal to
arkworks and to the MSM without it on witness-like scalars, G1 and G2, an odd count of scalars
and a table longer than the scalars; and the backend's resident table with SEALTOP_MSM_PAIRS (and
none where it would not leave the calls' reserve free)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.constants import R_MOD
from kernels.cuda import testing as T

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _witness_like(n: int, rng: random.Random) -> list[int]:
    return [rng.randrange(2, R_MOD) if rng.random() < 0.01 else rng.choice([0, 1]) for _ in range(n)]


@pytest.mark.parametrize("group,n,per_thread,chunk", [("g1", 4001, 32, 1 << 23), ("g1", 999, 3, 100),
                                                      ("g2", 601, 32, 1 << 23)])
def test_pair_table_matches_arkworks(group: str, n: int, per_thread: int, chunk: int) -> None:
    import cupy as cp

    from kernels.cuda.pairs import pair_table

    rng = random.Random()
    pts = T.random_points(group, n, rng)
    inf = T._group(group).identity()  # noqa: SLF001
    j = rng.sample(range(n // 2), 4)
    pts[2 * j[0]] = inf
    pts[2 * j[1] + 1] = pts[2 * j[1]]
    pts[2 * j[2] + 1] = -pts[2 * j[2]]
    pts[2 * j[3]] = pts[2 * j[3] + 1] = inf
    P = cp.asarray(T.ark_to_words(group, pts))
    ext = cp.asnumpy(pair_table(group, P, per_thread=per_thread, chunk=chunk))
    assert np.array_equal(ext[:n], T.ark_to_words(group, pts))
    want = T.ark_to_words(group, [pts[2 * i] + pts[2 * i + 1] for i in range(n // 2)])
    assert np.array_equal(ext[n:], want)


@pytest.mark.parametrize("group,n,extra", [("g1", 5001, 0), ("g1", 6000, 7), ("g2", 701, 3)])
def test_msm_by_pairs_equals_arkworks(group: str, n: int, extra: int) -> None:
    import cupy as cp

    from kernels.cuda import msm
    from kernels.cuda.pairs import pair_table

    rng = random.Random()
    pts = T.random_points(group, n + extra, rng)
    sc = _witness_like(n, rng)
    T.plant_edges(pts, sc, group, rng)
    P, S = cp.asarray(T.ark_to_words(group, pts)), cp.asarray(T.fr_words(sc))
    ext = pair_table(group, P)
    want = T.ark_msm(group, pts[:n], sc)
    st = msm.MsmStats()
    got = cp.asnumpy(msm.msm(group, P, S, ones="list", pairs=ext, stats=st))[0]
    assert np.array_equal(got, want)
    assert np.array_equal(cp.asnumpy(msm.msm(group, P, S, ones="list"))[0], want)
    assert 0 < st.ones < sum(1 for s in sc if s == 1)  # fewer list entries than ones
    S[1] = cp.asarray(T.fr_words([1 - sc[1] if sc[1] in (0, 1) else 1])[0])  # a changed scalar
    assert not np.array_equal(cp.asnumpy(msm.msm(group, P, S, ones="list", pairs=ext))[0], want)


def test_the_backend_keeps_pairs_only_when_asked_and_switched_on(monkeypatch: pytest.MonkeyPatch) -> None:
    import cupy as cp

    from kernels.cuda import pairs
    from kernels.cuda.backend import CudaBackend

    rng = random.Random()
    n = 3001
    pts = T.random_points("g1", n, rng)
    sc = _witness_like(n, rng)
    be = CudaBackend()
    words = T.ark_to_words("g1", pts)
    monkeypatch.setattr(pairs, "PAIRS", True)
    held = be.resident(words, pairs=True)
    assert held.pairs is not None and held.pairs.shape[0] == n + n // 2 and len(held) == n
    assert be.resident(words).pairs is None
    got = be.msm_g1(held, T.fr_words(sc))
    assert np.array_equal(np.asarray(got), T.ark_msm("g1", pts, sc))
    monkeypatch.setattr(pairs, "PAIRS_RESERVE", 1 << 62)  # no card leaves that much free
    assert be.resident(words, pairs=True).pairs is None
    monkeypatch.setattr(pairs, "PAIRS", False)
    monkeypatch.setattr(pairs, "PAIRS_RESERVE", 0)
    assert be.resident(words, pairs=True).pairs is None
    assert isinstance(held.data, cp.ndarray)
