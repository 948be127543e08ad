"""Memory panel: what the budget counts against the budget, then RSS totals and per process.

The bar is the partition buffers held (a, b, c of every partition from synthesis to release),
which is what the memory budget limits (docs/RELIABILITY.md), with its %; with no budget it says
"unlimited" and draws no bar. Processes are listed by role and pid, so rows never swap places
between refreshes; the panel condenses to the lines it has.
"""

from __future__ import annotations

from rich.text import Text

from app.state import DashboardState, fmt_bytes, proc_label
from app.widgets.base import StatePanel
from app.widgets.render import Col, Palette, column_widths, grid, meter, spark, stack


def proc_order(p: dict) -> tuple[str, int]:
    """Processes by role then pid: a stable order, whatever their RSS does."""
    pid = p.get("pid")
    return (str(p.get("role") or "proc"), pid if isinstance(pid, int) else 0)


def budget_line(state: DashboardState, pal: Palette, width: int) -> list[Text]:
    """The budget's two lines: "held X / budget Y  Z %" and its bar (or "unlimited")."""
    budget = state.memory_budget
    held = sum(state.stage_bytes().values())
    head = Text(no_wrap=True, overflow="crop")
    if width >= 30:
        head.append("held ", style=pal.dim)
    head.append(fmt_bytes(held), style="bold")
    if budget:
        over = held > budget
        head.append(" / ", style=pal.dim)
        head.append(fmt_bytes(budget), style=pal.bad if over else "")
        pct = f" {100 * held / budget:.0f} %"
        if width < 30:  # a narrow panel (80x24): the percent as fits, else the bar says it
            pct = next((p for p in (pct, pct.replace(" %", "%")) if head.cell_len + len(p) <= width),
                       "")
        head.append(pct, style=pal.bad if over else "bold")
        bar = meter(held / budget, width, style=pal.bad if over else pal.accent)
    else:
        head.append("  budget ", style=pal.dim)
        head.append("unlimited", style="bold")
        bar = Text("no budget: nothing to draw against", style=pal.dim, no_wrap=True, overflow="crop")
    return [head, bar]


class MemoryPanel(StatePanel):
    """The budget's bar, the RSS total and peak, then one line per process with its history."""

    def render_state(self, state: DashboardState, pal: Palette, width: int):
        height = self.content_size.height or 99
        lines: list = budget_line(state, pal, width)
        total = Text(no_wrap=True, overflow="crop")
        total.append("rss+shm ", style=pal.dim)
        total.append(fmt_bytes(state.mem_total), style="bold")
        # what fits of the peak: its time goes first on a narrow panel, then the peak itself
        for peak in (f"{fmt_bytes(state.mem_peak)} @{state.mem_peak_t:.1f} s",
                     fmt_bytes(state.mem_peak)):
            if total.cell_len + 7 + len(peak) <= width:
                total.append("  peak ", style=pal.dim)
                total.append(peak)
                break
        procs = sorted(state.processes, key=proc_order)
        if height < 4:
            return stack(lines[:height])
        lines.append(total)
        room = height - len(lines)
        wide = width >= 40
        cols = [Col(14 if wide else max(8, width - 20)), Col(9, justify="right")]
        if wide:
            cols += [Col(5, justify="right"), Col(ratio=1)]
        # the history takes its column's cells exactly (one more ended every row in "…")
        w = column_widths(cols, width)[-1] if wide else 0
        rows: list = []
        if room > len(procs) + 1:
            lines.append(Text(spark(state.mem_hist, width, hi=max(state.memory_budget or 0,
                                                                  state.mem_peak) or None),
                              style=pal.accent))
            room -= 1
        rows.append((Text("shm", style=pal.dim), fmt_bytes(state.shm_bytes), "",
                     Text(spark(state.shm_hist, w), style=pal.dim)))
        for p in procs:
            name = Text(str(p.get("role") or "proc")[:8])
            name.append(f" {p.get('pid', '')}", style=pal.dim)
            cpu = p.get("cpu_pct")
            rows.append((name, fmt_bytes(p.get("rss_anon")),
                         Text("" if cpu is None else f"{cpu:.0f}%", style=pal.dim),
                         Text(spark(state.proc_hist.get(proc_label(p), ()), w), style=pal.dim)))
        if len(rows) > room > 0:
            more = len(rows) - room + 1
            rows = rows[:room - 1] + [(Text(f"+{more} more", style=pal.dim), "", "", "")]
        table = grid([r if wide else r[:2] for r in rows[:max(room, 0)]], cols, width)
        return stack([*lines, table] if table.plain else lines)
