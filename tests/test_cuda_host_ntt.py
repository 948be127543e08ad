"""The NTT passes of kernels/cuda/ntt/ntt_pass.cuh and the fused H step's plan
(kernels/cuda/hstep.py), built for the host with a C++ compiler (kernels/cuda/ntt/host_ntt.cpp
runs each launch block by block) and checked against Python integers: each pass kind against a
plain DFT, the whole plan against the seven-NTT definition of H, and, for a satisfied system, H
against the polynomial identity H Z = A B - C at a random point. No GPU needed."""

from __future__ import annotations

import ctypes
import random
from typing import Any

import numpy as np
import pytest
from host_build import BUILDS, host_library, needs_cxx, ptx_flag

from kernels.constants import FR_COSET_SHIFT, R_MOD, root_of_unity
from kernels.cpu.convert import from_mont_fr, to_mont_fr
from kernels.cuda import hstep
from kernels.cuda.ntt import TABLE_BITS, pass_schedule, power_table_rows

pytestmark = needs_cxx
P = ctypes.c_void_p


@pytest.fixture(scope="module", params=BUILDS)
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    lib = host_library(tmp_path_factory, "ntt/host_ntt.cpp", "-O1", ptx_flag(request.param))
    u64, i32 = ctypes.c_uint64, ctypes.c_int
    for r in ("", "4", "8"):
        getattr(lib, f"host_ntt_dit{r}").argtypes = [i32, P, P, P, u64, P, i32, i32, i32, i32, P, P, u64, i32, P]
        getattr(lib, f"host_ntt_dif{r}").argtypes = [i32, P, u64, P, i32, i32, i32, i32, P, P, u64, i32]
    return lib


# -- Python integer references (independent of the passes: a recursive radix-2 transform) ----------
def dft(x: list[int], w: int) -> list[int]:
    n = len(x)
    if n == 1:
        return list(x)
    even, odd = dft(x[0::2], w * w % R_MOD), dft(x[1::2], w * w % R_MOD)
    out, t = [0] * n, 1
    for k in range(n // 2):
        v = odd[k] * t % R_MOD
        out[k], out[k + n // 2] = (even[k] + v) % R_MOD, (even[k] - v) % R_MOD
        t = t * w % R_MOD
    return out


def bitrev(k: int, log_n: int) -> int:
    return int(format(k, f"0{log_n}b")[::-1], 2) if log_n else 0


def h_reference(a: list[int], b: list[int], c: list[int]) -> list[int]:
    """h = iCoset(Coset(INTT(a)) Coset(INTT(b)) - Coset(INTT(c))), the seven transforms."""
    n = len(a)
    w = root_of_unity(n.bit_length() - 1)
    wi, ni, g = pow(w, -1, R_MOD), pow(n, -1, R_MOD), FR_COSET_SHIFT
    gi = pow(g, -1, R_MOD)

    def coset_evals(v: list[int]) -> list[int]:
        coef = [x * ni % R_MOD for x in dft(v, wi)]
        return dft([x * pow(g, k, R_MOD) % R_MOD for k, x in enumerate(coef)], w)

    d = [(x * y - z) % R_MOD for x, y, z in zip(coset_evals(a), coset_evals(b), coset_evals(c))]
    return [x * ni * pow(gi, k, R_MOD) % R_MOD for k, x in enumerate(dft(d, wi))]


# -- the host executor of a plan ------------------------------------------------------------------
def twiddle_rows(log_n: int) -> np.ndarray:
    lo, hi = power_table_rows(root_of_unity(log_n), (1 << log_n) // 2 + 1)
    k = np.arange((1 << log_n) // 2 + 1)
    vals = [from_mont_fr(lo[i:i + 1])[0] * from_mont_fr(hi[j:j + 1])[0] % R_MOD
            for i, j in zip(k & ((1 << TABLE_BITS) - 1), k >> TABLE_BITS)]
    return to_mont_fr(vals)


def row_tables(log_n: int, name: str, bits: int) -> tuple[np.ndarray, np.ndarray, int]:
    base, scales = hstep.tables(log_n)[name]
    lo, _ = power_table_rows(base, 1 << log_n, bits=bits)
    his = np.ascontiguousarray(np.stack([power_table_rows(base, 1 << log_n, s, bits)[1] for s in scales]))
    return lo, his, his.shape[1] * 8


def run_launch(lib: ctypes.CDLL, launch: hstep.Launch, bufs: dict[str, np.ndarray], W: np.ndarray,
               tabs: dict[str, tuple[np.ndarray, np.ndarray, int]], bits: int = TABLE_BITS) -> None:
    def ptr(a: np.ndarray) -> int:
        return a.ctypes.data

    def buf(ref: hstep.Ref) -> int:
        name, row = ref
        a = bufs[name]
        return ptr(a) + row * (a.shape[-2] * 32 if a.ndim == 3 else 0)

    def table(name: str) -> tuple[int, int, int]:
        lo, hi, hs = tabs[name]
        return ptr(lo), ptr(hi), hs

    args = [int(x) if isinstance(x, np.integer) else x
            for x in hstep.launch_args(launch, buf, table, ptr(W), None, bits)]
    getattr(lib, "host_" + launch.kernel)(launch.rows, *args)


def run_plan(lib: ctypes.CDLL, abc: np.ndarray, max_stages: int, W: np.ndarray | None = None,
             bits: int = TABLE_BITS, radix: int = 2) -> np.ndarray:
    """The fused H step's launches on the host; ``bits`` splits the scale tables (lo, hi)."""
    log_n = abc.shape[1].bit_length() - 1
    bufs = {"abc": np.ascontiguousarray(abc.copy()), "h": np.full((abc.shape[1], 4), 0xDEADBEEF, np.uint64)}
    W = twiddle_rows(log_n) if W is None else W
    tabs = {name: row_tables(log_n, name, bits) for name in ("fwd", "inv")}
    for launch in hstep.h_plan(log_n, pass_schedule(log_n, max_stages), radix):
        run_launch(lib, launch, bufs, W, tabs, bits)
    return bufs["h"]


def rand_fr(n: int) -> list[int]:
    return [random.randrange(R_MOD) for _ in range(n)]


# -- each pass kind against the DFT ------------------------------------------------------------------
def one_transform(lib: ctypes.CDLL, kind: str, x: list[int], max_stages: int, radix: int = 2, **kw: Any) -> list[int]:
    n = len(x)
    log_n = n.bit_length() - 1
    data = to_mont_fr(x).reshape(1, n, 4)
    out = np.full_like(data, 0xDEADBEEF)
    bufs = {"x": data, "y": out}
    W = twiddle_rows(log_n)
    sched = pass_schedule(log_n, max_stages)
    for s0, S in (reversed(sched) if kind == "dif" else sched):
        first = s0 == 0
        r = min(radix, 1 << S)
        if kind == "dif":
            launch = hstep.Launch("dif", 1, log_n, s0, S, ("x", 0), ("x", 0), inverse=kw.get("inverse", 0), radix=r)
        else:
            gather = kw.get("gather", 0)
            src = ("x", 0) if first else ("y", 0)
            launch = hstep.Launch("dit", 1, log_n, s0, S, src, ("y", 0), gather=gather if first else 0, radix=r)
        run_launch(lib, launch, bufs, W, {})
    return from_mont_fr((data if kind == "dif" else out).reshape(n, 4))


@pytest.mark.parametrize("radix", [2, 4, 8])
@pytest.mark.parametrize("log_n,max_stages", [(1, 8), (2, 1), (3, 2), (5, 2), (6, 4), (7, 3), (9, 8), (10, 4), (8, 5), (11, 7)])
def test_passes_against_the_dft(lib: ctypes.CDLL, log_n: int, max_stages: int, radix: int) -> None:
    """Radix 4 and 8 with passes of every stage count mod K (the stages left over in a smaller
    radix, several groups a thread)."""
    n = 1 << log_n
    x = rand_fr(n)
    x[0] = R_MOD - 1
    w = root_of_unity(log_n)
    fwd, inv = dft(x, w), dft(x, pow(w, -1, R_MOD))
    rev = [bitrev(k, log_n) for k in range(n)]
    # DIF: natural in, bit-reversed out, forward and (unscaled) inverse
    assert one_transform(lib, "dif", x, max_stages, radix) == [fwd[rev[k]] for k in range(n)]
    assert one_transform(lib, "dif", x, max_stages, radix, inverse=1) == [inv[rev[k]] for k in range(n)]
    # DIT: gathered from bitrev (forward) or from -bitrev (inverse), natural out
    assert one_transform(lib, "dit", x, max_stages, radix, gather=1) == fwd
    assert one_transform(lib, "dit", x, max_stages, radix, gather=2) == inv
    # DIT in place from a bit-reversed input
    assert one_transform(lib, "dit", [x[rev[k]] for k in range(n)], max_stages, radix) == fwd


# -- the fused H step ------------------------------------------------------------------------------
@pytest.mark.parametrize("radix", [2, 4, 8])
@pytest.mark.parametrize("log_n,max_stages,bits", [(1, 8, 12), (2, 8, 1), (4, 2, 2), (6, 3, 12), (8, 8, 3), (9, 4, 12)])
def test_h_plan_equals_seven_transforms(lib: ctypes.CDLL, log_n: int, max_stages: int, bits: int, radix: int) -> None:
    n = 1 << log_n
    a, b, c = rand_fr(n), rand_fr(n), rand_fr(n)
    a[-1], c[0] = 0, R_MOD - 1
    abc = np.stack([to_mont_fr(v) for v in (a, b, c)])
    got = run_plan(lib, abc, max_stages, bits=bits, radix=radix)
    assert from_mont_fr(got) == h_reference(a, b, c)
    assert np.array_equal(got, to_mont_fr(h_reference(a, b, c)))  # canonical words, as the CPU's


def test_h_plan_gives_the_quotient_of_a_satisfied_system(lib: ctypes.CDLL) -> None:
    """a b = c on the domain (with zero padding): H Z = A B - C as polynomials, checked at a
    random point, and H has degree below n - 1; a wrong c breaks the identity."""
    log_n, n = 7, 128
    rows = 100
    a = rand_fr(rows) + [0] * (n - rows)
    b = rand_fr(rows) + [0] * (n - rows)
    c = [x * y % R_MOD for x, y in zip(a, b)]
    w = root_of_unity(log_n)
    wi, ni = pow(w, -1, R_MOD), pow(n, -1, R_MOD)

    def coeffs(v: list[int]) -> list[int]:
        return [x * ni % R_MOD for x in dft(v, wi)]

    def at(p: list[int], x: int) -> int:
        acc = 0
        for v in reversed(p):
            acc = (acc * x + v) % R_MOD
        return acc

    zscale = pow((pow(FR_COSET_SHIFT, n, R_MOD) - 1) % R_MOD, -1, R_MOD)  # the engine's 1/(g^n - 1)
    for c_used, holds in ((c, True), (c[:5] + [(c[5] + 1) % R_MOD] + c[6:], False)):
        abc = np.stack([to_mont_fr(v) for v in (a, b, c_used)])
        h = [v * zscale % R_MOD for v in from_mont_fr(run_plan(lib, abc, 3))]
        x = random.randrange(R_MOD)
        lhs = at(h, x) * (pow(x, n, R_MOD) - 1) % R_MOD
        rhs = (at(coeffs(a), x) * at(coeffs(b), x) - at(coeffs(c_used), x)) % R_MOD
        assert (lhs == rhs) is holds
        if holds:
            assert h[n - 1] == 0


def test_h_plan_notices_a_wrong_twiddle(lib: ctypes.CDLL) -> None:
    """The check can fail: one wrong twiddle (w^(n/4) replaced) changes H."""
    log_n, n = 6, 64
    a, b, c = rand_fr(n), rand_fr(n), rand_fr(n)
    abc = np.stack([to_mont_fr(v) for v in (a, b, c)])
    W = twiddle_rows(log_n)
    W[n // 4] = to_mont_fr([random.randrange(2, R_MOD)])[0]
    assert from_mont_fr(run_plan(lib, abc, 3, W)) != h_reference(a, b, c)


# -- poly.h_from(path="fused") itself, its kernels replaced by the host build ----------------------
class _Stream:
    def synchronize(self) -> None:
        pass


class _NumpyAsCupy:
    """What kernels/cuda/ntt.py and poly.py ask of CuPy, from numpy (host memory)."""

    uint64 = np.uint64
    empty, zeros, asarray, stack = staticmethod(np.empty), staticmethod(np.zeros), staticmethod(np.asarray), staticmethod(np.stack)

    class cuda:  # noqa: N801 (CuPy's name)
        @staticmethod
        def get_current_stream() -> _Stream:
            return _Stream()


@pytest.mark.parametrize("radix", [2, 4, 8])
def test_poly_fused_path_runs_its_plan(lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, radix: int) -> None:
    """The glue of poly._h_fused and ntt.PLANS (twiddles, row tables, argument order, row views,
    the kernel and block size of each radix) with each CUDA launch handed to the host build; a
    wrong table scale is noticed."""
    from kernels.cuda import ntt, poly

    monkeypatch.setattr(poly.hstep, "RADIX", radix)
    seen: set[str] = set()

    def host_kernel(module: str, fn: str) -> Any:
        def launch(grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...], shared_mem: int = 0) -> None:
            conv = [a.ctypes.data if isinstance(a, np.ndarray) else int(a) for a in args]
            if fn == "fr_power_table":  # out[k] = lo[k & mask] * hi[k >> bits], in Python integers
                out, count, lo, hi, bits = args
                lo_i, hi_i = from_mont_fr(lo), from_mont_fr(hi)
                out[:] = to_mont_fr([lo_i[k & ((1 << int(bits)) - 1)] * hi_i[k >> int(bits)] % R_MOD for k in range(int(count))])
                return
            dit = fn.startswith("ntt_dit")
            S, log_n = int(args[7 if dit else 5]), int(args[5 if dit else 3])
            per_thread = int(fn[7:]) if fn[7:] else 2
            assert grid[0] == 1 << (log_n - S) and shared_mem == (1 << S) * 32
            assert block == ((1 << S) // per_thread,) and per_thread <= 1 << S
            seen.add(fn)
            getattr(lib, "host_" + fn)(grid[1], *conv)

        return launch

    monkeypatch.setattr(poly, "kernel", host_kernel)
    monkeypatch.setattr(ntt, "kernel", host_kernel)
    monkeypatch.setattr(poly, "_cp", lambda: _NumpyAsCupy)
    monkeypatch.setattr(ntt, "_cp", lambda: _NumpyAsCupy)
    monkeypatch.setattr(ntt, "PLANS", ntt.NttPlans())
    for log_n in (3, 7):
        n = 1 << log_n
        a, b, c = rand_fr(n), rand_fr(n), rand_fr(n)
        vals = np.stack([to_mont_fr(v) for v in (a, b, c)])

        def fill(abc: np.ndarray) -> None:
            abc[:, : n - 2] = vals[:, : n - 2]

        a[-2:], b[-2:], c[-2:] = [0, 0], [0, 0], [0, 0]
        got = poly.h_from(fill, n, rows=n - 2, path="fused")
        assert from_mont_fr(got) == h_reference(a, b, c)
    suffix = str(radix) if radix > 2 else ""  # passes of 3 and 7 stages: each takes the radix asked for
    assert seen == {"ntt_dit" + suffix, "ntt_dif" + suffix}
    # a pass keeps radix 2's threads a block (8 stages, 128 threads), up to 10 stages
    assert [poly.hstep.stages_per_pass(8, r) for r in (2, 4, 8)] == [8, 9, 10]
    assert poly.hstep.stages_per_pass(10, 8) == 10
    monkeypatch.setattr(poly.hstep, "tables", lambda lg: {"fwd": (FR_COSET_SHIFT, (1, 1, 1)), "inv": (1, (1,))})
    monkeypatch.setattr(ntt, "PLANS", ntt.NttPlans())
    assert from_mont_fr(poly.h_from(fill, n, rows=n - 2, path="fused")) != h_reference(a, b, c)
