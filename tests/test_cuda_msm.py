"""G1/G2 MSM and fixed-base multiplication on the GPU against py_arkworks_bls12381 (and the cpu
backend), on fresh random inputs with planted edge cases."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.constants import R_MOD
from kernels.cuda import testing as T

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _gpu():  # type: ignore[no-untyped-def]
    from kernels.cuda.backend import CudaBackend

    return CudaBackend()


def _case(group: str, n: int, rng: random.Random) -> tuple[list, list[int]]:
    pts = T.random_points(group, n, rng)
    sc = T.random_scalars(n, rng)
    T.plant_edges(pts, sc, group, rng)
    return pts, sc


@pytest.mark.parametrize("n", [1, 2, 13, 100, 1000, 6000])
def test_g1_msm_matches_arkworks(n: int) -> None:
    rng = random.Random()
    pts, sc = _case("g1", n, rng)
    got = _gpu().msm_g1(T.ark_to_words("g1", pts), T.fr_words(sc))
    assert got.shape == (12,)
    assert np.array_equal(got, T.ark_msm("g1", pts, sc))


@pytest.mark.parametrize("window", [4, 5, 7, 9, 13, 17, 20])
def test_g1_msm_every_window(window: int) -> None:
    import cupy as cp

    from kernels.cuda import msm

    rng = random.Random()
    pts, sc = _case("g1", 700, rng)
    got = msm.msm("g1", cp.asarray(T.ark_to_words("g1", pts)), cp.asarray(T.fr_words(sc)), window=window)
    assert np.array_equal(cp.asnumpy(got)[0], T.ark_msm("g1", pts, sc))


@pytest.mark.parametrize("window", [5, 13, 16])
def test_g1_msm_sort_by_window(window: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The counting sort one window per grid row (carries recomputed per window) gives the same
    point as arkworks, with and without the 0/1 split's index list."""
    import cupy as cp

    from kernels.cuda import msm

    monkeypatch.setattr(msm, "SORT_BY_WINDOW", True)
    monkeypatch.setattr(msm, "SORT_BY_WINDOW_BUCKETS", 0)
    rng = random.Random()
    pts, sc = _case("g1", 900, rng)
    got = msm.msm("g1", cp.asarray(T.ark_to_words("g1", pts)), cp.asarray(T.fr_words(sc)), window=window)
    assert np.array_equal(cp.asnumpy(got)[0], T.ark_msm("g1", pts, sc))
    full = [rng.randrange(2, R_MOD) for _ in range(300)]  # no 0 or 1: no index list
    got = msm.msm("g1", cp.asarray(T.ark_to_words("g1", pts[:300])), cp.asarray(T.fr_words(full)), window=window)
    assert np.array_equal(cp.asnumpy(got)[0], T.ark_msm("g1", pts[:300], full))


@pytest.mark.parametrize("n", [1, 13, 300])
def test_g2_msm_matches_arkworks(n: int) -> None:
    rng = random.Random()
    pts, sc = _case("g2", n, rng)
    got = _gpu().msm_g2(T.ark_to_words("g2", pts), T.fr_words(sc))
    assert got.shape == (24,)
    assert np.array_equal(got, T.ark_msm("g2", pts, sc))


def test_boolean_split_and_heavy_buckets() -> None:
    """Mostly 0/1 scalars (the witness case), one scalar shared by many points (one huge bucket
    per window), all zeros (infinity) and all ones (plain sum)."""
    import cupy as cp

    from kernels.cuda import msm

    rng = random.Random()
    n = 3000
    pts = T.random_points("g1", n, rng)
    P = cp.asarray(T.ark_to_words("g1", pts))
    bits = [rng.choice([0, 0, 1, 1, 1, rng.randrange(R_MOD)]) for _ in range(n)]
    same = [R_MOD - 3] * n
    zeros = [0] * n
    ones = [1] * n
    for sc in (bits, same, zeros, ones):
        st = msm.MsmStats()
        got = cp.asnumpy(msm.msm("g1", P, cp.asarray(T.fr_words(sc)), stats=st))[0]
        assert np.array_equal(got, T.ark_msm("g1", pts, sc))
        assert st.ones == sum(1 for s in sc if s == 1)
        assert st.tail == sum(1 for s in sc if s > 1)


@pytest.mark.parametrize("window", [4, 15])
def test_heavy_bucket_tree_reduction(window: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Buckets cut into many items are summed by the tree path (threshold lowered to exercise it;
    window 15 leaves only the carry in the top window, the case that makes heavy buckets)."""
    import cupy as cp

    from kernels.cuda import msm

    monkeypatch.setattr(msm, "HEAVY_ITEMS", 1)
    rng = random.Random()
    n = 1500
    pts = T.random_points("g1", n, rng)
    sc = T.random_scalars(n, rng)
    sc[: n // 2] = [R_MOD - 5] * (n // 2)  # one digit shared by half the points, in every window
    T.plant_edges(pts, sc, "g1", rng)
    got = msm.msm("g1", cp.asarray(T.ark_to_words("g1", pts)), cp.asarray(T.fr_words(sc)), window=window)
    assert np.array_equal(cp.asnumpy(got)[0], T.ark_msm("g1", pts, sc))


@pytest.mark.parametrize("host_finish", [True, False])
def test_both_finish_paths(host_finish: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Window combination on the host (default) and in one GPU thread give the same bits."""
    import cupy as cp

    from kernels.cuda import msm

    monkeypatch.setattr(msm, "HOST_FINISH", host_finish)
    rng = random.Random()
    for group, n in (("g1", 500), ("g2", 40)):
        pts, sc = _case(group, n, rng)
        got = msm.msm(group, cp.asarray(T.ark_to_words(group, pts)), cp.asarray(T.fr_words(sc)))
        assert np.array_equal(cp.asnumpy(got)[0], T.ark_msm(group, pts, sc))
    ones_only = [1, 0, 1, 1] * 25
    pts = T.random_points("g1", len(ones_only), rng)
    got = msm.msm("g1", cp.asarray(T.ark_to_words("g1", pts)), cp.asarray(T.fr_words(ones_only)))
    assert np.array_equal(cp.asnumpy(got)[0], T.ark_msm("g1", pts, ones_only))


def test_resident_table_reused_with_prefixes() -> None:
    rng = random.Random()
    gpu = _gpu()
    pts, sc = _case("g1", 400, rng)
    table = gpu.resident(T.ark_to_words("g1", pts))
    for m in (400, 123):
        assert np.array_equal(gpu.msm_g1(table, T.fr_words(sc[:m])), T.ark_msm("g1", pts[:m], sc[:m]))


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_matches_arkworks(group: str) -> None:
    rng = random.Random()
    import py_arkworks_bls12381 as ark

    G = ark.G1Point if group == "g1" else ark.G2Point
    base = G() * ark.Scalar(rng.randrange(1, R_MOD))
    sc = T.random_scalars(200, rng)
    sc[:6] = [0, 1, 2, R_MOD - 1, R_MOD - 2, 1 << 200]
    gpu = _gpu()
    fn = gpu.fixed_base_g1 if group == "g1" else gpu.fixed_base_g2
    got = fn(T.ark_to_words(group, [base])[0], T.fr_words(sc))
    assert np.array_equal(got, T.ark_fixed_base(group, base, sc))


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_in_chunks_and_threads(group: str) -> None:
    """The launch split the key sections take (points a thread sharing an inversion, points a
    launch) does not change a point: odd counts, several launches, one point a thread."""
    import cupy as cp
    import py_arkworks_bls12381 as ark

    from kernels.cuda.fixed_base import FixedBase

    rng = random.Random()
    G = ark.G1Point if group == "g1" else ark.G2Point
    base = G() * ark.Scalar(rng.randrange(1, R_MOD))
    sc = T.random_scalars(301, rng)
    sc[:3] = [0, R_MOD - 1, 0]
    want = T.ark_fixed_base(group, base, sc)
    fb = FixedBase(group, cp.asarray(T.ark_to_words(group, [base])[0]))
    scalars = cp.asarray(T.fr_words(sc))
    for per_thread, chunk in ((32, 1 << 23), (7, 100), (1, 301), (300, 64)):
        got = fb.mul(scalars, per_thread=per_thread, chunk=chunk).get()
        assert np.array_equal(got, want), (per_thread, chunk)
    sc[7] = (sc[7] + 1) % R_MOD  # a different scalar, a different point
    assert not np.array_equal(fb.mul(cp.asarray(T.fr_words(sc))).get()[7], want[7])


@pytest.mark.parametrize("n,rows,edges", [(1, 1, False), (700, 700, False), (3000, 3000, True), (2000, 2600, True)])
def test_glv_msm_matches_arkworks(n: int, rows: int, edges: bool) -> None:
    """The GLV split (scalars s mod lambda and s div lambda over the points and their images):
    every tail scalar (no 0/1: rows in order), a tail among 0/1 scalars and infinity (an index
    list), fewer scalars than rows; the same point as the unsplit MSM and arkworks."""
    import cupy as cp

    from kernels.constants import GLV_LAMBDA
    from kernels.cuda import msm

    rng = random.Random()
    pts = T.random_points("g1", rows, rng)
    sc = T.random_scalars(n, rng)
    if edges:
        T.plant_edges(pts, sc, "g1", rng)
        sc[-4:] = [GLV_LAMBDA, GLV_LAMBDA + 1, GLV_LAMBDA - 1, R_MOD - 1]
    ext = msm.endo_table(cp.asarray(T.ark_to_words("g1", pts)))
    S = cp.asarray(T.fr_words(sc))
    got = msm.msm("g1", ext[:rows], S, endo=ext, glv=True).get()[0]
    want = T.ark_msm("g1", pts[:n], sc)
    assert np.array_equal(got, want)
    assert np.array_equal(msm.msm("g1", ext[:rows], S, endo=ext, glv=False).get()[0], want)
    if n > 1:  # images that are not lambda P (here: the points again) give another sum
        ext[rows:] = ext[:rows]
        assert not np.array_equal(msm.msm("g1", ext[:rows], S, endo=ext, glv=True).get()[0], want)


def test_resident_endo_table_splits_above_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernels.cuda import msm

    monkeypatch.setattr(msm, "GLV_MIN_TAIL", 256)
    rng = random.Random()
    pts, sc = _case("g1", 900, rng)
    gpu = _gpu()
    table = gpu.resident(T.ark_to_words("g1", pts), endo=True)
    assert table.endo is not None and table.endo.shape == (1800, 12) and len(table) == 900
    assert np.array_equal(gpu.msm_g1(table, T.fr_words(sc)), T.ark_msm("g1", pts, sc))
    assert gpu.resident(T.ark_to_words("g1", pts[:100]), endo=True).endo is None  # below the threshold

    def no_room(_points: object) -> None:
        import cupy as cp

        raise cp.cuda.memory.OutOfMemoryError(1 << 40, 1 << 37)

    monkeypatch.setattr(msm, "endo_table", no_room)  # a card without room for the images
    plain = gpu.resident(T.ark_to_words("g1", pts), endo=True)
    assert plain.endo is None and len(plain) == 900
    assert np.array_equal(gpu.msm_g1(plain, T.fr_words(sc)), T.ark_msm("g1", pts, sc))


@pytest.mark.parametrize("glv", [False, True])
def test_sort_into_runs_matches_arkworks(monkeypatch: pytest.MonkeyPatch, glv: bool) -> None:
    """The one-pass sort into fixed runs (evenly spread scalars, top window's runs included), with
    and without the GLV split; and scalars that crowd one bucket overflow their run and are
    sorted again the exact way, to the same point."""
    import cupy as cp

    from kernels.cuda import msm

    monkeypatch.setattr(msm, "SORT_BY_WINDOW_BUCKETS", 0)  # the runs scatter is a per-window pass
    rng = random.Random()
    pts = T.random_points("g1", 4000, rng)
    sc = T.random_scalars(4000, rng)
    sc[:3] = [R_MOD - 1, R_MOD - 2, 5]  # the top window's largest raw values
    ext = msm.endo_table(cp.asarray(T.ark_to_words("g1", pts)))
    kw = {"endo": ext, "glv": True} if glv else {}
    st = msm.MsmStats()
    got = msm.msm("g1", ext[:4000], cp.asarray(T.fr_words(sc)), sort_runs=True, sort_two_pass=False, stats=st,
                  **kw).get()[0]
    assert st.sort == "runs"
    assert np.array_equal(got, T.ark_msm("g1", pts, sc))
    crowd = [123456789] * 3000 + sc[:1000]  # 3000 equal digits in every window: a run overflows
    st = msm.MsmStats()
    got = msm.msm("g1", ext[:4000], cp.asarray(T.fr_words(crowd)), sort_runs=True, sort_two_pass=False, stats=st,
                  **kw).get()[0]
    assert st.sort.startswith("runs overflowed")
    assert np.array_equal(got, T.ark_msm("g1", pts, crowd))


def test_no_room_for_the_runs_sorts_the_exact_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """A card without room for the runs' slack (an 80 GB one at porep-32g, H's MSM unsplit): the
    runs' allocation fails, and the MSM sorts the exact way, to arkworks' point."""
    import cupy as cp

    from kernels.cuda import msm

    monkeypatch.setattr(msm, "SORT_BY_WINDOW_BUCKETS", 0)  # the runs scatter is a per-window pass
    rng = random.Random()
    pts, sc = _case("g1", 4000, rng)
    runs_sizes: list[int] = []
    plan = msm.bucket_runs

    def planned(*a, **k):  # the runs' entries in all, as the MSM will ask for them
        runs = plan(*a, **k)
        if runs is not None:
            runs_sizes.append(int(runs[3]))
        return runs

    monkeypatch.setattr(msm, "bucket_runs", planned)
    empty = cp.empty

    def full_card(shape, *a, **k):  # the runs' buffer alone finds no room
        if runs_sizes and shape == runs_sizes[-1]:
            raise cp.cuda.memory.OutOfMemoryError(int(shape) * 4, 0)
        return empty(shape, *a, **k)

    monkeypatch.setattr(cp, "empty", full_card)
    st = msm.MsmStats()
    got = msm.msm("g1", cp.asarray(T.ark_to_words("g1", pts)), cp.asarray(T.fr_words(sc)), sort_runs=True,
                  stats=st).get()[0]
    assert runs_sizes and st.sort == "exact (no room for the runs)"
    assert np.array_equal(got, T.ark_msm("g1", pts, sc))


def test_msm_matches_cpu_backend() -> None:
    from kernels.cpu.backend import CpuBackend
    rng = random.Random()
    pts, sc = _case("g1", 2000, rng)
    P, S = T.ark_to_words("g1", pts), T.fr_words(sc)
    assert np.array_equal(_gpu().msm_g1(P, S), CpuBackend().msm_g1(P, S))
    pts2, sc2 = _case("g2", 64, rng)
    P2, S2 = T.ark_to_words("g2", pts2), T.fr_words(sc2)
    assert np.array_equal(_gpu().msm_g2(P2, S2), CpuBackend().msm_g2(P2, S2))
    base = P[5]
    assert np.array_equal(_gpu().fixed_base_g1(base, S[:300]), CpuBackend().fixed_base_g1(base, S[:300]))
