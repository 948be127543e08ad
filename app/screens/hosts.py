"""The hosts view: one row per host of a farm session, the farm's rate and log; drill-down into
one host's dashboard; knobs to the chosen host or to every host.

Its rows and every host's own dashboard state come from app.farm_fold.FarmFold: in the
farm console (`sealtop --cluster ADDR`, where this view is the home) the app feeds the fold each
live batch; over a replayed farm session the view folds the session's events up to the
replay's time itself (a seek back folds again). A session of one local engine has no hosts,
and the view says so.

Knob keys (W/w workers, C/c channel, p pause) go to the marked host, or to every host after
`*`; in a host's dashboard every tuning key goes to that host alone. Each change is asked of
the host's Engine through Dask and confirmed by the Engine's own knob event, which the log
shows ("hA: partition_workers: 1 → 2 (operator)"); a refusal is an error line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from app.farm_fold import FarmFold
from app.knobs import bindings as knob_bindings
from app.knobs import knob_keys
from app.knobs import next_value as step_knob
from app.knobs import show as show_knob
from app.screens.dashboard import DashboardScreen
from app.screens.quitkey import CtrlCQuits, ctrl_c_binding
from app.state import DashboardState
from app.widgets.eventlog import EventLog
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


# ---- the operator's knobs on farm hosts ------------------------------------------------------


def _tunable(app: Any) -> bool:
    """Whether the app can tune a farm now; says why not where it cannot."""
    if getattr(app, "can_tune", False) and hasattr(app.engine, "target"):
        return True
    why = ("read-only console (--readonly)" if getattr(app, "readonly", False)
           else "not available in replay" if app.mode != "live"
           else "the farm is not connected" if app.engine is None
           else "not a farm console")
    app.notify(f"tuning disabled: {why}", severity="warning")
    return False


def next_value(state: DashboardState, name: str, direction: int) -> Any:
    """One step of a knob from a host's current value (app/knobs.py: ±1 for counts, ±1 GiB
    for the budget; an unlimited budget becomes one just above the host's current use)."""
    return step_knob(name, state.knobs.get(name), direction, state.mem_total)


def nudge_hosts(app: Any, fold: FarmFold, hosts: list[str], name: str, direction: int) -> None:
    """A knob step on each host (from its own value); the hosts' knob events confirm it."""
    if not hosts or not _tunable(app):
        return
    said = []
    for h in hosts:
        new = next_value(fold.state_of(h), name, direction)
        if new == fold.state_of(h).knobs.get(name):
            continue
        try:
            app.engine.set_knob(name, new, hosts=[h])
        except Exception as exc:  # noqa: BLE001 - a bad value or a gone farm: say why
            app.notify(f"{name}: {exc}", severity="error")
            return
        said.append(f"{h} {show_knob(name, new)}")
    if said:
        app.notify(f"{name} → " + ", ".join(said), timeout=2)


def pause_hosts(app: Any, fold: FarmFold, hosts: list[str]) -> None:
    """Pause the hosts unless every one of them is paused already, else resume them."""
    if not hosts or not _tunable(app):
        return
    resume = all(fold.state_of(h).paused for h in hosts)
    try:
        (app.engine.resume if resume else app.engine.pause)(hosts=list(hosts))
    except Exception as exc:  # noqa: BLE001
        app.notify(f"pause/resume: {exc}", severity="error")
        return
    app.notify(f"{'resume' if resume else 'pause'} {', '.join(hosts)}", timeout=2)


# ---- the hosts view ---------------------------------------------------------------------------


class HostsScreen(CtrlCQuits, Screen):
    """One row per farm host; up/down choose one (the marked row), enter opens its dashboard."""

    HELP_SECTION = "hosts"
    AUTO_FOCUS = None  # the log below must not take the arrows, which choose a host
    DEFAULT_CSS = """
    HostsScreen #hosts-table { height: auto; max-height: 70%; }
    HostsScreen #hosts-log { height: 1fr; min-height: 3; }
    HostsScreen #hosts-keys { height: 1; }
    """
    BINDINGS = [
        Binding("escape,backspace", "back", "Back", id="hosts-back"),
        ctrl_c_binding(),
        Binding("up", "move(-1)", "Previous host", id="hosts-up"),
        Binding("down", "move(1)", "Next host", id="hosts-down"),
        Binding("enter", "drill", "Host dashboard", tooltip="The chosen host's dashboard",
                id="hosts-drill"),
        Binding("asterisk", "toggle_all", "Knobs: host / all",
                tooltip="Knobs go to the chosen host, or to every host", id="hosts-all"),
        *knob_bindings("knob", "hosts-", up_first=True, hosts_view=True, footer=False),
        Binding("p", "pause", "Pause/resume", tooltip="Pause/resume the chosen host(s)",
                id="hosts-pause"),
        Binding("n", "app.submit", "Submit", tooltip="Submit a job to the farm", id="hosts-submit"),
        Binding("a", "app.autofeed", "Auto-submit on/off", id="hosts-autofeed"),
    ]

    def __init__(self, events: Events | None = None, fold: FarmFold | None = None,
                 home: bool = False) -> None:
        """``fold``: fed by the app (the farm console); else the view folds ``events`` (or the
        replayed session's) itself. ``home``: the farm console's first screen (Esc stays)."""
        super().__init__()
        self._events = events
        self._fed = fold is not None
        self.fold = fold if fold is not None else FarmFold()
        self.home = home
        self._seen = 0
        self.selected: str | None = None
        self.all_hosts = False  # knobs to every host rather than the chosen one

    @property
    def state(self) -> HostsState:
        return self.fold.hosts

    def compose(self) -> ComposeResult:
        yield Static(id="hosts-title")
        yield Static(id="hosts-table", classes="panel")
        yield EventLog(id="hosts-log", classes="panel")
        # its own keys in one line rather than the footer, whose global keys are not this view's
        yield Static(self._keys(), id="hosts-keys")

    def on_mount(self) -> None:
        self.query_one("#hosts-table").border_title = "hosts"
        log = self.query_one("#hosts-log", EventLog)
        log.border_title = "farm log"
        log.can_focus = False  # the arrows choose a host; the log follows its newest line
        self.set_focus(None)
        self.redraw(self.app)

    def _take(self, app: Any) -> None:
        if not self._fed:
            events = self._events() if self._events is not None else session_events(app)
            if len(events) < self._seen:  # a seek back: fold again from the start
                self.fold, self._seen = FarmFold(), 0
            self.fold.take(events[self._seen:])
            self._seen = len(events)
        names = [r.name for r in self.state.rows()]
        if names and self.selected not in names:
            self.selected = names[0]

    def _keys(self) -> str:
        """The view's keys, with where the knob keys go now."""
        to = "all hosts" if self.all_hosts else self.selected or "-"
        back = "" if self.home else "  esc back"
        return f" ↑/↓ host  enter dashboard  W/w C/c p → {to}  * host/all{back}  ? keys"

    def targets(self) -> list[str]:
        """The hosts the knob keys go to now."""
        if self.all_hosts:
            return [r.name for r in self.state.rows() if r.present]
        return [self.selected] if self.selected else []

    def redraw(self, app: Any) -> None:
        """The app's refresh tick."""
        self._take(app)
        pal = app.palette()
        title = farm_line(self.state, pal)
        notice = getattr(app, "notice", "")
        if notice:
            title.append(f"  {notice}", style=pal.warn)
        self.query_one("#hosts-title", Static).update(title)
        table = self.query_one("#hosts-table", Static)
        if not self.state.hosts:
            table.update("no farm hosts in this session (it ran on one machine)"
                         if app.mode != "live" else "no farm hosts yet")
        else:
            table.update(hosts_table(self.state, pal, self.selected, self.size.width))
        self.query_one(EventLog).show(app.state, pal)
        self.query_one("#hosts-keys", Static).update(self._keys())

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """Knob keys where the app offers tuning (hidden in replay and read-only); ``app.``
        actions are the app's to say."""
        if action.startswith("app."):
            return self.app.check_action(action[len("app."):], parameters)
        if action in ("knob", "pause", "toggle_all"):
            return self.app.check_action("knob", parameters)
        return True

    def action_move(self, step: int) -> None:
        names = [r.name for r in self.state.rows()]
        if not names:
            return
        i = names.index(self.selected) if self.selected in names else 0
        self.selected = names[(i + step) % len(names)]
        self.redraw(self.app)

    def action_back(self) -> None:
        if self.home:
            self.notify("the farm's hosts are the home view: q quits", timeout=2)
            return
        self.app.pop_screen()

    def action_drill(self) -> None:
        if self.selected is None:
            self.notify("no host to open", severity="warning")
            return
        self.app.push_screen(HostDashboardScreen(lambda: self.fold, self.selected))

    def action_toggle_all(self) -> None:
        self.all_hosts = not self.all_hosts
        self.redraw(self.app)

    def action_knob(self, name: str, direction: int) -> None:
        nudge_hosts(self.app, self.fold, self.targets(), name, direction)

    def action_pause(self) -> None:
        pause_hosts(self.app, self.fold, self.targets())


# ---- one host's dashboard ---------------------------------------------------------------------

_HOST_KEYS = knob_keys() | {"p", "h", "escape"}


class HostDashboardScreen(DashboardScreen):
    """The dashboard of one farm host: its partitions, samples, knobs and history; its tuning
    keys go to that host alone; Esc goes back to the hosts (after a maximized panel or a
    filter, as on the dashboard)."""

    HELP_SECTION = "host dashboard"
    BINDINGS = [
        Binding("escape", "restore", "Back to the hosts",
                tooltip="Restore panels / clear filter, else back to the hosts", id="host-back"),
        Binding("h", "history", "History", show=False, tooltip="This host's history",
                id="host-history"),
        *knob_bindings("host_knob", "host-", up_first=True),
        Binding("p", "host_pause", "Pause", tooltip="Pause/resume this host", id="host-pause"),
        *[b for b in DashboardScreen.BINDINGS if isinstance(b, Binding) and b.key not in _HOST_KEYS],
    ]

    def __init__(self, fold: Callable[[], FarmFold], host: str) -> None:
        super().__init__()
        self._fold = fold
        self.host = host

    @property
    def host_state(self) -> DashboardState:
        return self._fold().state_of(self.host)

    def redraw(self, app: Any) -> None:
        ctx = app.header_context()
        notice = f"host {self.host} (esc: all hosts)" + (f"  {ctx.notice}" if ctx.notice else "")
        self.show_state(self.host_state, app.palette(), dataclasses.replace(ctx, notice=notice),
                        app.replay_bar())

    def action_restore(self) -> None:
        from app.widgets.proofs import ProofsTable

        if self.maximized is not None or self.query_one(ProofsTable).filter_text:
            super().action_restore()
        else:
            self.app.pop_screen()

    def action_history(self) -> None:
        from app.screens.history import HistoryScreen

        self.app.push_screen(HistoryScreen(self.host))

    def action_host_knob(self, name: str, direction: int) -> None:
        nudge_hosts(self.app, self._fold(), [self.host], name, direction)

    def action_host_pause(self) -> None:
        pause_hosts(self.app, self._fold(), [self.host])

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("host_knob", "host_pause"):  # hidden where no tuning is offered
            app = self.console
            if app.mode != "live" or app.readonly:
                return False
            return True if app.can_tune else None
        return super().check_action(action, parameters)
