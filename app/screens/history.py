"""History: the last hour of one host, as graphs (throughput, GPU busy, memory, stage counts).

Drawn from the reducer's per-host ring buffers (app/history.py), so a replay shows the history
the live run had; left/right switch host where a farm has several. Each graph is a sparkline
labelled with its latest value and its top: GPU busy on a fixed 0-100 % scale, every other graph
scaled to its own maximum over the kept points (named "max").
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from app.history import LOCAL, HostHistory
from app.screens.quitkey import CtrlCQuits, ctrl_c_binding
from app.state import ALL_STAGES, fmt_bytes
from app.widgets.render import Palette, spark

GRAPHS = [("throughput", "throughput (proofs/min, 60 s window)"), ("gpu_busy", "GPU busy (mean %)"),
          ("mem_bytes", "memory (RSS + shm)")]


def _value(name: str, v: float) -> str:
    """A graph's value as its kind reads: bytes, a whole count of partitions, a rate or %."""
    if name == "mem_bytes":
        return fmt_bytes(v)
    if name in ALL_STAGES:
        return f"{round(v)}"
    return f"{v:.1f}"


def graph(h: HostHistory, name: str, label: str, width: int, pal: Palette, style: str) -> Text:
    """One graph: its label, the latest value and what the graph's top stands for on a line,
    then the sparkline across the width. GPU busy is drawn on a fixed 0-100 % scale; every
    other graph is scaled to its own maximum over the points kept, which it names."""
    values = h.series(name)
    fixed = name == "gpu_busy"
    hi = 100.0 if fixed else (max(values) if values else 0.0)
    now = values[-1] if values else 0.0
    out = Text(no_wrap=True, overflow="crop")
    out.append(f" {label}", style="bold")
    scale = "scale 0–100 %" if fixed else f"max {_value(name, hi)}"
    out.append(f"  latest {_value(name, now)}  {scale}\n", style=pal.dim)
    out.append(" " + spark(values, width - 2, hi=hi or None), style=style)
    return out


def history_view(histories: dict[str, HostHistory], host: str, width: int, pal: Palette) -> Group:
    h = histories.get(host)
    name = host or "local host"
    if h is None or not h.points:
        return Group(Text(f" {name}: no samples yet", style=pal.dim))
    head = Text(no_wrap=True, overflow="crop")
    head.append(f" {name}", style="bold reverse")
    mins = h.span_s() / 60
    head.append(f"  last {mins:.1f} min, {len(h.points)} points", style=pal.dim)
    if len(histories) > 1:
        head.append(f"  (host {sorted(histories).index(host) + 1} of {len(histories)}: ←/→)",
                    style=pal.dim)
    parts: list[Text] = [head]
    for key, label in GRAPHS:
        parts.append(graph(h, key, label, width, pal, pal.accent))
    for s in ALL_STAGES:
        if any(p.stages.get(s) for p in h.points):
            parts.append(graph(h, s, f"{s.replace('_', ' ')} (partitions)", width, pal,
                               pal.stage_style(s)))
    return Group(*parts)


class HistoryScreen(CtrlCQuits, Screen):
    """The history of one host; Escape goes back."""

    HELP_SECTION = "history"
    BINDINGS = [
        Binding("escape,backspace,h", "back", "Back", tooltip="Back to the dashboard", id="history-back"),
        ctrl_c_binding(),
        Binding("left", "host(-1)", "Host", tooltip="Previous host", id="history-prev"),
        Binding("right", "host(1)", "Host", tooltip="Next host", show=False, id="history-next"),
    ]

    def __init__(self, host: str = LOCAL) -> None:
        super().__init__()
        self.host = host

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="history-body"):
            yield Static(id="history-graphs")
        yield Footer()

    def on_mount(self) -> None:
        self.console.request_render()

    def redraw(self, app: Any) -> None:
        hosts = sorted(app.state.history) or [LOCAL]
        if self.host not in hosts:
            self.host = hosts[0]
        self.query_one("#history-graphs", Static).update(
            history_view(app.state.history, self.host, max(20, self.size.width - 2), app.palette()))

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_host(self, d: int) -> None:
        hosts = sorted(self.console.state.history) or [LOCAL]
        i = hosts.index(self.host) if self.host in hosts else 0
        self.host = hosts[(i + d) % len(hosts)]
        self.console.request_render()
