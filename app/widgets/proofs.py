"""Proofs table: one row per proof with per-partition mean timers, a stacked bar and ✓/✗.

Sorting and filtering are done here (not by DataTable.sort) so that a refresh keeps the
operator's order, filter and cursor row.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import DataTable

from app.state import DashboardState, JobState, fmt_ms
from app.widgets.render import STAGE_GLYPH, Palette, stacked_bar

# (key, label, width); the key names what the column sorts by.
COLUMNS = (
    ("job", "job", 5),
    ("ok", "✓", 2),
    ("parts", "parts", 5),
    ("queue", "queue", 7),
    ("synth", "synth", 7),
    ("channel_wait", "chan", 7),
    ("gpu_wrapper", "wrap", 7),
    ("gpu_call", "call", 7),
    ("kernel", "kern", 7),
    ("b2", "b2", 6),
    ("dealloc", "dealloc", 7),
    ("total", "total", 8),
    ("bar", "breakdown (mean ms per partition)", 34),
)
SORTABLE = tuple(k for k, _, _ in COLUMNS if k != "bar")
BAR_WIDTH = 34
# Rows are rebuilt (new proofs, new order) at most this often unless the operator re-sorts or
# filters; in between, changed cells are updated in place. Keeps the console cheap at full load.
REBUILD_EVERY_S = 1.0
# The table shows at most this many proofs (the first in the current sort and filter), so that a
# session of thousands of proofs costs the same to draw as one of a hundred.
MAX_ROWS = 200


def job_value(job: JobState, key: str) -> float | str | None:
    """The value a column shows and sorts by."""
    if key == "job":
        return job.job
    if key == "ok":
        return {"done": 0, "bad": 2, "failed": 3}.get(job.status, 1)
    if key == "parts":
        return job.done_partitions
    if key == "total":
        return job.total_ms
    if key in ("synth", "kernel"):
        return job.mean_derived(key)
    return job.mean_ms(key)


def bar_parts(job: JobState) -> list[tuple[str, float]]:
    fin = sum(v for v in (job.mean_ms("b2"), job.mean_ms("finalize")) if v)
    return [
        ("queue", job.mean_ms("queue") or 0.0),
        ("synth", job.mean_derived("synth") or 0.0),
        ("channel", job.mean_ms("channel_wait") or 0.0),
        ("gpu", job.mean_ms("gpu_wrapper") or 0.0),
        ("finalize", fin),
        ("dealloc", job.mean_ms("dealloc") or 0.0),
    ]


def progress_cell(job: JobState, pal: Palette) -> Text:
    """For a proof still in flight: one glyph per partition for its stage, then the counts."""
    t = Text()
    for i in sorted(job.parts):
        st = job.parts[i].stage
        t.append("✓" if st == "done" else STAGE_GLYPH.get(st, "?"), style=pal.stage_style(st))
    counts: dict[str, int] = {}
    for p in job.parts.values():
        counts[p.stage] = counts.get(p.stage, 0) + 1
    t.append("  " + ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items()), style=pal.dim)
    t.truncate(BAR_WIDTH)
    return t


def status_cell(job: JobState, pal: Palette) -> Text:
    s = job.status
    if s == "done":
        return Text("✓", style=pal.ok)
    if s in ("bad", "failed"):
        return Text("✗", style=pal.bad)
    return Text("…", style=pal.dim)


def matches(job: JobState, needle: str) -> bool:
    """Filter: a case-insensitive match on id, status word, ✓/✗ and preset."""
    if not needle:
        return True
    n = needle.lower().strip()
    mark = {"done": "✓ ok", "bad": "✗ bad", "failed": "✗ failed"}.get(job.status, "")
    hay = f"{job.job} #{job.job} {job.status} {mark} {job.preset}".lower()
    return n in hay


class ProofsTable(DataTable):
    """The proofs table. Enter opens the proof detail screen (handled by the dashboard)."""

    ALLOW_MAXIMIZE = True

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.sort_key = "job"
        self.sort_reverse = True  # newest first
        self.filter_text = ""
        self._shown: list[tuple] = []  # (row key, cell texts) as last drawn
        self._cells: dict[int, tuple] = {}  # job -> ((version, scale, palette), cells, texts)
        self._totals: dict[int, tuple[int, float]] = {}  # job -> (version, bar length in ms)
        self.total_matching = 0
        self._rebuilt = 0.0  # monotonic time of the last full rebuild
        self._force = True  # the operator changed sort or filter: rebuild now
        self.pending = False  # a rebuild was deferred: the app must draw again

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def sort_by(self, key: str) -> None:
        """Sort by a column; choosing the same column again reverses the order."""
        if key not in SORTABLE:
            return
        self._force = True
        if key == self.sort_key:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_key, self.sort_reverse = key, key in ("total", "queue", "channel_wait")

    def refilter(self) -> None:
        """Filter or operator action: the next show() rebuilds the rows at once."""
        self._force = True

    def cycle_sort(self) -> str:
        i = SORTABLE.index(self.sort_key) if self.sort_key in SORTABLE else 0
        self.sort_by(SORTABLE[(i + 1) % len(SORTABLE)])
        return self.sort_key

    def visible_jobs(self, state: DashboardState) -> list[JobState]:
        jobs = [j for j in state.jobs.values() if matches(j, self.filter_text)]

        def key(j: JobState):
            v = job_value(j, self.sort_key)
            return (v is None, v if v is not None else 0, j.job)

        jobs.sort(key=key, reverse=self.sort_reverse)
        if self.sort_reverse:  # keep unmeasured rows last either way
            jobs.sort(key=lambda j: job_value(j, self.sort_key) is None)
        return jobs

    def _row(self, j: JobState, scale: float, pal: Palette) -> tuple[list, tuple]:
        """Cells and their texts for one proof, cached until the proof (or the scale) changes."""
        stamp = (j.version, scale, id(pal))
        hit = self._cells.get(j.job)
        if hit is not None and hit[0] == stamp:
            return hit[1], hit[2]
        cells = [Text(str(j.job), justify="right"), status_cell(j, pal),
                 Text(f"{j.done_partitions}/{j.partitions}", justify="right")]
        for key in ("queue", "synth", "channel_wait", "gpu_wrapper", "gpu_call", "kernel",
                    "b2", "dealloc"):
            cells.append(Text(fmt_ms(job_value(j, key)), justify="right"))
        cells.append(Text(fmt_ms(j.total_ms), justify="right",
                          style=pal.bad if j.status in ("bad", "failed") else "bold"))
        if j.verified is None and not any(p.ms for p in j.parts.values()):
            cells.append(progress_cell(j, pal))
        else:
            cells.append(stacked_bar(bar_parts(j), scale, BAR_WIDTH, pal))
        texts = tuple(str(c) for c in cells)
        self._cells[j.job] = (stamp, cells, texts)
        return cells, texts

    def show(self, state: DashboardState, pal: Palette) -> None:
        jobs = self.visible_jobs(state)
        self.total_matching = len(jobs)
        jobs = jobs[:MAX_ROWS]
        totals = self._totals
        for j in jobs:
            t = totals.get(j.job)
            if t is None or t[0] != j.version:
                totals[j.job] = t = (j.version, sum(ms for _, ms in bar_parts(j)))
        scale = max((totals[j.job][1] for j in jobs), default=0.0)
        rows = []
        texts = []
        for j in jobs:
            cells, txt = self._row(j, scale, pal)
            rows.append((str(j.job), cells))
            texts.append((str(j.job), txt))
        signature = texts
        if signature == self._shown and pal == getattr(self, "_pal", None):
            self.pending = False
            return
        # Textual's DataTable re-renders every visible cell after any change, so the table is
        # redrawn at most every REBUILD_EVERY_S unless the operator acted (sort, filter, keys).
        now = time.monotonic()
        if not self._force and now - self._rebuilt < REBUILD_EVERY_S:
            self.pending = True  # the app draws again on its next tick
            return
        self.pending = False
        self._force = False
        self._rebuilt = now
        same_rows = [k for k, _ in signature] == [k for k, _ in self._shown]
        if same_rows and pal == getattr(self, "_pal", None):
            # Same proofs in the same order: update only the cells that changed.
            columns = [key for key, _, _ in COLUMNS]
            for (key, cells), (_, new), (_, old) in zip(rows, signature, self._shown):
                if new == old:
                    continue
                for col, cell, a, b in zip(columns, cells, new, old):
                    if a != b:
                        self.update_cell(key, col, cell)
            self._shown = signature
            return
        self._shown = signature
        self._pal = pal
        current = None
        # A cursor on the top row follows the top (the newest proof, like top's first line);
        # a cursor the operator moved stays on its proof as rows come and go.
        if self.row_count and 0 < self.cursor_row < self.row_count:
            current = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        self.clear()
        for key, cells in rows:
            self.add_row(*cells, key=key)
        if current is not None:
            keys = [k for k, _ in rows]
            if current in keys:
                self.move_cursor(row=keys.index(current), animate=False)

    def selected_job(self) -> int | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return int(key) if key is not None else None
