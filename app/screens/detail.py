"""Proof detail: the per-partition stage Gantt and the layered timers of one proof."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from app.screens.quitkey import CtrlCQuits, ctrl_c_binding
from app.state import DashboardState, fmt_bytes
from app.widgets.gantt import gantt, kernel_split, layered_timers
from app.widgets.render import Palette


class DetailScreen(CtrlCQuits, Screen):
    """Follows the live (or replayed) state: a proof still running keeps growing."""

    HELP_SECTION = "proof detail"
    BINDINGS = [
        # short footer words (the tooltips say them in full): at 80 columns the long ones cut
        # the footer's last key, "? He▏"
        Binding("escape,backspace", "back", "Back", tooltip="Back to the dashboard",
                id="detail-back"),
        ctrl_c_binding(),
        Binding("left,comma", "other(-1)", "Prev", tooltip="Previous proof", id="detail-prev"),
        Binding("right,full_stop", "other(1)", "Next", tooltip="Next proof", id="detail-next"),
    ]

    def __init__(self, job: int) -> None:
        super().__init__()
        self.job = job

    def compose(self) -> ComposeResult:
        yield Static(id="detail-title")
        with VerticalScroll(id="detail-body"):
            yield Static(id="detail-gantt", classes="panel")
            yield Static(id="detail-timers", classes="panel")
            yield Static(id="detail-kernels")
        yield Footer()

    def on_resize(self) -> None:
        # as the dashboard's: a narrow footer drops the padding between keys, so every key fits
        self.query_one(Footer).compact = self.size.width < 120

    def on_mount(self) -> None:
        self.on_resize()
        self.query_one("#detail-gantt").border_title = "timeline (per partition)"
        self.query_one("#detail-timers").border_title = "layered timers (ms): GPU wrapper ▕ call ▕ kernels"
        self.console.request_render()

    def redraw(self, app: Any) -> None:
        """The app's refresh tick."""
        self.show_state(app.state, app.palette())

    def show_state(self, state: DashboardState, pal: Palette) -> None:
        job = state.jobs.get(self.job)
        title = self.query_one("#detail-title", Static)
        if job is None:
            title.update(Text(f" proof {self.job}: not in this session (yet)", style=pal.warn))
            return
        t = Text()
        t.append(f" proof {job.job} ", style="bold reverse")
        t.append(f"  {job.preset}  {job.partitions} partitions × {job.constraints:,} constraints")
        held = sum(job.footprint(p) for p in job.parts.values())
        t.append(f"  a,b,c {fmt_bytes(held)}", style=pal.dim)
        t.append(f"  submitted {job.submitted:.2f}s", style=pal.dim)
        if job.done_t is not None:
            t.append(f"  done {job.done_t:.2f}s", style=pal.dim)
        title.update(t)
        width = max(40, self.size.width - 4)
        self.query_one("#detail-gantt", Static).update(gantt(job, state.t, width, pal))
        self.query_one("#detail-timers", Static).update(layered_timers(job, pal, width=width - 2))
        self.query_one("#detail-kernels", Static).update(kernel_split(job, pal, width - 2))

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_other(self, d: int) -> None:
        ids = sorted(self.console.state.jobs)
        if not ids:
            return
        i = ids.index(self.job) if self.job in ids else 0
        self.job = ids[max(0, min(len(ids) - 1, i + d))]
        self.console.request_render()
