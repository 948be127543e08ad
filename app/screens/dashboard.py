"""The dashboard: header, pipeline strip, GPU and memory panels, proofs table, event log.

The same screen serves live and replay; in replay a control bar appears and the tuning keys are
disabled (and shown as such in the footer and help). Tuning and replay keys are bound to actions
in Textual's ``app.`` namespace: the app holds the Engine and the replay clock, and says which of
them a mode offers (SealtopApp.check_action).
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from app.knobs import bindings as knob_bindings
from app.screens.quitkey import CtrlCQuits, ctrl_c_binding
from app.state import DashboardState
from app.widgets.eventlog import EventLog
from app.widgets.gpu import GpuPanel
from app.widgets.header import HeaderBar, HeaderContext
from app.widgets.memory import MemoryPanel
from app.widgets.pipeline import PipelineStrip
from app.widgets.proofs import COLUMNS, ProofsTable
from app.widgets.render import Palette

# Panel number (the 1–9 keys) -> widget id and title.
PANELS = {1: ("pipeline", "pipeline"), 2: ("gpu", "GPU"), 3: ("memory", "memory"),
          4: ("proofs", "proofs"), 5: ("log", "event log")}



def read_only_notice(app: Any, key: str) -> str:
    """Why a tuning key did nothing in a read-only console, and how to get one that tunes."""
    attached = bool(app.__dict__.get("attached_to"))  # set by `sealtop attach` (app/serve.py)
    how = ("`sealtop attach --control` or `sealtop serve --allow-control` lets a console tune "
           "this engine" if attached else "start the console without --readonly to tune")
    return f"read-only console: {key} changes nothing here ({how})"


def _max_bindings() -> list[Binding]:
    return [
        Binding(str(n), f"maximize({n})", f"Maximize panel {n} ({title})", show=False,
                id=f"maximize-{n}")
        for n, (_, title) in PANELS.items()
    ]


class DashboardScreen(CtrlCQuits, Screen):
    """The main screen of live and replay modes."""

    HELP_SECTION = "dashboard"
    # Classes the stylesheet condenses the layout by (see sealtop.tcss).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (40, "-tall")]
    BINDINGS = [
        *_max_bindings(),
        ctrl_c_binding(),
        Binding("escape", "restore", "Restore panels / clear filter", show=False, id="restore"),
        Binding("slash", "filter", "Filter", tooltip="Filter proofs (or search the log where it has focus)", id="filter"),
        Binding("o", "sort_next", "Sort", tooltip="Sort by the next column", id="sort-next"),
        Binding("O", "sort_reverse", "Reverse sort", show=False, id="sort-reverse"),
        Binding("enter", "detail", "Detail", tooltip="Proof detail", id="detail"),
        Binding("e", "export", "Export", show=False,
                tooltip="Export the proofs table to CSV (a new file; the notice says where)",
                id="export-csv"),
        Binding("h", "history", "History", show=False, tooltip="History: the last hour as graphs, per host",
                id="history"),
        # live tuning: two keys per knob of the settings table (app/knobs.py)
        *knob_bindings("app.knob"),
        Binding("p", "app.pause", "Pause", tooltip="Pause/resume the engine", id="pause"),
        Binding("n", "app.submit", "Submit", tooltip="Submit a job", id="submit"),
        Binding("a", "app.autofeed", "Auto-submit on/off", show=False, id="autofeed"),
        Binding("ctrl+s", "app.save_config", "Save", tooltip="Save knobs to the config", id="save-config"),
        # replay
        Binding("space", "app.play", "Play", tooltip="Play/pause the replay", id="replay-play"),
        Binding("left_square_bracket", "app.step(-1)", "Step back one event", show=False, id="replay-back"),
        Binding("right_square_bracket", "app.step(1)", "Step one event", show=False, id="replay-step"),
        Binding("less_than_sign", "app.speed(-1)", "Slower replay", show=False, id="replay-slower"),
        Binding("greater_than_sign", "app.speed(1)", "Faster replay", show=False, id="replay-faster"),
        Binding("g", "app.seek", "Seek", tooltip="Seek to a time", id="replay-seek"),
        Binding("G", "app.seek_end", "Seek to the end", show=False, id="replay-end"),
    ]

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        with Horizontal(id="top"):
            yield PipelineStrip(id="pipeline", classes="panel")
            yield GpuPanel(id="gpu", classes="panel")
            yield MemoryPanel(id="memory", classes="panel")
        yield ProofsTable(id="proofs", classes="panel")
        yield Input(placeholder="filter proofs: id, ✓, ✗, bad, done, preset…", id="filter")
        yield EventLog(id="log", classes="panel")
        yield Static(id="replaybar")
        yield Footer()

    def on_resize(self) -> None:
        # a narrow footer drops the padding between keys, so that every key it shows fits
        self.query_one(Footer).compact = self.size.width < 120

    def on_mount(self) -> None:
        self.on_resize()
        for n, (wid, title) in PANELS.items():
            self.query_one(f"#{wid}").border_title = f"{n} {title}"
        self.query_one("#filter").display = False
        self.query_one("#replaybar").display = self.console.mode == "replay"
        self.query_one(ProofsTable).focus()
        self.console.request_render()

    # ---- rendering ------------------------------------------------------------------------

    def redraw(self, app: Any) -> None:
        """The app's refresh tick: draw its state with its palette, header and replay bar."""
        self.show_state(app.state, app.palette(), app.header_context(), app.replay_bar())

    def show_state(self, state: DashboardState, pal: Palette, ctx: HeaderContext, bar: str) -> None:
        """Redraw every panel from the state (called on the app's refresh tick)."""
        header = self.query_one(HeaderBar)
        header.context = ctx
        header.show(state, pal)
        for panel in (self.query_one(PipelineStrip), self.query_one(GpuPanel),
                      self.query_one(MemoryPanel), self.query_one(EventLog)):
            panel.show(state, pal)
        self.show_proofs(state, pal)
        if self.console.mode == "replay":
            self.query_one("#replaybar", Static).update(bar, layout=False)  # one line, always

    def show_proofs(self, state: DashboardState, pal: Palette) -> None:
        """Redraw the proofs table and its title (alone after a sort or filter change)."""
        table = self.query_one(ProofsTable)
        table.show(state, pal)
        f = f" filter “{table.filter_text}”" if table.filter_text else ""
        arrow = "↓" if table.sort_reverse else "↑"
        label = dict((k, lbl) for k, lbl, _ in COLUMNS).get(table.sort_key, table.sort_key)
        shown = (f"{min(table.total_matching, 200)} of {len(state.jobs)}"
                 if table.total_matching > 200 or table.filter_text else f"{len(state.jobs)}")
        # the timers' unit, said once: in the breakdown bar's header, or here when it is left out
        unit = "" if any(k == "bar" for k, _, _ in table.columns) else "  timers: mean ms per partition"
        title = f"4 proofs ({shown})  sort {label} {arrow}{f}{unit}"
        if table.border_title != title:  # a title change repaints the whole table
            table.border_title = title

    # ---- availability ---------------------------------------------------------------------

    TUNING = frozenset({"knob", "pause", "submit", "save_config", "autofeed"})

    def on_key(self, event: Any) -> None:
        """A tuning key in a read-only console is not offered (hidden from the footer and
        help), so its binding never runs: say why nothing happened instead of ignoring it."""
        if self.console.mode != "live" or not self.console.readonly:
            return
        for binding in self._bindings.key_to_bindings.get(event.key, []):
            name = binding.action.removeprefix("app.").split("(", 1)[0]
            if binding.action.startswith("app.") and name in self.TUNING:
                self.notify(read_only_notice(self.app, event.key), severity="warning", timeout=4)
                return

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """The screen's own actions are always there; an ``app.`` action is the app's to say
        (the help screen asks the screen about every binding it lists)."""
        if action.startswith("app."):
            return self.app.check_action(action[len("app."):], parameters)
        return True

    # ---- actions --------------------------------------------------------------------------

    def action_maximize(self, n: int | None = None) -> None:
        """Panel n (1-5) fills the screen, or back; with no panel named (Textual's own
        maximize command), Textual's maximize of the focused widget."""
        if n is None:
            super().action_maximize()
            return
        w = self.query_one(f"#{PANELS[n][0]}")
        if self.maximized is w:
            self.restore_panels()
        else:
            if self.maximized is None:
                self._focus_before = self.focused
            self.maximize(w, container=False)
            if w.focusable:
                w.focus()

    def restore_panels(self) -> None:
        self.minimize()

    def minimize(self) -> None:
        """Back from a maximized panel (Escape, or its number again), with the focus where it
        was before, so the arrows keep moving the cursor they moved."""
        was_maximized = self.maximized is not None
        super().minimize()
        if not was_maximized:
            return
        before = getattr(self, "_focus_before", None)
        self._focus_before = None
        target = before if before is not None and before.is_attached else self.query_one(ProofsTable)
        self.set_focus(target)

    def action_restore(self) -> None:
        box = self.query_one("#filter", Input)
        table = self.query_one(ProofsTable)
        if self.maximized is not None:
            self.restore_panels()
        elif box.display or table.filter_text:
            # Escape leaves the filter: cleared, its box closed and the keys back on the table
            # (with the box left open and focused, q and every other key went on typing into it)
            box.value = ""
            box.display = False
            table.filter_text = ""
            table.focus()
            self.console.render_proofs()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            table = self.query_one(ProofsTable)
            table.filter_text = event.value
            self.console.render_proofs()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            event.input.display = False
            self.query_one(ProofsTable).focus()
        self.console.request_render()

    def action_sort_next(self) -> None:
        self.query_one(ProofsTable).cycle_sort()  # the panel title shows the sort
        self.console.render_proofs()

    def action_sort_reverse(self) -> None:
        t = self.query_one(ProofsTable)
        t.sort_by(t.sort_key)
        self.console.render_proofs()

    def on_proofs_table_header_clicked(self, event: ProofsTable.HeaderClicked) -> None:
        self.query_one(ProofsTable).sort_by(event.key)
        self.console.render_proofs()

    def on_proofs_table_row_chosen(self, event: ProofsTable.RowChosen) -> None:
        self.console.open_detail(event.job)

    def action_export(self) -> None:
        from app.csvexport import export_proofs

        table = self.query_one(ProofsTable)
        try:
            path, n = export_proofs(self.console.state, table.sort_key, table.sort_reverse,
                                    table.filter_text)
        except OSError as exc:
            self.console._local_log("error", f"CSV export failed: {exc}")
            self.notify(f"CSV export failed: {exc}", severity="error")
            return
        what = f"exported {n} proof{'' if n == 1 else 's'} to {path}"
        self.console._local_log("info", what)
        self.notify(what, timeout=4)

    def action_history(self) -> None:
        from app.screens.history import HistoryScreen

        self.app.push_screen(HistoryScreen())

    def action_detail(self) -> None:
        job = self.query_one(ProofsTable).selected_job()
        if job is None:
            self.notify("no proof selected", severity="warning")
            return
        self.console.open_detail(job)
