"""The hosts view: one row per host of a farm session and the farm's rate.

It folds the session's own events with engine.cluster.hosts: a replayed farm session up to the
replay's time (a seek back folds again), or any events handed to it. A session of one local
engine has no hosts, and the view says so.
"""

from __future__ import annotations

from typing import Any, Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from app.widgets.hosts import farm_line, hosts_table
from engine.cluster.hosts import HostsState

Events = Callable[[], list[dict]]


def session_events(app: Any) -> list[dict]:
    """The events the app has of its session: a replay's file, up to the time it shows."""
    session = getattr(app, "session", None)
    events = list(getattr(session, "events", None) or [])
    t = getattr(getattr(app, "state", None), "t", None)
    if t is None:
        return events
    return [e for e in events if e.get("t", 0.0) <= t]


class HostsScreen(Screen):
    """One row per farm host; up/down choose one (the marked row)."""

    HELP_SECTION = "hosts"
    BINDINGS = [
        Binding("escape,backspace", "back", "Back", id="hosts-back"),
        Binding("up", "move(-1)", "Previous host", id="hosts-up"),
        Binding("down", "move(1)", "Next host", id="hosts-down"),
    ]

    def __init__(self, events: Events | None = None) -> None:
        super().__init__()
        self._events = events
        self.state = HostsState()
        self._seen = 0
        self.selected: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="hosts-title")
        yield Static(id="hosts-table", classes="panel")
        # its own keys in one line rather than the footer, whose global keys are not this view's
        yield Static(" ↑/↓ choose a host   esc back   ? every key", id="hosts-keys")

    def on_mount(self) -> None:
        self.query_one("#hosts-table").border_title = "hosts"
        self.redraw(self.app)

    def _take(self, app: Any) -> None:
        events = self._events() if self._events is not None else session_events(app)
        if len(events) < self._seen:  # a seek back: fold again from the start
            self.state, self._seen = HostsState(), 0
        for ev in events[self._seen:]:
            try:
                self.state.apply(ev)
            except (KeyError, TypeError, ValueError):
                continue
        self._seen = len(events)
        names = [r.name for r in self.state.rows()]
        if names and self.selected not in names:
            self.selected = names[0]

    def redraw(self, app: Any) -> None:
        """The app's refresh tick."""
        self._take(app)
        pal = app.palette()
        title = self.query_one("#hosts-title", Static)
        table = self.query_one("#hosts-table", Static)
        if not self.state.hosts:
            title.update(farm_line(self.state, pal))
            table.update("no farm hosts in this session (it ran on one machine)")
            return
        title.update(farm_line(self.state, pal))
        table.update(hosts_table(self.state, pal, self.selected))

    def action_move(self, step: int) -> None:
        names = [r.name for r in self.state.rows()]
        if not names:
            return
        i = names.index(self.selected) if self.selected in names else 0
        self.selected = names[(i + step) % len(names)]
        self.redraw(self.app)

    def action_back(self) -> None:
        self.app.pop_screen()
