"""The sort into runs in two passes (kernels/cuda/msm/sort2.cuh, driven by kernels/cuda/msm_sort2.py),
built for the host (kernels/cuda/msm/host_sort2.cpp runs each kernel block by block and phase by
phase, blocks and threads in a random one of three orders) and checked against a Python model
of the one-pass msm_scatter_runs_w (msm_core.cuh): per bucket the same multiset of entries
(point | sign << 31) in its run, the same count[], and an overflow flag wherever the one-pass
sort would set it (and, beyond that, only for a coarse bin fuller than its staging area).
No GPU needed."""

from __future__ import annotations

import ctypes
import random
from collections import Counter
from typing import Any

import numpy as np
import pytest
from host_build import ctype_arg, host_library, needs_cxx

from kernels.constants import R_MOD
from kernels.cuda import msm_sort2
from kernels.cuda.glv import GLV_BITS, GLV_BOUND

pytestmark = needs_cxx


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return host_library(tmp_path_factory, "msm/host_sort2.cpp", "-O1")


class _NumpyAsCupy:
    uint32 = np.uint32
    empty = staticmethod(np.empty)
    zeros = staticmethod(np.zeros)
    asarray = staticmethod(np.asarray)


def fake_device(monkeypatch: pytest.MonkeyPatch, lib: ctypes.CDLL, rng: random.Random) -> list[str]:
    """msm_sort2 with numpy for CuPy and the host kernels for the device's."""
    launches: list[str] = []

    def kernel(module: str, name: str) -> Any:
        assert module == "msm_g1"
        fn = getattr(lib, "host_" + name)

        def launch(grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...]) -> None:
            launches.append(name)
            fn(ctypes.c_uint32(grid[0]), ctypes.c_uint32(block[0]), ctypes.c_int(rng.randrange(3)), *(ctype_arg(a) for a in args))

        return launch

    monkeypatch.setattr(msm_sort2, "_cp", lambda: _NumpyAsCupy)
    monkeypatch.setattr(msm_sort2, "kernel", kernel)
    # the flat pass in 1 to 7 stripes (a bin's runs are a few hundred bytes at these sizes)
    monkeypatch.setattr(msm_sort2, "FLAT_RUNS_BYTES", rng.choice([0, 1 << 10, 1 << 12, 1 << 14]))
    return launches


def words(vals: list[int]) -> np.ndarray:
    return np.frombuffer(b"".join(v.to_bytes(32, "little") for v in vals), "<u8").reshape(-1, 4).copy()


def digits(s: int, c: int, nwin: int) -> list[tuple[int, int]]:
    """(magnitude, sign) of each signed c-bit window of s (msm/digits.cuh's rule, on integers)."""
    half, full, carry, out = 1 << (c - 1), 1 << c, 0, []
    for w in range(nwin):
        raw = ((s >> (w * c)) & (full - 1)) + carry
        carry = int(raw > half)
        out.append((full - raw, 1) if carry else (raw, 0))
    return out


def layout(m: int, c: int, nwin: int, bound: int, cap: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """msm_layout.bucket_runs' layout without its memory bound (or with every run cap long)."""
    half = 1 << (c - 1)
    wnb = np.array([min((bound >> (c * w)) + 1, half) for w in range(nwin)], np.uint32)
    wcap = np.array([cap or int(m / nb + 8 * (m / nb) ** 0.5 + 16) for nb in wnb.tolist()], np.uint32)
    sizes = wnb.astype(np.int64) * wcap
    return (np.cumsum(sizes) - sizes).astype(np.uint32), wcap, wnb, int(sizes.sum())


def model(vals: list[int], idx: list[int] | None, c: int, wnb: np.ndarray, wcap: np.ndarray
          ) -> tuple[np.ndarray, dict[tuple[int, int], Counter[int]], bool]:
    """msm_scatter_runs_w on integers: count per (window, bucket), each bucket's entries, and
    whether any entry finds its run full or its bucket without a run."""
    nwin, half = len(wnb), 1 << (c - 1)
    count = np.zeros(nwin * half, np.uint32)
    runs: dict[tuple[int, int], Counter[int]] = {}
    for t in range(len(idx) if idx is not None else len(vals)):
        p = idx[t] if idx is not None else t
        for w, (mag, neg) in enumerate(digits(vals[p], c, nwin)):
            if mag:
                b = mag - 1
                count[w * half + b] += 1
                runs.setdefault((w, b), Counter())[p | neg << 31] += 1
    over = any(int(count[w * half + b]) > int(wcap[w]) or b >= int(wnb[w]) for (w, b) in runs)
    return count, runs, over


def two_pass(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, vals: list[int], idx: list[int] | None, c: int,
             lay: tuple[np.ndarray, np.ndarray, np.ndarray, int], windows: int | None = None, place: str | None = None
             ) -> tuple[np.ndarray, np.ndarray, bool]:
    """The driver over the host kernels; pass 1 for ``windows`` windows at a time (by default a
    random one of 1, 2, 3 and 5), pass 2 in the form ``place`` (by default a random one)."""
    rng = random.Random()
    fake_device(monkeypatch, lib, rng)
    wbase, wcap, wnb, total = lay
    nwin = len(wnb)
    canon = words([vals[p] for p in idx] if idx is not None else vals)  # row t: entry t's scalar
    idx_arg: Any = np.array(idx, np.uint32) if idx is not None else np.uint64(0)
    m = len(idx) if idx is not None else len(vals)
    count = np.zeros(nwin << (c - 1), np.uint32)
    sorted_ = np.full(max(total, 1), 0xDEADBEEF, np.uint32)
    overflow = np.zeros(1, np.uint32)
    assert msm_sort2.scatter_runs(canon, idx_arg, m, c, wbase, wcap, wnb, count, sorted_, overflow,
                                  windows=windows or rng.choice([1, 2, 3, 5]), place=place or rng.choice(["flat", "bins"]))
    return count, sorted_, bool(overflow[0])


def runs_of(sorted_: np.ndarray, count: np.ndarray, c: int, wbase: np.ndarray, wcap: np.ndarray) -> dict[tuple[int, int], Counter[int]]:
    half = 1 << (c - 1)
    out = {}
    for g in np.flatnonzero(count).tolist():
        w, b = divmod(g, half)
        start = int(wbase[w]) + b * int(wcap[w])
        out[(w, b)] = Counter(sorted_[start:start + int(count[g])].tolist())
    return out


def bin_overflows(count: np.ndarray, c: int, wnb: np.ndarray, wcap: np.ndarray, m: int) -> bool:
    """Whether some coarse bin holds more entries (of buckets with runs) than its staging area."""
    plans = msm_sort2.plan(m, c, wcap, wnb)
    assert plans is not None
    half = 1 << (c - 1)
    for w, p in enumerate(plans):
        row = count[w * half:(w + 1) * half].astype(np.int64)
        row[int(wnb[w]):] = 0
        if (row.reshape(-1, 1 << p.fb).sum(axis=1) > p.bincap).any():
            return True
    return False


def check(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, vals: list[int], idx: list[int] | None, c: int,
          lay: tuple[np.ndarray, np.ndarray, np.ndarray, int], windows: int | None = None, place: str | None = None
          ) -> tuple[bool, bool]:
    """Two passes against the model; (model's overflow, two passes' overflow)."""
    wbase, wcap, wnb, _ = lay
    want_count, want_runs, want_over = model(vals, idx, c, wnb, wcap)
    count, sorted_, over = two_pass(lib, monkeypatch, vals, idx, c, lay, windows, place)
    assert np.array_equal(count, want_count)  # every entry counted, overflow or not
    if want_over:
        assert over
    m = len(idx) if idx is not None else len(vals)
    if over and not want_over:  # only a coarse bin fuller than its staging area may add one
        assert bin_overflows(count, c, wnb, wcap, m)
    if not over:
        assert runs_of(sorted_, count, c, wbase, wcap) == want_runs
    return want_over, over


@pytest.mark.parametrize("place", ["flat", "bins"])
@pytest.mark.parametrize("c", [5, 9, 12, 16])
def test_random_scalars_every_window(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, c: int, place: str) -> None:
    """Full-length scalars (the top window's few buckets included), a tile that ends mid-block,
    fine bins of 1 to 128 buckets, pass 1 for three windows at a time; and the same through an
    index list that skips and repeats, one window at a time; either form of pass 2."""
    rng = random.Random()
    m = 3 * 2048 + rng.randrange(1, 2048)
    vals = [rng.randrange(R_MOD) for _ in range(m)]
    vals[:3] = [R_MOD - 1, 0, 1]
    nwin = -(-256 // c)
    lay = layout(m, c, nwin, R_MOD - 1)
    assert check(lib, monkeypatch, vals, None, c, lay, windows=3, place=place) == (False, False)  # 3 does not divide nwin
    idx = [rng.randrange(m) for _ in range(m // 3)]
    lay = layout(len(idx), c, nwin, R_MOD - 1)
    assert check(lib, monkeypatch, vals, idx, c, lay, windows=1, place=place) == (False, False)


@pytest.mark.parametrize("place", ["flat", "bins"])
def test_glv_halves_window_22(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, place: str) -> None:
    """H's case: halves below GLV_BOUND in six 22-bit windows, 256 coarse bins of 8192 buckets,
    the top window's runs for its first (GLV_BOUND >> 110) + 1 buckets only (runs of 6 entries:
    a few thousand entries over 2^21 buckets)."""
    rng = random.Random()
    m = 5000
    vals = [rng.randrange(GLV_BOUND + 1) for _ in range(m)]
    vals[0] = GLV_BOUND
    c = 22
    lay = layout(m, c, -(-GLV_BITS // c), GLV_BOUND, cap=6)
    assert int(lay[2][-1]) == (GLV_BOUND >> 110) + 1 < 1 << 21
    assert check(lib, monkeypatch, vals, None, c, lay, place=place) == (False, False)


def test_crowded_bucket_overflows(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    """One scalar repeated past its runs' length: both sorts flag it, the counts stay whole."""
    rng = random.Random()
    c, m = 12, 5000
    vals = [rng.randrange(R_MOD) for _ in range(m)]
    lay = layout(m, c, -(-256 // c), R_MOD - 1)
    same = rng.randrange(R_MOD)
    vals[: int(lay[1].max()) + 1] = [same] * (int(lay[1].max()) + 1)
    assert check(lib, monkeypatch, vals, None, c, lay) == (True, True)


def test_crowded_coarse_bin_overflows(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bucket of window 0's first coarse bin well under its run's length: no run
    overflows, but the bin outgrows its staging area, so only the two-pass sort flags it (and
    msm.py sorts exactly); the counts stay whole."""
    rng = random.Random()
    c, m = 12, 5000
    lay = layout(m, c, -(-256 // c), R_MOD - 1)
    cap = int(lay[1][0])
    vals = [rng.randrange(R_MOD) for _ in range(m)]
    # window 0 digits 1..8 (bin 0 of 8 buckets), each well under its run (which the random rest
    # could push past its length otherwise: about 2.4 of them a bucket), together past the bin's room
    crowd = [b + 1 for b in range(8) for _ in range(cap - 12)]
    plans = msm_sort2.plan(m, c, lay[1], lay[2])
    assert plans is not None and 8 * (cap - 12) > plans[0].bincap
    vals[: len(crowd)] = crowd
    assert check(lib, monkeypatch, vals, None, c, lay) == (False, True)


def test_buckets_without_runs(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    """A layout whose top window has runs for fewer buckets than its digits reach: those entries
    are counted, not stored, and flagged by both sorts."""
    rng = random.Random()
    c, m = 16, 3000
    vals = [rng.randrange(R_MOD) for _ in range(m)]
    wbase, wcap, wnb, total = layout(m, c, -(-256 // c), R_MOD - 1)
    wnb[-1] = 1
    sizes = wnb.astype(np.int64) * wcap
    lay = ((np.cumsum(sizes) - sizes).astype(np.uint32), wcap, wnb, int(sizes.sum()))
    assert check(lib, monkeypatch, vals, None, c, lay) == (True, True)


def test_plan() -> None:
    wcap = np.array([234] * 5 + [1849], np.uint32)  # msm_layout.bucket_runs' at H's 2^28 entries
    wnb = np.array([1 << 21] * 5 + [(GLV_BOUND >> 110) + 1], np.uint32)
    plans = msm_sort2.plan(1 << 28, 22, wcap, wnb)
    assert plans is not None
    top = int(wnb[5])  # 176,407 buckets: 173 bins of 1024 (bins of 8192 would make 22)
    assert [p.fb for p in plans] == [13] * 5 + [10] and [p.nbins for p in plans] == [256] * 5 + [-(-top // 1024)] == [256] * 5 + [173]
    mean = (1 << 28) / 256
    assert mean < plans[0].bincap < mean * 1.01
    assert (1 << 28) * 1024 / top < plans[5].bincap < (1 << 28) * 1024 / top * 1.01
    assert msm_sort2.staging_bytes(plans) < 2.2e9
    wide = np.array([1 << 22], np.uint32)  # c = 23: 2^14 fine buckets a bin, the one-pass kernel's
    assert msm_sort2.plan(1000, 23, wcap[:1], wide) is None
    assert msm_sort2.plan(1000, 23, wcap[:1], wide - (1 << 21)) is not None  # a top window of 2^21
    tiny = msm_sort2.plan(1 << 20, 4, np.array([3], np.uint32), np.array([8], np.uint32))
    assert tiny == [msm_sort2.WindowPlan(0, 8, 3)]  # never more room than the bin's runs


def test_declines_wide_windows_without_launching(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    """c = 23 with runs for all 2^22 buckets: a coarse bin would have 2^14 fine buckets, more than
    pass 2's shared counters, so scatter_runs launches nothing and says so (msm.py then runs the
    one-pass kernel)."""
    launches = fake_device(monkeypatch, lib, random.Random())
    one = np.ones(1, np.uint32)
    assert not msm_sort2.scatter_runs(words([5]), np.uint64(0), 1, 23, one * 0, one * 20, one << 22, np.zeros(1 << 22, np.uint32),
                                      np.zeros(200, np.uint32), np.zeros(1, np.uint32))
    assert launches == []
    assert msm_sort2.scatter_runs(words([5]), np.uint64(0), 1, 22, one * 0, one * 20, one * 8, np.zeros(1 << 21, np.uint32),
                                  np.zeros(200, np.uint32), np.zeros(1, np.uint32))
    assert launches == ["msm_sort2_bin", "msm_sort2_place_flat" if msm_sort2.PLACE == "flat" else "msm_sort2_place"]
    with pytest.raises(ValueError, match="flat.*bins.*'rows'"):
        msm_sort2.scatter_runs(words([5]), np.uint64(0), 1, 22, one * 0, one * 20, one * 8, np.zeros(1 << 21, np.uint32),
                               np.zeros(200, np.uint32), np.zeros(1, np.uint32), place="rows")


def test_a_wrong_entry_is_seen(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison is not vacuous: one entry's sign flipped in a run, or one entry lost from a
    count, no longer matches the model."""
    rng = random.Random()
    c, m = 9, 2500
    vals = [rng.randrange(R_MOD) for _ in range(m)]
    lay = layout(m, c, -(-256 // c), R_MOD - 1)
    want_count, want_runs, _ = model(vals, None, c, lay[2], lay[1])
    count, sorted_, over = two_pass(lib, monkeypatch, vals, None, c, lay)
    assert not over and runs_of(sorted_, count, c, lay[0], lay[1]) == want_runs
    g = int(rng.choice(np.flatnonzero(count).tolist()))
    w, b = divmod(g, 1 << (c - 1))
    sorted_[int(lay[0][w]) + b * int(lay[1][w])] ^= np.uint32(1 << 31)
    assert runs_of(sorted_, count, c, lay[0], lay[1]) != want_runs
    count[g] -= 1
    assert not np.array_equal(count, want_count)


@pytest.mark.parametrize("stripes_bytes", [0, 1 << 11, 1 << 40])
def test_flat_pass_in_stripes(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, stripes_bytes: int) -> None:
    """The flat pass 2 with one stripe, several (a chunk count that the stripes do not divide),
    and one stripe a bin: the same runs and counts as the model."""
    rng = random.Random()
    c, m = 9, 7 * 1024 + rng.randrange(1, 1024)
    vals = [rng.randrange(R_MOD) for _ in range(m)]
    lay = layout(m, c, -(-256 // c), R_MOD - 1)
    monkeypatch.setattr(msm_sort2, "FLAT_RUNS_BYTES", stripes_bytes)
    plans = msm_sort2.plan(m, c, lay[1], lay[2])
    assert plans is not None
    stripes = msm_sort2.flat_stripes(plans[0], int(lay[1][0]))
    assert stripes == {0: 1, 1 << 11: stripes, 1 << 40: plans[0].nbins}[stripes_bytes]
    if stripes_bytes == 1 << 11:
        assert 1 < stripes < plans[0].nbins
    fake_device(monkeypatch, lib, rng)
    monkeypatch.setattr(msm_sort2, "FLAT_RUNS_BYTES", stripes_bytes)  # fake_device picks its own
    wbase, wcap, wnb, total = lay
    want_count, want_runs, want_over = model(vals, None, c, wnb, wcap)
    count = np.zeros(len(wnb) << (c - 1), np.uint32)
    sorted_ = np.full(total, 0xDEADBEEF, np.uint32)
    overflow = np.zeros(1, np.uint32)
    assert msm_sort2.scatter_runs(words(vals), np.uint64(0), m, c, wbase, wcap, wnb, count, sorted_, overflow, windows=2,
                                  place="flat")
    assert not want_over and not overflow[0]
    assert np.array_equal(count, want_count)
    assert runs_of(sorted_, count, c, wbase, wcap) == want_runs
