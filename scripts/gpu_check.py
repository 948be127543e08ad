"""Build, check and time the cuda backend in one run, for a lent GPU machine.

    python scripts/gpu_check.py OUTDIR [--cache DIR] [--phases compile,tests,probe,bench]
                                [--bench SPEC] [--repeat N] [--test-args ARGS] [--no-cache-save]

Writes into OUTDIR (all flat files, so they come back from a device run):
  log.txt         everything printed, with timestamps;
  tests.txt       pytest's output for tests/test_cuda_*.py (the host-only ones included);
  results.json    compile times, arithmetic probes, benchmark rows;
  summary.md      the benchmark table (ratio to sppark where docs/ANCHORS.md has a figure);
  cupy_cache.tar.gz  CuPy's compiled-kernel cache (CUPY_CACHE_DIR), to carry into the next run.
The cache directory (--cache, default .cupycache in the repo root) is used as CUPY_CACHE_DIR, so a
run that starts with the previous run's cache skips the NVRTC compilations (minutes).
--bench takes 'msm_g1=16,20,24 ntt=20,24' (log2 sizes per kernel); 'default' means the full set;
'msm_g1_windows=24:16,18,20' times one size with several window widths, and
'msm_g1_items=20:32,64' with several work-item lengths, 'msm_g1_unsorted=24' with the work
items in their natural order, 'msm_g1_sortw=26:16,20' with the sort one window per grid row;
'msm_g1_acc=xyzz,batch,rounds,rounds3:24,27' times G1 (msm_g2_acc: G2) with each bucket
accumulation at each size (one set of points, made once; G1 over its endomorphism table, so 2^27
is GLV-split as in a proof), and 'msm_g1_accw=batch:27:20,22' one accumulation with several
windows; 'msm_g1_sort2=26,27' times G1 over its endomorphism table with the one-pass sort into
runs and with the two-pass one (kernels/cuda/msm_sort2.py; pass 1 for 1, 2 and 3 windows at a
time), each total and its 'sort' phase; 'msm_g1_ones=xyzz,rounds,rounds-l16:30.7,20.3,61.4' times the
ones' sum (msm.sum_list) alone with each accumulation over lists of that many million indices
(scattered over twice as many distinct points), results compared equal (msm_g2_ones: G2).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kernels.textfmt import OneLineParser  # noqa: E402


class Tee:
    def __init__(self, path: Path) -> None:
        self.f = path.open("a")
        self.t0 = time.time()

    def __call__(self, msg: str) -> None:
        line = f"[{time.time() - self.t0:7.1f}s] {msg}"
        print(line, flush=True)
        self.f.write(line + "\n")
        self.f.flush()


# (group, accumulation, log2 size, window or None) for the msm_g*_acc and msm_g*_accw specs
ACC_RUNS: list[tuple[str, str, int, int | None]] = []
# log2 sizes for the msm_g1_sort2 spec
SORT2_RUNS: list[int] = []
# (group, accumulations, list sizes in millions) for the msm_g*_ones specs
ONES_RUNS: list[tuple[str, list[str], list[float]]] = []


def parse_bench(spec: list[str]) -> tuple[dict[str, list[int]], dict[int, list[int]], dict[int, list[int]]]:
    from kernels.cuda.bench import DEFAULT_SIZES

    sizes: dict[str, list[int]] = {}
    windows: dict[int, list[int]] = {}
    items: dict[int, list[int]] = {}
    for tok in spec:
        if tok == "default":
            sizes.update({k: list(v) for k, v in DEFAULT_SIZES.items()})
            continue
        k, _, v = tok.partition("=")
        if k in ("msm_g1_acc", "msm_g2_acc"):  # 'xyzz,batch:24,27'
            modes, _, lgs = v.partition(":")
            ACC_RUNS.extend((k[4:6], a, int(lg), None) for lg in lgs.split(",") for a in modes.split(","))
        elif k in ("msm_g1_accw", "msm_g2_accw"):  # 'batch:27:20,22'
            mode, lg, ws = v.split(":")
            ACC_RUNS.extend((k[4:6], mode, int(lg), int(w)) for w in ws.split(","))
        elif k in ("msm_g1_ones", "msm_g2_ones"):  # 'xyzz,rounds:30.7,61.4': sizes in millions
            modes, _, ms = v.partition(":")
            ONES_RUNS.append((k[4:6], modes.split(","), [float(x) for x in ms.split(",") if x]))
        elif k == "msm_g1_sort2":  # '26,27': one-pass against two-pass sort into runs
            SORT2_RUNS.extend(int(lg) for lg in v.split(",") if lg)
        elif k in ("msm_g1_windows", "msm_g1_items"):
            lg, _, ws = v.partition(":")
            (windows if k == "msm_g1_windows" else items)[int(lg)] = [int(w) for w in ws.split(",")]
        elif k == "msm_g1_unsorted":  # work items in their natural order (msm.SORT_ITEMS off)
            for lg in v.split(","):
                items.setdefault(int(lg), []).append(0)
        elif k == "msm_g1_sortw":  # 'LG:W,W': the counting sort one window per grid row
            lg, _, ws = v.partition(":")
            windows.setdefault(int(lg), []).extend(-int(w) for w in ws.split(","))
        else:
            sizes[k] = [int(x) for x in v.split(",") if x]
    return sizes, windows, items


def bench_sort2(lgs: list[int], repeat: int, log: Tee, rows: list[dict[str, Any]]) -> None:
    """G1 over its endomorphism table (GLV-split from msm.GLV_MIN_TAIL on, as H's), at each size
    with the one-pass sort into runs and then the two-pass one, pass 2 per bin (pass 1 for 2
    windows at a time) and flat (pass 1 for 1, 2 and 3: msm_sort2.WINDOWS_PER_PASS, PLACE): each
    total and its 'sort' phase."""
    import cupy as cp

    from kernels.cuda import msm_sort2
    from kernels.cuda.bench import bench_msm, distinct_points_device
    from kernels.cuda.msm import endo_table

    ext = endo_table(distinct_points_device("g1", 1 << max(lgs)))
    pts = ext[: ext.shape[0] // 2]
    saved = msm_sort2.WINDOWS_PER_PASS, msm_sort2.PLACE, msm_sort2.FLAT_RUNS_BYTES
    # (windows a pass 1, pass 2's form, the flat pass's MB of runs in flight); 0 windows: one pass
    cases = [(0, "-", 0), (2, "bins", 0), (2, "flat", 0), (2, "flat", 12), (2, "flat", 24), (2, "flat", 48), (3, "flat", 24)]
    for lg in lgs:
        got = {}
        for per, place, mb in cases:
            if per:
                msm_sort2.WINDOWS_PER_PASS, msm_sort2.PLACE, msm_sort2.FLAT_RUNS_BYTES = per, place, mb << 20
            try:
                r = bench_msm("g1", lg, repeat, points=pts, endo=ext, sort_runs=True, sort_two_pass=per > 0)
            finally:
                msm_sort2.WINDOWS_PER_PASS, msm_sort2.PLACE, msm_sort2.FLAT_RUNS_BYTES = saved
            place = f"flat {mb} MB" if place == "flat" else place
            r["sort2_windows"], r["sort2_place"] = per, place
            got[(per, place)] = r
            ph = r.get("phases_ms") or {}
            what = f"two passes, {per} window(s) a pass 1, pass 2 {place}" if per else "one pass"
            log(f"G1 MSM 2^{lg}{' GLV' if r['glv'] else ''} window {r['window']}, {what} (sort {r['sort']}): {r['ms']:.2f} ms; "
                f"sort phase {ph.get('sort', float('nan')):.2f} ms; phases {ph}")
            rows.append(r)
        line = ", ".join(f"{'one pass' if per == 0 else f'{per}w {place}'} {r.get('phases_ms', {}).get('sort', float('nan')):.2f}"
                         f" (total {r['ms']:.2f})" for (per, place), r in got.items())
        log(f"G1 MSM 2^{lg} sort into runs, ms: {line}")
    del pts, ext
    cp.get_default_memory_pool().free_all_blocks()


def bench_ones(group: str, modes: list[str], sizes_m: list[float], repeat: int, log: Tee, rows: list[dict[str, Any]]) -> None:
    """msm.sum_list over m = size million indices (sorted, scattered over 2m distinct points, as the
    list split's are over a witness), each accumulation timed by CUDA events after a warm-up
    (bench.time_device; median of repeat), the floor (msm_rounds.ONES_MIN) off so a rounds mode
    runs as named; every mode's sum compared with the first's."""
    import statistics

    import cupy as cp
    import numpy as np

    from kernels.cuda import msm, msm_rounds
    from kernels.cuda.bench import distinct_points_device, time_device
    from kernels.cuda.finish import combine_windows

    floor = msm_rounds.ONES_MIN[group]
    msm_rounds.ONES_MIN[group] = 0
    try:
        big = int(max(sizes_m) * 1e6)
        pts = distinct_points_device(group, 2 * big)
        for sm in sizes_m:
            m = int(sm * 1e6)
            idx = cp.sort(cp.random.permutation(2 * m)[:m]).astype(cp.uint32)
            ref = None
            for how in modes:
                def one(h: str = how, p: Any = pts, i: Any = idx, n: int = m) -> Any:
                    return msm.sum_list(group, p, i, n, h)

                runs = time_device(one, repeat)
                got = cp.asnumpy(msm.sum_list(group, pts, idx, m, how))
                aff = combine_windows(group, np.zeros((0, got.shape[1]), np.uint64), 1, got)
                same = ref is None or bool(np.array_equal(aff, ref))
                ref = aff if ref is None else ref
                kw = msm_rounds.mode(how) or {}
                L = kw.get("length") or (msm_rounds.ones_length(group, m) if kw else max(8, -(-m // msm.TARGET_ITEMS)))
                ms = statistics.median(runs)
                log(f"{group.upper()} ones' sum {m / 1e6:.1f} M {how}: {ms:.2f} ms (min {min(runs):.2f}), items of {L}, "
                    f"{-(-m // L)} items; {'equal' if same else 'DIFFERENT from ' + modes[0]}")
                rows.append({"backend": "cuda", "kernel": f"ones_{group}", "title": f"{group.upper()} ones' sum {how}",
                             "log_n": round(float(np.log2(m)), 2), "n": m, "ms": ms, "runs_ms": runs, "item_len": L,
                             "per_s": m / ms * 1e3, "anchor_ms": None, "equal": same, "ratio": None})
    finally:
        msm_rounds.ONES_MIN[group] = floor
        cp.get_default_memory_pool().free_all_blocks()


def probe_rates(log: Tee) -> dict[str, float]:
    """Fr and Fp multiplication rates: chains of dependent products, CUDA-event timed.

    Beside Mont<Fp>::operator* (fp_mul_chain) it times ff/dmul.cuh's FP64-pipe products in the
    same chain shape (fp_dmul_chain: Karatsuba, fp_dmul_school_chain, fp_dmul_hybrid_chain: FP64
    product and IMAD reduction), operator* and dmul48::mul interleaved (fp_mix_chain, one chain
    of each a thread, two products an iteration), and Mont::sqr against dmul48::sqr and
    sqr_hybrid (fp_sqr_chain, fp_dsqr_chain, fp_dsqr_hybrid_chain); each output is checked against
    its reference's for the same inputs."""
    import cupy as cp
    import numpy as np

    from kernels.cuda.bench import random_fr_device, time_device
    from kernels.cuda.module import MODULES, OPTIONS, kernel
    from kernels.cuda.source import assemble

    out: dict[str, float] = {}
    threads, iters = 132 * 8 * 256, 2000
    src = random_fr_device(1024 * 3)  # values below r: Fr elements
    # Fp elements below p: random_fr_device's words read 12 at a time, the top word cut to 28 bits
    # (below 2^380 < p), so that each product's bounds hold and the two products can be compared
    src_fp = src.copy()
    src_fp.view(cp.uint32).reshape(-1, 12)[:, 11] &= np.uint32(0x0FFFFFFF)
    dst = cp.empty((threads, 6), dtype=cp.uint64)
    # the module as built, and the portable C++ arithmetic (SEALTOP_PTX_FF=0) for comparison
    portable = cp.RawModule(code=assemble(MODULES["field"]), options=(*OPTIONS, "-DSEALTOP_PTX_FF=0"))

    def timed(fn: Any, name: str, per_thread: int) -> tuple[float, float]:
        """(products a second, median ms) of one chain kernel over ``threads`` threads."""
        args = (src_fp if name.startswith("fp") else src, dst, np.int32(iters))
        runs = time_device(lambda: fn((threads // 256,), (256,), args), 3)
        ms = sorted(runs)[len(runs) // 2]
        return threads * per_thread / (ms / 1e3), ms

    for variant, get in (("", lambda n: kernel("field", n)), ("portable_", portable.get_function)):
        for name in ("fr_mul_chain", "fp_mul_chain"):
            rate, ms = timed(get(name), name, iters)
            out[variant + name] = rate
            log(f"probe {variant}{name}: {rate / 1e9:.1f} G mul/s ({ms:.2f} ms)")
    # ff/dmul.cuh's products beside their IMAD references, each output checked against the reference's
    for ref, names in (("fp_mul_chain", ("fp_dmul_chain", "fp_dmul_school_chain", "fp_dmul_hybrid_chain", "fp_mix_chain")),
                       ("fp_sqr_chain", ("fp_dsqr_chain", "fp_dsqr_hybrid_chain"))):
        rate, ms = timed(kernel("field", ref), ref, iters)
        want = dst.copy()
        if ref not in out:
            out[ref] = rate
            log(f"probe {ref}: {rate / 1e9:.1f} G mul/s ({ms:.2f} ms)")
        for name in names:
            dst.fill(0)
            rate, ms = timed(kernel("field", name), name, 2 * iters if name == "fp_mix_chain" else iters)
            out[name] = rate
            equal = bool(cp.array_equal(dst, want))
            out[name + "_equal"] = float(equal)
            log(f"probe {name}: {rate / 1e9:.1f} G mul/s ({ms:.2f} ms, x{rate / out[ref]:.2f} {ref}); results equal: {equal}")
    return out


def main() -> int:
    ap = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--cache", default=str(ROOT / ".cupycache"))
    ap.add_argument("--phases", default="compile,tests,probe,bench")
    ap.add_argument("--bench", nargs="*", default=["default"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--test-args", default="")
    ap.add_argument("--test-timeout", type=int, default=300)
    ap.add_argument("--no-cache-save", action="store_true", help="skip OUTDIR/cupy_cache.tar.gz (a variant's run: the session saves the cache)")
    args = ap.parse_args()

    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(args.cache).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    os.environ["CUPY_CACHE_DIR"] = str(cache)
    log = Tee(out / "log.txt")
    phases = set(args.phases.split(","))
    results: dict[str, object] = {"phases": sorted(phases), "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}

    def save() -> None:
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))

    try:
        import cupy as cp

        dev = cp.cuda.runtime.getDeviceProperties(0)
        results["device"] = {"name": dev["name"].decode(), "sms": dev["multiProcessorCount"], "cc": f"{dev['major']}.{dev['minor']}"}
        results["cupy"] = cp.__version__
        log(f"device {results['device']}, cupy {cp.__version__}, cache {cache} ({len(list(cache.iterdir()))} files)")

        if "compile" in phases:
            from kernels.cuda import module

            t0 = time.time()
            module.warm_up(parallel=True, progress=lambda n: log(f"compiled {n} ({time.time() - t0:.1f}s)"))
            results["compile_s"] = time.time() - t0
            log(f"all modules ready in {results['compile_s']:.1f}s")
            save()

        if "tests" in phases:
            cmd = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                   "tests/test_cuda_host_ff.py", "tests/test_cuda_host_finish.py", "tests/test_cuda_ff.py", "tests/test_cuda_ntt.py", "tests/test_cuda_msm.py"]
            cmd += args.test_args.split()
            log("running " + " ".join(cmd[2:]))
            t0 = time.time()
            try:
                p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=args.test_timeout)
                text, rc = p.stdout + p.stderr, p.returncode
            except subprocess.TimeoutExpired as exc:
                # a timeout's partial output comes as bytes even with text=True
                part = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (exc.stdout, exc.stderr))
                text, rc = f"{part}\nTIMEOUT after {args.test_timeout}s", -1
            (out / "tests.txt").write_text(text if isinstance(text, str) else text.decode())
            tail = [ln for ln in str(text).splitlines() if ln.strip()][-1:] or ["(no output)"]
            results["tests"] = {"rc": rc, "s": time.time() - t0, "last": tail[0]}
            log(f"tests rc={rc} in {time.time() - t0:.1f}s: {tail[0]}")
            for ln in str(text).splitlines():
                if ln.startswith(("FAILED", "ERROR")):
                    log("  " + ln[:300])
            save()

        if "probe" in phases:
            results["probe"] = probe_rates(log)
            save()

        if "bench" in phases:
            from kernels.cuda.bench import bench_msm, device_bench

            sizes, windows, items = parse_bench(args.bench)
            rows = []
            from kernels.cuda import msm as _msm

            for lg, ws in windows.items():
                for w in ws:
                    saved = _msm.SORT_BY_WINDOW, _msm.SORT_BY_WINDOW_BUCKETS
                    if w < 0:  # msm_g1_sortw: every window its own grid row; else msm.py's own choice
                        _msm.SORT_BY_WINDOW, _msm.SORT_BY_WINDOW_BUCKETS = True, 0
                    try:
                        r = bench_msm("g1", lg, args.repeat, window=abs(w))
                    finally:
                        _msm.SORT_BY_WINDOW, _msm.SORT_BY_WINDOW_BUCKETS = saved
                    r["sort_by_window"] = w < 0
                    log(f"G1 MSM 2^{lg} window {abs(w)}{' (sort by window)' if w < 0 else ''}: {r['ms']:.2f} ms; "
                        f"item length {r['item_len']}; phases {r.get('phases_ms')}")
                    rows.append(r)
                    save()
            for lg, ls in items.items():
                for L in ls:
                    _msm.SORT_ITEMS = L != 0
                    try:
                        r = bench_msm("g1", lg, args.repeat, item_len=L or None)
                    finally:
                        _msm.SORT_ITEMS = True
                    r["sort_items"] = L != 0
                    what = f"item length {L}" if L else "items unsorted"
                    log(f"G1 MSM 2^{lg} {what}: {r['ms']:.2f} ms; window {r['window']}, {r['items']} items of {r['item_len']}; phases {r.get('phases_ms')}")
                    rows.append(r)
                    save()
            for group in ("g1", "g2"):
                runs = [r for r in ACC_RUNS if r[0] == group]
                if not runs:
                    continue
                from kernels.cuda.bench import distinct_points_device

                pts = distinct_points_device(group, 1 << max(r[2] for r in runs))
                ext = None
                if group == "g1":
                    # over an endomorphism table: tails from msm.GLV_MIN_TAIL on (2^27) are
                    # GLV-split, as in a proof, whatever the accumulation
                    from kernels.cuda.msm import endo_table

                    ext = endo_table(pts)
                    pts = ext[: ext.shape[0] // 2]
                for _, acc, lg, win in runs:
                    r = bench_msm(group, lg, args.repeat, window=win, points=pts, accumulate=acc, endo=ext)
                    per = "rounds" if acc.startswith("rounds") else "slots a thread"
                    log(f"{group.upper()} MSM 2^{lg} {acc}{' GLV' if r['glv'] else ''} window {r['window']}: {r['ms']:.2f} ms"
                        + (f" (x{r['ratio']:.2f} sppark)" if r["ratio"] else "")
                        + f"; {r['items']} items of {r['item_len']}, {r['slots']} {per}; phases {r.get('phases_ms')}")
                    rows.append(r)
                    results["bench"] = rows
                    save()
                del pts, ext
                cp.get_default_memory_pool().free_all_blocks()
            for group, modes, ms in ONES_RUNS:
                bench_ones(group, modes, ms, args.repeat, log, rows)
                results["bench"] = rows
                save()
            if SORT2_RUNS:
                bench_sort2(SORT2_RUNS, args.repeat, log, rows)
                results["bench"] = rows
                save()
            order = [k for k in ("ntt", "intt", "coset_ntt", "ntt_batch3", "msm_g1", "msm_g2", "msm_g1_glv", "fixed_g1", "fixed_g2") if k in sizes]
            for k in order:
                got = device_bench([k], {k: sizes[k]}, args.repeat, log=log)
                for r in got:
                    log(f"{r['title']} 2^{r['log_n']}{' GLV' if r.get('glv') else ''}{', sort ' + r['sort'] if 'sort' in r else ''}: "
                        f"{r['ms']:.3f} ms"
                        + (f" (x{r['ratio']:.2f} sppark)" if r["ratio"] else "")
                        + (f" window {r['window']} phases {r['phases_ms']}" if "phases_ms" in r else ""))
                rows.extend(got)
                results["bench"] = rows
                save()
            from kernels.bench import format_table

            table = format_table(rows)
            (out / "summary.md").write_text(table + "\n")
            print(table)
    except Exception as exc:  # keep what was gathered
        import traceback

        log("FAILED: " + "".join(traceback.format_exception(exc))[-3000:])
        results["error"] = repr(exc)
    finally:
        save()
        if not args.no_cache_save:
            with tarfile.open(out / "cupy_cache.tar.gz", "w:gz") as tf:
                tf.add(cache, arcname="cupycache")
            log(f"cache saved ({sum(f.stat().st_size for f in cache.iterdir()) / 1e6:.1f} MB)")
    return 0 if "error" not in results else 1


if __name__ == "__main__":
    sys.exit(main())
