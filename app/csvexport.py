"""`e`: the proofs table as CSV, as the operator sees it (their sort and filter), every column.

Written to a new file in the current folder, never over an existing one: the name carries the
time and, if that is taken, a number. Timers are mean ms per partition; total is seconds.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

from app.state import DashboardState
from app.widgets.proofrows import COLUMNS, STAGE_WORDS, job_value, ordered_jobs

FIELDS = ["job", "outcome", "stage", "preset", "partitions", "done_partitions"] + [
    f"{k}_ms" for k, _, _ in COLUMNS if k not in ("job", "ok", "stage", "parts", "total", "bar")
] + ["total_s", "verified"]


def free_path(folder: Path, stem: str) -> Path:
    """stem.csv in folder, or stem-2.csv, stem-3.csv ... whichever does not exist yet."""
    p = folder / f"{stem}.csv"
    n = 2
    while p.exists():
        p = folder / f"{stem}-{n}.csv"
        n += 1
    return p


def export_proofs(state: DashboardState, sort_key: str, reverse: bool, needle: str,
                  folder: Path | None = None) -> tuple[Path, int]:
    """Write the table's proofs; returns the path and the number of rows. Raises OSError."""
    folder = folder or Path.cwd()
    path = free_path(folder, time.strftime("sealtop-proofs-%Y%m%d-%H%M%S"))
    jobs = ordered_jobs(state, sort_key, reverse, needle)
    timer_keys = [k for k, _, _ in COLUMNS if k not in ("job", "ok", "stage", "parts", "total", "bar")]
    with open(path, "x", newline="") as f:  # "x": never overwrite, even in a race
        w = csv.writer(f)
        w.writerow(FIELDS)
        for j in jobs:
            row = [j.job, j.outcome, STAGE_WORDS.get(j.status, j.status), j.preset, j.partitions,
                   j.done_partitions]
            for k in timer_keys:
                v = job_value(j, k)
                row.append("" if v is None else f"{v:.3f}")
            row.append("" if j.total_ms is None else f"{j.total_ms / 1000:.3f}")
            row.append("" if j.verified is None else str(j.verified).lower())
            w.writerow(row)
    return path, len(jobs)
