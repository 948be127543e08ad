"""Memory panel: total (RssAnon sum + shared memory), per process, shm, budget line, peak."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from app.state import DashboardState, fmt_bytes, proc_label
from app.widgets.base import StatePanel
from app.widgets.render import Palette, meter, spark


class MemoryPanel(StatePanel):
    """Totals against the budget, then one line per process with its history."""

    def render_state(self, state: DashboardState, pal: Palette, width: int):
        budget = state.memory_budget
        top = max(budget or 0, state.mem_peak) or None
        w = max(6, width - 30)
        # history scaled to the larger of budget and peak, so the budget is the top line
        head = Text()
        head.append("total ", style=pal.dim)
        head.append(fmt_bytes(state.mem_total), style="bold")
        head.append("  peak ", style=pal.dim)
        head.append(f"{fmt_bytes(state.mem_peak)} @{state.mem_peak_t:.1f}s")
        head.append("  budget ", style=pal.dim)
        over = bool(budget and state.mem_total > budget)
        head.append(fmt_bytes(budget) if budget else "unlimited", style=pal.bad if over else "")
        if budget:
            bar = meter(state.mem_total / budget, width, style=pal.bad if over else pal.accent)
        else:
            bar = Text("no budget line (unlimited)", style=pal.dim)
        hist = Text(spark(state.mem_hist, width, hi=top), style=pal.accent)
        t = Table.grid(padding=(0, 1), expand=True)
        t.add_column(width=17, no_wrap=True)
        t.add_column(width=9, justify="right")
        t.add_column(ratio=1)
        t.add_row(Text("shm", style=pal.dim), fmt_bytes(state.shm_bytes),
                  Text(spark(state.shm_hist, w), style=pal.dim))
        procs = sorted(state.processes, key=lambda p: -(p.get("rss_anon") or 0))
        for p in procs:
            label = proc_label(p)
            name = Text(str(p.get("role") or "proc")[:12])
            name.append(f" {p.get('pid', '')}", style=pal.dim)
            t.add_row(name, fmt_bytes(p.get("rss_anon")),
                      Text(spark(state.proc_hist.get(label, ()), w), style=pal.dim))
        return Group(head, bar, hist, t)
