"""The sort into fixed runs in two passes (kernels/cuda/msm_sort2.py, msm/sort2.cuh) on the GPU:
the MSM with it forced gives the one-pass sort's point and arkworks' (G1 plain and GLV-split, the
overflow fallback included), and, kernel against kernel, the runs hold the same multisets of
entries and count[] is identical to msm_scatter_runs_w's, at H's window (22 bits: 256 coarse
bins of 8192 buckets) and at 20 bits."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.constants import R_MOD
from kernels.cuda import testing as T

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _unbounded_runs(m: int, c: int, nwin: int, bound: int, slack: float = 2.0
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """msm.bucket_runs' layout without its memory bound, so that small MSMs take wide windows."""
    from kernels.cuda import msm_layout

    return msm_layout.bucket_runs(m, c, nwin, bound, float("inf"))


@pytest.mark.parametrize("glv,window", [(False, None), (False, 12), (False, 16), (True, None), (True, 22)])
def test_msm_two_pass_matches_one_pass_and_arkworks(monkeypatch: pytest.MonkeyPatch, glv: bool, window: int | None) -> None:
    import cupy as cp

    from kernels.cuda import msm

    monkeypatch.setattr(msm, "SORT_BY_WINDOW_BUCKETS", 0)  # the runs sorts are per-window passes
    monkeypatch.setattr(msm, "bucket_runs", _unbounded_runs)  # runs at every window, even at this size
    rng = random.Random()
    n = 3000
    pts = T.random_points("g1", n, rng)
    sc = T.random_scalars(n, rng)
    sc[:3] = [R_MOD - 1, R_MOD - 2, 5]  # the top window's largest raw values
    ext = msm.endo_table(cp.asarray(T.ark_to_words("g1", pts)))
    S = cp.asarray(T.fr_words(sc))
    kw: dict[str, Any] = {"endo": ext, "glv": True} if glv else {}
    want = T.ark_msm("g1", pts, sc)
    for two, tag in ((True, "runs2"), (False, "runs")):
        st = msm.MsmStats()
        got = msm.msm("g1", ext[:n], S, window=window, sort_runs=True, sort_two_pass=two, stats=st, **kw).get()[0]
        assert st.sort == tag
        assert np.array_equal(got, want)
    crowd = [123456789] * 2000 + sc[:1000]  # 2000 equal low digits: window 0's run overflows
    st = msm.MsmStats()
    got = msm.msm("g1", ext[:n], cp.asarray(T.fr_words(crowd)), window=window, sort_runs=True, sort_two_pass=True,
                  stats=st, **kw).get()[0]
    assert st.sort == "runs2 overflowed, exact"
    assert np.array_equal(got, T.ark_msm("g1", pts, crowd))


def _random_canon(m: int, bits: int) -> Any:
    """m random canonical integers below 2^bits (uint64[m, 4]) on the device."""
    import cupy as cp

    x = cp.random.randint(0, 2**62, size=(m, 4), dtype=cp.int64).view(cp.uint64)
    x = (x << np.uint64(2)) | cp.random.randint(0, 4, size=(m, 4), dtype=cp.int64).view(cp.uint64)
    for k in range(4):  # clear the bits at and above `bits`
        lo = 64 * k
        if bits <= lo:
            x[:, k] = 0
        elif bits < lo + 64:
            x[:, k] &= np.uint64((1 << (bits - lo)) - 1)
    return x


def _sort_both(canon: Any, idx: Any, m: int, c: int, lay: tuple[np.ndarray, np.ndarray, np.ndarray, int], windows: int = 2,
               place: str | None = None) -> tuple[tuple[Any, Any, int], tuple[Any, Any, int]]:
    """(count, sorted, overflow) of the one-pass kernel and of the two passes (pass 1 for
    ``windows`` windows at a time, pass 2 in the form ``place``), same inputs."""
    import cupy as cp

    from kernels.cuda import msm, msm_sort2
    from kernels.cuda.module import kernel

    wbase, wcap, wnb, total = lay
    nwin, half = len(wnb), 1 << (c - 1)
    idx_arg = idx if idx is not None else np.uint64(0)
    out = []
    for two in (False, True):
        count = cp.zeros(nwin * half, dtype=cp.uint32)
        sorted_ = cp.full(total, 0xFFFFFFFF, dtype=cp.uint32)
        over = cp.zeros(1, dtype=cp.uint32)
        if two:
            assert msm_sort2.scatter_runs(canon, idx_arg, m, c, wbase, wcap, wnb, count, sorted_, over, windows=windows,
                                          place=place)
        else:
            grid = (-(-m // (256 * msm.SORT_PER_THREAD)), nwin)
            kernel("msm_g1", "msm_scatter_runs_w")(grid, (256,), (canon, idx_arg, np.uint32(m), np.int32(c), cp.asarray(wbase),
                                                                 cp.asarray(wcap), cp.asarray(wnb), count, sorted_, over))
        out.append((count, sorted_, int(over.get()[0])))
    return out[0], out[1]


def _run_sets(count: Any, sorted_: Any, c: int, lay: tuple[np.ndarray, np.ndarray, np.ndarray, int]) -> list[Any]:
    """Per window: its runs as rows, each row's entries sorted and the unused slots all ones."""
    import cupy as cp

    wbase, wcap, wnb, _ = lay
    half = 1 << (c - 1)
    rows = []
    for w in range(len(wnb)):
        nb, cap, base = int(wnb[w]), int(wcap[w]), int(wbase[w])
        runs = sorted_[base:base + nb * cap].reshape(nb, cap)
        used = cp.arange(cap, dtype=cp.uint32)[None, :] < count[w * half:w * half + nb][:, None]
        rows.append(cp.sort(cp.where(used, runs, np.uint32(0xFFFFFFFF)), axis=1))
    return rows


@pytest.mark.parametrize("place", ["flat", "bins"])
@pytest.mark.parametrize("c,bits,m,with_idx,windows", [(22, 127, 1 << 22, False, 2), (22, 127, 3 << 20, True, 1),
                                                      (20, 254, 1 << 21, False, 3)])
def test_kernels_same_runs_and_counts(c: int, bits: int, m: int, with_idx: bool, windows: int, place: str) -> None:
    """Random scalars below 2^bits (GLV-like halves of 127 bits, or 254 < log2 r), the largest
    among them; a tail that ends mid-tile; an index list that skips and repeats; pass 1 for 1, 2
    or 3 windows at a time (3 does not divide 13); either form of pass 2: identical
    count[], the same entries in every run. The runs are sized for 2^bits - 1 (sized for a
    larger bound, the top window's buckets would get more than their mean)."""
    import cupy as cp

    from kernels.cuda.glv import GLV_BITS

    rows = m + 777
    canon = _random_canon(rows, bits)
    bound = (1 << bits) - 1
    canon[0] = cp.asarray(np.frombuffer(bound.to_bytes(32, "little"), "<u8").copy())
    idx = cp.random.randint(0, rows, size=m, dtype=cp.int64).astype(cp.uint32) if with_idx else None
    n_entries = m if with_idx else rows
    nwin = -(-(GLV_BITS if bits == 127 else 256) // c)
    lay = _unbounded_runs(n_entries, c, nwin, bound)
    (c1, s1, o1), (c2, s2, o2) = _sort_both(canon, idx, n_entries, c, lay, windows, place)
    assert o1 == 0 and o2 == 0
    assert bool(cp.array_equal(c1, c2))
    assert int(c1.sum()) > n_entries * (nwin - 1)  # digits in every window (few zeros)
    r1, r2 = _run_sets(c1, s1, c, lay), _run_sets(c2, s2, c, lay)
    assert all(bool(cp.array_equal(a, b)) for a, b in zip(r1, r2))
    # the comparison sees a wrong entry: one sign flipped in a run of the two-pass sort
    w, g = 0, int(cp.flatnonzero(c2[: 1 << (c - 1)])[0])
    s2[int(lay[0][w]) + g * int(lay[1][w])] ^= np.uint32(1 << 31)
    assert not all(bool(cp.array_equal(a, b)) for a, b in zip(r1, _run_sets(c2, s2, c, lay)))


@pytest.mark.parametrize("place", ["flat", "bins"])
def test_kernels_overflow_counts_whole(place: str) -> None:
    """A crowded bucket: both flag overflow and count[] is the whole histogram either way (the
    exact sort reads it)."""
    import cupy as cp

    c, m = 22, 1 << 20
    canon = _random_canon(m, 128)
    canon[:5000] = canon[0]
    lay = _unbounded_runs(m, c, 6, 1 << 128)
    (c1, _, o1), (c2, _, o2) = _sort_both(canon, None, m, c, lay, place=place)
    assert o1 == 1 and o2 == 1
    assert bool(cp.array_equal(c1, c2))
