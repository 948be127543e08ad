"""Pipeline strip: partitions per stage, the bytes each stage holds, with history sparklines."""

from __future__ import annotations

from rich.text import Text

from app.state import ALL_STAGES, HOLDING_STAGES, DashboardState, fmt_bytes
from app.widgets.base import StatePanel
from app.widgets.render import STAGE_GLYPH, Col, Palette, grid, spark

LABELS = {
    "queued": "queued",
    "synthesizing": "synth",
    "synthesized": "to chan",  # synthesized, waiting for the job's key on every prover or room
    "waiting_gpu": "channel",
    "gpu": "gpu",
    "finalizing": "finalize",
    "deallocating": "dealloc",
    "done": "done",
    "failed": "failed",
    "cancelled": "cancel",
}
# glyph, stage, count, bytes held, count history, bytes history
FULL_COLUMNS = (Col(1), Col(8), Col(4, justify="right"), Col(10, justify="right"), Col(ratio=1),
                Col(ratio=1))


class PipelineStrip(StatePanel):
    """One row per stage: glyph, count, bytes held, count history, bytes history."""

    def render_state(self, state: DashboardState, pal: Palette, width: int) -> Text:
        height = self.content_size.height
        if height and height < 11:
            return self.render_compact(state, pal, width, height)
        counts = state.stage_counts()
        held = state.stage_bytes()
        spark_w = max(4, (width - 32) // 2)
        rows: list[list[Text | str]] = [
            ["", Text("stage", style=pal.dim), Text("n", style=pal.dim), Text("held", style=pal.dim),
             Text("partitions", style=pal.dim), Text("bytes", style=pal.dim)]]
        peak_count = max((max(h) for h in state.stage_hist.values() if h), default=0)
        for s in ALL_STAGES:
            if s in ("done",):
                continue
            if s == "cancelled" and not counts.get(s) and not any(state.stage_hist.get(s, ())):
                continue  # shown once a stop has cancelled something
            style = pal.stage_style(s)
            n = counts.get(s, 0)
            b = held.get(s) if s in HOLDING_STAGES else None
            hist = state.stage_hist.get(s, ())
            bh = state.bytes_hist.get(s, ())
            rows.append([
                Text(STAGE_GLYPH[s] if s != "done" else "✓", style=style),
                Text(LABELS[s], style=style),
                Text(str(n), style="bold" if n else pal.dim),
                Text(fmt_bytes(b) if b else "–", style=pal.dim if not b else ""),
                Text(spark(hist, spark_w, hi=peak_count or None), style=style),
                Text(spark(bh, spark_w) if s in HOLDING_STAGES else "", style=style),
            ])
        done = counts.get("done", 0)
        rows.append([Text("✓", style=pal.ok), Text("done", style=pal.ok), Text(str(done), style="bold"),
                     Text(f"max hold {state.max_holding}", style=pal.dim), "", ""])
        return grid(rows, FULL_COLUMNS, width)

    def render_compact(self, state: DashboardState, pal: Palette, width: int, height: int) -> Text:
        """For a short panel: the stages in as many columns as the height needs, each
        glyph, name, count and bytes held; one count sparkline per stage where width is left."""
        counts = state.stage_counts()
        held = state.stage_bytes()
        stages = [s for s in ALL_STAGES if s != "done"
                  and not (s == "cancelled" and not counts.get(s))] + ["done"]
        per_col = max(1, height)
        ncols = -(-len(stages) // per_col)
        col_w = max(16, width // ncols - 1)
        spark_w = max(0, col_w - 27)
        cells: list[Text] = []
        for s in stages:
            style = pal.ok if s == "done" else pal.stage_style(s)
            n = counts.get(s, 0)
            c = Text(no_wrap=True, overflow="crop")
            c.append(("✓" if s == "done" else STAGE_GLYPH[s]) + " ", style=style)
            c.append(f"{LABELS[s]:<8}", style=style)
            c.append(f"{n:>3}", style="bold" if n else pal.dim)
            b = held.get(s) if s in HOLDING_STAGES else None
            c.append(f" {fmt_bytes(b):>9}" if b else " " * 10, style="")
            if spark_w and s != "done":
                c.append(" " + spark(state.stage_hist.get(s, ()), spark_w), style=style)
            cells.append(c)
        rows = []
        for r in range(per_col):
            row = [cells[k * per_col + r] if k * per_col + r < len(cells) else Text("")
                   for k in range(ncols)]
            if any(x.plain for x in row):
                rows.append(row)
        return grid(rows, [Col(width=col_w)] * ncols, width)
