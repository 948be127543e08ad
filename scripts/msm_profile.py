"""Phase times of the MSMs of one porep-32g partition, each alone on the device.

    PYTHONPATH=. python3 scripts/msm_profile.py [--repeat N] [--only h,a,b1,l,b2] [--pairs]

The pipeline's per-group timings (docs/BENCHMARKS.md) are taken while the finalize thread's G2
MSM shares the card, so they do not say what each MSM costs by itself. This runs each one alone
on random data shaped like porep-32g's: H (2^27 - 1 random scalars over a table with its
endomorphism images, the GLV split), and the witness MSMs A, B1, L (G1) and B2 (G2) with the
witness's shares of zeros, ones and general values (scripts/h_small_bench.py) at the query
sizes of Filecoin's circuit (docs/PLAN-H-SMALL.md). It prints, per MSM, the median total and
each phase's median (MsmStats), in ms, CUDA events after one warm-up. With --pairs, each witness
MSM runs again over its points' pair table (kernels/cuda/pairs.py), after the time to make it.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernels.textfmt import OneLineParser  # noqa: E402

# (name, group, scalars, share of general values): porep-32g's queries as a pipeline on the H200
# traced them (SEALTOP_MSM_TRACE, 2026-12-05): A over all 130,170,221 variables, L over the aux
# ones, B over the 33,112,282 its matrix uses; their general (not 0/1) values 1.70 M of A's and
# L's, 1.23 M of B's. Ones about 0.465 of each (c2-8MiB's share; the trace counts list entries).
SHAPES = (("a", "g1", 130_170_221, 0.0131), ("b1", "g1", 33_112_282, 0.0371),
          ("l", "g1", 130_169_893, 0.0131), ("b2", "g2", 33_112_282, 0.0371))
P_ONE = 0.465
H_SIZE = (1 << 27) - 1


def profile(name: str, group: str, points: Any, scalars: Any, repeat: int, **kw: Any) -> str:
    import cupy as cp

    from kernels.cuda import msm

    totals: list[float] = []
    phases: dict[str, list[float]] = {}
    st = msm.MsmStats()
    for i in range(repeat + 1):
        st = msm.MsmStats()
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        msm.msm(group, points, scalars, stats=st, **kw)
        b.record()
        b.synchronize()
        if i:  # the first is the warm-up
            totals.append(cp.cuda.get_elapsed_time(a, b))
            for k, v in st.extra.items():
                phases.setdefault(k, []).append(v)
    ph = ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in phases.items())
    return (f"{name} ({group}, {int(scalars.shape[0]):,} scalars: ones {st.ones:,}, tail {st.tail:,}, window {st.window}, "
            f"items {st.items:,}, sort {st.sort}): {statistics.median(totals):.2f} ms; {ph}")


def main() -> int:
    ap = OneLineParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="h,a,b1,l,b2")
    ap.add_argument("--pairs", action="store_true", help="each witness MSM again with its pair table")
    args = ap.parse_args()
    only = set(args.only.split(","))

    from h_small_bench import witness_scalars

    from kernels.cuda.bench import distinct_points_device, random_fr_device
    from kernels.cuda.msm import endo_table

    if "h" in only:
        ext = endo_table(distinct_points_device("g1", H_SIZE))
        print(profile("h", "g1", ext[:H_SIZE], random_fr_device(H_SIZE), args.repeat, endo=ext), flush=True)
        del ext
    tables: dict[str, Any] = {}
    for name, group, n, p_general in SHAPES:
        if name not in only:
            continue
        if group not in tables or int(tables[group].shape[0]) < n:
            tables[group] = distinct_points_device(group, n)
        scalars = witness_scalars(n, P_ONE, p_general)
        print(profile(name, group, tables[group][:n], scalars, args.repeat), flush=True)
        if args.pairs:
            print(profile_pairs(name, group, tables[group][:n], scalars, args.repeat), flush=True)
    return 0


def profile_pairs(name: str, group: str, points: Any, scalars: Any, repeat: int) -> str:
    """The time to make the points' pair table, then the MSM over it (as profile)."""
    import cupy as cp

    from kernels.cuda.pairs import pair_table

    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record()
    ext = pair_table(group, points)
    b.record()
    b.synchronize()
    made = cp.cuda.get_elapsed_time(a, b)
    line = profile(f"{name} by pairs", group, ext[:points.shape[0]], scalars, repeat, pairs=ext)
    del ext
    return f"{line}; pair table made in {made:.1f} ms"


if __name__ == "__main__":
    raise SystemExit(main())
