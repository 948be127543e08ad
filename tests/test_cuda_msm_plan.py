"""The MSM's host-side plan (window width, work-item length, the segmented reduction's index
arithmetic), checked without a GPU against brute force."""

from __future__ import annotations

import random

import numpy as np

from kernels.cuda import msm, msm_layout, msm_tree


def test_top_window_bits_matches_counting() -> None:
    for c in range(4, 24):
        nwin = -(-256 // c)
        assert nwin * c >= 256 > (nwin - 1) * c
        # the scalar bit positions (0..254) that fall in the last window
        assert msm_layout.top_window_bits(c) == sum(1 for i in range(255) if i // c == nwin - 1)


def test_default_window_avoids_tiny_top_windows() -> None:
    for lg in range(8, 30):
        m = (1 << lg) + random.randrange(1 << (lg - 1))
        c = msm_layout.default_window(m, "g1")
        if lg >= msm_layout.LARGE_LOG:
            assert c == msm_layout.LARGE_WINDOW
        elif lg >= msm_layout.MID_LOG:
            assert c == msm_layout.MID_WINDOW and msm_layout.mid_plan(m, "g1")
            assert not msm_layout.mid_plan(m, "g2") and msm_layout.default_window(m, "g2") <= msm_layout.MAX_WINDOW
        else:
            assert 4 <= c <= msm_layout.MAX_WINDOW
            # a window whose last digit keeps fewer than c/2 bits is chosen only when every
            # candidate near log2(m) - 4 has one
            c0 = max(4, min(msm_layout.MAX_WINDOW, lg - 4))
            near = range(max(4, c0 - 3), min(msm_layout.MAX_WINDOW, c0 + 2) + 1)
            if any(msm_layout.top_window_bits(k) >= k // 2 for k in near):
                assert msm_layout.top_window_bits(c) >= c // 2, (lg, c)
        assert msm_layout.top_window_bits(c) >= c // 2 or lg < 11, (lg, c)
    assert msm_layout.default_window(1 << 22, "g1") != 14  # 14 leaves 3 bits at the top
    assert msm_layout.default_window(0, "g1") >= 4


def test_item_length_bounds() -> None:
    for _ in range(200):
        m = random.randrange(1, 1 << 28)
        c = random.randrange(4, 21)
        nwin, half = -(-256 // c), 1 << (c - 1)
        L = msm.item_length(m, nwin, half)
        assert L >= 8
        assert L <= max(8, 2 * -(-m // half))
        if L > 8 and L < 2 * -(-m // half):
            # then L was set by filling the card: between half of TARGET_ITEMS and all of it
            assert msm.TARGET_ITEMS // 2 <= -(-(m * nwin) // L) <= msm.TARGET_ITEMS


def test_reduce_segments_index_arithmetic(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """reduce_segments' level-by-level grouping, run on integers instead of points."""

    class FakeCp:
        uint64 = np.uint64

        @staticmethod
        def empty(shape, dtype):  # type: ignore[no-untyped-def]
            return np.zeros(shape[0], dtype=np.int64)

        @staticmethod
        def asarray(a):  # type: ignore[no-untyped-def]
            return np.asarray(a)

    def fake_kernel(module: str, name: str):  # type: ignore[no-untyped-def]
        assert name.endswith("_reduce_groups")

        def launch(grid, block, args):  # type: ignore[no-untyped-def]
            arr, gs, gl, ng, out = args
            assert int(gl.max(initial=0)) <= msm_tree.FAN
            for g in range(int(ng)):
                out[g] = arr[gs[g] : gs[g] + gl[g]].sum()

        return launch

    monkeypatch.setattr(msm_tree, "_cp", lambda: FakeCp)
    monkeypatch.setattr(msm_tree, "kernel", fake_kernel)
    rng = np.random.default_rng()
    for _ in range(50):
        n = int(rng.integers(1, 5000))
        arr = rng.integers(0, 1 << 20, n)
        k = int(rng.integers(1, 30))
        starts = rng.integers(0, n, k)
        lens = np.minimum(rng.integers(0, 3000, k), n - starts)
        got = msm_tree.reduce_segments("g1", arr, starts, lens)
        want = [int(arr[a : a + b].sum()) for a, b in zip(starts, lens)]
        assert [int(x) for x in got] == want
    # a wrong grouping would be caught: one segment off by one element
    got = msm_tree.reduce_segments("g1", np.arange(100), np.array([10]), np.array([50]))
    assert int(got[0]) == sum(range(10, 60)) != sum(range(10, 61))


def test_rounds_length_follows_the_buckets_mean_within_its_bounds() -> None:
    """Items of a bucket's mean count, clamped to ROUNDS_LEN, for G1 tails from 2^23 to 2^26
    scalars only (the sizes it was timed at): 24, 32, 64 and 128 entries at window 20's 2^19 buckets."""
    half = 1 << 19
    assert [msm_layout.rounds_length(1 << lg, half, "g1") for lg in (23, 24, 25, 26)] == [24, 32, 64, 128]
    lo, hi = msm_layout.ROUNDS_LEN
    for _ in range(100):
        lg = random.randint(msm_layout.ROUNDS_LOGS[0], msm_layout.ROUNDS_LOGS[1])
        m = (1 << lg) + random.randrange(1 << lg)
        L = msm_layout.rounds_length(m, half, "g1")
        assert L is not None and lo <= L <= hi
        assert L == lo or L == hi or abs(L - m / half) <= 0.5
    assert msm_layout.rounds_length(1 << 25, half, "g2") is None
    assert msm_layout.rounds_length((1 << 23) - 1, half, "g1") is None
    assert msm_layout.rounds_length(1 << 27, half, "g1") is None

