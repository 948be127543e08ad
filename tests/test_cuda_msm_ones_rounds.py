"""The ones' sum (msm.sum_list) by the rounds accumulation (msm_rounds.sum_equal) on the GPU: the
same point as the XYZZ path and as arkworks, G1 and G2, for lists of 0, 1, one item, one item and
one entry and random lengths (repeated indices, a point and its negative, the point at infinity),
items of the default length and of several forced ones; the whole MSM with ones_acc="rounds";
a large list against the XYZZ path. Negative cases: a changed index changes the sum, a bad name is
refused."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.cuda import testing as T

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _affine(group: str, row: Any) -> np.ndarray:
    """The affine row of an XYZZ sum (uint64[1, words] on the device), as msm's finish writes it."""
    import cupy as cp

    from kernels.cuda.finish import combine_windows
    from kernels.cuda.points import XYZZ_U64

    return np.asarray(combine_windows(group, np.zeros((0, XYZZ_U64[group]), np.uint64), 1, cp.asnumpy(row))).reshape(-1)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per call of the rounds ones' sum (msm_rounds.sum_equal), which still runs."""
    from kernels.cuda import msm_rounds

    seen: list[int] = []
    real = msm_rounds.sum_equal

    def counted(*a: Any, **kw: Any) -> Any:
        seen.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(msm_rounds, "sum_equal", counted)
    return seen


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_sum_list_rounds_equals_xyzz_and_arkworks(group: str, monkeypatch: pytest.MonkeyPatch,
                                                  calls: list[int]) -> None:
    import cupy as cp

    from kernels.cuda import msm, msm_rounds

    monkeypatch.setitem(msm_rounds.ONES_MIN, group, 0)  # rounds at every size
    rng = random.Random()
    npts = 300 if group == "g1" else 60
    pts = T.random_points(group, npts, rng)
    pts[-1] = -pts[0]
    pts[-2] = T._group(group).identity()  # noqa: SLF001 (the point at infinity)
    P = cp.asarray(T.ark_to_words(group, pts))
    big = 2000 if group == "g1" else 400
    sizes = [0, 1, 7, 8, 9, rng.randrange(10, big), big]
    for m in sizes:
        idx_h = [rng.randrange(npts) for _ in range(m)]
        if m >= 3:
            idx_h[:3] = [0, npts - 1, npts - 2]  # P, -P, infinity
        if m >= 6:
            idx_h[3:6] = [5, 5, 5]
        idx = cp.asarray(np.array(idx_h + [0], np.uint32))  # one spare word, as _split_list allocates
        s = T._group(group).identity()  # noqa: SLF001
        for i in idx_h:
            s = s + pts[i]
        want = T.ark_to_words(group, [s])[0]
        xyzz = _affine(group, msm.sum_list(group, P, idx, m, "xyzz"))
        assert np.array_equal(xyzz, want), m
        for how in ("rounds", "rounds-l8", "rounds-l3-g3-s2", "rounds3-l5"):
            before = len(calls)
            got = _affine(group, msm.sum_list(group, P, idx, m, how))
            assert np.array_equal(got, want), (m, how)
            assert len(calls) == before + (m > 0)
        if m >= 2:
            idx[m - 1] = (idx_h[m - 1] + 1) % (npts - 2)  # negative case: another index, another sum
            assert not np.array_equal(_affine(group, msm.sum_list(group, P, idx, m, "rounds")), want)


@pytest.mark.parametrize(("group", "n"), [("g1", 5000), ("g2", 700)])
def test_msm_with_ones_by_rounds(group: str, n: int, monkeypatch: pytest.MonkeyPatch, calls: list[int]) -> None:
    """Witness-like scalars (about half 0, half 1, a few general values): msm(ones_acc="rounds")
    is arkworks' MSM; the floor keeps XYZZ for a small list unless lowered."""
    import cupy as cp

    from kernels.constants import R_MOD
    from kernels.cuda import msm, msm_rounds

    rng = random.Random()
    pts = T.random_points(group, n, rng)
    sc = [rng.randrange(2, R_MOD) if rng.random() < 0.01 else rng.choice([0, 1]) for _ in range(n)]
    T.plant_edges(pts, sc, group, rng)
    P, S = cp.asarray(T.ark_to_words(group, pts)), cp.asarray(T.fr_words(sc))
    want = T.ark_msm(group, pts, sc)
    assert np.array_equal(cp.asnumpy(msm.msm(group, P, S, ones="list", ones_acc="rounds"))[0], want)
    assert not calls  # below ONES_MIN: XYZZ
    monkeypatch.setitem(msm_rounds.ONES_MIN, group, 0)
    assert np.array_equal(cp.asnumpy(msm.msm(group, P, S, ones="list", ones_acc="rounds"))[0], want)
    assert calls
    monkeypatch.setattr(msm, "ONES_ACC", "rounds-l9")  # the process-wide setting
    assert np.array_equal(cp.asnumpy(msm.msm(group, P, S, ones="list"))[0], want)
    with pytest.raises(ValueError, match="ones accumulation"):
        msm.msm(group, P, S, ones_acc="affine")
    sc[0] = 12345
    assert not np.array_equal(cp.asnumpy(msm.msm(group, P, cp.asarray(T.fr_words(sc)), ones="list"))[0], want)


@pytest.mark.parametrize(("group", "log_m"), [("g1", 22), ("g2", 20)])
def test_large_list_equals_xyzz(group: str, log_m: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """2^22 (G1) / 2^20 (G2) ones, scattered over twice as many distinct device points, at the
    default item length (the floor lowered): the rounds sum is the XYZZ sum."""
    import cupy as cp

    from kernels.cuda import msm, msm_rounds
    from kernels.cuda.bench import distinct_points_device

    monkeypatch.setitem(msm_rounds.ONES_MIN, group, 0)
    m = (1 << log_m) + random.randrange(1, 1000)
    P = distinct_points_device(group, 2 * m)
    idx = cp.sort(cp.random.permutation(2 * m)[:m]).astype(cp.uint32)
    a = _affine(group, msm.sum_list(group, P, idx, m, "xyzz"))
    assert np.array_equal(_affine(group, msm.sum_list(group, P, idx, m, "rounds")), a) and a.any()
    assert np.array_equal(_affine(group, msm.sum_list(group, P, idx, m, "rounds-l16")), a)
    assert not np.array_equal(_affine(group, msm.sum_list(group, P, idx, m - 1, "rounds")), a)
