"""Compare: two sessions side by side with per-stage time, throughput, peak memory and deltas."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from app.screens.quitkey import CtrlCQuits, ctrl_c_binding
from app.source import Command, ConsoleSource
from app.state import DashboardState, fmt_bytes, fmt_ms
from app.widgets.render import Palette
from engine.stream.schema import TIMER_KEYS

# Metrics where a larger value is better (for colouring the difference).
HIGHER_IS_BETTER = {"throughput (proofs/min)", "proofs verified"}


def compare_rows(a: DashboardState, b: DashboardState) -> list[tuple[str, float | None, float | None, str]]:
    """(metric, A, B, unit) for every compared quantity; unit is ms, bytes, count (an integer
    wherever shown), or '' for a rate or a time."""
    ma, mb = a.stage_mean_ms(), b.stage_mean_ms()
    rows: list[tuple[str, float | None, float | None, str]] = []
    for k in TIMER_KEYS:
        if k in ma or k in mb:
            rows.append((f"{k} (mean ms/partition)", ma.get(k), mb.get(k), "ms"))
    rows += [
        ("proof total (mean ms)", a.mean_total_ms(), b.mean_total_ms(), "ms"),
        ("throughput (proofs/min)", a.overall_throughput(), b.overall_throughput(), ""),
        ("peak memory", float(a.mem_peak), float(b.mem_peak), "bytes"),
        ("max partitions holding a,b,c", float(a.max_holding), float(b.max_holding), "count"),
        ("proofs verified", float(a.proofs_verified), float(b.proofs_verified), "count"),
        ("proofs failed ✗", float(a.proofs_failed), float(b.proofs_failed), "count"),
        ("session length (s)", a.t, b.t, ""),
    ]
    return rows


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "–"
    if unit == "ms":
        return fmt_ms(v)
    if unit == "bytes":
        return fmt_bytes(v)
    if unit == "count":
        return f"{round(v)}"
    return f"{v:.1f}" if v != int(v) else f"{int(v)}"


# Under this many columns the table leaves out its bars and says the timers' unit once, in the
# panel's title: at 80 columns the bars' 30 took the room of the values, which were cut to "72…",
# and of the B − A and Δ % columns, which were not shown at all.
BARS_MIN_WIDTH = 110
TIMER_UNIT = " (mean ms/partition)"


def compare_table(a: DashboardState, b: DashboardState, name_a: str, name_b: str, pal: Palette,
                  width: int | None = None) -> Table:
    """The compared rows as a table; at `width` under BARS_MIN_WIDTH without the bars and with
    the timers' names alone."""
    bars = width is None or width >= BARS_MIN_WIDTH
    t = Table(expand=True, header_style=pal.title, box=None, padding=(0, 2 if bars else 1))
    t.add_column("metric", no_wrap=True)
    t.add_column(f"A  {name_a}" if bars else "A", justify="right", no_wrap=True)
    t.add_column(f"B  {name_b}" if bars else "B", justify="right", no_wrap=True)
    t.add_column("B − A", justify="right", no_wrap=True)
    t.add_column("Δ %", justify="right", no_wrap=True)
    if bars:
        t.add_column("A ▏ B", no_wrap=True, min_width=30)
    for metric, va, vb, unit in compare_rows(a, b):
        if not bars:
            metric = metric.removesuffix(TIMER_UNIT)
        if va is not None and vb is not None:
            d = vb - va
            pct = (d / va * 100.0) if va else None
            better = (d > 0) == (metric in HIGHER_IS_BETTER) if d else None
            style = "" if better is None else (pal.ok if better else pal.bad)
            if unit == "bytes":
                dtxt = ("+" if d >= 0 else "−") + fmt_bytes(abs(d))
            elif unit == "count":  # "+2", not "+2.0"
                dtxt = f"{round(d):+d}"
            else:
                dtxt = f"{d:+.1f}"
            ptxt = f"{pct:+.1f}%" if pct is not None else "–"
            top = max(abs(va), abs(vb)) or 1.0
            bar = Text()
            bar.append("█" * int(round(va / top * 14)), style=pal.accent)
            bar.append(" " * (14 - int(round(va / top * 14))) + "▏")
            bar.append(("▓" if pal.mono else "█") * int(round(vb / top * 14)), style=pal.warn)
            cells: list[Text | str] = [metric, _fmt(va, unit), _fmt(vb, unit),
                                       Text(dtxt, style=style), Text(ptxt, style=style), bar]
        else:
            cells = [metric, _fmt(va, unit), _fmt(vb, unit), "–", "–", ""]
        t.add_row(*cells[:6 if bars else 5])
    return t


def knob_line(s: DashboardState) -> str:
    c = s.config
    keys = ("backend", "partition_workers", "gpu_channel_capacity", "gpu_slots_per_device",
            "gpu_calls", "permit_release", "dealloc", "preset")  # a key a session lacks is left off
    return "  ".join(f"{k}={c.get(k)}" for k in keys if k in c)


class CompareScreen(CtrlCQuits, Screen):
    """The compare mode's only screen."""

    HELP_SECTION = "compare"
    BINDINGS = [Binding("s", "swap", "Swap A and B", id="compare-swap"), ctrl_c_binding()]

    def __init__(self, a: DashboardState, b: DashboardState, name_a: str, name_b: str) -> None:
        super().__init__()
        self.a, self.b, self.name_a, self.name_b = a, b, name_a, name_b

    def compose(self) -> ComposeResult:
        yield Static(id="compare-title")
        with VerticalScroll(id="compare-body"):
            yield Static(id="compare-table", classes="panel")
        yield Footer()

    def on_mount(self) -> None:
        self.console.request_render()

    def redraw(self, app: Any) -> None:
        """The app's refresh tick (both sessions are final: only the palette changes)."""
        self.show_state(app.palette())

    def show_state(self, pal: Palette) -> None:
        title = Group(
            Text.assemble((" compare ", "bold reverse"), f"  A {self.name_a}  vs  B {self.name_b}"),
            Text(f" A: {knob_line(self.a)}", style=pal.dim),
            Text(f" B: {knob_line(self.b)}", style=pal.dim),
        )
        self.query_one("#compare-title", Static).update(title)
        panel = self.query_one("#compare-table", Static)
        width = self.size.width or None
        narrow = width is not None and width < BARS_MIN_WIDTH
        panel.border_title = ("per-stage time (mean ms per partition), throughput, peak memory"
                              if narrow else "per-stage time, throughput and peak memory")
        panel.update(compare_table(self.a, self.b, self.name_a, self.name_b, pal, width))

    def on_resize(self) -> None:
        self.console.request_render()

    def action_swap(self) -> None:
        self.a, self.b = self.b, self.a
        self.name_a, self.name_b = self.name_b, self.name_a
        self.console.request_render()


class CompareSource(ConsoleSource):
    """The compare mode of the console: two sessions reduced to their final states, shown by
    CompareScreen; it offers no live or replay key and has nothing to tick."""

    ACTIONS: frozenset[str] = frozenset()

    def __init__(self, a: Any, b: Any) -> None:
        """a, b: app.session_io.Session."""
        from app.state import reduce

        self.a, self.b = a, b
        self.final_a, self.final_b = reduce(a.events), reduce(b.events)
        self.state = DashboardState()  # what a dashboard would show (none is)

    def first_screen(self) -> Screen:
        return CompareScreen(self.final_a, self.final_b, self.a.name, self.b.name)

    def header_mode(self) -> str:
        return "compare"

    def offers(self, action: str) -> bool | None:
        return False

    def commands(self) -> list[Command]:
        return []
