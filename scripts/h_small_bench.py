"""Old against new on the device: the H step, the small MSMs and the a/b/c evaluation.

    python3 scripts/h_small_bench.py OUTDIR [--sizes 24,27] [--repeat 5] [--what h,h4,msm,abc,msm_g2]

  h       poly.h_from, path "plain" (seven NTTs) against "fused" (kernels/cuda/hstep.py), on random
          a, b, c with the padding of porep-32g (130,987,381 of 2^27 rows, the same share at
          every size); also the memory pool's size after one call from an empty pool;
  h4      the fused path's passes in radix 2 against radix 4, then against radix 8
          (kernels/cuda/hstep.RADIX), the same inputs (SEALTOP_NTT_MAX_STAGES sets the schedules);
  msm     the G1 MSM on witness-like scalars (porep-32g: 51.5% zeros, 47.2% ones, 0.13% general,
          as A, B1 and L see them), ones "sum" against "list" (kernels/cuda/msm.py), with the
          phases of one more run of each;
  msm_g2  the same for G2 (the B2 MSM), at the sizes given for it (--g2-sizes, default 22);
  abc     abc.evaluate_abc on synthetic compact matrices of n rows and n variables whose row
          lengths follow porep `medium`'s (ROW_LENGTHS below), rows "thread" against "split".

Each group and size: inputs made once on the device (fresh random each run), one warm-up call of
each path, then ``repeat`` calls of each with CUDA events around every call; the median. The two
paths' outputs are compared word for word (a mismatch prints MISMATCH and makes the exit status 1).
Prints the table last; writes OUTDIR/h_small_bench.json and OUTDIR/h_small_bench.md.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kernels.textfmt import OneLineParser  # noqa: E402

PAD_SHARE = 130_987_381 / (1 << 27)  # porep-32g's constraints over its domain
P_ZERO, P_ONE, P_GENERAL = 0.515, 0.472, 0.0013
# Row lengths of porep `medium` (2,700,231 rows per matrix): {length: rows}, measured on the dev
# machine from build_porep("medium") (A mostly single entries and packing rows of 33 to 67 and
# 254; C's long rows the 128 to 193 bit sums).
ROW_LENGTHS = {
    "a": {1: 2670085, 2: 896, 3: 223, 4: 845, 5: 31, 6: 61, 7: 31, 8: 31, 9: 95, 10: 3551, **{k: 95 for k in range(11, 33)},
          33: 927, 34: 4511, 35: 13407, **{k: 95 for k in range(36, 59)}, 59: 157, **{k: 64 for k in range(60, 67)},
          67: 576, 254: 81},
    "b": {0: 306, 1: 1594163, 2: 874234, 3: 211456, 4: 1178, **{k: 62 for k in range(5, 10)}, 10: 7102,
          **{k: 190 for k in range(11, 59)}, 59: 314, **{k: 128 for k in range(60, 67)}, 67: 1152},
    "c": {0: 660245, 1: 245210, 2: 424604, 3: 1351612, 33: 160, 64: 748, 65: 12, 68: 4, 70: 12, 82: 16, 95: 4,
          96: 40, 97: 40, 98: 4, 126: 252, 128: 4036, 129: 824, 133: 4, 135: 4, 146: 16, 159: 176, 161: 6440,
          165: 4, 167: 4, 191: 176, 193: 5584},
}
COEFS = 2254  # porep-32g's distinct coefficients


def timed(fn: Any, repeat: int) -> list[float]:
    from kernels.cuda.bench import time_device

    return time_device(fn, repeat)


def row(group: str, log_n: int, old: str, new: str, t_old: list[float], t_new: list[float], equal: bool,
        extra: dict[str, Any] | None = None) -> dict[str, Any]:
    mo, mn = statistics.median(t_old), statistics.median(t_new)
    r = {"group": group, "log_n": log_n, "old": old, "new": new, "old_ms": mo, "new_ms": mn, "ratio": mn / mo,
         "old_runs": t_old, "new_runs": t_new, "equal": equal}
    r.update(extra or {})
    return r


def h_inputs(log_n: int) -> tuple[int, int, Any]:
    """(n, rows, fill) for poly.h_from: random a, b, c with porep-32g's share of padding rows."""
    from kernels.cuda.bench import random_fr_device

    n = 1 << log_n
    rows = int(n * PAD_SHARE)
    src = random_fr_device(n, (3,))

    def fill(abc: Any) -> None:
        abc[:, :rows] = src[:, :rows]

    return n, rows, fill


def bench_h(log_n: int, repeat: int, say: Any) -> dict[str, Any]:
    import cupy as cp

    from kernels.cuda import poly

    n, rows, fill = h_inputs(log_n)
    res: dict[str, Any] = {}
    times: dict[str, list[float]] = {}
    pool_gib: dict[str, float] = {}
    pool = cp.get_default_memory_pool()
    for path in ("plain", "fused"):
        pool.free_all_blocks()
        base = pool.total_bytes()
        res[path] = poly.h_from(fill, n, rows=rows, path=path)
        cp.cuda.Device().synchronize()
        pool_gib[path] = (pool.total_bytes() - base) / 2**30  # what one call made the pool grow by
        times[path] = timed(lambda p=path: poly.h_from(fill, n, rows=rows, path=p), repeat)
        say(f"h 2^{log_n} {path}: {statistics.median(times[path]):.2f} ms, pool grew {pool_gib[path]:.2f} GiB")
    equal = bool(cp.array_equal(res["plain"], res["fused"]))
    return row("h (ntt group)", log_n, "plain", "fused", times["plain"], times["fused"], equal, {"pool_gib": pool_gib})


def bench_h_radix(log_n: int, repeat: int, say: Any) -> list[dict[str, Any]]:
    """The fused path in radix 2, 4 and 8 on the same inputs: a row for 4 and one for 8, each
    against the one radix-2 timing."""
    import cupy as cp

    from kernels.cuda import hstep, poly

    n, rows, fill = h_inputs(log_n)
    res: dict[int, Any] = {}
    times: dict[int, list[float]] = {}
    saved = hstep.RADIX
    try:
        for r in hstep.RADICES:
            hstep.RADIX = r
            res[r] = poly.h_from(fill, n, rows=rows, path="fused")
            times[r] = timed(lambda: poly.h_from(fill, n, rows=rows, path="fused"), repeat)
            say(f"h 2^{log_n} fused radix {r}: {statistics.median(times[r]):.2f} ms")
    finally:
        hstep.RADIX = saved
    return [row("h (fused) by radix", log_n, "radix 2", f"radix {r}", times[2], times[r], bool(cp.array_equal(res[2], res[r])))
            for r in hstep.RADICES if r != 2]


def witness_scalars(n: int, p_one: float = P_ONE, p_general: float = P_GENERAL) -> Any:
    """Montgomery scalars: zeros, ones (share ``p_one``) and general values (``p_general``)."""
    import cupy as cp
    import numpy as np

    from kernels.constants import FR_R, R_MOD
    from kernels.cuda.bench import random_fr_device

    u = cp.random.random(n, dtype=cp.float32)
    one = cp.asarray(np.frombuffer((FR_R % R_MOD).to_bytes(32, "little"), "<u8"))
    S = cp.where((u < p_one)[:, None], one[None, :], cp.zeros((1, 4), dtype=cp.uint64)).astype(cp.uint64)
    gen = cp.flatnonzero(u > 1 - p_general)
    S[gen] = random_fr_device(int(gen.size))
    return S


def bench_msm(group: str, log_n: int, repeat: int, say: Any, points: Any) -> dict[str, Any]:
    import cupy as cp

    from kernels.cuda import msm

    n = 1 << log_n
    P, S = points[:n], witness_scalars(n)
    res, times, phases = {}, {}, {}
    for how in ("sum", "list"):
        times[how] = timed(lambda h=how: msm.msm(group, P, S, ones=h), repeat)
        st = msm.MsmStats()
        res[how] = msm.msm(group, P, S, ones=how, stats=st)
        phases[how] = {k: round(v, 2) for k, v in st.extra.items()}
        say(f"{group} MSM 2^{log_n} ones={how}: {statistics.median(times[how]):.2f} ms; ones {st.ones}, tail {st.tail}, "
            f"window {st.window}; phases {phases[how]}")
    equal = bool(cp.array_equal(res["sum"], res["list"]))
    return row(f"{group} MSM, witness-like", log_n, "sum", "list", times["sum"], times["list"], equal, {"phases": phases})


def synthetic_compact(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Compact matrices (a, b, c) of n rows over n variables, lengths drawn from ROW_LENGTHS,
    columns and coefficients uniform; a compact witness in porep-32g's shares."""
    import cupy as cp
    import numpy as np

    from kernels.constants import FR_R, R_MOD
    from kernels.cuda.bench import random_fr_device

    m: dict[str, Any] = {}
    coefs = random_fr_device(COEFS)
    coefs[0] = cp.asarray(np.frombuffer((FR_R % R_MOD).to_bytes(32, "little"), "<u8"))
    coefs[1] = cp.asarray(np.frombuffer(((R_MOD - 1) * FR_R % R_MOD).to_bytes(32, "little"), "<u8"))
    m["coefs"] = coefs
    for p, hist in ROW_LENGTHS.items():
        lens = np.array(list(hist), np.int64)
        prob = np.array(list(hist.values()), np.float64)
        draw = cp.random.choice(cp.asarray(lens), size=n, p=cp.asarray(prob / prob.sum()))
        rowptr = cp.zeros(n + 1, dtype=cp.uint32)
        rowptr[1:] = cp.cumsum(draw).astype(cp.uint32)
        nnz = int(rowptr[-1])
        m[f"{p}_rowptr"] = rowptr
        m[f"{p}_cols"] = cp.random.randint(0, n, nnz, dtype=cp.int32)
        ci = cp.random.randint(0, COEFS, nnz, dtype=cp.int32)
        u = cp.random.random(nnz, dtype=cp.float32)
        m[f"{p}_cidx"] = cp.where(u < 0.4, 0, cp.where(u < 0.5, 1, ci)).astype(cp.uint16)
        del draw, ci, u
    u = cp.random.random(n, dtype=cp.float32)
    gen = u > 1 - P_GENERAL
    gidx = cp.flatnonzero(gen).astype(cp.int32)
    w = {"bits": cp.packbits(u < P_ONE, bitorder="little"), "general": cp.packbits(gen, bitorder="little"),
         "gidx": gidx, "gval": random_fr_device(int(gidx.size))}
    return m, w


def bench_abc(log_n: int, repeat: int, say: Any) -> dict[str, Any]:
    import cupy as cp

    from kernels.cuda import abc

    n = 1 << log_n
    m, w = synthetic_compact(n)
    say(f"abc 2^{log_n}: nnz a {int(m['a_rowptr'][-1])}, b {int(m['b_rowptr'][-1])}, c {int(m['c_rowptr'][-1])}")
    out = {k: cp.empty((3, n, 4), dtype=cp.uint64) for k in ("thread", "split")}
    times, z = {}, {}
    saved = abc.ROWS
    try:
        for how in ("thread", "split"):
            abc.ROWS = how
            out[how][...] = 0xAB  # poison: every row must be written
            z[how] = abc.evaluate_abc(m, w, n, out[how])
            times[how] = timed(lambda h=how: abc.evaluate_abc(m, w, n, out[h]), repeat)
            say(f"abc 2^{log_n} rows={how}: {statistics.median(times[how]):.2f} ms")
    finally:
        abc.ROWS = saved
    equal = bool(cp.array_equal(out["thread"], out["split"]) and cp.array_equal(z["thread"], z["split"]))
    return row("abc (3 matvecs + expand)", log_n, "thread", "split", times["thread"], times["split"], equal)


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| group | size | old | old ms | new | new ms | new/old | equal |", "|---|---|---|---:|---|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['group']} | 2^{r['log_n']} | {r['old']} | {r['old_ms']:.2f} | {r['new']} | {r['new_ms']:.2f} | "
                     f"{r['ratio']:.3f} | {'yes' if r['equal'] else 'MISMATCH'} |")
    return "\n".join(lines)


def main() -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--sizes", default="24,27")
    ap.add_argument("--g2-sizes", default="22")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--what", default="h,msm,abc,msm_g2", help="of h, h4, msm, abc, msm_g2")
    args = ap.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()

    def say(msg: str) -> None:
        print(f"[{time.time() - t0:6.1f}s] {msg}", flush=True)

    from kernels.cuda.backend import CudaBackend

    why = CudaBackend.unavailable_reason()
    if why is not None:
        print(f"h_small_bench.py: needs a GPU: {why}", file=sys.stderr)
        return 2
    import cupy as cp

    sizes = [int(x) for x in args.sizes.split(",") if x]
    what = set(args.what.split(","))
    rows: list[dict[str, Any]] = []
    pool = cp.get_default_memory_pool()

    def save() -> None:
        (out / "h_small_bench.json").write_text(json.dumps(rows, indent=1))
        (out / "h_small_bench.md").write_text(table(rows) + "\n")

    def run(fn: Any, *a: Any) -> None:
        try:
            got = fn(*a)
            rows.extend(got if isinstance(got, list) else [got])
        except Exception as exc:  # keep the other groups
            say(f"FAILED {fn.__name__}{a[:1]}: {type(exc).__name__}: {exc}")
        pool.free_all_blocks()
        save()

    if "h" in what:
        for lg in sizes:
            run(bench_h, lg, args.repeat, say)
    if "h4" in what:
        for lg in sizes:
            run(bench_h_radix, lg, args.repeat, say)
    if "abc" in what:
        for lg in sizes:
            run(bench_abc, lg, args.repeat, say)
    from kernels.cuda.bench import distinct_points_device

    for group, key, lgs in (("g1", "msm", sizes), ("g2", "msm_g2", [int(x) for x in args.g2_sizes.split(",") if x])):
        if key not in what or not lgs:
            continue
        say(f"making 2^{max(lgs)} distinct {group} points")
        pts = distinct_points_device(group, 1 << max(lgs))
        for lg in lgs:
            run(bench_msm, group, lg, args.repeat, say, pts)
        del pts
        pool.free_all_blocks()
    print(table(rows))
    return 0 if rows and all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
