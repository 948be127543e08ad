"""What the proofs table shows: its columns, and one row of cells per proof in the operator's order.

This is the table's model, kept apart from the widget that draws it (app/widgets/proofs.py), so
that sorting, filtering and the cells can be reasoned about (and tested) without a terminal.
Sorting and filtering happen here, on the reducer's state, so a refresh keeps the operator's
order and filter.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from app.state import DashboardState, JobState, fmt_ms
from app.widgets.render import STAGE_GLYPH, Palette, stacked_bar

# (key, label, width); the key names what the column sorts by. Timers are mean ms per
# partition, always in ms; the total is seconds, always in s.
COLUMNS = (
    ("job", "job", 5),
    ("ok", "✓", 2),
    ("stage", "stage", 8),
    ("parts", "parts", 5),
    ("queue", "queue", 7),
    ("synth", "synth", 7),
    ("channel_wait", "chan", 7),
    ("gpu_wrapper", "wrap", 7),
    ("gpu_call", "call", 7),
    ("kernel", "kern", 7),
    ("b2", "b2", 6),
    ("dealloc", "dealloc", 7),
    ("total", "total s", 8),
    ("bar", "breakdown (mean ms per partition)", 34),
)
# Which columns a narrow table keeps first: id, outcome, stage and total always; the breakdown
# bar before the finer timers. The bar shrinks to BAR_MIN and grows into any width left over.
PRIORITY = ("job", "ok", "stage", "total", "parts", "gpu_call", "synth", "queue", "bar",
            "channel_wait", "gpu_wrapper", "kernel", "dealloc", "b2")
BAR_MIN = 16
PAD = 1  # blank cells on each side of a column
SORTABLE = tuple(k for k, _, _ in COLUMNS if k != "bar")
BAR_WIDTH = dict((k, w) for k, _, w in COLUMNS)["bar"]
LABELS = {k: label for k, label, _ in COLUMNS}
# The table shows at most this many proofs (the first in the current sort and filter), so that a
# session of thousands of proofs costs the same to draw as one of a hundred.
MAX_ROWS = 200
# Columns whose natural first order is largest first (the slow proofs on top).
DESCENDING_FIRST = ("total", "queue", "channel_wait")
# The stage column's words, and its sort order (least advanced first).
STAGE_WORDS = {"queued": "queued", "synthesizing": "synth", "synthesized": "to chan",
               "waiting_gpu": "channel",
               "gpu": "gpu", "deallocating": "dealloc", "finalizing": "finalize",
               "done": "done", "bad": "rejected", "failed": "failed", "cancelled": "cancel"}
_STAGE_ORDER = {s: i for i, s in enumerate(STAGE_WORDS)}


def fit_columns(width: int) -> tuple[tuple[str, str, int], ...]:
    """The columns that fit ``width`` cells, by PRIORITY, in the table's own order; the
    breakdown bar (if kept) takes what width is left over."""
    cells = {k: w + 2 * PAD for k, _, w in COLUMNS}
    cells["bar"] = BAR_MIN + 2 * PAD
    kept: set[str] = set()
    used = 0
    for key in PRIORITY:
        if used + cells[key] <= width or key in ("job", "ok", "stage", "total"):
            kept.add(key)
            used += cells[key]
    out = []
    for key, label, w in COLUMNS:
        if key not in kept:
            continue
        if key == "bar":
            w = BAR_MIN + max(0, width - used)
            if w < len(label):
                label = "breakdown (ms)"
        out.append((key, label, w))
    return tuple(out)


_TIMER_KEYS = ("queue", "synth", "channel_wait", "gpu_wrapper", "gpu_call", "kernel", "b2", "dealloc")


def job_value(job: JobState, key: str) -> float | str | None:
    """The value a column shows and sorts by."""
    if key == "job":
        return job.job
    if key == "ok":
        return {"done": 0, "bad": 2, "failed": 3}.get(job.status, 1)
    if key == "parts":
        return job.done_partitions
    if key == "stage":
        return _STAGE_ORDER.get(job.status, len(_STAGE_ORDER))
    if key == "total":
        return job.total_ms
    return timer_ms(job, key)


def timer_ms(job: JobState, key: str) -> float | None:
    """A timer column's value: the mean ms per partition (synth and kernel derived)."""
    if key in ("synth", "kernel"):
        return job.mean_derived(key)
    return job.mean_ms(key)


def bar_parts(job: JobState) -> list[tuple[str, float]]:
    """The stacked bar's segments: mean ms per partition of each stage."""
    fin = sum(v for v in (job.mean_ms("b2"), job.mean_ms("finalize")) if v)
    return [
        ("queue", job.mean_ms("queue") or 0.0),
        ("synth", job.mean_derived("synth") or 0.0),
        ("channel", job.mean_ms("channel_wait") or 0.0),
        ("gpu", job.mean_ms("gpu_wrapper") or 0.0),
        ("finalize", fin),
        ("dealloc", job.mean_ms("dealloc") or 0.0),
    ]


def progress_cell(job: JobState, pal: Palette, width: int = BAR_WIDTH) -> Text:
    """For a proof still in flight: one glyph per partition for its stage, then the counts."""
    t = Text()
    for i in sorted(job.parts):
        st = job.parts[i].stage
        t.append("✓" if st == "done" else STAGE_GLYPH.get(st, "?"), style=pal.stage_style(st))
    counts: dict[str, int] = {}
    for p in job.parts.values():
        counts[p.stage] = counts.get(p.stage, 0) + 1
    t.append("  " + ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items()), style=pal.dim)
    t.truncate(width)
    return t


def status_cell(job: JobState, pal: Palette) -> Text:
    """✓ verified, ✗ failed or rejected, ⊘ cancelled (never proven), … still in flight."""
    s = job.status
    if s == "done":
        return Text("✓", style=pal.ok)
    if s in ("bad", "failed"):
        return Text("✗", style=pal.bad)
    if s == "cancelled":
        return Text("⊘", style=pal.warn)
    return Text("…", style=pal.dim)


def matches(job: JobState, needle: str) -> bool:
    """Filter: a case-insensitive match on id, status word, ✓/✗ and preset."""
    if not needle:
        return True
    n = needle.lower().strip()
    mark = {"done": "✓ ok", "bad": "✗ bad", "failed": "✗ failed",
            "cancelled": "⊘ cancelled"}.get(job.status, "")
    hay = f"{job.job} #{job.job} {job.status} {mark} {job.preset}".lower()
    return n in hay


def ordered_jobs(state: DashboardState, sort_key: str, reverse: bool, needle: str) -> list[JobState]:
    """The proofs that match the filter, in the chosen order; unmeasured ones last either way."""
    jobs = [j for j in state.jobs.values() if matches(j, needle)]

    def key(j: JobState) -> tuple:
        v = job_value(j, sort_key)
        return (v is None, v if v is not None else 0, j.job)

    jobs.sort(key=key, reverse=reverse)
    if reverse:
        jobs.sort(key=lambda j: job_value(j, sort_key) is None)  # stable: keeps the order
    return jobs


@dataclass(frozen=True)
class Row:
    """One drawn row: the proof's id, its cells, and a stamp that changes when a cell does."""

    job: int
    cells: tuple[Text, ...]
    stamp: tuple


class RowBuilder:
    """Makes the rows for a state, reusing a proof's cells until that proof (or the bar's scale,
    or the palette) changes: at full load most proofs are finished and never change again."""

    def __init__(self) -> None:
        self._rows: dict[int, Row] = {}
        self._bar_ms: dict[int, tuple[int, float]] = {}  # job -> (version, bar length in ms)

    def rows(self, jobs: list[JobState], pal: Palette, bar_width: int = BAR_WIDTH) -> list[Row]:
        """Rows for these proofs (already sorted, filtered and cut to MAX_ROWS), with one cell
        per column of COLUMNS (the widget draws those that fit) and a bar ``bar_width`` wide."""
        bar_ms = self._bar_ms
        for j in jobs:
            hit = bar_ms.get(j.job)
            if hit is None or hit[0] != j.version:
                bar_ms[j.job] = (j.version, sum(ms for _, ms in bar_parts(j)))
        scale = max((bar_ms[j.job][1] for j in jobs), default=0.0)
        return [self._row(j, scale, pal, bar_width) for j in jobs]

    def _row(self, j: JobState, scale: float, pal: Palette, bar_width: int) -> Row:
        stamp = (j.version, scale, id(pal), bar_width)
        hit = self._rows.get(j.job)
        if hit is not None and hit.stamp == stamp:
            return hit
        st = j.status
        cells = [Text(str(j.job), justify="right"), status_cell(j, pal),
                 Text(STAGE_WORDS.get(st, st), style=pal.stage_style(st) if st in STAGE_GLYPH else ""),
                 Text(f"{j.done_partitions}/{j.partitions}", justify="right")]
        cells += [Text(fmt_ms(timer_ms(j, key)), justify="right") for key in _TIMER_KEYS]
        total = "–" if j.total_ms is None else f"{j.total_ms / 1000:.2f}"
        cells.append(Text(total, justify="right",
                          style=pal.bad if st in ("bad", "failed") else "bold"))
        if j.verified is None and not any(p.ms for p in j.parts.values()):
            cells.append(progress_cell(j, pal, bar_width))
        else:
            cells.append(stacked_bar(bar_parts(j), scale, bar_width, pal))
        row = Row(j.job, tuple(cells), stamp)
        self._rows[j.job] = row
        return row
