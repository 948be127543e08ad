"""The "rounds" bucket accumulation (kernels/cuda/msm/rounds.cuh, kernels/cuda/msm_rounds.py) on the
GPU: the same points as arkworks and as the XYZZ path, bit for bit, on fresh random inputs: planted
exceptional additions, a GLV table, a crowded bucket cut into many items, several groups and slots
a thread, and a large case over known discrete logarithms. Both forms of the round's pass (fused,
"rounds"; step and finish kernels, "rounds3")."""

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
MODES = ["rounds", "rounds3"]


def _msm(group: str, pts: list[Any], sc: list[int], **kw: Any) -> np.ndarray:
    import cupy as cp

    from kernels.cuda import msm

    kw.setdefault("accumulate", "rounds")
    got = msm.msm(group, cp.asarray(T.ark_to_words(group, pts)), cp.asarray(T.fr_words(sc)), **kw)
    return np.asarray(cp.asnumpy(got)[0])


@pytest.mark.parametrize(("group", "window", "n", "mode"),
                         [(g, w, n, "rounds") for g in ("g1", "g2") for w in (4, 8, 13) for n in (2, 50)]
                         + [("g1", w, 1200, m) for w in (4, 8, 13) for m in MODES] + [("g2", 8, 400, m) for m in MODES])
def test_matches_arkworks(group: str, window: int, n: int, mode: str) -> None:
    rng = random.Random()
    pts = T.random_points(group, n, rng)
    sc = T.random_scalars(n, rng)
    T.plant_edges(pts, sc, group, rng)
    assert np.array_equal(_msm(group, pts, sc, window=window, accumulate=mode), T.ark_msm(group, pts, sc))


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("mode", MODES)
def test_exceptional_additions(group: str, mode: str) -> None:
    """Buckets that hold only P and -P, P twice, P three times, P, -P, P, infinity among them."""
    cases, s = T.exceptional_buckets(group, random.Random())
    for pts in cases:
        sc = [s] * len(pts)
        for w in (None, 5):
            assert np.array_equal(_msm(group, pts, sc, window=w, accumulate=mode), T.ark_msm(group, pts, sc)), pts


@pytest.mark.parametrize(("groups", "slots"), [(1, 1), (2, 16), (3, 5)])
def test_crowded_bucket_and_groups(groups: int, slots: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A third of the scalars equal (one bucket per window holds them all: cut into many items of
    8, their sums by the tree path), with several groups and slots a thread; equal to arkworks and
    to the XYZZ path, and the stats name the mode and its rounds."""
    import cupy as cp

    from kernels.cuda import msm, msm_rounds

    monkeypatch.setattr(msm_rounds, "GROUPS", groups)
    monkeypatch.setattr(msm_rounds, "SLOTS", slots)
    monkeypatch.setattr(msm, "HEAVY_ITEMS", 2)
    rng = random.Random()
    n = 3000
    pts = T.random_points("g1", n, rng)
    sc = T.random_scalars(n, rng)
    sc[: n // 3] = [R_MOD - 7] * (n // 3)
    T.plant_edges(pts, sc, "g1", rng)
    P, S = cp.asarray(T.ark_to_words("g1", pts)), cp.asarray(T.fr_words(sc))
    want = T.ark_msm("g1", pts, sc)
    for mode in MODES:
        st = msm.MsmStats()
        got = cp.asnumpy(msm.msm("g1", P, S, window=9, item_len=8, accumulate=mode, stats=st))[0]
        assert st.accumulate == mode and st.slots == 8, (st.accumulate, st.slots)  # rounds: the longest item
        assert np.array_equal(got, want)
    assert np.array_equal(cp.asnumpy(msm.msm("g1", P, S, window=9, accumulate="xyzz"))[0], want)
    sc[-1] = (sc[-1] + 1) % R_MOD  # negative case: another scalar, another point
    assert not np.array_equal(cp.asnumpy(msm.msm("g1", P, cp.asarray(T.fr_words(sc)), window=9, accumulate="rounds"))[0], want)


@pytest.mark.parametrize("mode", MODES + ["rounds-l24", "rounds3-l9-g3"])
def test_glv_table(mode: str) -> None:
    """The GLV-split MSM (points and their endomorphism images) with the rounds accumulation, and
    the sort into fixed runs: the same point as arkworks and the XYZZ path."""
    import cupy as cp

    from kernels.constants import GLV_LAMBDA
    from kernels.cuda import msm, msm_rounds

    rng = random.Random()
    n = 3000
    pts = T.random_points("g1", n, rng)
    sc = T.random_scalars(n, rng)
    T.plant_edges(pts, sc, "g1", rng)
    sc[-4:] = [GLV_LAMBDA, GLV_LAMBDA + 1, GLV_LAMBDA - 1, R_MOD - 1]
    ext = msm.endo_table(cp.asarray(T.ark_to_words("g1", pts)))
    S = cp.asarray(T.fr_words(sc))
    want = T.ark_msm("g1", pts, sc)
    for runs in (False, True):
        st = msm.MsmStats()
        got = cp.asnumpy(msm.msm("g1", ext[:n], S, endo=ext, glv=True, accumulate=mode, sort_runs=runs, stats=st))[0]
        assert "glv_split" in st.extra and st.accumulate == mode
        # a mode's -lN sets the work items' length; else 2n split scalars over 2^(c-1) buckets
        assert st.item_len == {"rounds-l24": 24, "rounds3-l9-g3": 9}.get(mode, msm_rounds.item_length(2 * n, 1 << (st.window - 1)))
        assert np.array_equal(got, want)
    assert np.array_equal(cp.asnumpy(msm.msm("g1", ext[:n], S, endo=ext, glv=True, accumulate="xyzz"))[0], want)


@pytest.mark.parametrize("log_n", [18, 21])
def test_large_against_known_logs(log_n: int) -> None:
    """2^18 / 2^21 points k_i G and scalars s_i: the MSM is (sum k_i s_i mod r) G, with Python
    integers, and the XYZZ path's point."""
    import cupy as cp

    from kernels.cuda import msm

    pts, s_dev, want = T.known_logs_case(1 << log_n)
    for mode in MODES:
        st = msm.MsmStats()
        got = cp.asnumpy(msm.msm("g1", pts, s_dev, accumulate=mode, stats=st))[0]
        assert st.accumulate == mode and st.slots > 0
        assert np.array_equal(got, want)
    assert np.array_equal(cp.asnumpy(msm.msm("g1", pts, s_dev, accumulate="xyzz"))[0], want)


def test_scale_equals_xyzz() -> None:
    """2^23 distinct device points and random scalars, G1, and a 0/1-heavy vector: the rounds
    path's point is the XYZZ path's."""
    import cupy as cp

    from kernels.cuda import msm
    from kernels.cuda.bench import distinct_points_device, random_fr_device

    n = 1 << 23
    pts = distinct_points_device("g1", n)
    sc = random_fr_device(n)
    a = cp.asnumpy(msm.msm("g1", pts, sc, accumulate="rounds"))
    assert np.array_equal(a, cp.asnumpy(msm.msm("g1", pts, sc, accumulate="xyzz")))
    bits = cp.random.randint(0, 3, size=n, dtype=cp.int64)
    one = cp.asarray(T.fr_words([1]))
    sc = cp.where((bits == 1)[:, None], one, cp.where((bits == 0)[:, None], cp.zeros_like(one), sc))
    b = cp.asnumpy(msm.msm("g1", pts, sc, accumulate="rounds"))
    assert np.array_equal(b, cp.asnumpy(msm.msm("g1", pts, sc, accumulate="xyzz")))
    assert not np.array_equal(a, b)


def test_batch_inverse_on_device() -> None:
    """kernels/cuda/batch_inverse.py on the device against pow(x, -1, p), with one up level."""
    import cupy as cp

    from kernels.constants import P_MOD
    from kernels.cpu.convert import from_mont_fp, to_mont_fp
    from kernels.cuda.batch_inverse import TOP_MAX, BatchInverse

    rng = random.Random()
    m = TOP_MAX + 1000
    vals = [rng.randrange(P_MOD) for _ in range(m)]
    vals[5] = 0
    arr = cp.asarray(to_mont_fp(vals).view(np.uint32).reshape(-1))
    BatchInverse("fp", m)(arr, m)
    got = from_mont_fp(cp.asnumpy(arr).view(np.uint64).reshape(m, 6))
    assert got == [pow(v, -1, P_MOD) if v else 0 for v in vals]


def test_groups_wait_for_the_gathers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The group streams start after the caller's stream has gathered their slots' items and
    first entries: with that stream held ~20 ms before each group's gathers (a spin kernel, as a
    2^27 argsort holds it), the rounds path still gives the XYZZ path's point. A pass started
    before the gathers reads unwritten start and item arrays (the 2^27 fault)."""
    import cupy as cp

    from kernels.cuda import msm, msm_rounds
    from kernels.cuda.bench import distinct_points_device, random_fr_device

    spin = cp.RawKernel(r'''extern "C" __global__ void spin(long long cycles) {
        const long long t0 = clock64();
        while (clock64() - t0 < cycles) {}
    }''', "spin")
    init = msm_rounds._Group.__init__

    def held(self: Any, *args: Any) -> None:
        spin((1,), (1,), (np.int64(40_000_000),))  # ~20 ms at ~2 GHz, on the caller's stream
        init(self, *args)

    n = 1 << 16
    pts, sc = distinct_points_device("g1", n), random_fr_device(n)
    want = cp.asnumpy(msm.msm("g1", pts, sc, accumulate="xyzz"))
    monkeypatch.setattr(msm_rounds._Group, "__init__", held)
    for mode in ("rounds", "rounds3-g3"):
        assert np.array_equal(cp.asnumpy(msm.msm("g1", pts, sc, accumulate=mode)), want), mode


def test_build_variant_in_effect() -> None:
    """The G1 rounds kernels as built: their launch bounds are msm_g1.cu's MSM_G1_ROUNDS_THREADS
    and MSM_G1_ROUNDS_MINB (256 and 2 unless SEALTOP_CUDA_DEFINES sets them, as a build variant's
    run does), the host launches that block (msm_rounds.BLOCK) and ptxas fitted MINB blocks a
    multiprocessor into the registers. Negative case: a block past the bound is refused."""
    import cupy as cp

    from kernels.cuda import msm_rounds
    from kernels.cuda.module import define, kernel

    threads, minb = define("MSM_G1_ROUNDS_THREADS", 256), define("MSM_G1_ROUNDS_MINB", 2)
    assert msm_rounds.BLOCK["g1"] == threads
    for name in ("g1_rounds_fused", "g1_rounds_finish", "g1_rounds_step"):
        k = kernel("msm_g1", name)
        assert k.max_threads_per_block == threads, name
        if name != "g1_rounds_step":  # the step pass gets 768 threads a multiprocessor
            assert k.num_regs * threads * minb <= 65536, (name, k.num_regs)
    u = np.uint32
    buf = cp.zeros(64, dtype=cp.uint32)
    args = (buf, buf, buf, buf, buf, buf, buf, buf.view(cp.uint8), buf, buf, u(0), u(1), u(0), u(0), u(0), u(0))
    fused = kernel("msm_g1", "g1_rounds_fused")
    fused((1,), (threads,), args)  # nvisit = 0: every thread returns at once
    cp.cuda.get_current_stream().synchronize()
    with pytest.raises(cp.cuda.driver.CUDADriverError):
        fused((1,), (2 * threads,), args)
