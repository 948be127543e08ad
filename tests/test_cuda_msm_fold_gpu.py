"""The multi-item buckets summed before the window slices (kernels/cuda/msm_fold.py) on the GPU: the
GLV-split MSM sorted into runs (the fold path), with the prefold on and off, under each
accumulation, the same point as arkworks (planted edges) and as (sum k_i s_i) G over known
discrete logarithms at 2^20 scalars, where the top window (1,379 buckets of ~1,520 entries at
c = 13) is cut into several items as H's is at porep-32g."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.constants import R_MOD
from kernels.cuda import testing as T

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]
MODES = ["xyzz", "rounds", "rounds3"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("item_len", [None, 8])
def test_fold_matches_arkworks(mode: str, item_len: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """3000 points with planted edges, GLV split, window 10 (full-window buckets ~12 entries, the
    top window's 173 ~35): with items of 8 every window's buckets are cut in several, with the
    default length some are; folded or not, the point is arkworks'."""
    import cupy as cp

    from kernels.cuda import msm, msm_fold

    monkeypatch.setattr(msm, "SORT_BY_WINDOW_BUCKETS", 0)  # the runs scatter is a per-window pass
    rng = random.Random()
    n = 3000
    pts = T.random_points("g1", n, rng)
    sc = T.random_scalars(n, rng)
    T.plant_edges(pts, sc, "g1", rng)
    ext = msm.endo_table(cp.asarray(T.ark_to_words("g1", pts)))
    S = cp.asarray(T.fr_words(sc))
    want = T.ark_msm("g1", pts, sc)
    for prefold in (True, False):
        monkeypatch.setattr(msm_fold, "PREFOLD", prefold)
        st = msm.MsmStats()
        got = cp.asnumpy(msm.msm("g1", ext[:n], S, endo=ext, glv=True, window=10, item_len=item_len, accumulate=mode,
                                 sort_runs=True, stats=st))[0]
        assert st.sort in ("runs", "runs2") and st.accumulate == mode
        assert (st.folded > 0) == prefold, (prefold, st.folded)
        assert np.array_equal(got, want), (mode, item_len, prefold)
    # a wrong scalar gives another point (the comparison can fail)
    sc[7] = (sc[7] + 1) % R_MOD
    assert not np.array_equal(cp.asnumpy(msm.msm("g1", ext[:n], cp.asarray(T.fr_words(sc)), endo=ext, glv=True, window=10,
                                                 accumulate=mode, sort_runs=True))[0], want)


def test_fold_at_scale_against_known_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """2^20 points k_i G and random scalars, GLV split (2^21 entries), window 13, sorted into runs:
    xyzz (items of 104: full buckets ~5 items, top ~15) and rounds (items of 558: 1-2 and 3), the
    prefold on (stats count the buckets folded) and off, all (sum k_i s_i mod r) G."""
    import cupy as cp

    from kernels.cuda import msm, msm_fold

    monkeypatch.setattr(msm, "SORT_BY_WINDOW_BUCKETS", 0)
    n = 1 << 20
    pts, s_dev, want = T.known_logs_case(n)
    ext = msm.endo_table(pts)
    for mode in ("xyzz", "rounds"):
        for prefold in (True, False):
            monkeypatch.setattr(msm_fold, "PREFOLD", prefold)
            st = msm.MsmStats()
            got = cp.asnumpy(msm.msm("g1", ext[:n], s_dev, endo=ext, glv=True, window=13, accumulate=mode, sort_runs=True,
                                     stats=st))[0]
            assert st.sort in ("runs", "runs2") and st.accumulate == mode and st.window == 13
            # every top-window bucket (1,379 of ~1,520 entries) has several items in both modes
            assert (st.folded >= 1300) == prefold, (mode, prefold, st.folded)
            assert np.array_equal(got, want), (mode, prefold)


@pytest.mark.parametrize("window", [6, 11])
def test_fold_after_the_exact_sort_matches_arkworks(window: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """msm.FOLD_EXACT: the exact counting sort (no runs), no heavy bucket, the window slices
    summing each bucket's items; 4000 points with planted edges and items of 4 (window 6: ~125
    entries a bucket, ~31 items; window 11: ~4 entries, 1-2 items), HEAVY_ITEMS lifted so that no
    bucket is heavy, folded first or not: arkworks' point, and another point for a changed scalar."""
    import cupy as cp

    from kernels.cuda import msm, msm_fold

    monkeypatch.setattr(msm, "FOLD_EXACT", True)
    monkeypatch.setattr(msm, "HEAVY_ITEMS", 1 << 20)  # no bucket is heavy, whatever its items
    rng = random.Random()
    n = 4000
    pts = T.random_points("g1", n, rng)
    sc = T.random_scalars(n, rng)
    T.plant_edges(pts, sc, "g1", rng)
    P = cp.asarray(T.ark_to_words("g1", pts))
    want = T.ark_msm("g1", pts, sc)
    for prefold in (True, False):
        monkeypatch.setattr(msm_fold, "PREFOLD", prefold)
        st = msm.MsmStats()
        got = cp.asnumpy(msm.msm("g1", P, cp.asarray(T.fr_words(sc)), window=window, item_len=4, sort_runs=False,
                                 stats=st))[0]
        assert st.sort == "exact" and st.window == window
        assert (st.folded > 0) == prefold, (prefold, st.folded)
        assert np.array_equal(got, want), (window, prefold)
    sc[11] = (sc[11] + 1) % R_MOD
    assert not np.array_equal(cp.asnumpy(msm.msm("g1", P, cp.asarray(T.fr_words(sc)), window=window, item_len=4))[0], want)


# (log2 size, sort, item length, fewest folded buckets: ~2.7 % of 2^23's 12 x 2^19 buckets of mean 16
# hold more than 24 entries, plus the top window's 2^14; ~45 % of 2^24's, of mean 32, more than 32)
@pytest.mark.parametrize("lg, sort, length, folded", [(23, "exact", 24, 1 << 17), (24, "runs2", 32, 1 << 20)])
def test_g1_mid_sizes_take_window_20_rounds_folded_and_match_known_logs(lg: int, sort: str, length: int,
                                                                        folded: int) -> None:
    """msm_layout's G1 plan at 2^23 and 2^24 scalars: window 20 by default, at 2^24 the two-pass
    sort into runs (allowed MID_RUNS_SLACK times the exact sort's memory; at 2^23 they do not fit
    it: the exact sort), the rounds in items of a bucket's mean count (at least 24; many buckets
    cut in two, summed by the prefold), no bucket-sum pass (the window slices sum the items, in
    two levels), and the point (sum k_i s_i) G over known discrete logarithms; a changed scalar
    gives another point."""
    import cupy as cp

    from kernels.cuda import msm

    n = 1 << lg
    pts, s_dev, want = T.known_logs_case(n)
    st = msm.MsmStats()
    got = cp.asnumpy(msm.msm("g1", pts, s_dev, stats=st))[0]
    assert st.window == 20 and st.sort == sort and st.accumulate == f"rounds-l{length}" and st.item_len == length
    assert st.folded > folded, st.folded
    assert "bucket_sum" not in st.extra and "window_reduce" in st.extra, st.extra
    assert np.array_equal(got, want)
    s_dev[5] = s_dev[6]
    assert not np.array_equal(cp.asnumpy(msm.msm("g1", pts, s_dev))[0], want)
