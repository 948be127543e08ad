"""The "rounds" bucket accumulation (kernels/cuda/msm/rounds.cuh, kernels/cuda/msm_rounds.py) and
the levelled batch inversion (kernels/cuda/ff/batch_inverse.cuh, kernels/cuda/batch_inverse.py),
built for the host and run by the real host driver over tests/rounds_fake.py (numpy for CuPy,
streams run in a random interleaving, each kernel's threads in a random order), also with the
build variants ROUNDS_PREFETCH and ROUNDS_PREFETCH_DIST (the slots' entries read ahead). Item sums are
checked against arkworks' sums, with doublings, P + (-P),
points at infinity, empty items, items of one entry and uneven lengths planted; the inversion
against pow(x, -1, p). No GPU needed."""

from __future__ import annotations

import ctypes
import random
from typing import Any

import numpy as np
import pytest
from host_build import BUILDS, host_library, needs_cxx, ptx_flag
from oracle import ark_g1
from rounds_fake import Sched, fake_cupy, fake_kernel

from kernels.constants import FP_R, P_MOD
from kernels.cpu.convert import from_mont_fp, to_mont_fp
from kernels.cuda import batch_inverse, msm_rounds
from kernels.cuda import testing as T

pytestmark = needs_cxx
Pt = tuple[int, int] | None


# (field build, rounds.cuh's ROUNDS_PREFETCH and ROUNDS_PREFETCH_DIST): both builds of the field
# arithmetic, and the prefetch variants (each slot's entries read D + 1 slots ahead: the index
# logic is what the host can check; the prefetches themselves are no-ops here)
LIBS = [(b, 0, 1) for b in BUILDS] + [("ptx_model", 1, 1), ("portable", 1, 3)]


@pytest.fixture(scope="module", params=LIBS, ids=[f"{b}-prefetch{p}-dist{d}" for b, p, d in LIBS])
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    build, prefetch, dist = request.param
    flags = ("-O1", ptx_flag(build)) + ((f"-DROUNDS_PREFETCH={prefetch}", f"-DROUNDS_PREFETCH_DIST={dist}") if prefetch else ())
    out = host_library(tmp_path_factory, "msm/host_rounds.cpp", *flags)
    assert out.host_rounds_variant() == 100 * prefetch + dist  # the defines reached the build
    return out


def fake_device(monkeypatch: pytest.MonkeyPatch, lib: ctypes.CDLL, rng: random.Random, small_levels: bool) -> Sched:
    sched = Sched(rng)
    cp = fake_cupy(sched)
    kern = fake_kernel(sched, lib)

    def to_host(x: Any) -> np.ndarray:
        sched.drain()
        return np.asarray(x)

    monkeypatch.setattr(msm_rounds, "_cp", lambda: cp)
    monkeypatch.setattr(msm_rounds, "kernel", kern)
    monkeypatch.setattr(msm_rounds, "to_host", to_host)
    monkeypatch.setattr(batch_inverse, "cupy_module", lambda: cp)
    monkeypatch.setattr(batch_inverse, "kernel", kern)
    if small_levels:  # several up levels even for a few values
        monkeypatch.setattr(batch_inverse, "TOP_MAX", 3)
        monkeypatch.setattr(batch_inverse, "BINV_GROUP", 2)
        monkeypatch.setattr(batch_inverse, "TOP_CHAIN", 2)
    return sched


def make_items(rng: random.Random, npts: int, nitems: int) -> tuple[list[list[int]], list[list[int]]]:
    """Entries (point index | sign << 31) of each item, with the exceptional sequences planted;
    index npts is the point at infinity. Lengths 0, 1 and uneven ones."""
    inf = npts
    a, b = rng.sample(range(npts), 2)
    m = 1 << 31
    planted = [[a, a], [a, a | m], [a, a | m, a], [inf, a], [a, inf], [inf], [inf, inf, b], [a, a, a], [a, b, b | m, a | m],
               [a, a, a | m, b], [a], [b | m], [], [a, b, a, b, a, b, a, b, a]]
    items = list(planted)
    while len(items) < nitems:
        n = rng.choice([0, 1, 1, 2, 3, 5, 8, 13, rng.randrange(1, 20)])
        items.append([rng.randrange(npts + 1) | (rng.randrange(2) << 31) for _ in range(n)])
    rng.shuffle(items)
    return items, planted


def layout(rng: random.Random, items: list[list[int]], junk: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sorted entries with the items' runs in a shuffled order and gaps between (junk: random
    words in them, else none); start, end."""
    order = list(range(len(items)))
    rng.shuffle(order)
    sorted_: list[int] = []
    start = [0] * len(items)
    for i in order:
        if junk:
            sorted_.extend(rng.randrange(1 << 32) for _ in range(rng.randrange(3)))  # junk between runs
        start[i] = len(sorted_)
        sorted_.extend(items[i])
    end = [s + len(it) for s, it in zip(start, items)]
    return np.array(sorted_ + [0], np.uint32), np.array(start, np.uint32), np.array(end, np.uint32)


def g1_points(rng: random.Random, npts: int) -> tuple[list[Any], np.ndarray]:
    """npts random arkworks points, and their rows with one more, all zeros: infinity."""
    pts = T.random_points("g1", npts, rng)
    rows = np.vstack([T.ark_to_words("g1", pts), np.zeros((1, 12), np.uint64)])
    return pts, rows.view(np.uint32).copy()


def expected_g1(pts: list[Any], entries: list[int]) -> Pt:
    """The item's sum by arkworks, as affine integers."""
    ark = pytest.importorskip("py_arkworks_bls12381")
    s = ark.G1Point.identity()
    for v in entries:
        idx = v & 0x7FFFFFFF
        p = pts[idx] if idx < len(pts) else ark.G1Point.identity()
        s = s + (-p if v >> 31 else p)
    return ark_g1(s)


def row_to_point(row: np.ndarray) -> Pt | str:
    """An XYZZ row (uint32, 4 x 12 words) as an affine point; "bad" for a malformed one."""
    r64 = row.view(np.uint64).reshape(4, 6)
    if not r64.any():
        return None
    one = to_mont_fp([1])[0]
    if not (np.array_equal(r64[2], one) and np.array_equal(r64[3], one)):
        return "bad"
    x, y = from_mont_fp(r64[:2])
    return x, y


def run_g1(monkeypatch: pytest.MonkeyPatch, lib: ctypes.CDLL, rng: random.Random, fused: bool, groups: int, slots: int,
           small_levels: bool, nitems: int = 60, junk: bool = True) -> tuple[list[Pt | str], list[Pt], msm_rounds.RoundsRun, Sched]:
    pts, rows = g1_points(rng, 12)
    items, _ = make_items(rng, len(pts), nitems)
    sorted_, start, end = layout(rng, items, junk)
    partials = np.full((len(items), 48), 0xA5A5A5A5, np.uint32)  # unwritten rows show
    sched = fake_device(monkeypatch, lib, rng, small_levels)
    run = msm_rounds.accumulate("g1", rows, sorted_, start, end, len(items), partials, fused=fused, groups=groups, slots=slots)
    sched.drain()
    got = [row_to_point(partials[i]) for i in range(len(items))]
    want = [expected_g1(pts, it) for it in items]
    assert run.rounds == max(len(it) for it in items)
    return got, want, run, sched


@pytest.mark.parametrize("fused", [True, False])
def test_item_sums_match_python_ints(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, fused: bool) -> None:
    rng = random.Random()
    for groups, slots, small in ((1, 1, False), (2, 3, True), (3, rng.randrange(2, 6), rng.random() < 0.5)):
        got, want, run, sched = run_g1(monkeypatch, lib, rng, fused, groups, slots, small)
        assert got == want, (groups, slots, small)
        assert run.launches == len(sched.launches)
        kinds = {"fused"} if fused else {"step", "finish"}
        assert {n.rsplit("_", 1)[1] for n in sched.launches if "rounds" in n} == kinds


def test_launches_per_round(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    """One group, one top-level inversion: the fused rounds take 2 launches a round (pass and the
    inversion's top level) and one last pass; split, 3 a round."""
    rng = random.Random()
    for fused, per in ((True, 2), (False, 3)):
        got, want, run, _ = run_g1(monkeypatch, lib, rng, fused, 1, 4, False, nitems=20)
        assert got == want
        assert run.launches == per * run.rounds + (1 if fused else 0)


def test_a_missing_wait_is_caught(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative case: a pass that does not wait for its inversion reads products, not inverses."""
    monkeypatch.setattr(msm_rounds._Group, "invert", _invert_without_wait)
    rng = random.Random()
    got, want, _, _ = run_g1(monkeypatch, lib, rng, True, 2, 2, False)
    assert got != want


def _invert_without_wait(self: Any, m: int) -> int:
    self.ev_pass.record(self.passes)
    self.inversions.wait_event(self.ev_pass)
    with self.inversions:
        return self.inverse(self.prod, m)  # and the pass stream is never told to wait


def test_passes_wait_for_the_gathers(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative case: group streams that wait on an event recorded before the caller's stream
    gathers their slots' items and first entries (the 2^27 fault) read the zeros of unwritten
    memory for some of them. The runs have no junk between them, so the zeros stay in bounds."""
    init = msm_rounds._Group.__init__

    def early(self: Any, *args: Any) -> None:
        self.early = msm_rounds._cp().cuda.Event()
        self.early.record()
        init(self, *args)

    monkeypatch.setattr(msm_rounds._Group, "__init__", early)
    monkeypatch.setattr(msm_rounds._Group, "follow", lambda self, ready: self.passes.wait_event(self.early))
    rng = random.Random()
    wrong = sum(got != want for got, want, _, _ in (run_g1(monkeypatch, lib, rng, True, 3, 2, False, junk=False) for _ in range(6)))
    assert wrong > 0


def test_batch_inverse_matches_pow(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random()
    for small, m in ((True, 1), (True, 7), (True, 50), (False, 300), (False, 1)):
        sched = fake_device(monkeypatch, lib, rng, small)
        vals = [rng.randrange(P_MOD) for _ in range(m)]
        for _ in range(min(3, m // 4)):
            vals[rng.randrange(m)] = 0  # zeros stay zero and do not spoil the others
        if m > 2:
            vals[rng.randrange(m)] = 1
        arr = np.concatenate([to_mont_fp(vals).view(np.uint32).reshape(-1), np.full(24, 7, np.uint32)])
        inv = batch_inverse.BatchInverse("fp", m + rng.randrange(5))
        inv(arr, m)
        sched.drain()
        assert from_mont_fp(arr[: 12 * m].view(np.uint64).reshape(m, 6)) == [pow(v, -1, P_MOD) if v else 0 for v in vals]
        assert (arr[12 * m:] == 7).all()  # nothing past m is touched


def test_batch_inverse_fp2(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random()
    sched = fake_device(monkeypatch, lib, rng, True)
    m = 20
    vals = [(rng.randrange(P_MOD), rng.randrange(P_MOD)) for _ in range(m)]
    arr = np.hstack([to_mont_fp([a for a, _ in vals]), to_mont_fp([b for _, b in vals])]).view(np.uint32).reshape(-1).copy()
    batch_inverse.BatchInverse("fp2", m)(arr, m)
    sched.drain()
    out = arr.view(np.uint64).reshape(m, 12)
    for (a, b), c, d in zip(vals, from_mont_fp(out[:, :6]), from_mont_fp(out[:, 6:])):
        assert ((a * c - b * d) % P_MOD, (a * d + b * c) % P_MOD) == (1, 0)  # u^2 = -1


def test_batch_inverse_levels() -> None:
    assert batch_inverse.levels(1) == [(1, 1)]
    assert batch_inverse.levels(1 << 15) == [(1 << 15, 1 << 11)]
    assert batch_inverse.levels(394_000) == [(394_000, 12_313), (12_313, 770)]
    with pytest.raises(ValueError):
        batch_inverse.BatchInverse("fr", 4)


def test_modes() -> None:
    from kernels.cuda import msm

    assert msm_rounds.mode("rounds") == {"fused": True}
    assert msm_rounds.mode("rounds3-g3-s32") == {"fused": False, "groups": 3, "slots": 32}
    assert msm_rounds.mode("rounds-l64-g4") == {"fused": True, "length": 64, "groups": 4}
    assert msm_rounds.mode("xyzz") is None
    for bad in ("rounds4", "rounds-g0", "rounds-x2", "rounds-g", "roundsg2", "rounds-l0", "rounds-l"):
        with pytest.raises(ValueError):
            msm_rounds.mode(bad)
    assert msm.accumulation(10, "rounds-s8") == "rounds-s8"
    assert msm.accumulation(msm.ROUNDS_MIN, "auto") == "rounds" and not msm.use_batch("g1", 10, "rounds")
    assert msm.accumulation(msm.ROUNDS_MIN - 1, "auto") == "xyzz"
    with pytest.raises(ValueError):
        msm.accumulation(10, "affine")


def test_sizes_at_2_27() -> None:
    """The 2^27 GLV MSM's sizes (2^28 entries over 2^28 table rows, c = 22, 6 windows): the runs'
    layout passes 2^31 entries (positions are uint32 throughout), the slots a group and its
    threads give one up level of the batch inversion; sizes past 32 bits are refused."""
    from kernels.cuda import msm, msm_layout

    m, c = 1 << 28, msm.GLV_WINDOW
    nwin = -(-msm.GLV_BITS // c)
    runs = msm_layout.bucket_runs(m, c, nwin, msm.GLV_BOUND)
    assert runs is not None
    total = runs[3]
    assert 1 << 31 < total < 1 << 32
    L = msm_rounds.item_length(m, 1 << (c - 1))
    items = sum(int(nb) * -(-int(cap) // L) for nb, cap in zip(runs[2], runs[1]))  # at most: every run full
    assert items < 1 << 31
    nt = -(-(items // 2) // 16)  # 2 groups, 16 slots a thread
    assert len(batch_inverse.levels(nt)) == 2 and batch_inverse.levels(nt)[0][0] == nt
    msm_rounds.check_sizes(items, total)
    for bad in ((items, (1 << 32) + 1), (1 << 31, total)):
        with pytest.raises(ValueError):
            msm_rounds.check_sizes(*bad)


def test_item_length() -> None:
    assert msm_rounds.item_length(1 << 28, 1 << 21) == 151  # 128 + 2 x 11.3
    assert msm_rounds.item_length(100, 1 << 15) == 8


@pytest.mark.parametrize("fused", [True, False])
def test_g2_item_sums_match_arkworks(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, fused: bool) -> None:
    ark = pytest.importorskip("py_arkworks_bls12381")

    rng = random.Random()
    pts = T.random_points("g2", 6, rng)
    rows = np.vstack([T.ark_to_words("g2", pts), np.zeros((1, 24), np.uint64)]).view(np.uint32).copy()
    items, _ = make_items(rng, len(pts), 24)
    sorted_, start, end = layout(rng, items)
    partials = np.full((len(items), 96), 0xA5A5A5A5, np.uint32)
    sched = fake_device(monkeypatch, lib, rng, True)
    msm_rounds.accumulate("g2", rows, sorted_, start, end, len(items), partials, fused=fused, groups=2, slots=2)
    sched.drain()
    one = np.frombuffer((FP_R % P_MOD).to_bytes(48, "little"), "<u4")
    for it, row in zip(items, partials):
        s = ark.G2Point.identity()
        for v in it:
            idx = v & 0x7FFFFFFF
            p = pts[idx] if idx < len(pts) else ark.G2Point.identity()
            s = s + (-p if v >> 31 else p)
        want = T.ark_to_words("g2", [s])[0].view(np.uint32)
        if not want.any():
            assert not row.any()
        else:
            assert np.array_equal(row[:48], want)
            assert np.array_equal(row[48:60], one) and not row[60:72].any()  # ZZ = 1 (c0 = R, c1 = 0)
            assert np.array_equal(row[72:84], one) and not row[84:].any()


# -- the ones' sum (msm.sum_list with a rounds mode): equal items, longest first, no read-back ------
def test_ones_items_and_length(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernels.cuda import msm

    monkeypatch.setattr(msm_rounds, "_cp", lambda: fake_cupy(Sched(random.Random())))
    for m, L in ((1, 8), (8, 8), (9, 8), (37, 5), (100, 1)):
        start, end, n, hist = msm_rounds.equal_items(m, L)
        lens = (end - start).tolist()
        assert n == -(-m // L) and start.tolist() == list(range(0, n * L, L)) and sum(lens) == m
        assert lens == sorted(lens, reverse=True) and hist.tolist() == np.bincount(lens).tolist()
    for bad in ((0, 8), (5, 0)):
        with pytest.raises(ValueError):
            msm_rounds.equal_items(*bad)
    assert [msm_rounds.ones_length("g1", m) for m in (20_300_000, 30_700_000, 61_400_000, 1 << 40)] == [8, 10, 20, 64]
    assert msm_rounds.ones_length("g2", 20_300_000) == 23
    lo = msm_rounds.ONES_MIN["g1"]
    assert msm.ones_accumulation("g1", lo, "rounds-l16") == "rounds-l16" and msm.ones_accumulation("g1", lo - 1, "rounds") == "xyzz"
    assert msm.ones_accumulation("g2", 1 << 30, "xyzz") == "xyzz"
    for name in ("affine", "rounds-q2", "batch"):
        with pytest.raises(ValueError):
            msm.ones_accumulation("g1", 10, name)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_ones_sum_equal_matches_arkworks(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, group: str) -> None:
    """msm_rounds.sum_equal over a list of indices (repeats, a point and its negative, the point at
    infinity): each item's row is arkworks' sum of its slice, for lengths that divide the list,
    that do not, and a list shorter than one item. Negative case: a histogram that leaves out each
    item's last entry gives other sums (and one that miscounts the items is refused)."""
    ark = pytest.importorskip("py_arkworks_bls12381")
    cls = ark.G1Point if group == "g1" else ark.G2Point
    rng = random.Random()
    pts = T.random_points(group, 6, rng)
    pts += [-pts[0], pts[1]]
    w = msm_rounds.WORDS[group]
    rows = np.vstack([T.ark_to_words(group, pts), np.zeros((1, w), np.uint64)]).view(np.uint32).copy()  # row len(pts): infinity
    one = np.zeros(w, np.uint32)
    one[:12] = np.frombuffer((FP_R % P_MOD).to_bytes(48, "little"), "<u4")  # Montgomery 1 (G2: c0 = R, c1 = 0)

    def want(sel: np.ndarray) -> np.ndarray:
        s = cls.identity()
        for i in sel.tolist():
            s = s + (pts[i] if i < len(pts) else cls.identity())
        return T.ark_to_words(group, [s])[0].view(np.uint32)

    def check(partials: np.ndarray, idx: np.ndarray, L: int) -> bool:
        for i, row in enumerate(partials.view(np.uint32)):
            aff = want(idx[i * L:(i + 1) * L])
            if not aff.any():
                if row.any():
                    return False
            elif not (np.array_equal(row[: 2 * w], aff) and np.array_equal(row[2 * w: 3 * w], one)
                      and np.array_equal(row[3 * w:], one)):
                return False  # a finite row is affine: ZZ = ZZZ = 1
        return True

    cases = [(1, 8), (8, 8), (9, 8), (rng.randrange(2, 50), rng.randrange(1, 12))]
    for m, L in cases if group == "g1" else cases[2:]:
        idx = np.array([rng.randrange(len(pts) + 1) for _ in range(m)], np.uint32)
        idx[: min(m, 2)] = [0, len(pts) - 2][: min(m, 2)]  # P and -P side by side
        sched = fake_device(monkeypatch, lib, rng, rng.random() < 0.5)
        partials, n = msm_rounds.sum_equal(group, rows, idx, m, L, groups=rng.randrange(1, 4), slots=rng.randrange(1, 5))
        sched.drain()
        assert n == -(-m // L) and check(partials, idx, L), (m, L)
    m, L = 20, 4
    idx = np.array(rng.sample(range(len(pts)), 4) * 5, np.uint32)
    fake_device(monkeypatch, lib, rng, False)
    start, end, n, _ = msm_rounds.equal_items(m, L)
    partials = np.zeros((n, 2 * w), np.uint64)
    with pytest.raises(ValueError):
        msm_rounds.accumulate(group, rows, idx, start, end, n, partials, hist=np.array([0, 0, 0, n - 1]))
    sched = fake_device(monkeypatch, lib, rng, False)
    msm_rounds.accumulate(group, rows, idx, start, end, n, partials, hist=np.array([0, 0, 0, n]))  # 3 entries an item
    sched.drain()
    assert not check(partials, idx, L)
