"""The MSM's "list" split (kernels/cuda/msm/classify.cuh: msm_classify, msm_compact), built for
the host with a C++ compiler (kernels/cuda/msm/host_classify.cpp runs the kernels tile by tile)
and checked against Python integers; then msm._split_list's glue with those kernels and stand-ins
for the accumulation and reduction kernels. No GPU needed."""

from __future__ import annotations

import ctypes
import random
from typing import Any

import numpy as np
import pytest
from host_build import BUILDS, host_library, needs_cxx, ptx_flag

from kernels.constants import FR_R, R_MOD
from kernels.cpu.convert import to_mont_fr

pytestmark = needs_cxx
P = ctypes.c_void_p
TILE = 4096
ONE_WORDS = np.frombuffer((FR_R % R_MOD).to_bytes(32, "little"), "<u8")


@pytest.fixture(scope="module", params=BUILDS)
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    lib = host_library(tmp_path_factory, "msm/host_classify.cpp", "-O1", ptx_flag(request.param))
    lib.host_classify.argtypes = [P, ctypes.c_uint64, P, P]
    lib.host_compact.argtypes = [P, P, ctypes.c_uint64, P, P, P, P]
    lib.host_classify_pairs.argtypes = [P, ctypes.c_uint64, P, P]
    lib.host_compact_pairs.argtypes = [P, P, ctypes.c_uint64, P, ctypes.c_uint32, P, P, P]
    return lib


def words(v: int) -> np.ndarray:
    return np.frombuffer(v.to_bytes(32, "little"), "<u8")


def witness_like(n: int) -> tuple[np.ndarray, list[int]]:
    """Montgomery words of a 0/1-heavy vector with a few general values, a non-canonical one
    (R + r, i.e. 1) and a non-canonical zero (r); and each entry's value as an integer."""
    s = np.zeros((n, 4), np.uint64)
    vals = [0] * n
    rinv = pow(FR_R, -1, R_MOD)
    for i in range(n):
        u = random.random()
        if u < 0.47:
            s[i], vals[i] = ONE_WORDS, 1
        elif u < 0.99:
            continue
        else:
            v = random.randrange(2, R_MOD)
            s[i], vals[i] = to_mont_fr([v])[0], v
    for i, raw in ((random.randrange(n), FR_R % R_MOD + R_MOD), (random.randrange(n), R_MOD)):
        s[i], vals[i] = words(raw), raw * rinv % R_MOD
    off_by_one = random.randrange(n)  # R with one bit flipped: an ordinary value
    s[off_by_one] = ONE_WORDS ^ np.array([0, 0, 1 << 7, 0], np.uint64)
    vals[off_by_one] = int.from_bytes(s[off_by_one].tobytes(), "little") * rinv % R_MOD
    return s, vals


def split(lib: ctypes.CDLL, s: np.ndarray, base: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The host kernels' classes, ones' list, others' list and canonical values; with ``base``,
    the ones listed by pairs with the pair table from row ``base``."""
    n = len(s)
    ntiles = -(-n // TILE)
    cls = np.full(n, 0xEE, np.uint8)
    counts = np.zeros((ntiles, 2), np.uint32)
    (lib.host_classify if base is None else lib.host_classify_pairs)(s.ctypes.data, n, cls.ctypes.data,
                                                                     counts.ctypes.data)
    off = np.ascontiguousarray(np.cumsum(counts, axis=0, dtype=np.uint32) - counts)
    m1, m = (int(x) for x in counts.sum(axis=0))
    ones = np.full(m1 + 1, 0xFFFFFFFF, np.uint32)  # one more: a write past the count is seen
    others = np.full(max(m, 1), 0xFFFFFFFF, np.uint32)
    canon = np.full((n, 4), 0xDEADBEEF, np.uint64)
    lists = (ones.ctypes.data, others.ctypes.data, canon.ctypes.data)
    if base is None:
        lib.host_compact(s.ctypes.data, cls.ctypes.data, n, off.ctypes.data, *lists)
    else:
        lib.host_compact_pairs(s.ctypes.data, cls.ctypes.data, n, off.ctypes.data, base, *lists)
    assert ones[m1] == 0xFFFFFFFF
    return cls, ones[:m1], others[:m], canon


@pytest.mark.parametrize("n", [1, 700, TILE, 3 * TILE + 1234])
def test_classes_lists_and_canonical_values(lib: ctypes.CDLL, n: int) -> None:
    s, vals = witness_like(n)
    cls, ones, others, canon = split(lib, s)
    raw_is = [int.from_bytes(r.tobytes(), "little") for r in s]
    want_cls = [0 if r == 0 else 1 if r == FR_R % R_MOD else 2 for r in raw_is]
    assert cls.tolist() == want_cls
    assert ones.tolist() == [i for i, c in enumerate(want_cls) if c == 1]
    assert others.tolist() == [i for i, c in enumerate(want_cls) if c == 2]
    for k, i in enumerate(others):  # the canonical integer of each other value, beside its index
        assert int.from_bytes(canon[k].tobytes(), "little") == vals[i]
    assert (canon[len(others):] == 0xDEADBEEF).all()  # m rows written, no more
    # every value is accounted for: 0, 1, or its canonical integer
    row = {int(i): k for k, i in enumerate(others)}
    got = [1 if c == 1 else 0 if c == 0 else int.from_bytes(canon[row[i]].tobytes(), "little") for i, c in enumerate(cls)]
    assert got == vals


def _pair_model(cls: list[int], base: int) -> list[int]:
    """The ones' list entries by pairs, from the classes alone."""
    out = []
    for i in range(0, len(cls), 2):
        c0, c1 = cls[i], cls[i + 1] if i + 1 < len(cls) else 0
        if c0 < 2 and c1 < 2:
            out += [base + i // 2] if c0 and c1 else [i] if c0 else [i + 1] if c1 else []
        else:
            out += [i + h for h, c in enumerate((c0, c1)) if c == 1 and i + h < len(cls)]
    return out


@pytest.mark.parametrize("n", [1, 2, 701, TILE, 3 * TILE + 1233])
def test_the_ones_listed_by_pairs(lib: ctypes.CDLL, n: int) -> None:
    """Each pair of 0/1 scalars takes one entry (its even index, its odd one, or the pair's row
    from base), a pair beside an other lists its one alone; the others and their canonical values
    are the plain split's. Every one is counted once: an entry's points add up to the ones."""
    s, vals = witness_like(n)
    base = n + random.randrange(0, 5)  # the table may hold more rows than there are scalars
    cls, ones, others, canon = split(lib, s, base)
    _, plain_ones, plain_others, plain_canon = split(lib, s)
    assert ones.tolist() == _pair_model(cls.tolist(), base)
    assert others.tolist() == plain_others.tolist()
    assert np.array_equal(canon[: len(others)], plain_canon[: len(plain_others)])
    covered = sorted(i for e in ones.tolist() for i in ((2 * (e - base), 2 * (e - base) + 1) if e >= base else (e,)))
    assert covered == plain_ones.tolist()
    assert len(ones) <= len(plain_ones)


def test_a_near_one_is_not_a_one(lib: ctypes.CDLL) -> None:
    s = np.stack([ONE_WORDS, ONE_WORDS ^ np.array([1, 0, 0, 0], np.uint64), np.zeros(4, np.uint64)])
    cls, ones, others, _ = split(lib, s)
    assert cls.tolist() == [1, 2, 0] and ones.tolist() == [0] and others.tolist() == [1]


# -- msm._split_list with the host kernels and stand-ins for the group kernels ----------------------
class _Stream:
    def synchronize(self) -> None:
        pass


class _NumpyAsCupy:
    uint8, uint32, uint64 = np.uint8, np.uint32, np.uint64
    empty, zeros, cumsum, arange, minimum, ascontiguousarray = (
        staticmethod(f) for f in (np.empty, np.zeros, np.cumsum, np.arange, np.minimum, np.ascontiguousarray))

    class cuda:  # noqa: N801 (CuPy's name)
        @staticmethod
        def get_current_stream() -> _Stream:
            return _Stream()


def test_split_list_sums_exactly_the_ones(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    """Points stand for integers mod 2^64 (word 0), so a "sum" names the set of points added:
    the ones' sum is the sum over exactly the class-1 indices, each once; a missed item is seen."""
    from kernels.cuda import msm, msm_tree

    def ptr(a: Any) -> Any:
        return a.ctypes.data if isinstance(a, np.ndarray) else int(a)

    drop_last_item = False

    def kern(module: str, fn: str) -> Any:
        def launch(grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...], **_: Any) -> None:
            if fn in ("msm_classify", "msm_compact", "msm_classify_pairs", "msm_compact_pairs"):
                assert block == (256,)
                getattr(lib, "host_" + fn[4:])(*(ptr(a) for a in args))
            elif fn.endswith("_accumulate"):
                points, idx, start, end, order, nitems, partials = args
                assert isinstance(order, np.integer) and int(order) == 0
                assert grid[0] * block[0] >= int(nitems)
                for it in range(int(nitems)):
                    sel = idx[start[it]:end[it]]
                    partials[it, :] = 0
                    if not (drop_last_item and it == int(nitems) - 1):
                        partials[it, 0] = np.sum(points[sel, 0], dtype=np.uint64)
            elif fn.endswith("_reduce"):
                arr, count, per, out = args
                for t in range(out.shape[0]):
                    out[t, :] = 0
                    out[t, 0] = np.sum(arr[t * int(per): min((t + 1) * int(per), int(count)), 0], dtype=np.uint64)
            else:
                raise AssertionError(fn)

        return launch

    for mod in (msm, msm_tree):  # the split, and the tree that sums the ones' partials
        monkeypatch.setattr(mod, "kernel", kern)
        monkeypatch.setattr(mod, "_cp", lambda: _NumpyAsCupy)
    monkeypatch.setattr(msm, "to_host", np.asarray)
    monkeypatch.setattr(msm, "TARGET_ITEMS", 37)  # many items, a short last one
    n = 2 * TILE + 999
    s, vals = witness_like(n)
    points = np.zeros((n, 12), np.uint64)
    points[:, 0] = np.random.default_rng().integers(0, 2**63, n, dtype=np.uint64)
    canon, ones_sum, tail, m, m1 = msm._split_list("g1", points, s, n)
    want_ones = [i for i, v in enumerate(vals) if v == 1 and s[i].tolist() == ONE_WORDS.tolist()]
    assert m1 == len(want_ones) and ones_sum.shape == (1, 24)
    assert int(ones_sum[0, 0]) == int(np.sum(points[want_ones, 0], dtype=np.uint64))
    assert tail.tolist() == [i for i, v in enumerate(vals) if i not in set(want_ones) and s[i].any()]
    assert m == len(tail)
    # by pairs: a table of the points and then each pair's sum; the same ones' sum from fewer
    # entries, the same tail
    ext = np.concatenate([points, points[0:n - 1:2] + points[1:n:2]])
    _, pair_sum, pair_tail, pm, pm1 = msm._split_list("g1", points, s, n, pairs=ext)
    assert int(pair_sum[0, 0]) == int(ones_sum[0, 0]) and pair_tail.tolist() == tail.tolist() and pm == m
    assert 0.6 * m1 < pm1 < m1
    with pytest.raises(ValueError, match="pair table"):
        msm._split_list("g1", points, s, n, pairs=ext[:-1])
    drop_last_item = True
    _, ones_sum, _, _, _ = msm._split_list("g1", points, s, n)
    assert int(ones_sum[0, 0]) != int(np.sum(points[want_ones, 0], dtype=np.uint64))
    with pytest.raises(ValueError, match="unknown ones"):
        msm.msm("g1", points, s[:0], ones="bits")
