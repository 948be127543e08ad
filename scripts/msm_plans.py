"""Time one G1 MSM size under several plans: the same points and scalars, the results compared.

    python scripts/msm_plans.py --log 24 --plans default w16+bw w20 w20+runs w20+runs+sl2 [--repeat 5] [--out F]

A plan is options joined by '+' ('default' is none):
  wN     window bits N (else msm_layout.default_window's choice);
  bw     the counting sort one window per grid row whatever the bucket count (msm.SORT_BY_WINDOW_BUCKETS 0);
  runs   the sort into fixed runs, two passes (needs the per-window sort: bw, or 2^21 buckets);
  runs1  the same in one pass;
  sl2    the window slices in two levels (msm_tree.SLICE_LEVELS 2);
  sN     N buckets a window slice (a power of two; msm_tree.SLICE_LEN);
  nf     no prefold: the window slices walk a multi-item bucket's items themselves (msm_fold.PREFOLD off);
  fx     after the exact sort with no heavy bucket, the slices sum the work items (msm.FOLD_EXACT);
  gf     the windows combined by one GPU thread instead of on the host (msm.HOST_FINISH off);
  mN     the runs allowed N times the exact sort's memory (msm.RUNS_SLACK; 2 otherwise, which
         turns them down at 2^24 in window 20, where a run is ~2.9 times its bucket's mean);
  pN     the two-pass sort's pass 1 for N windows a launch (msm_sort2.WINDOWS_PER_PASS);
  hN     runs of up to N work items take the fold path (msm.FOLD_ITEMS, 64 otherwise; it was
         msm.HEAVY_ITEMS, 32, until short rounds' items cut the top window's runs into ~50);
  x      the bucket accumulation by XYZZ additions (msm_layout's rounds from 2^24 to 2^26 otherwise);
  r      the bucket accumulation by batch-affine rounds (msm()'s accumulate "rounds"; XYZZ at
         this size otherwise), rN with work items of N entries ("rounds-lN").
Each plan: the median of --repeat CUDA-event timings after a warm-up, the phases of one more run,
its ratio to sppark's figure in docs/ANCHORS.md where there is one, and whether its point equals
the first plan's. Why: the window, sort and reduction choices trade against each other by size
(at 2^24 on an H100, window 20 took the accumulation from 108 to 91 ms and put 21 ms on the
bucket sums and window reduction; at 2^24 the sort into runs does not fit its memory bound at
window 20, so "runs" there falls back to the exact sort, and "fx" is the way to the fold path), so they are timed together, not one spec at a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kernels.textfmt import OneLineParser  # noqa: E402


@dataclass(frozen=True)
class Plan:
    """One way to run the MSM: msm()'s arguments and the module settings it runs under."""

    name: str
    window: int | None = None
    by_window: bool = False
    sort_runs: bool | None = None
    two_pass: bool | None = None
    slice_levels: int | None = None
    slice_len: int | None = None
    fold_exact: bool = False
    gpu_finish: bool = False
    accumulate: str | None = None
    runs_slack: float | None = None
    sort_windows: int | None = None
    fold_items: int | None = None
    no_prefold: bool = False


def parse_plan(text: str) -> Plan:
    """A Plan from 'w20+runs+sl2'; ValueError naming the option it does not know."""
    kw: dict[str, Any] = {}
    if text != "default":
        for opt in text.split("+"):
            if opt.startswith("w") and opt[1:].isdigit() and 1 <= int(opt[1:]) <= 24:
                kw["window"] = int(opt[1:])
            elif opt == "bw":
                kw["by_window"] = True
            elif opt in ("runs", "runs1"):
                kw["sort_runs"], kw["two_pass"] = True, opt == "runs"
            elif opt == "sl2":
                kw["slice_levels"] = 2
            elif opt.startswith("s") and opt[1:].isdigit() and int(opt[1:]) in (1, 2, 4, 8, 16, 32, 64, 128):
                kw["slice_len"] = int(opt[1:])
            elif opt.startswith("m") and opt[1:].isdigit() and 1 <= int(opt[1:]) <= 8:
                kw["runs_slack"] = float(opt[1:])
            elif opt.startswith("p") and opt[1:].isdigit() and 1 <= int(opt[1:]) <= 32:
                kw["sort_windows"] = int(opt[1:])
            elif opt.startswith("h") and opt[1:].isdigit() and 1 <= int(opt[1:]) <= 4096:
                kw["fold_items"] = int(opt[1:])
            elif opt == "nf":
                kw["no_prefold"] = True
            elif opt == "fx":
                kw["fold_exact"] = True
            elif opt == "gf":
                kw["gpu_finish"] = True
            elif opt == "x":
                kw["accumulate"] = "xyzz"
            elif opt == "r" or (opt.startswith("r") and opt[1:].isdigit() and 1 <= int(opt[1:]) <= 4096):
                kw["accumulate"] = "rounds" if opt == "r" else f"rounds-l{int(opt[1:])}"
            else:
                raise ValueError(f"plan {text!r}: unknown option {opt!r} (wN, bw, runs, runs1, sl2, sN, mN, pN, hN, nf, fx, gf, x, r, rN)")
    return Plan(text, **kw)


def _assignments(plan: Plan) -> list[tuple[Any, str, Any]]:
    """(module, attribute, value) for each module setting the plan changes."""
    from kernels.cuda import msm, msm_fold, msm_sort2, msm_tree

    out: list[tuple[Any, str, Any]] = []
    if plan.by_window:
        out += [(msm, "SORT_BY_WINDOW", True), (msm, "SORT_BY_WINDOW_BUCKETS", 0)]
    if plan.slice_levels is not None:
        out.append((msm_tree, "SLICE_LEVELS", plan.slice_levels))
    if plan.slice_len is not None:
        out.append((msm_tree, "SLICE_LEN", plan.slice_len))
    if plan.fold_exact:
        out.append((msm, "FOLD_EXACT", True))
    if plan.gpu_finish:
        out.append((msm, "HOST_FINISH", False))
    if plan.runs_slack is not None:
        out.append((msm, "RUNS_SLACK", plan.runs_slack))
    if plan.sort_windows is not None:
        out.append((msm_sort2, "WINDOWS_PER_PASS", plan.sort_windows))
    if plan.fold_items is not None:
        out.append((msm, "FOLD_ITEMS", plan.fold_items))
    if plan.no_prefold:
        out.append((msm_fold, "PREFOLD", False))
    return out


@contextmanager
def settings(plan: Plan) -> Iterator[None]:
    """The module settings a plan runs under, restored after (also after an error)."""
    changes = _assignments(plan)
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in changes]
    try:
        for mod, name, value in changes:
            setattr(mod, name, value)
        yield
    finally:
        for mod, name, value in saved:
            setattr(mod, name, value)


def main() -> int:
    ap = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log", type=int, default=24, help="log2 of the number of points")
    ap.add_argument("--plans", nargs="+", default=["default"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", help="write the rows as JSON here")
    args = ap.parse_args()
    try:
        plans = [parse_plan(p) for p in args.plans]
    except ValueError as exc:
        ap.error(str(exc))
    if not 10 <= args.log <= 28:
        ap.error(f"--log {args.log}: give 10 to 28")
    from kernels.cuda.backend import CudaBackend

    why = CudaBackend.unavailable_reason()
    if why is not None:
        print(f"msm_plans.py: needs a GPU: {why}", file=sys.stderr)
        return 2

    import cupy as cp

    from kernels.cuda import msm
    from kernels.cuda.bench import ANCHORS_MS, distinct_points_device, random_fr_device, time_device

    n = 1 << args.log
    points = distinct_points_device("g1", n)
    scalars = random_fr_device(n)
    anchor = ANCHORS_MS.get("msm_g1", {}).get(args.log)
    rows: list[dict[str, Any]] = []
    first = None
    for plan in plans:
        kw = {"window": plan.window, "sort_runs": plan.sort_runs, "sort_two_pass": plan.two_pass}
        if plan.accumulate:
            kw["accumulate"] = plan.accumulate
        with settings(plan):
            runs = time_device(lambda: msm.msm("g1", points, scalars, **kw), args.repeat)
            st = msm.MsmStats()
            got = cp.asnumpy(msm.msm("g1", points, scalars, stats=st, **kw))
        first = got if first is None else first
        ms = statistics.median(runs)
        row = {"plan": plan.name, "log_n": args.log, "ms": round(ms, 3), "runs_ms": [round(r, 3) for r in runs],
               "ratio": round(ms / anchor, 3) if anchor else None, "window": st.window, "sort": st.sort,
               "items": st.items, "item_len": st.item_len, "equal": bool((got == first).all()),
               "phases_ms": {k: round(v, 3) for k, v in st.extra.items()}}
        rows.append(row)
        ratio = f" (x{row['ratio']:.3f} sppark)" if anchor else ""
        print(f"G1 MSM 2^{args.log} {plan.name}: {ms:.2f} ms{ratio}; window {st.window}, sort {st.sort}, "
              f"{st.items} items of {st.item_len}; {'equal' if row['equal'] else 'DIFFERENT from ' + plans[0].name}; "
              f"phases {row['phases_ms']}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    print("\n| plan | ms | x sppark | window | sort | equal |\n|---|---:|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['plan']} | {r['ms']:.2f} | {r['ratio'] if r['ratio'] is not None else '-'} | {r['window']} | "
              f"{r['sort']} | {r['equal']} |")
    return 0 if all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
