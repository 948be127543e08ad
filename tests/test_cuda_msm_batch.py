"""The batch-affine bucket accumulation (kernels/cuda/msm/batch_affine.cuh) on the GPU: the same
points as arkworks, as Python integers over known discrete logarithms and as the XYZZ path, on
fresh random inputs, with the exceptional additions (doubling, P + (-P), infinity) planted where
they must happen, and with many slots per thread."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason
from kernels.constants import R_MOD
from kernels.cuda import testing as T

_REASON = cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")


def _msm(group: str, pts: list, sc: list[int], **kw):  # type: ignore[no-untyped-def]
    import cupy as cp

    from kernels.cuda import msm

    got = msm.msm(group, cp.asarray(T.ark_to_words(group, pts)), cp.asarray(T.fr_words(sc)), accumulate="batch", **kw)
    return cp.asnumpy(got)[0]


def test_accumulation_choice() -> None:
    from kernels.cuda import msm

    assert msm.use_batch("g1", 10, "batch")
    assert not msm.use_batch("g1", 1 << 30, "xyzz")
    assert not msm.use_batch("g1", 1 << 30, "auto")  # "auto" picks rounds or XYZZ, never batch
    with pytest.raises(ValueError):
        msm.use_batch("g1", 10, "affine")
    # items about 1.25 bucket means long, never under 8
    assert msm.batch_item_length(1 << 27, 1 << 19) == 320
    assert msm.batch_item_length(100, 1 << 19) == 8


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize(("group", "window", "n"), [(g, w, n) for g in ("g1", "g2") for w in (4, 8, 13) for n in (2, 50)]
                         + [("g1", w, 1200) for w in (4, 8, 13)] + [("g2", 8, 400)])
def test_matches_arkworks(group: str, window: int, n: int) -> None:
    rng = random.Random()
    pts = T.random_points(group, n, rng)
    sc = T.random_scalars(n, rng)
    T.plant_edges(pts, sc, group, rng)
    assert np.array_equal(_msm(group, pts, sc, window=window), T.ark_msm(group, pts, sc))



@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_exceptional_additions(group: str) -> None:
    """Buckets that hold only P and -P (infinity), P twice (a doubling), P three times (doubling,
    then an addition), P, -P, P (infinity, then P taken again) and the point at infinity among
    them: every window's bucket of the shared scalar meets exactly these sequences."""
    cases, s = T.exceptional_buckets(group, random.Random())
    for pts in cases:
        sc = [s] * len(pts)
        assert np.array_equal(_msm(group, pts, sc), T.ark_msm(group, pts, sc)), pts
        assert np.array_equal(_msm(group, pts, sc, window=5), T.ark_msm(group, pts, sc)), pts


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("window", [6, 9])
def test_many_slots_per_thread(window: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """One block (256 threads; 224 and an inverting warp with MSM_BATCH_PIPE=1) for a few
    thousand work items: each thread steps through many slots (and some hold fewer than others),
    with heavy buckets cut into many short items and summed by the tree path."""
    from kernels.cuda import msm

    monkeypatch.setattr(msm, "_sm_count", lambda: 1)
    monkeypatch.setattr(msm, "BATCH_BLOCKS_PER_SM", {"g1": 1, "g2": 1})
    monkeypatch.setattr(msm, "HEAVY_ITEMS", 2)
    rng = random.Random()
    n = 3000
    pts = T.random_points("g1", n, rng)
    sc = T.random_scalars(n, rng)
    sc[: n // 3] = [R_MOD - 7] * (n // 3)  # one digit shared by a third of the points, every window
    T.plant_edges(pts, sc, "g1", rng)
    st = msm.MsmStats()
    import cupy as cp

    got = msm.msm("g1", cp.asarray(T.ark_to_words("g1", pts)), cp.asarray(T.fr_words(sc)), window=window,
                  item_len=8, accumulate="batch", stats=st)
    assert st.accumulate == "batch" and st.slots > 4, (st.accumulate, st.slots, st.items)
    assert np.array_equal(cp.asnumpy(got)[0], T.ark_msm("g1", pts, sc))


def _dlog_case(log_n: int):  # type: ignore[no-untyped-def]
    """Distinct device points k_i G from the fixed-base kernel, their k_i as Python ints, and
    random scalars (device Fr, Montgomery) with their ints."""
    import cupy as cp

    from kernels.constants import FR_R
    from kernels.cuda.bench import generator_words, random_fr_device
    from kernels.cuda.fixed_base import FixedBase

    n = 1 << log_n
    k_dev = random_fr_device(n)
    pts = FixedBase("g1", generator_words("g1")).mul(k_dev)
    s_dev = random_fr_device(n)
    rinv = pow(FR_R, -1, R_MOD)

    def ints(a):  # type: ignore[no-untyped-def]
        raw = cp.asnumpy(a).astype("<u8").tobytes()
        return [int.from_bytes(raw[32 * i: 32 * i + 32], "little") * rinv % R_MOD for i in range(n)]

    return pts, s_dev, ints(k_dev), ints(s_dev)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("window", [16, 20])
def test_large_against_known_logs(window: int) -> None:
    """2^18 points k_i G and scalars s_i: the MSM is (sum k_i s_i mod r) G, computed with Python
    integers, and equals the XYZZ path's point."""
    import cupy as cp
    import py_arkworks_bls12381 as ark

    from kernels.cuda import msm

    pts, s_dev, ks, ss = _dlog_case(18)
    total = sum(k * s for k, s in zip(ks, ss)) % R_MOD
    want = T.ark_to_words("g1", [ark.G1Point() * ark.Scalar(total)])[0]
    st = msm.MsmStats()
    got = cp.asnumpy(msm.msm("g1", pts, s_dev, window=window, accumulate="batch", stats=st))[0]
    assert st.accumulate == "batch"
    assert np.array_equal(got, want)
    assert np.array_equal(cp.asnumpy(msm.msm("g1", pts, s_dev, window=window, accumulate="xyzz"))[0], want)


@pytest.mark.gpu
@needs_gpu
def test_auto_at_scale_equals_xyzz(monkeypatch: pytest.MonkeyPatch) -> None:
    """"auto" takes the rounds accumulation from ROUNDS_MIN entries on (lowered here to
    2^BATCH_MIN_LOG), the batch path its own window, and both give the XYZZ path's point; a
    0/1-heavy scalar vector (the witness case) too."""
    import cupy as cp

    from kernels.cuda import msm
    from kernels.cuda.bench import distinct_points_device, random_fr_device

    n = 1 << msm.BATCH_MIN_LOG
    monkeypatch.setattr(msm, "ROUNDS_MIN", n // 2)
    pts = distinct_points_device("g1", n)
    sc = random_fr_device(n)
    st = msm.MsmStats()
    a = cp.asnumpy(msm.msm("g1", pts, sc, accumulate="auto", stats=st))
    assert st.accumulate == "rounds"
    st = msm.MsmStats()
    assert np.array_equal(cp.asnumpy(msm.msm("g1", pts, sc, accumulate="batch", stats=st)), a)
    assert st.accumulate == "batch" and st.window == msm.BATCH_WINDOW
    assert np.array_equal(a, cp.asnumpy(msm.msm("g1", pts, sc, accumulate="xyzz")))
    bits = cp.random.randint(0, 3, size=n, dtype=cp.int64)  # 0, 1 or a full scalar
    one = cp.asarray(T.fr_words([1]))
    sc = cp.where((bits == 1)[:, None], one, cp.where((bits == 0)[:, None], cp.zeros_like(one), sc))
    b = cp.asnumpy(msm.msm("g1", pts, sc, accumulate="batch", window=20))
    assert np.array_equal(b, cp.asnumpy(msm.msm("g1", pts, sc, accumulate="xyzz")))
    assert not np.array_equal(a, b)

