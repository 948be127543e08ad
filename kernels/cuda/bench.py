"""Device-resident kernel timings for the cuda backend, by CUDA events.

``device_bench(what, sizes, repeat)`` returns rows in the same form as kernels.bench.run_bench
(so kernels.bench.format_table prints them), but the inputs live on the GPU before timing starts,
as in sppark's figures in docs/ANCHORS.md: no host transfer is inside the timed region.
Each row is the median of ``repeat`` runs after one warm-up; every run is bracketed by CUDA events
on the current stream (host-side synchronisations inside an MSM are part of its time).
Points are distinct: random multiples of the generator made by the fixed-base kernel.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kernels.anchors import ANCHORS_MS
from kernels.anchors import DEFAULT_SIZES as _DEFAULTS
from kernels.constants import G1_GEN, G2_GEN
from kernels.cuda.stream import cupy_module as _cp

TITLES = {
    "msm_g1": "G1 MSM",
    "msm_g2": "G2 MSM",
    "ntt": "NTT forward",
    "intt": "NTT inverse",
    "coset_ntt": "NTT coset forward",
    "ntt_batch3": "NTT coset forward, batch of 3",
}
# The device set of kernels/bench.py, where the anchors (sppark on this H200) also live.
DEFAULT_SIZES: dict[str, list[int]] = _DEFAULTS["cuda"]



def random_fr_device(n: int, shape_tail: tuple[int, ...] = ()) -> Any:
    """Random Fr elements (Montgomery form, values below r) generated on the device."""
    cp = _cp()
    x = cp.random.randint(0, 2**62, size=(*shape_tail, n, 4), dtype=cp.int64).view(cp.uint64)
    lo = cp.random.randint(0, 4, size=(*shape_tail, n, 3), dtype=cp.int64).view(cp.uint64)
    x[..., :3] = (x[..., :3] << np.uint64(2)) | lo  # low limbs full 64-bit; top limb < 2^62 < r's
    return x


def generator_words(group: str) -> np.ndarray:
    """The group generator in design.md's layout (Montgomery affine)."""
    from kernels.cpu.convert import to_mont_fp

    if group == "g1":
        return to_mont_fp(list(G1_GEN)).reshape(-1)
    (x0, x1), (y0, y1) = G2_GEN
    return to_mont_fp([x0, x1, y0, y1]).reshape(-1)


def distinct_points_device(group: str, n: int) -> Any:
    from kernels.cuda.fixed_base import FixedBase

    return FixedBase(group, generator_words(group)).mul(random_fr_device(n))


def time_device(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Milliseconds of each of ``repeat`` calls, by CUDA events, after one warm-up call."""
    cp = _cp()
    fn()
    cp.cuda.get_current_stream().synchronize()
    runs = []
    for _ in range(repeat):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        runs.append(cp.cuda.get_elapsed_time(start, end))
    return runs


def _row(kernel: str, log_n: int, runs: list[float], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    ms = statistics.median(runs)
    anchor = ANCHORS_MS.get(kernel, {}).get(log_n)
    row = {
        "backend": "cuda",
        "kernel": kernel,
        "title": TITLES.get(kernel, kernel),
        "log_n": log_n,
        "n": 1 << log_n,
        "ms": ms,
        "runs_ms": runs,
        "per_s": (1 << log_n) / (ms / 1e3) if ms > 0 else float("inf"),
        "anchor_ms": anchor,
        "ratio": (ms / anchor) if anchor else None,
        "anchor_is_gpu": anchor is not None,
        "resident": True,
    }
    if extra:
        row.update(extra)
    return row


def bench_msm(group: str, log_n: int, repeat: int, window: int | None = None, points: Any = None,
              item_len: int | None = None, accumulate: str | None = None, endo: Any = None,
              glv: bool | None = None, sort_runs: bool | None = None, sort_two_pass: bool | None = None) -> dict[str, Any]:
    from kernels.cuda import msm

    n = 1 << log_n
    pts = points[:n] if points is not None else distinct_points_device(group, n)
    sc = random_fr_device(n)
    kw = {"window": window, "item_len": item_len, "accumulate": accumulate, "endo": endo, "glv": glv, "sort_runs": sort_runs,
          "sort_two_pass": sort_two_pass}
    runs = time_device(lambda: msm.msm(group, pts, sc, **kw), repeat)
    st = msm.MsmStats()
    # one more run, with per-phase CUDA events
    msm.msm(group, pts, sc, stats=st, **kw)
    return _row(f"msm_{group}", log_n, runs, {"window": st.window, "item_len": st.item_len, "items": st.items,
                                               "accumulate": st.accumulate, "slots": st.slots, "glv": "glv_split" in st.extra,
                                               "sort": st.sort,
                                               "phases_ms": {k: round(v, 3) for k, v in st.extra.items()}})


def bench_ntt(kernel: str, log_n: int, repeat: int) -> dict[str, Any]:
    from kernels.cuda import ntt

    cp = _cp()
    if kernel == "ntt_batch3":
        x = random_fr_device(1 << log_n, (3,))
    else:
        x = random_fr_device(1 << log_n)
    out = cp.empty_like(x)
    inverse = kernel == "intt"
    coset = kernel in ("coset_ntt", "ntt_batch3")
    runs = time_device(lambda: ntt.ntt(x, inverse=inverse, coset=coset, out=out), repeat)
    return _row(kernel, log_n, runs)


def bench_fixed(group: str, log_n: int, repeat: int) -> dict[str, Any]:
    """The fixed-base multiplication of 2^log_n random scalars by the generator (key sections);
    the table's making timed once, beside."""
    from kernels.cuda.fixed_base import FixedBase

    cp = _cp()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    fb = FixedBase(group, generator_words(group))
    end.record()
    end.synchronize()
    table_ms = cp.cuda.get_elapsed_time(start, end)
    sc = random_fr_device(1 << log_n)
    out = cp.empty((1 << log_n, fb.table.shape[1]), dtype=cp.uint64)
    runs = time_device(lambda: fb.mul(sc, out), repeat)
    return _row(f"fixed_{group}", log_n, runs, {"table_ms": round(table_ms, 3), "window": fb.c})


def device_bench(
    what: Iterable[str] | None = None,
    sizes: Mapping[str, Sequence[int]] | None = None,
    repeat: int = 5,
    log: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Time each kernel at each size with GPU-resident inputs; rows as in kernels.bench."""
    cp = _cp()
    say = log or (lambda m: print(m, file=sys.stderr, flush=True))
    kernels = list(what) if what else list(DEFAULT_SIZES)
    rows: list[dict[str, Any]] = []
    for k in kernels:
        logs = list((sizes or {}).get(k, DEFAULT_SIZES.get(k, [])))
        if k == "msm_g1_glv":  # the same points, with and without the GLV split and the sort into runs
            from kernels.cuda.msm import endo_table

            say(f"  G1 MSM (GLV): making 2^{max(logs)} distinct points and their images on the device ...")
            ext = endo_table(distinct_points_device("g1", 1 << max(logs)))
            half = ext.shape[0] // 2
            for lg in logs:
                for glv, runs in ((False, False), (False, True), (True, False), (True, True)):
                    say(f"  G1 MSM 2^{lg}, GLV {'on' if glv else 'off'}, sort {'into runs' if runs else 'exact'} ...")
                    rows.append(bench_msm("g1", lg, repeat, points=ext[:half], endo=ext, glv=glv, sort_runs=runs))
            del ext
        elif k.startswith("msm_"):
            group = k[-2:]
            if not logs:
                continue
            say(f"  {TITLES[k]}: making 2^{max(logs)} distinct points on the device ...")
            pts = distinct_points_device(group, 1 << max(logs))
            for lg in logs:
                say(f"  {TITLES[k]} 2^{lg} ...")
                rows.append(bench_msm(group, lg, repeat, points=pts))
            del pts
        elif k.startswith("fixed_"):
            for lg in logs:
                say(f"  fixed-base {k[-2:].upper()} 2^{lg} ...")
                rows.append(bench_fixed(k[-2:], lg, repeat))
        else:
            for lg in logs:
                say(f"  {TITLES.get(k, k)} 2^{lg} ...")
                rows.append(bench_ntt(k, lg, repeat))
        cp.get_default_memory_pool().free_all_blocks()
    return rows
