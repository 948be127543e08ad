"""The window reduction in two levels (msm_tree.SLICE_LEVELS = 2, kernels/cuda/msm/slices.cuh) on
the GPU: G1 and G2 MSMs whose windows have enough slices for it (13-bit windows: 256 slices a
window) give arkworks' result and the one
level's, with the ends inline and beside; a changed scalar changes the result."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.cuda import testing as T

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


@pytest.mark.parametrize("group,n", [("g1", 1 << 15), ("g2", 1 << 13)])
def test_two_levels_equal_one_level_and_arkworks(monkeypatch: pytest.MonkeyPatch, group: str, n: int) -> None:
    import cupy as cp

    from kernels.cuda import msm, msm_ends, msm_tree

    rng = random.Random()
    pts = T.random_points(group, n, rng)
    sc = T.random_scalars(n, rng)
    T.plant_edges(pts, sc, group, rng)
    P, S = cp.asarray(T.ark_to_words(group, pts)), cp.asarray(T.fr_words(sc))
    want = T.ark_msm(group, pts, sc)
    st = msm.MsmStats()
    one = cp.asnumpy(msm.msm(group, P, S, window=13, stats=st))[0]
    half = 1 << (st.window - 1)
    assert half // msm_tree.slice_len(st.window) >= 2 * msm_tree.LEVEL2_LEN  # two levels apply
    monkeypatch.setattr(msm_tree, "SLICE_LEVELS", 2)
    two = cp.asnumpy(msm.msm(group, P, S, window=13))[0]
    ends = msm_ends.Ends()
    beside = msm.msm(group, P, S, window=13, ends=ends)
    held = ends.join()
    two_beside = cp.asnumpy(beside)[0]
    del held
    assert np.array_equal(one, want) and np.array_equal(two, want) and np.array_equal(two_beside, want)
    sc[rng.randrange(n)] ^= 1 << rng.randrange(200)
    changed = cp.asnumpy(msm.msm(group, P, cp.asarray(T.fr_words(sc)), window=13))[0]
    assert not np.array_equal(changed, want)
