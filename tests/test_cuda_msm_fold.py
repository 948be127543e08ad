"""msm_fold (the multi-item buckets summed before the window slices), run without a GPU: numpy for
CuPy, the fold_groups kernel as a sum of integer rows (the slices only add rows, so integers
model them), against a Python model of the buckets' item rows; and the fold decision at H's
porep-32g sizes for both accumulations."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from kernels.cuda import msm, msm_fold, msm_layout, msm_rounds
from kernels.cuda.glv import GLV_BOUND


class _FakeCp:
    """The numpy calls msm_fold makes, under CuPy's names."""

    uint32, uint64, int64 = np.uint32, np.uint64, np.int64
    flatnonzero = staticmethod(np.flatnonzero)

    @staticmethod
    def empty(shape: Any, dtype: Any) -> np.ndarray:
        return np.full(shape, 0xDEAD, dtype=dtype)  # garbage, as the device's pool


def _fake_kernel(module: str, name: str) -> Any:
    assert module == "msm_g1" and name == "g1_fold_groups"

    def launch(grid: Any, block: Any, args: Any) -> None:
        rows, bucket, start, length, n, count = args
        assert grid[0] * block[0] >= int(n)
        for g in range(int(n)):  # wrapping uint64 sums of whole rows, in place
            s = int(start[g])
            rows[s] = rows[s: s + int(length[g])].sum(axis=0, dtype=np.uint64)
            count[int(bucket[g])] = 1

    return launch


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(msm_fold, "_cp", lambda: _FakeCp)
    monkeypatch.setattr(msm_fold, "kernel", _fake_kernel)


def _layout(rng: np.random.Generator, nb: int, L: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """count, nitems, item_off (as msm.py derives them) and random XYZZ-shaped rows; counts from
    0 up to several items' worth, some exactly L and 2L."""
    count = rng.integers(0, 5 * L, nb).astype(np.uint32)
    count[rng.integers(0, nb, 3)] = 0
    count[rng.integers(0, nb, 3)] = L
    count[rng.integers(0, nb, 3)] = 2 * L
    count[rng.integers(0, nb, 3)] = L + 1
    nitems = (count + np.uint32(L - 1)) // np.uint32(L)
    item_off = (np.cumsum(nitems, dtype=np.uint32) - nitems).astype(np.uint32)
    rows = rng.integers(0, 1 << 63, (max(1, int(nitems.sum())), 24), dtype=np.uint64)
    return count, nitems, item_off, rows


def _slice_reads(rows: np.ndarray, count: np.ndarray, item_off: np.ndarray, L: int) -> list[tuple[int, ...]]:
    """What msm_core.cuh segments adds for each bucket: its ceil(count / L) rows from item_off."""
    out = []
    for b in range(count.size):
        k = -(-int(count[b]) // L)
        s = rows[int(item_off[b]): int(item_off[b]) + k].sum(axis=0, dtype=np.uint64)
        out.append(tuple(int(x) for x in s))
    return out


@pytest.mark.parametrize("L", [1, 8, 151])
def test_fold_keeps_every_bucket_sum(fake: None, L: int) -> None:
    rng = np.random.default_rng()
    nb = int(rng.integers(50, 400))
    count, nitems, item_off, rows = _layout(rng, nb, L)
    want = _slice_reads(rows, count, item_off, L)
    plan = msm_fold.multi_item_plan(nitems, item_off)
    model = [b for b in range(nb) if math.ceil(int(count[b]) / L) > 1]
    assert [int(b) for b in plan[0]] == model
    assert [int(x) for x in plan[1]] == [int(item_off[b]) for b in model]
    assert [int(x) for x in plan[2]] == [math.ceil(int(count[b]) / L) for b in model]
    assert all(x.dtype == np.uint32 for x in plan)
    before = rows.copy()
    n = msm_fold.fold_items("g1", rows, count, plan)
    assert n == len(model) > 0
    assert all(-(-int(c) // L) <= 1 for c in count)  # every bucket one row now
    assert _slice_reads(rows, count, item_off, L) == want
    # rows other than the folded buckets' first ones are untouched
    firsts = {int(item_off[b]) for b in model}
    assert all(np.array_equal(rows[i], before[i]) for i in range(rows.shape[0]) if i not in firsts)


def test_fold_without_count_reset_is_caught(fake: None) -> None:
    """The model sees a fold that sums but leaves the counts: the rest of the items are added twice."""
    rng = np.random.default_rng()
    L = 8
    count, nitems, item_off, rows = _layout(rng, 100, L)
    want = _slice_reads(rows, count, item_off, L)
    plan = msm_fold.multi_item_plan(nitems, item_off)
    kept = count.copy()
    msm_fold.fold_items("g1", rows, count, plan)
    assert _slice_reads(rows, kept, item_off, L) != want
    assert _slice_reads(rows, count, item_off, L) == want


def test_nothing_to_fold(fake: None) -> None:
    count = np.array([0, 3, 8, 1], dtype=np.uint32)
    nitems = (count + np.uint32(7)) // np.uint32(8)
    item_off = (np.cumsum(nitems, dtype=np.uint32) - nitems).astype(np.uint32)
    rows = np.arange(3 * 24, dtype=np.uint64).reshape(3, 24)
    plan = msm_fold.multi_item_plan(nitems, item_off)
    assert plan[0].size == 0
    assert msm_fold.fold_items("g1", rows, count, plan) == 0
    assert np.array_equal(rows, np.arange(3 * 24, dtype=np.uint64).reshape(3, 24))


@pytest.mark.parametrize("how", ["xyzz", "rounds"])
def test_h_at_porep_32g_takes_the_fold(how: str) -> None:
    """2^28 GLV entries at c = 22: the runs (234 entries; the top window's 1,849) stay under
    FOLD_ITEMS items with either item length (256, 151), so the slices sum the items (the fold)
    and the top window's buckets are the ones cut into several items."""
    m, c = 1 << 28, 22
    nwin, half = -(-129 // c), 1 << (c - 1)
    runs = msm_layout.bucket_runs(m, c, nwin, GLV_BOUND)
    assert runs is not None
    wcap, wnb = runs[1], runs[2]
    L = msm.item_length(m, nwin, half) if how == "xyzz" else msm_rounds.item_length(m, half)
    assert L == {"xyzz": 256, "rounds": 151}[how]
    assert -(-int(wcap.max()) // L) <= msm.FOLD_ITEMS
    assert int(wnb[-1]) == 176407 and -(-(m // int(wnb[-1])) // L) == {"xyzz": 6, "rounds": 11}[how]
