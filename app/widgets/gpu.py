"""Per-GPU panel: utilization, memory, power, temperature and SM clock, with history."""

from __future__ import annotations

from rich.text import Text

from app.state import DashboardState, fmt_bytes
from app.widgets.base import StatePanel
from app.widgets.render import Col, Palette, grid, meter, spark, stack

COLUMNS = (Col(5), Col(18), Col(ratio=1))  # label, value, history (one block per GPU)


def _na(v, fmt: str) -> str:
    return "N/A" if v is None else fmt.format(v)


class GpuPanel(StatePanel):
    """A block per GPU; a plain N/A line where there is none (CPU backend)."""

    def render_state(self, state: DashboardState, pal: Palette, width: int):
        if not state.gpus:
            return Text("N/A: no GPU (CPU backend)", style=pal.dim)
        height = self.content_size.height or 99
        if height < 5 * len(state.gpus):
            return self.render_compact(state, pal, width, height)
        rows: list[list[Text | str]] = []
        w = max(8, width - 26)
        for g in state.gpus.values():
            mem_frac = (g.mem_used / g.memory_total) if g.mem_used is not None and g.memory_total else None
            util_style = pal.ok if (g.util or 0) < 80 else pal.warn
            rows.append([Text(f"gpu{g.index}", style="bold"), Text(g.name[:18], style=pal.dim),
                         Text(_na(g.sm_clock_mhz, "{:.0f} MHz"), style=pal.dim)])
            rows.append(["util", Text(_na(g.util, "{:5.1f} %"), style=util_style),
                         Text(spark(g.util_hist, w, hi=100.0) if g.util is not None else "N/A",
                              style=util_style)])
            rows.append(["mem", Text(f"{fmt_bytes(g.mem_used)}/{fmt_bytes(g.memory_total)}"[:18]),
                         meter(mem_frac, w, style=pal.accent)])
            rows.append(["power", Text(_na(g.power_w, "{:.0f} W")),
                         Text(spark(g.power_hist, w) if g.power_w is not None else "N/A",
                              style=pal.dim)])
            hot = g.temp_c is not None and g.temp_c >= 80
            rows.append(["temp", Text(_na(g.temp_c, "{:.0f} °C"), style=pal.bad if hot else ""),
                         Text(spark(g.temp_hist, w, hi=100.0) if g.temp_c is not None else "N/A",
                              style=pal.dim)])
        return grid(rows, COLUMNS, width)

    def render_compact(self, state: DashboardState, pal: Palette, width: int, height: int):
        """For a small panel: one line per GPU (util, memory, power, temperature), as many as
        fit, then how many are left out."""
        lines = []
        gpus = list(state.gpus.values())
        room = max(1, height)
        shown = gpus if len(gpus) <= room else gpus[:room - 1]
        for g in shown:
            t = Text(no_wrap=True, overflow="crop")
            t.append(f"gpu{g.index} ", style="bold")
            t.append(_na(g.util, "{:3.0f} %"), style=pal.ok if (g.util or 0) < 80 else pal.warn)
            if g.mem_used is not None and g.memory_total:
                t.append(f"  mem {100 * g.mem_used / g.memory_total:.0f} %")
            if width >= 34:
                t.append(f"  {_na(g.power_w, '{:.0f} W')}", style=pal.dim)
                t.append(f"  {_na(g.temp_c, '{:.0f} °C')}",
                         style=pal.bad if (g.temp_c or 0) >= 80 else pal.dim)
            spark_w = width - t.cell_len - 1
            if spark_w >= 4 and g.util is not None:
                t.append(" " + spark(g.util_hist, spark_w, hi=100.0), style=pal.dim)
            lines.append(t)
        if len(shown) < len(gpus):
            lines.append(Text(f"+{len(gpus) - len(shown)} more GPUs (maximize: 2)", style=pal.dim))
        return stack(lines)
