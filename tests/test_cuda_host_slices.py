"""The window slices (kernels/cuda/msm/slices.cuh), built for the host and played as loops over
their threads in three orders: one level, and the two levels of msm.py's SLICE_LEVELS = 2 (the
slices' T and S apart, then the S's weighted by their index and scaled by the slice length),
give each window's sum_b (b + 1) bucket[b] as arkworks computes it, buckets at infinity and
buckets of several work items included; a level-2 pass with the wrong weights does not."""

from __future__ import annotations

import ctypes
import random
from typing import Any

import numpy as np
import pytest
from host_build import BUILDS, host_library, needs_cxx, ptx_flag
from oracle import ark_g1

from kernels.constants import P_MOD
from kernels.cpu.convert import from_mont_fp, to_mont_fp
from kernels.cuda import testing as T

pytestmark = needs_cxx
WORDS = 48  # an XYZZ G1 row in 32-bit words
SPLIT, FROM0 = 1, 2


@pytest.fixture(scope="module", params=BUILDS)
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return host_library(tmp_path_factory, "msm/host_slices.cpp", "-O1", ptx_flag(request.param))


def _xyzz_rows(pts: list[Any]) -> np.ndarray:
    """Affine arkworks points as XYZZ rows (ZZ = ZZZ = 1; infinity all zeros), uint32."""
    aff = T.ark_to_words("g1", pts).reshape(-1, 2, 6)  # Montgomery x, y
    one = to_mont_fp([1])[0]
    rows = np.zeros((len(pts), 4, 6), np.uint64)
    rows[:, :2] = aff
    live = aff.any(axis=(1, 2))
    rows[live, 2] = one
    rows[live, 3] = one
    return rows.reshape(len(pts), 24).view(np.uint32).copy()


def _affine(row: np.ndarray) -> tuple[int, int] | None:
    X, Y, ZZ, ZZZ = from_mont_fp(row.view(np.uint64).reshape(4, 6))
    if ZZ == 0:
        return None
    return X * pow(ZZ, -1, P_MOD) % P_MOD, Y * pow(ZZZ, -1, P_MOD) % P_MOD


def _add(p: tuple[int, int] | None, q: tuple[int, int] | None) -> tuple[int, int] | None:
    """Affine addition on y^2 = x^3 + 4 over Fp, in Python integers (None: infinity)."""
    if p is None or q is None:
        return q if p is None else p
    (x1, y1), (x2, y2) = p, q
    if x1 == x2:
        if (y1 + y2) % P_MOD == 0:
            return None
        lam = 3 * x1 * x1 * pow(2 * y1, -1, P_MOD) % P_MOD
    else:
        lam = (y2 - y1) * pow(x2 - x1, -1, P_MOD) % P_MOD
    x3 = (lam * lam - x1 - x2) % P_MOD
    return x3, (lam * (x1 - x3) - y1) % P_MOD


def _sum_rows(rows: np.ndarray) -> tuple[int, int] | None:
    s = None
    for r in rows:
        s = _add(s, _affine(r))
    return s


def _call(lib: ctypes.CDLL, nthreads: int, order: int, rows: np.ndarray, count: np.ndarray | None,
          item_off: np.ndarray | None, L: int, half: int, nseg: int, flags: int, scale: int, ostride: int,
          out: np.ndarray, out_s: np.ndarray | None) -> None:
    p = ctypes.c_void_p
    u = ctypes.c_uint32
    lib.host_g1_slices(u(nthreads), ctypes.c_int(order), p(rows.ctypes.data),
                       p(count.ctypes.data if count is not None else None),
                       p(item_off.ctypes.data if item_off is not None else None), u(L), u(half), u(nseg), u(flags),
                       u(scale), u(ostride), p(out.ctypes.data), p(out_s.ctypes.data if out_s is not None else None))


@pytest.mark.parametrize("items", [False, True])
def test_one_and_two_levels_give_each_windows_weighted_sum(lib: ctypes.CDLL, items: bool) -> None:
    ark = pytest.importorskip("py_arkworks_bls12381")
    rng = random.Random()
    nwin, half, len1, len2 = 2, 64, 8, 4
    nseg, nseg2 = half // len1, (half // len1) // len2
    nb = nwin * half
    pts = T.random_points("g1", nb, rng)
    for b in rng.sample(range(8, nb), 9):  # empty buckets
        pts[b] = ark.G1Point.identity()
    # the first slice's running sum meets a bucket with its x: X + X (a doubling), then 2X - 2X
    pts[7] = pts[6] = T.random_points("g1", 1, rng)[0]
    pts[5] = -(pts[6] + pts[6])
    want = []
    for w in range(nwin):
        s = ark.G1Point.identity()
        for b in range(half):
            s = s + pts[w * half + b] * ark.Scalar(b + 1)
        want.append(ark_g1(s))
    if items:  # each bucket as 1-3 work items' rows (L = 4 entries an item), summing to its point
        count = np.array([rng.randrange(1, 13) for _ in range(nb)], np.uint32)
        k = (count + 3) // 4
        item_off = (np.cumsum(k) - k).astype(np.uint32)
        parts: list[Any] = []
        for b in range(nb):
            splits = [T.random_points("g1", 1, rng)[0] for _ in range(int(k[b]) - 1)]
            last = pts[b]
            for q in splits:
                last = last - q
            parts += splits + [last]
        rows, L = _xyzz_rows(parts), 4
    else:
        count = item_off = None
        rows, L = _xyzz_rows(pts), 1
    for order in (0, 1, 2):
        one = np.zeros((nwin * nseg, WORDS), np.uint32)
        _call(lib, nwin * nseg, order, rows, count, item_off, L, half, nseg, 0, 0, nseg, one, None)
        assert [_sum_rows(one[w * nseg:(w + 1) * nseg]) for w in range(nwin)] == want
        stride = nseg + nseg2
        both = np.zeros((nwin * stride, WORDS), np.uint32)
        ss = np.zeros((nwin * nseg, WORDS), np.uint32)
        _call(lib, nwin * nseg, order, rows, count, item_off, L, half, nseg, SPLIT, 0, stride, both, ss)
        level2 = both[nseg:]  # window w's level-2 rows follow its T's
        _call(lib, nwin * nseg2, order, ss, None, None, 1, nseg, nseg2, FROM0, 3, stride, level2, None)
        got = [_sum_rows(both[w * stride:(w + 1) * stride]) for w in range(nwin)]
        assert got == want
    # weights from 1 at level 2 (no FROM0) count every slice's S once too often
    _call(lib, nwin * nseg2, 0, ss, None, None, 1, nseg, nseg2, 0, 3, stride, level2, None)
    assert [_sum_rows(both[w * stride:(w + 1) * stride]) for w in range(nwin)] != want


class _NumpyAsCupy:
    uint64 = np.uint64
    empty, asarray = staticmethod(np.empty), staticmethod(np.asarray)


def _xyzz_row(p: tuple[int, int] | None) -> np.ndarray:
    row = np.zeros((4, 6), np.uint64)
    if p is not None:
        row[:2] = to_mont_fp(list(p))
        row[2] = row[3] = to_mont_fp([1])[0]
    return row.reshape(24)


@pytest.mark.parametrize("levels,slice_len", [(1, 0), (2, 0), (2, 4), (1, 8)])
def test_window_sums_glue_over_the_host_kernels(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, levels: int,
                                                 slice_len: int) -> None:
    """msm_tree.window_sums (the launches, the second level's rows after each window's T rows, the
    tree a window) over the host slices and Python additions: each window's weighted sum, with
    slice_len's lengths and with SLICE_LEN's."""
    ark = pytest.importorskip("py_arkworks_bls12381")
    from kernels.cuda import msm_tree

    def ptr(a: Any) -> Any:
        return ctypes.c_void_p(a.ctypes.data if isinstance(a, np.ndarray) else None)

    def kern(module: str, fn: str) -> Any:
        def launch(grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...]) -> None:
            u = ctypes.c_uint32
            if fn == "g1_slices":
                rows, cnt, off, L, half, nseg, nwin, flags, scale, stride, out, out_s = args
                lib.host_g1_slices(u(int(nwin) * int(nseg)), ctypes.c_int(2), ptr(rows), ptr(cnt), ptr(off), u(int(L)),
                                   u(int(half)), u(int(nseg)), u(int(flags)), u(int(scale)), u(int(stride)), ptr(out), ptr(out_s))
            elif fn == "g1_segments":
                rows, cnt, off, L, half, nseg, nwin, out = args
                lib.host_g1_slices(u(int(nwin) * int(nseg)), ctypes.c_int(1), ptr(rows), ptr(cnt), ptr(off), u(int(L)),
                                   u(int(half)), u(int(nseg)), u(0), u(0), u(int(nseg)), ptr(out), ptr(None))
            elif fn == "g1_reduce":
                arr, count, per, out = args
                for t in range(out.shape[0]):
                    out[t] = _xyzz_row(_sum_rows(arr[t * int(per):min((t + 1) * int(per), int(count))].view(np.uint32)))
            elif fn == "g1_reduce_groups":
                arr, gstart, glen, ng, out = args
                for g in range(int(ng)):
                    out[g] = _xyzz_row(_sum_rows(arr[int(gstart[g]):int(gstart[g]) + int(glen[g])].view(np.uint32)))
            else:
                raise AssertionError(fn)

        return launch

    monkeypatch.setattr(msm_tree, "kernel", kern)
    monkeypatch.setattr(msm_tree, "_cp", lambda: _NumpyAsCupy)
    monkeypatch.setattr(msm_tree, "SLICE_LEVELS", levels)
    monkeypatch.setattr(msm_tree, "SLICE_LEN", slice_len)
    rng = random.Random()
    nwin, c = 2, 12
    half = 1 << (c - 1)
    assert half // msm_tree.slice_len(c) >= 2 * msm_tree.LEVEL2_LEN  # two levels apply at c = 12
    assert not slice_len or msm_tree.slice_len(c) == slice_len
    pts = T.random_points("g1", nwin * half, rng)
    rows = _xyzz_rows(pts).view(np.uint64).reshape(-1, 24)
    wins = msm_tree.window_sums("g1", rows, None, None, 1, half, nwin, c)
    assert wins.shape == (nwin, 24)
    for w in range(nwin):
        s = ark.G1Point.identity()
        for b in range(half):
            s = s + pts[w * half + b] * ark.Scalar(b + 1)
        assert _sum_rows(wins[w:w + 1].view(np.uint32)) == ark_g1(s)


def test_a_slice_length_not_a_power_of_two_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernels.cuda import msm_tree

    monkeypatch.setattr(msm_tree, "SLICE_LEN", random.choice([3, 6, 12, 24, 48]))
    with pytest.raises(ValueError, match="power of two"):
        msm_tree.slice_len(20)
